/**
 * What each of the daemon's worker threads adds to its memory while it starts: the release package's seal
 * (started per release: its peak is the daemon's peak when a batch is released), a large rehearsal's and the
 * parallel audit verifier's, the password strength estimator's. Ours: a fresh process (`bench/worker-memory-probe.mjs`, with the V8 flag of the shipped
 * unit) starts one worker thread that imports the compiled worker module, as the daemon does, and reports how far
 * the process's RSS rose while it loaded (peak, sampled every millisecond) and what it holds once loaded. Peer: the
 * same for a worker thread that imports nothing — the floor of any thread (its V8 isolate and Node's bootstrap).
 * `release PDF` stands for the release worker's printing (bench/worker-memory-pdf.mjs: pdfkit and the fonts loaded,
 * one document of about a batch report's length rendered through the report primitives), which the release worker
 * does after it has loaded its own modules.
 * Five rounds per case, alternating, in fresh processes; the medians.
 *
 * Target (issue: daemon ≤ 150 MB at the peak of a batch): the release worker's peak is what a released batch adds
 * over a rejected one; no module it loads should be there for nothing (zod, 834 KB of source, was: about 9 MB).
 */
import { spawnSync } from 'node:child_process';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { ensureBuilt, report } from './lib.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const PROBE = fileURLToPath(new URL('./worker-memory-probe.mjs', import.meta.url));
const ROUNDS = 5;
const mb = (b: number): number => b / 2 ** 20;
const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

ensureBuilt();
const cases: Record<string, string> = {
  release: pathToFileURL(`${ROOT}dist/src/engine/release-worker.js`).href,
  rehearsal: pathToFileURL(`${ROOT}dist/src/engine/rehearsal-worker.js`).href,
  verify: pathToFileURL(`${ROOT}dist/src/audit/verify-worker.js`).href,
  // the password strength estimator: it indexes its dictionaries as it starts (held while passwords are chosen)
  password: pathToFileURL(`${ROOT}dist/src/api/password-worker.js`).href,
  // what the release worker adds when it prints: pdfkit, fontkit and the fonts loaded, one stand-in report rendered
  'release PDF': new URL('./worker-memory-pdf.mjs', import.meta.url).href,
  empty: '',
};
const got: Record<string, { peak: number[]; held: number[] }> = {};
for (let r = 0; r < ROUNDS; r++) {
  for (const [name, url] of Object.entries(cases)) {
    const p = spawnSync(process.execPath, ['--max-semi-space-size=4', PROBE, ...(url ? [url] : [])], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
    if (p.status !== 0) throw new Error(`the ${name} probe failed (exit ${p.status ?? p.signal})`);
    const m = JSON.parse(p.stdout.trim().split('\n').at(-1)!) as { peak: number; held: number };
    (got[name] ??= { peak: [], held: [] }).peak.push(m.peak);
    got[name].held.push(m.held);
  }
}
const empty = { peak: mb(median(got.empty!.peak)), held: mb(median(got.empty!.held)) };
for (const name of ['release', 'release PDF', 'rehearsal', 'verify', 'password']) {
  const peak = mb(median(got[name]!.peak));
  const held = mb(median(got[name]!.held));
  report({
    name: `worker thread start, RSS peak while its modules load: ${name}`,
    unit: 'MB',
    ours: { label: `linekeeper ${name} worker (dist/, --max-semi-space-size=4)`, value: peak },
    peer: { label: 'a worker thread importing nothing (the floor of any thread)', value: empty.peak },
    higherIsBetter: false,
    target: name === 'release' ? 'no schema library in the worker (release: part of a released batch’s peak)' : undefined,
    extra: { held_mb: held, empty_held_mb: empty.held, rounds: ROUNDS, peak_min_mb: mb(Math.min(...got[name]!.peak)), peak_max_mb: mb(Math.max(...got[name]!.peak)) },
  });
}
