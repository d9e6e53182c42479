/**
 * Batch-level predictions of the twin for one setpoint vector: the quality
 * attributes (content uniformity, capping, weight, hardness, dissolution) and
 * the takt of a full batch (blend → dry → compress → coat) or of a compression
 * window of a given duration.
 *
 * {@link compileTwin} solves the unit operations in closed form (exponential
 * decays solved for their end points, press steady state) with every
 * parameter-only constant computed once per model — what rehearsal uses. Its
 * peer and test oracle, the same model integrated by a standard ODE solver,
 * lives in bench/peers/twin-ode.ts (not shipped) and shares only
 * {@link assembleAttributes}, the algebraic part after the end points.
 */
import {
  blendRsdPct,
  coatingModel,
  dissolutionWeibull,
  dryingRatePerMin,
  dryingTimeMin,
  f2Similarity,
  pressModel,
  productTempC,
  weibullReleasePct,
  type PressSetpoints,
} from './process.js';
import { centreOf, DEFAULT_DESIGN_SPACE, type SetpointVector } from './setpoints.js';
import { NOMINAL_PARAMS, type ProcessParams } from './params.js';

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

export function coatSetpoints(v: Readonly<SetpointVector>): { sprayRateGMin: number; inletAirC: number; airflowM3h: number; panRpm: number } {
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
    return assembleAttributes(p, ctx, v, horizon, { blendRsd, blendMin, dryMin, press, coat, coatMin, compressMin });
  };
}

/** What the dynamic part of a batch yields: end points and durations of each unit operation. */
export interface UnitOperationResults {
  blendRsd: number;
  blendMin: number;
  dryMin: number;
  press: ReturnType<typeof pressModel>;
  coat: ReturnType<typeof coatingModel>;
  coatMin: number;
  compressMin: number;
}

/**
 * The batch attributes from the unit operations' end points: content uniformity, dissolution and f2, takt. Pure
 * algebra, shared by the closed forms and by any integrator of the same model, so the two differ only in how they
 * find the end points. Never throws.
 */
export function assembleAttributes(p: Readonly<ProcessParams>, ctx: Readonly<BatchContext>, v: Readonly<SetpointVector>, horizon: Horizon, x: UnitOperationResults): PredictedAttributes {
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
