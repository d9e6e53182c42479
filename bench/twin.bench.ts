/**
 * Twin rehearsal throughput: candidates rehearsed per second over a full-batch
 * horizon (target: 1,000 candidates in under 1 s on one core).
 * Ours: `simulate` with the compiled closed forms (exponential end points
 * solved analytically, press steady state, parameter-only constants once per model).
 * Peer: the same `simulate` with the same process model integrated by a
 * standard ODE solver (odex, bench/peers/twin-ode.ts), end points found as
 * events on its dense output — what an engineer without the closed forms
 * writes. Its tolerance is the loosest of 1e-2 … 1e-10 whose predictions
 * match ours within 0.1 % on every attribute of every candidate; the bench
 * fails if the run it times does not match.
 */
import { performance } from 'node:perf_hooks';
import { createRng } from '../src/clock.js';
import { recordBatches } from '../connectors/sim/ground/batches.js';
import { fitTwin } from '../src/twin/fit.js';
import { compileTwin, type PredictedAttributes } from '../src/twin/predict.js';
import { DEFAULT_DESIGN_SPACE, latinHypercube, widen } from '../src/twin/setpoints.js';
import { simulate, type SimulationResult, type TwinModel } from '../src/twin/simulate.js';
import { perturbParams } from '../connectors/sim/ground/truth.js';
import { NOMINAL_PARAMS } from '../src/twin/params.js';
import { report } from './lib.js';
import { compileOdeTwin, maxRelativeDifference } from './peers/twin-ode.js';

const truth = perturbParams(NOMINAL_PARAMS, 20261121);
const fit = fitTwin(recordBatches(truth, widen(DEFAULT_DESIGN_SPACE, 0.1), 16, createRng(1), 'T'), { tenant: 'bench' });
const model: TwinModel = { id: 'process-twin-v1', version: 1, params: fit.params, validRanges: fit.card.validRanges };
const req = { horizon: 'full batch', designSpace: DEFAULT_DESIGN_SPACE } as const;
const MATCH = 1e-3;

// the loosest solver tolerance that matches the closed forms to 0.1 % on 3,000 candidates of the design space
const probe = latinHypercube(DEFAULT_DESIGN_SPACE, 3000, createRng(99));
const closed = compileTwin(model.params);
const expected = probe.map((v) => closed(v, { kind: 'full_batch' }));
let tolerance = 0;
for (const tol of [1e-2, 1e-3, 1e-4, 1e-5, 1e-6, 1e-7, 1e-8, 1e-9, 1e-10]) {
  const ode = compileOdeTwin(tol)(model.params);
  if (probe.every((v, i) => maxRelativeDifference(expected[i]!, ode(v, { kind: 'full_batch' })).rel <= MATCH)) {
    tolerance = tol;
    break;
  }
}
if (tolerance === 0) throw new Error('the ODE peer matches the closed forms to 0.1 % at no tolerance down to 1e-10');
const compile = compileOdeTwin(tolerance);

/** Every candidate of both runs: same fate, predictions within 0.1 %. Throws otherwise (the bench fails). */
function assertMatch(a: SimulationResult, b: SimulationResult): number {
  const byIndex = (r: SimulationResult): Map<number, PredictedAttributes | null> =>
    new Map<number, PredictedAttributes | null>([...r.ranked.map((c) => [c.index, c.predicted] as const), ...r.discarded.map((c) => [c.index, c.predicted] as const)]);
  const x = byIndex(a);
  const y = byIndex(b);
  let worst = 0;
  for (const [i, p] of x) {
    const q = y.get(i);
    if (p === null || q === null || q === undefined) {
      if (p !== q) throw new Error(`candidate ${i}: predicted by one engine only`);
      continue;
    }
    const d = maxRelativeDifference(p, q);
    if (d.rel > MATCH) throw new Error(`candidate ${i}: ${d.attribute} differs by ${(d.rel * 100).toFixed(3)} % (> 0.1 %)`);
    worst = Math.max(worst, d.rel);
  }
  return worst;
}

function timeRuns(candidates: number, opts: Parameters<typeof simulate>[2], minMs: number): { perSecond: number; msPerRun: number; runs: number; last: SimulationResult } {
  simulate(model, { ...req, candidates: Math.min(candidates, 50), seed: 0 }, opts); // warm-up
  let runs = 0;
  let last!: SimulationResult;
  const t0 = performance.now();
  while (performance.now() - t0 < minMs || runs < 1) last = simulate(model, { ...req, candidates, seed: ++runs }, opts);
  const ms = performance.now() - t0;
  return { perSecond: (runs * candidates) / (ms / 1000), msPerRun: ms / runs, runs, last };
}

const ours = timeRuns(1000, {}, 3000);
const peer = timeRuns(1000, { compile }, 3000);
const worst = assertMatch(simulate(model, { ...req, candidates: 1000, seed: 1 }), simulate(model, { ...req, candidates: 1000, seed: 1 }, { compile }));
report({
  name: 'twin rehearsal, full-batch horizon',
  unit: 'candidates/s',
  ours: { label: 'simulate (closed forms, compiled per model)', value: ours.perSecond },
  peer: { label: `simulate with the same model integrated by odex (rtol=atol=${tolerance}, events on dense output)`, value: peer.perSecond },
  higherIsBetter: true,
  target: '1,000 candidates < 1 s on one core',
  extra: {
    ours_ms_per_1000: ours.msPerRun,
    peer_ms_per_1000: peer.msPerRun,
    target_met: ours.msPerRun < 1000 ? 'yes' : 'NO',
    max_rel_diff: worst,
    ours_runs: ours.runs,
    peer_runs: peer.runs,
  },
});
