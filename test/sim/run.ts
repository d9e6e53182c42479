/**
 * `npm run sim -- --seeds N [--seed S] [--steps K] [--bug skip-intent|approve-any-hash]`: run the core simulator
 * (test/sim/core-sim.ts) on seeds S..S+N-1 (S defaults to 1), stop at the first seed that breaks an invariant and
 * print it with its trace (replay it with `--seed S --seeds 1`), else print seeds per second, faults injected and
 * invariant checks. `--runs`: the whole-run mode instead (test/sim/run-sim.ts: the daemon on the in-memory plant
 * runs one batch per seed, start to release or rejection). Exit 0 when every seed held, 1 when one did not, 2 for a
 * usage error.
 */
import { parseArgs } from 'node:util';
import { INVARIANTS, simulateSeed, type PlantedBug } from './core-sim.js';
import { RUN_INVARIANTS, simulateRun } from './run-sim.js';

function usage(msg: string): never {
  process.stderr.write(`linekeeper sim: ${msg}\nusage: npm run sim -- --seeds N [--seed S] [--steps K] [--bug skip-intent|approve-any-hash]\n`);
  process.exit(2);
}

const { values } = parseArgs({ options: { seeds: { type: 'string' }, seed: { type: 'string' }, steps: { type: 'string' }, bug: { type: 'string' }, quiet: { type: 'boolean' }, runs: { type: 'boolean' } } });
const int = (v: string | undefined, name: string, dflt: number): number => {
  if (v === undefined) return dflt;
  const n = Number(v);
  if (!Number.isInteger(n) || n < 0) usage(`--${name} must be a non-negative integer, got "${v}"`);
  return n;
};
const seeds = int(values.seeds, 'seeds', values.seed !== undefined ? 1 : 100);
const first = int(values.seed, 'seed', 1);
const steps = int(values.steps, 'steps', 60);
if (values.bug !== undefined && values.bug !== 'skip-intent' && values.bug !== 'approve-any-hash') usage(`--bug must be skip-intent or approve-any-hash, got "${values.bug}"`);
const bug = values.bug as PlantedBug | undefined;

if (values.runs) {
  const t = process.hrtime.bigint();
  const ends: Record<string, number> = {};
  let released = 0;
  let minutes = 0;
  let writes = 0;
  let faults = 0;
  for (let seed = first; seed < first + seeds; seed++) {
    const r = await simulateRun(seed);
    if (r.failure) {
      const f = r.failure;
      process.stdout.write(`run seed ${f.seed} FAILED: ${f.invariant} (${RUN_INVARIANTS[f.invariant]})\n  ${f.message}\ntrace:\n${f.trace.map((l) => `  ${l}`).join('\n')}\n`);
      process.stdout.write(`replay: npm run sim -- --runs --seed ${f.seed} --seeds 1\n`);
      process.exit(1);
    }
    ends[r.status] = (ends[r.status] ?? 0) + 1;
    if (r.released) released++;
    minutes += r.virtualMinutes;
    writes += r.writes;
    faults += r.faults;
    if (!values.quiet) process.stdout.write(`seed ${seed}: ${r.status}${r.released ? ' (released)' : ''}, ${r.virtualMinutes} virtual min, ${r.writes} writes, ${r.faults} faults\n`);
  }
  const s = Number(process.hrtime.bigint() - t) / 1e9;
  process.stdout.write(
    `${seeds} batch runs held every invariant (${Object.keys(RUN_INVARIANTS).length}) in ${s.toFixed(1)} s (${(s / seeds).toFixed(1)} s a run, ${minutes} virtual minutes): ` +
      `ended ${Object.entries(ends).map(([k, v]) => `${k} ${v}`).join(', ')}; ${released} released; ${writes} equipment writes; ${faults} faults\n`,
  );
  process.exit(0);
}

const t0 = process.hrtime.bigint();
let faults = 0;
let checks = 0;
let writes = 0;
let ran = 0;
const actions: Record<string, number> = {};
for (let seed = first; seed < first + seeds; seed++) {
  const r = await simulateSeed(seed, { steps, ...(bug ? { bug } : {}) });
  ran++;
  faults += r.faults;
  checks += r.checks;
  writes += r.writes;
  for (const [k, v] of Object.entries(r.actions)) actions[k] = (actions[k] ?? 0) + v;
  if (r.failure) {
    const f = r.failure;
    process.stdout.write(`seed ${f.seed} FAILED at step ${f.step}: ${f.invariant} (${INVARIANTS[f.invariant]})\n  ${f.message}\ntrace:\n${f.trace.map((l) => `  ${l}`).join('\n')}\n`);
    process.stdout.write(`replay: npm run sim -- --seed ${f.seed} --seeds 1 --steps ${steps}${bug ? ` --bug ${bug}` : ''}\n`);
    process.exit(1);
  }
  if (!values.quiet && ran % 100 === 0) process.stdout.write(`${ran} seeds…\n`);
}
const s = Number(process.hrtime.bigint() - t0) / 1e9;
process.stdout.write(
  `${ran} seeds × ${steps} steps held every invariant (${Object.keys(INVARIANTS).length}) in ${s.toFixed(1)} s: ${(ran / s).toFixed(1)} seeds/s; ` +
    `${faults} faults injected, ${checks} idle checks, ${writes} equipment writes checked at the write\n` +
    `actions: ${Object.entries(actions).sort((a, b) => b[1] - a[1]).map(([k, v]) => `${k} ${v}`).join(', ')}\n`,
);
