import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { vi } from 'vitest';
import { main } from '../../src/cli/main.js';
import { LINEKEEPER_BIN } from './bin.js';

/**
 * `linekeeper <args>` run in this process (a child process costs seconds of start-up per call), with its
 * exit code and what it wrote to stdout and stderr.
 */
export async function runCli(...args: string[]): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const o = vi.spyOn(process.stdout, 'write').mockImplementation((s: string | Uint8Array) => ((out += String(s)), true));
  const e = vi.spyOn(process.stderr, 'write').mockImplementation((s: string | Uint8Array) => ((err += String(s)), true));
  const before = process.exitCode;
  process.exitCode = undefined;
  try {
    await main(['node', 'linekeeper', ...args]);
  } finally {
    o.mockRestore();
    e.mockRestore();
  }
  const code = Number(process.exitCode ?? 0);
  process.exitCode = before;
  return { code, out, err };
}

export interface SpawnedCli {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly out: string;
  readonly err: string;
}

/**
 * `linekeeper <args>` as a child process — the installed command (LINEKEEPER_BIN), for what an in-process call cannot
 * show: signals, stdin that is not a terminal, the environment (XDG_CONFIG_HOME, LINEKEEPER_URL). `input` is
 * written to stdin, which is then closed; `until` sends SIGINT once stdout matches it (a person's Ctrl-C).
 */
export function spawnCli(args: readonly string[], o: { env?: NodeJS.ProcessEnv; input?: string; until?: RegExp } = {}): Promise<SpawnedCli> {
  const root = fileURLToPath(new URL('../..', import.meta.url));
  const child = spawn(process.execPath, [...LINEKEEPER_BIN, ...args], { cwd: root, env: { ...process.env, ...o.env }, stdio: ['pipe', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  let interrupted = false;
  child.stdout.on('data', (d: Buffer) => {
    out += d.toString();
    if (o.until && !interrupted && o.until.test(out)) {
      interrupted = true;
      child.kill('SIGINT');
    }
  });
  child.stderr.on('data', (d: Buffer) => (err += d.toString()));
  child.stdin.end(o.input ?? '');
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code, signal) => resolve({ code, signal, out, err }));
  });
}
