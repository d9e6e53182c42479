/**
 * The examples of docs/sdk.md run as written: the TypeScript and the Python block are extracted from the page and
 * run as child processes (tsx; python3 with sdk/python on the path) against a real daemon each, with its URL and
 * the demo users' passwords in the environment, as the page says. Each runs B-1042 on line-3 through the gate —
 * the QA reviewer's own client closes the open exceptions and signs — to its end: released (SUCCEEDED), or rejected (REJECTED) when the batch's data failed a specification, which
 * on a loaded machine it may (the agents correct later). The only change made to the
 * TypeScript block is the module it imports: `linekeeper/sdk` is the built package, here its source.
 * Meanwhile the test keeps the operator present (POST /attendance), as an operator's open console does, and the
 * node's process engineer resumes a blend held without its NIR end point (test/helpers/api.ts; the examples follow
 * a run to its end and leave holds to people: docs/sdk.md, Holds); an example still running after five minutes is
 * killed and the failure names the step its run waits in. The daemon
 * runs on virtual time paced at TEST_PACE (50) times the wall clock (test/helpers/virtual-line.ts: the plant in memory, every
 * scan and poll at its virtual time), so the batch takes seconds, not minutes, while the example follows it over
 * real HTTP.
 */
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { every } from '../../src/clock.js';
import { STEP_NAMES } from '../../src/domain/run.js';
import { call, rearmLostPlcs, runsNow, signIn, startApiNode, type ApiNode } from '../helpers/api.js';
import { TEST_PACE } from '../helpers/virtual-line.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const PAGE = readFileSync(join(ROOT, 'docs/sdk.md'), 'utf8');
/** Inside the checkout (git-ignored), so the TypeScript example resolves zod from its node_modules. */
const tmpRoot = (): string => {
  mkdirSync(join(ROOT, '.tmp'), { recursive: true });
  return join(ROOT, '.tmp');
};

/** The first fenced block of `lang` under the `## heading` of the page. */
function example(heading: string, lang: string): string {
  const section = PAGE.split(/^## /m).find((s) => s.startsWith(`${heading}\n`));
  const m = section && new RegExp(`^\`\`\`${lang}\\n([\\s\\S]*?)^\`\`\``, 'm').exec(section);
  if (!m) throw new Error(`docs/sdk.md has no ${lang} block under ## ${heading}`);
  return m[1]!;
}

/**
 * Run an example to its end. A hang guard, not a speed limit: an example still running after `limitMs` is killed,
 * and what it printed comes back with the daemon's runs as they stand (which step waits, and for what), so the
 * failure says why instead of only that the test timed out.
 */
function run(cmd: string, args: string[], env: Record<string, string>, limitMs = 300_000): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    const guard = setTimeout(() => {
      out += `\n[killed after ${limitMs / 1000} s; ${node ? runsNow(node, T) : "the daemon's runs: none"}]`;
      child.kill('SIGKILL');
    }, limitMs);
    child.stdout.on('data', (d: Buffer) => (out += d.toString('utf8')));
    child.stderr.on('data', (d: Buffer) => (out += d.toString('utf8')));
    child.on('error', (err) => {
      clearTimeout(guard);
      reject(err);
    });
    child.on('close', (code) => {
      clearTimeout(guard);
      resolve({ code, out });
    });
  });
}

const T = 'acme-pharma';
let node: ApiNode | undefined;
let presence: (() => void) | undefined;
let paced: (() => Promise<void>) | undefined;
let dir: string | undefined;
afterEach(async () => {
  presence?.();
  await paced?.();
  await node?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
  node = undefined;
  dir = undefined;
});

/** A daemon, the operator present, and the page's environment for it. */
async function daemon(): Promise<Record<string, string>> {
  node = await startApiNode({ timeScale: 300, tablets: 30_000, pollMs: 100, virtual: true });
  const n = node;
  const op = await signIn(n.url, 'o.operator', n.passwords.get('o.operator')!);
  presence = every(n.line!.clock, 5000, () => void call(n.url, 'POST', '/v1/tenants/acme-pharma/attendance', { token: op, body: {} }).catch(() => undefined));
  await call(n.url, 'POST', '/v1/tenants/acme-pharma/attendance', { token: op, body: {} });
  // a PLC a loaded machine let lapse is re-armed by its process engineer first, as a site does
  await rearmLostPlcs(n, 'acme-pharma', await signIn(n.url, 'p.bianchi', n.passwords.get('p.bianchi')!));
  paced = n.line!.pace(TEST_PACE);
  return { LINEKEEPER_URL: n.url, LINEKEEPER_OPERATOR_PASSWORD: n.passwords.get('o.operator')!, LINEKEEPER_QA_PASSWORD: n.passwords.get('m.rossi')! };
}

/** The step lines the examples print (`seq name status duration`), and the final status line. */
function outcome(out: string): { names: string[]; last: string } {
  const lines = out.trim().split('\n');
  const names = lines.flatMap((l) => /^(\d{2}) (\S+) ([A-Z]+)/.exec(l)?.[2] ?? []);
  return { names: [...new Set(names)], last: lines.at(-1) ?? '' };
}

describe('the examples of docs/sdk.md run as written', { timeout: 400_000 }, () => {
  it('the TypeScript example: B-1042 step by step, the QA reviewer signs from her own client, finished', async () => {
    const env = await daemon();
    dir = mkdtempSync(join(tmpRoot(), 'sdk-docs-'));
    const file = join(dir, 'example.mts');
    const code = example('TypeScript', 'ts');
    expect(code).toContain("from 'linekeeper/sdk'");
    writeFileSync(file, code.replace("from 'linekeeper/sdk'", `from ${JSON.stringify(join(ROOT, 'src/sdk/index.ts'))}`));
    const r = await run(process.execPath, [join(ROOT, 'node_modules/tsx/dist/cli.mjs'), file], env);
    expect(r.code, r.out).toBe(0);
    const o = outcome(r.out);
    expect(o.names.slice(0, STEP_NAMES.indexOf('approval.batch_release') + 1), r.out).toEqual(STEP_NAMES.slice(0, STEP_NAMES.indexOf('approval.batch_release') + 1));
    expect(['SUCCEEDED', 'REJECTED'], r.out).toContain(o.last);
  });

  it('the Python example: the same, with the Python SDK', async () => {
    const env = await daemon();
    dir = mkdtempSync(join(tmpRoot(), 'sdk-docs-'));
    const file = join(dir, 'example.py');
    writeFileSync(file, example('Python', 'python'));
    const r = await run('python3', [file], { ...env, PYTHONPATH: join(ROOT, 'sdk/python'), PYTHONDONTWRITEBYTECODE: '1', PYTHONUNBUFFERED: '1' });
    expect(r.code, r.out).toBe(0);
    const o = outcome(r.out);
    expect(o.names.slice(0, STEP_NAMES.indexOf('approval.batch_release') + 1), r.out).toEqual(STEP_NAMES.slice(0, STEP_NAMES.indexOf('approval.batch_release') + 1));
    expect(['SUCCEEDED', 'REJECTED'], r.out).toContain(o.last);
  });
});
