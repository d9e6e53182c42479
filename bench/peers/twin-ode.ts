/**
 * The twin's benchmark peer and test oracle: the same process model, written
 * the way an engineer without our closed forms would — each unit operation's
 * balance as an ODE, integrated by a standard adaptive solver (odex, the
 * Gragg–Bulirsch–Stoer extrapolation code of Hairer and Wanner) with its end
 * point found as an event on the solver's dense output:
 *
 * - blend:       dRSD/dn = −k·(RSD − RSD∞) over the target revolutions;
 * - drying:      dLOD/dt = −k(T, airflow)·(LOD − LODe) until LOD = target;
 * - compression: dN/dt = output until N = batch size (or the window ends);
 * - coating:     dWG/dt = weight-gain rate until WG = target.
 *
 * The algebraic relations (press steady state, energy balance of the pan,
 * dissolution, content uniformity) are the product's own, so the two differ
 * only in how they find the end points. Not shipped: lives under bench/.
 */
import { createRequire } from 'node:module';
import { blendRsdPct, coatingModel, dryingRatePerMin, pressModel } from '../../src/twin/process.js';
import { assembleAttributes, coatSetpoints, DEFAULT_CONTEXT, pressSetpoints, type BatchContext, type PredictedAttributes, type Predictor } from '../../src/twin/predict.js';
import type { ProcessParams } from '../../src/twin/params.js';

// odex ships its TypeScript source beside the CommonJS build, which this project's strict settings reject when the
// compiler follows an import into it; required at run time, typed here with the subset the peer uses
type OutputFunction = (nr: number, xOld: number, x: number, y: number[], dense?: (component: number, x: number) => number) => boolean | void;
interface Solver {
  relativeTolerance: number;
  absoluteTolerance: number;
  denseOutput: boolean;
  maxSteps: number;
  solve(f: (x: number, y: number[]) => number[], x0: number, y0: number[], xEnd: number, out?: OutputFunction): { y: number[]; outcome: number };
}
const { Solver } = createRequire(import.meta.url)('odex') as { Solver: new (n: number) => Solver };

/** An upper bound on any phase, min: an event that does not fire by then is a non-physical candidate. */
const HORIZON_MIN = 1e6;

/**
 * Integrate dy/dt = f(t, y) of one state from 0 until y crosses `target` (falling or rising), returning the
 * crossing time: the root of the solver's dense interpolant inside the step that crossed (Illinois regula falsi).
 * Infinity when the state never gets there.
 */
function timeToReach(s: Solver, f: (t: number, y: number[]) => number[], y0: number, target: number, falling: boolean): number {
  let at = Number.POSITIVE_INFINITY;
  const out: OutputFunction = (_nr, xOld, x, y, dense) => {
    const crossed = falling ? y[0]! <= target : y[0]! >= target;
    if (!crossed || !dense) return;
    let a = xOld;
    let b = x;
    let fa = dense(0, a) - target;
    let fb = y[0]! - target;
    let c = b;
    let side = 0;
    for (let i = 0; i < 100 && fa !== fb; i++) {
      c = (a * fb - b * fa) / (fb - fa);
      const fc = dense(0, c) - target;
      if (Math.abs(fc) <= 1e-13 * Math.max(1, Math.abs(target))) break;
      if (fc * fb > 0) {
        b = c;
        fb = fc;
        if (side === -1) fa /= 2;
        side = -1;
      } else {
        a = c;
        fa = fc;
        if (side === 1) fb /= 2;
        side = 1;
      }
    }
    at = c;
    return false;
  };
  s.solve(f, 0, [y0], HORIZON_MIN, out);
  return at;
}

/**
 * Compile the ODE peer for a parameter set at a solver tolerance (relative and absolute, on every state).
 * Same signature as the product's `compileTwin`, so `simulate(model, req, { compile })` runs it in its place.
 */
export function compileOdeTwin(tolerance: number): (p: Readonly<ProcessParams>, ctx?: Readonly<BatchContext>) => Predictor {
  return (p, ctx = DEFAULT_CONTEXT) => {
    const solver = new Solver(1);
    solver.denseOutput = true;
    solver.relativeTolerance = tolerance;
    solver.absoluteTolerance = tolerance;
    solver.maxSteps = 100_000;
    const plain = new Solver(1);
    plain.relativeTolerance = tolerance;
    plain.absoluteTolerance = tolerance;
    return (v, horizon): PredictedAttributes => {
      // blend: RSD relaxes with revolutions, a fixed end point
      const kRev = p.blend.kPerRev;
      const targetRev = v['blender.TargetRevolutions'];
      const blendRsd = targetRev > 0 ? plain.solve((_n, y) => [-kRev * (y[0]! - p.blend.rsdInf)], 0, [p.blend.rsd0], targetRev).y[0]! : blendRsdPct(0, p.blend);
      const blendMin = targetRev / v['blender.Speed'];
      // drying: first-order falling rate at k(T, airflow), until the LOD end point
      const k = dryingRatePerMin(v['fluidbed.InletAirTemp'], v['fluidbed.Airflow'], p.drying);
      const lodEq = p.drying.lodEq;
      const dryMin = ctx.targetLodPct > lodEq ? timeToReach(solver, (_t, y) => [-k * (y[0]! - lodEq)], p.drying.lod0, ctx.targetLodPct, true) : Number.POSITIVE_INFINITY;
      // compression: tablets at the press's steady output, until the batch is made or the window ends
      const press = pressModel(pressSetpoints(v), p.press);
      const perMin = press.tabletsPerHour / 60;
      let compressMin: number;
      let made: number;
      if (horizon.kind === 'full_batch') {
        compressMin = timeToReach(solver, () => [perMin], 0, ctx.batchTablets, false);
        made = ctx.batchTablets;
      } else {
        compressMin = horizon.minutes;
        made = plain.solve(() => [perMin], 0, [0], horizon.minutes).y[0]!;
      }
      // coating: weight gain at the spray's rate, until the target
      const coat = coatingModel(coatSetpoints(v), p.coating);
      const rate = coat.weightGainPctPerMin;
      const coatMin = timeToReach(solver, () => [rate], 0, ctx.targetWeightGainPct, false);
      const out = assembleAttributes(p, ctx, v, horizon, { blendRsd, blendMin, dryMin, press, coat, coatMin, compressMin });
      return horizon.kind === 'full_batch' ? out : { ...out, horizonTablets: made };
    };
  };
}

/** Largest relative difference between two predictions over every numeric attribute (0 when both are equal). */
export function maxRelativeDifference(a: PredictedAttributes, b: PredictedAttributes): { attribute: string; rel: number } {
  let worst = { attribute: '', rel: 0 };
  for (const key of Object.keys(a) as (keyof PredictedAttributes)[]) {
    const x = a[key];
    const y = b[key];
    if (x === y) continue;
    const rel = Math.abs(x - y) / Math.max(Math.abs(x), 1e-12);
    if (!(rel <= worst.rel)) worst = { attribute: key, rel };
  }
  return worst;
}
