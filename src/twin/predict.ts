/**
 * Batch-level predictions of the twin for one setpoint vector: the quality
 * attributes (content uniformity, capping, weight, hardness, dissolution) and
 * the takt of a full batch (blend → dry → compress → coat) or of a compression
 * window of a given duration.
 *
 * Two implementations that must agree:
 * - {@link compileTwin}: closed forms (exponential decays solved for their end
 *   points, press steady state) with every parameter-only constant computed
 *   once per model — what rehearsal uses;
 * - {@link predictNaive}: steps the same relations second by second the way
 *   the plant simulator does (first-order state updates, press relations
 *   re-evaluated each tick) — the benchmark's peer and the test oracle.
 */
import {
  blendRsdPct,
  coatingModel,
  dissolutionWeibull,
  dryingRatePerMin,
  dryingTimeMin,
  f2Similarity,
  firstOrder,
  pressModel,
  productTempC,
  weibullReleasePct,
  type PressSetpoints,
} from './process.js';
import { centreOf, DEFAULT_DESIGN_SPACE, type SetpointVector } from './setpoints.js';
import { NOMINAL_PARAMS, type ProcessParams } from './truth.js';

export interface BatchContext {
  /** Tablets in a full batch. */
  batchTablets: number;
  /** Drying end point, % LOD. */
  targetLodPct: number;
  /** Coating end point, % weight gain. */
  targetWeightGainPct: number;
  /** Target tablet weight (label claim at 100 % content), mg. */
  targetWeightMg: number;
  /** Dissolution sampling times, min, and the reference (biobatch) profile at those times, %. */
  dissolutionTimesMin: readonly number[];
  referenceProfile: readonly number[];
}

export const DISSOLUTION_TIMES_MIN: readonly number[] = Object.freeze([5, 10, 15, 20, 30, 45, 60]);

/** Dissolution profile of a tablet of tensile strength σ (MPa) at weight gain WG (%). */
export function dissolutionProfile(p: Readonly<ProcessParams>, tensileMpa: number, wgPct: number, times: readonly number[] = DISSOLUTION_TIMES_MIN): number[] {
  const w = dissolutionWeibull(tensileMpa, wgPct, p.dissolution);
  return times.map((t) => weibullReleasePct(t, w));
}

/** The reference profile: nominal parameters at the centre of the default design space (the biobatch recipe). */
export const REFERENCE_PROFILE: readonly number[] = Object.freeze(
  (() => {
    const c = centreOf(DEFAULT_DESIGN_SPACE);
    const press = pressModel(pressSetpoints(c), NOMINAL_PARAMS.press);
    return dissolutionProfile(NOMINAL_PARAMS, press.tensileStrengthMpa, 3);
  })(),
);

export const DEFAULT_CONTEXT: Readonly<BatchContext> = Object.freeze({
  batchTablets: 300_000,
  targetLodPct: 2,
  targetWeightGainPct: 3,
  targetWeightMg: 300,
  dissolutionTimesMin: DISSOLUTION_TIMES_MIN,
  referenceProfile: REFERENCE_PROFILE,
});

/** Rehearsal horizon: a whole batch, or a compression window of so many minutes. */
export type Horizon = { kind: 'full_batch' } | { kind: 'duration'; minutes: number };

export interface PredictedAttributes {
  /** USP <905> stage-1 acceptance value expected for the batch (L1 = 15). */
  contentUniformityAv: number;
  /** Expected mean content, % label claim, and unit-to-unit RSD, %. */
  contentMeanPct: number;
  contentRsdPct: number;
  blendRsdPct: number;
  cappingRiskPct: number;
  tabletWeightMg: number;
  weightRsdPct: number;
  hardnessN: number;
  tensileStrengthMpa: number;
  thicknessMm: number;
  ejectionForceN: number;
  dwellMs: number;
  dissolutionQ30Pct: number;
  dissolutionF2: number;
  dryingTimeMin: number;
  dryerEndProductTempC: number;
  coatExhaustC: number;
  coatingTimeMin: number;
  overwetRisk: number;
  sprayDryRisk: number;
  tabletsPerHour: number;
  /** Takt of the horizon: minutes of blend + dry + compress + coat for a full batch; the window length for a duration. */
  taktMin: number;
  /** Tablets made within the horizon. */
  horizonTablets: number;
}

export function pressSetpoints(v: Readonly<SetpointVector>): PressSetpoints {
  return { fillDepthMm: v['press.FillDepth'], mainForceKn: v['press.MainForce'], preForceKn: v['press.PreForce'], turretRpm: v['press.TurretSpeed'] };
}

