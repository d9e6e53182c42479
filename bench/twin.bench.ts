/**
 * Twin rehearsal throughput: candidates rehearsed per second over a full-batch
 * horizon (target: 1,000 candidates in under 1 s on one core).
 * Ours: `simulate` with the compiled closed forms (exponential end points
 * solved analytically, press steady state, parameter-only constants once per model).
 * Peer: the same `simulate` with the naive engine, which integrates blend,
 * drying, compression and coating second by second and re-runs the press and
 * coating relations every tick, as the plant simulator does.
 */
import { performance } from 'node:perf_hooks';
import { createRng } from '../src/clock.js';
import { recordBatches } from '../src/twin/batch.js';
import { fitTwin } from '../src/twin/fit.js';
import { DEFAULT_DESIGN_SPACE, widen } from '../src/twin/setpoints.js';
import { simulate, type TwinModel } from '../src/twin/simulate.js';
import { NOMINAL_PARAMS, perturbParams } from '../src/twin/truth.js';
import { report } from './lib.js';

const truth = perturbParams(NOMINAL_PARAMS, 20261121);
const fit = fitTwin(recordBatches(truth, widen(DEFAULT_DESIGN_SPACE, 0.1), 16, createRng(1), 'T'), { tenant: 'bench' });
const model: TwinModel = { id: 'process-twin-v1', version: 1, params: fit.params, validRanges: fit.card.validRanges };
const req = { horizon: 'full batch', designSpace: DEFAULT_DESIGN_SPACE } as const;

function timeRuns(candidates: number, engine: 'closed_form' | 'naive', minMs: number): { perSecond: number; msPerRun: number; runs: number } {
  simulate(model, { ...req, candidates: Math.min(candidates, 50), seed: 0 }, { engine }); // warm-up
  let runs = 0;
  const t0 = performance.now();
  while (performance.now() - t0 < minMs || runs < 1) simulate(model, { ...req, candidates, seed: ++runs }, { engine });
  const ms = performance.now() - t0;
  return { perSecond: (runs * candidates) / (ms / 1000), msPerRun: ms / runs, runs };
}

const ours = timeRuns(1000, 'closed_form', 3000);
const naive = timeRuns(1000, 'naive', 8000);
report({
  name: 'twin rehearsal, full-batch horizon',
  unit: 'candidates/s',
  ours: { label: 'simulate (closed forms, compiled per model)', value: ours.perSecond },
  peer: { label: 'simulate engine=naive (1 s steps, relations re-run per tick)', value: naive.perSecond },
  higherIsBetter: true,
  target: '1,000 candidates < 1 s on one core',
  extra: { ours_ms_per_1000: ours.msPerRun, peer_ms_per_1000: naive.msPerRun, ours_runs: ours.runs, peer_runs: naive.runs },
});
