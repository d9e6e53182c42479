/**
 * `npm test [-- <vitest args>]`: the type-check (tsc over sources, tests, benchmarks and tools) and the test suite
 * (vitest) at the same time, not one after the other. The suite leaves part of the machine's cores idle while its
 * tests wait on the wall clock (a browser, a paced line, a child process), and the type-check fills that time
 * instead of adding its own before the first test. The type-check's report is printed after the suite's, under a
 * heading of its own; the command fails when either fails.
 */
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const require = createRequire(import.meta.url);
const started = Date.now();

/** Run `node <script> <args>` in the project's root; resolves with its exit code and how long it took. */
function run(script, args, o) {
  const p = spawn(process.execPath, [script, ...args], { cwd: root, stdio: o.stdio, env: o.env ?? process.env });
  let out = '';
  if (o.stdio[1] === 'pipe') {
    p.stdout.on('data', (d) => (out += d));
    p.stderr.on('data', (d) => (out += d));
  }
  const done = new Promise((resolve) => {
    p.once('error', (err) => resolve({ code: 1, out: `${out}${err.message}\n`, s: (Date.now() - started) / 1000 }));
    p.once('close', (code, signal) => resolve({ code: code ?? (signal ? 128 : 1), out, s: (Date.now() - started) / 1000 }));
  });
  return { child: p, done };
}

// tsc colours its report only on a terminal; it is printed later from a pipe, so ask for colour when we have one
const typecheck = run(require.resolve('typescript/bin/tsc'), ['-p', 'tsconfig.json', '--noEmit', ...(process.stdout.isTTY ? ['--pretty'] : [])], { stdio: ['ignore', 'pipe', 'pipe'] });
// vitest's package exports no path to its command; its package.json is exported
const suite = run(join(dirname(require.resolve('vitest/package.json')), 'vitest.mjs'), ['run', ...process.argv.slice(2)], { stdio: 'inherit' });

// Ctrl-C or a CI's stop reaches both
for (const sig of ['SIGINT', 'SIGTERM']) {
  process.on(sig, () => {
    typecheck.child.kill(sig);
    suite.child.kill(sig);
  });
}

const [t, v] = await Promise.all([typecheck.done, suite.done]);
process.stdout.write(`\ntype-check (tsc -p tsconfig.json --noEmit, beside the suite): ${t.code === 0 ? 'no errors' : 'FAILED'} in ${t.s.toFixed(1)} s\n`);
if (t.out.trim() !== '') process.stdout.write(`${t.out.trimEnd()}\n`);
process.stdout.write(`npm test: vitest ${v.code === 0 ? 'passed' : 'FAILED'}, ${v.s.toFixed(1)} s; type-check ${t.code === 0 ? 'passed' : 'FAILED'}; ${((Date.now() - started) / 1000).toFixed(1)} s in all\n`);
process.exitCode = v.code !== 0 ? v.code : t.code;