function coatSetpoints(v: Readonly<SetpointVector>): { sprayRateGMin: number; inletAirC: number; airflowM3h: number; panRpm: number } {
  return { sprayRateGMin: v['coater.SprayRate'], inletAirC: v['coater.InletAirTemp'], airflowM3h: v['coater.Airflow'], panRpm: v['coater.PanSpeed'] };
}

/** Weight RSD, %, rising with turret speed. */
export function weightRsdPct(p: Readonly<ProcessParams>, turretRpm: number): number {
  return p.uniformity.weightRsd0 + p.uniformity.weightRsdPerRpm * turretRpm;
}

/** Expected USP <905> stage-1 figures from blend RSD, weight RSD and the weight's offset from target. */
export function contentUniformity(blendRsd: number, weightRsd: number, weightMg: number, targetWeightMg: number): { mean: number; rsd: number; av: number } {
  const mean = (100 * weightMg) / targetWeightMg;
  const rsd = Math.sqrt(blendRsd * blendRsd + weightRsd * weightRsd);
  const m = mean < 98.5 ? 98.5 : mean > 101.5 ? 101.5 : mean;
  return { mean, rsd, av: Math.abs(m - mean) + 2.4 * ((rsd * mean) / 100) };
}

/** A compiled predictor: parameter-only work done once, closed forms per candidate. */
export type Predictor = (v: Readonly<SetpointVector>, horizon: Horizon) => PredictedAttributes;

/**
 * Compile the closed-form predictor for a parameter set and batch context.
 * Never throws; non-physical inputs give non-finite attributes, which callers
 * screen with the model's valid ranges first.
 */
export function compileTwin(p: Readonly<ProcessParams>, ctx: Readonly<BatchContext> = DEFAULT_CONTEXT): Predictor {
  const { drying, coating } = p;
  const lodSpan = Math.log((drying.lod0 - drying.lodEq) / (ctx.targetLodPct - drying.lodEq));
  return (v, horizon) => {
    const blendRsd = blendRsdPct(v['blender.TargetRevolutions'], p.blend);
    const blendMin = v['blender.TargetRevolutions'] / v['blender.Speed'];
    const k = dryingRatePerMin(v['fluidbed.InletAirTemp'], v['fluidbed.Airflow'], drying);
    const dryMin = ctx.targetLodPct > drying.lodEq ? lodSpan / k : Number.POSITIVE_INFINITY;
    const press = pressModel(pressSetpoints(v), p.press);
    const coat = coatingModel(coatSetpoints(v), coating);
    const coatMin = ctx.targetWeightGainPct / coat.weightGainPctPerMin;
    const compressMin = (ctx.batchTablets / press.tabletsPerHour) * 60;
    return finish(p, ctx, v, horizon, { blendRsd, blendMin, dryMin, press, coat, coatMin, compressMin });
  };
}

interface Parts {
  blendRsd: number;
  blendMin: number;
  dryMin: number;
  press: ReturnType<typeof pressModel>;
  coat: ReturnType<typeof coatingModel>;
  coatMin: number;
  compressMin: number;
}

function finish(p: Readonly<ProcessParams>, ctx: Readonly<BatchContext>, v: Readonly<SetpointVector>, horizon: Horizon, x: Parts): PredictedAttributes {
  const wRsd = weightRsdPct(p, v['press.TurretSpeed']);
  const cu = contentUniformity(x.blendRsd, wRsd, x.press.tabletWeightMg, ctx.targetWeightMg);
  const profile = dissolutionProfile(p, x.press.tensileStrengthMpa, ctx.targetWeightGainPct, ctx.dissolutionTimesMin);
  const i30 = ctx.dissolutionTimesMin.indexOf(30);
  const full = horizon.kind === 'full_batch';
  return {
    contentUniformityAv: cu.av,
    contentMeanPct: cu.mean,
    contentRsdPct: cu.rsd,
    blendRsdPct: x.blendRsd,
    cappingRiskPct: x.press.cappingPct,
    tabletWeightMg: x.press.tabletWeightMg,
    weightRsdPct: wRsd,
    hardnessN: x.press.hardnessN,
    tensileStrengthMpa: x.press.tensileStrengthMpa,
    thicknessMm: x.press.thicknessMm,
    ejectionForceN: x.press.ejectionForceN,
    dwellMs: x.press.dwellMs,
    dissolutionQ30Pct: i30 >= 0 ? profile[i30]! : weibullReleasePct(30, dissolutionWeibull(x.press.tensileStrengthMpa, ctx.targetWeightGainPct, p.dissolution)),
    dissolutionF2: f2Similarity(ctx.referenceProfile, profile),
    dryingTimeMin: x.dryMin,
    dryerEndProductTempC: productTempC(ctx.targetLodPct, v['fluidbed.InletAirTemp'], p.drying),
    coatExhaustC: x.coat.exhaustC,
    coatingTimeMin: x.coatMin,
    overwetRisk: x.coat.overwetRisk,
    sprayDryRisk: x.coat.sprayDryRisk,
    tabletsPerHour: x.press.tabletsPerHour,
    taktMin: full ? x.blendMin + x.dryMin + x.compressMin + x.coatMin : horizon.minutes,
    horizonTablets: full ? ctx.batchTablets : (x.press.tabletsPerHour * horizon.minutes) / 60,
  };
}

