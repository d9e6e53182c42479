/**
 * Passwords are typed, never passed as arguments (an argument is visible to every user of the machine in the
 * process list and stays in shell history). On a terminal the password is read in raw mode without echo; when
 * stdin is not a terminal (a script, a test) its first line is the password.
 */
import { createInterface } from 'node:readline';
import type { ReadStream } from 'node:tty';
import { LkError } from '../errors.js';

/** Leave the CLI with this exit code, after printing `message` (if any) as `linekeeper: <message>`. */
export class CliExit extends Error {
  constructor(readonly exitCode: number, message = '') {
    super(message);
    this.name = 'CliExit';
  }
}

export interface PromptIo {
  readonly stdin: NodeJS.ReadStream;
  readonly stderr: NodeJS.WriteStream;
}

const defaultIo = (): PromptIo => ({ stdin: process.stdin, stderr: process.stderr });

/** The first line of a non-terminal stdin, or null at end of input. */
function firstLine(stdin: NodeJS.ReadableStream): Promise<string | null> {
  const rl = createInterface({ input: stdin, terminal: false, crlfDelay: Infinity });
  return new Promise((resolve) => {
    let done = false;
    const finish = (v: string | null): void => {
      if (done) return;
      done = true;
      rl.close();
      resolve(v);
    };
    rl.once('line', (l) => finish(l));
    rl.once('close', () => finish(null));
  });
}

/**
 * Read a password: without echo on a terminal (the prompt goes to stderr), the first line of stdin otherwise.
 * @throws CliExit 130 when the person presses Ctrl-C at the prompt; LkError LK_VALIDATION when nothing was typed.
 */
export async function readPassword(prompt: string, io: PromptIo = defaultIo()): Promise<string> {
  const stdin = io.stdin as NodeJS.ReadStream & Partial<Pick<ReadStream, 'setRawMode'>>;
  let password: string | null;
  if (stdin.isTTY && typeof stdin.setRawMode === 'function') {
    io.stderr.write(prompt);
    password = await readHidden(stdin as unknown as ReadStream, io.stderr);
  } else {
    password = await firstLine(stdin);
  }
  if (!password) throw new LkError('LK_VALIDATION', 'no password was given (type it at the prompt, or give it on stdin when not on a terminal)');
  return password;
}

/**
 * Read several secrets in turn (the signer's password, then a new one): each without echo on a terminal; the
 * next lines of stdin otherwise (one reader for all, so no line is lost between prompts).
 * @throws as {@link readPassword}.
 */
export async function readSecrets(prompts: readonly string[], io: PromptIo = defaultIo()): Promise<string[]> {
  const stdin = io.stdin as NodeJS.ReadStream & Partial<Pick<ReadStream, 'setRawMode'>>;
  if (stdin.isTTY && typeof stdin.setRawMode === 'function') {
    const out: string[] = [];
    for (const p of prompts) out.push(await readPassword(p, io));
    return out;
  }
  const rl = createInterface({ input: stdin, terminal: false, crlfDelay: Infinity });
  const lines: string[] = [];
  await new Promise<void>((resolve) => {
    rl.on('line', (l) => {
      lines.push(l);
      if (lines.length >= prompts.length) rl.close();
    });
    rl.once('close', () => resolve());
  });
  if (lines.length < prompts.length || lines.some((l) => l.length === 0)) throw new LkError('LK_VALIDATION', `expected ${prompts.length} line(s) on stdin: ${prompts.map((p) => p.replace(/:\s*$/, '')).join('; ')}`);
  return lines.slice(0, prompts.length);
}

/** A line typed on the terminal, echoed (a user id); the first line of stdin when it is not a terminal. */
export async function readLine(prompt: string, io: PromptIo = defaultIo()): Promise<string | null> {
  if (!io.stdin.isTTY) return firstLine(io.stdin);
  const rl = createInterface({ input: io.stdin, output: io.stderr, terminal: true });
  try {
    return await new Promise<string>((resolve) => rl.question(prompt, resolve));
  } finally {
    rl.close();
  }
}

function readHidden(tty: ReadStream, stderr: NodeJS.WriteStream): Promise<string | null> {
  return new Promise((resolve, reject) => {
    let buf: string[] = [];
    let escape = false;
    const finish = (): void => {
      tty.off('data', onData);
      tty.setRawMode(false);
      tty.pause();
      stderr.write('\n');
    };
    const onData = (chunk: Buffer | string): void => {
      for (const ch of String(chunk)) {
        if (escape) {
          // the rest of an escape sequence (arrow keys…): up to its final letter or ~
          if (/[A-Za-z~]/.test(ch)) escape = false;
          continue;
        }
        if (ch === '\r' || ch === '\n') return (finish(), resolve(buf.join('')));
        if (ch === '\u0003') return (finish(), reject(new CliExit(130, 'interrupted; nothing was sent')));
        if (ch === '\u0004') {
          if (buf.length === 0) return (finish(), resolve(null));
          continue;
        }
        if (ch === '\u007f' || ch === '\b') buf = buf.slice(0, -1);
        else if (ch === '\u0015') buf = [];
        else if (ch === '\u001b') escape = true;
        else if (ch >= ' ') buf.push(ch);
      }
    };
    tty.setRawMode(true);
    tty.setEncoding('utf8');
    tty.on('data', onData);
    tty.resume();
  });
}