const STEP_S = 1;

/**
 * The naive peer: integrates each unit operation second by second, re-running
 * the process relations every tick as the simulator does, and finds each end
 * point by stepping until it is crossed (linear interpolation inside the last
 * step). Same results as {@link compileTwin} to within the integration error.
 */
export function predictNaive(p: Readonly<ProcessParams>, v: Readonly<SetpointVector>, horizon: Horizon, ctx: Readonly<BatchContext> = DEFAULT_CONTEXT): PredictedAttributes {
  const dtMin = STEP_S / 60;
  // blend: RSD relaxes toward RSD∞ with revolutions
  const revPerStep = v['blender.Speed'] * dtMin;
  let rsd = p.blend.rsd0;
  let rev = 0;
  let blendMin = 0;
  const targetRev = v['blender.TargetRevolutions'];
  while (rev < targetRev) {
    const dn = Math.min(revPerStep, targetRev - rev);
    rsd = firstOrder(rsd, p.blend.rsdInf, dn, 1 / p.blend.kPerRev);
    rev += dn;
    blendMin += (dn / revPerStep) * dtMin;
  }
  // drying: LOD relaxes toward LODe at k(T, airflow)
  let lod = p.drying.lod0;
  let dryMin = 0;
  if (ctx.targetLodPct <= p.drying.lodEq) dryMin = Number.POSITIVE_INFINITY;
  else {
    for (;;) {
      const k = dryingRatePerMin(v['fluidbed.InletAirTemp'], v['fluidbed.Airflow'], p.drying);
      const next = firstOrder(lod, p.drying.lodEq, dtMin, 1 / k);
      if (next <= ctx.targetLodPct) {
        dryMin += (dtMin * Math.log((lod - p.drying.lodEq) / (ctx.targetLodPct - p.drying.lodEq))) / Math.log((lod - p.drying.lodEq) / (next - p.drying.lodEq));
        break;
      }
      lod = next;
      dryMin += dtMin;
    }
  }
  // compression: the press relations re-evaluated every tick, tablets counted until the horizon is met
  const ps = pressSetpoints(v);
  const limitTablets = horizon.kind === 'full_batch' ? ctx.batchTablets : Number.POSITIVE_INFINITY;
  const limitMin = horizon.kind === 'full_batch' ? Number.POSITIVE_INFINITY : horizon.minutes;
  let made = 0;
  let compressMin = 0;
  let press = pressModel(ps, p.press);
  const acc = { capping: 0, weight: 0, hardness: 0, tensile: 0, thickness: 0, ejection: 0 };
  while (made < limitTablets && compressMin < limitMin - 1e-12) {
    press = pressModel(ps, p.press);
    let dt = Math.min(dtMin, limitMin - compressMin);
    let n = (press.tabletsPerHour / 60) * dt;
    if (made + n > limitTablets) {
      dt *= (limitTablets - made) / n;
      n = limitTablets - made;
    }
    acc.capping += press.cappingPct * n;
    acc.weight += press.tabletWeightMg * n;
    acc.hardness += press.hardnessN * n;
    acc.tensile += press.tensileStrengthMpa * n;
    acc.thickness += press.thicknessMm * n;
    acc.ejection += press.ejectionForceN * n;
    made += n;
    compressMin += dt;
  }
  const avgPress = {
    ...press,
    cappingPct: acc.capping / made,
    tabletWeightMg: acc.weight / made,
    hardnessN: acc.hardness / made,
    tensileStrengthMpa: acc.tensile / made,
    thicknessMm: acc.thickness / made,
    ejectionForceN: acc.ejection / made,
  };
  // coating: weight gain accumulates until the target
  let wg = 0;
  let coatMin = 0;
  let coat = coatingModel(coatSetpoints(v), p.coating);
  for (;;) {
    coat = coatingModel(coatSetpoints(v), p.coating);
    const inc = coat.weightGainPctPerMin * dtMin;
    if (wg + inc >= ctx.targetWeightGainPct) {
      coatMin += (dtMin * (ctx.targetWeightGainPct - wg)) / inc;
      break;
    }
    wg += inc;
    coatMin += dtMin;
  }
  const out = finish(p, ctx, v, horizon, { blendRsd: rsd, blendMin, dryMin, press: avgPress, coat, coatMin, compressMin });
  return horizon.kind === 'full_batch' ? out : { ...out, horizonTablets: made };
}
