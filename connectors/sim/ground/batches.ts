/**
 * Recorded batches of the simulated plant, generated from its "true" process
 * parameters (truth.ts) with the instruments' noise: what the historian and
 * the QC lab would hold for a batch run on it. The default models are fitted
 * to these and the golden twin dataset is made of them, without a network
 * round trip. Pure: parameters, plan and a seeded rng in, observations out.
 */
import type { Rng } from '../../../src/clock.js';
import type { ProcessParams } from '../../../src/twin/params.js';
import { dissolutionProfile, DISSOLUTION_TIMES_MIN, pressSetpoints, weightRsdPct } from '../../../src/twin/predict.js';
import { coatingModel, dryingRatePerMin, lodPct, pressModel, blendRsdPct, type PressSetpoints } from '../../../src/twin/process.js';
import { INSTRUMENT_PRECISION, type PressObservation, type RecordedBatch } from '../../../src/twin/recorded.js';
import { latinHypercube, SETPOINT_IDS, type DesignSpaceRanges, type SetpointVector } from '../../../src/twin/setpoints.js';

export interface BatchPlan {
  id: string;
  setpoints: SetpointVector;
  /** Further press segments run in the same batch (agents or operators moved the press). */
  pressSegments?: PressSetpoints[];
}

/**
 * Run a batch plan on a plant with parameters `truth` and record what its
 * instruments and the lab would measure. Deterministic for a given rng state.
 */
export function recordBatch(truth: Readonly<ProcessParams>, plan: BatchPlan, rng: Rng): RecordedBatch {
  const s = plan.setpoints;
  const N = INSTRUMENT_PRECISION;
  const blendSamples: { rev: number; rsdPct: number }[] = [];
  for (let rev = 25; rev <= s['blender.TargetRevolutions'] + 1e-9; rev += 25) {
    const rsd = blendRsdPct(rev, truth.blend);
    blendSamples.push({ rev, rsdPct: Math.max(0.05, rsd * (1 + rng.normal(0, N.blendRsdRel)) + rng.normal(0, N.blendRsdAbs)) });
  }
  const k = dryingRatePerMin(s['fluidbed.InletAirTemp'], s['fluidbed.Airflow'], truth.drying);
  const lodSamples: { min: number; lodPct: number }[] = [];
  for (let t = 0; t <= 90; t += 5) {
    const lod = lodPct(t, k, truth.drying);
    lodSamples.push({ min: t, lodPct: lod + rng.normal(0, N.lodPct) });
    if (lod < 1.8) break;
  }
  const segments = [pressSetpoints(s), ...(plan.pressSegments ?? [])];
  const press = segments.map((seg): PressObservation => {
    const out = pressModel(seg, truth.press);
    const p = out.cappingPct / 100;
    const inspected = N.cappingInspected;
    const capped = Math.max(0, Math.round(inspected * p + rng.normal(0, Math.sqrt(inspected * p * (1 - p)))));
    return {
      ...seg,
      weightMg: out.tabletWeightMg + rng.normal(0, N.weightMg),
      weightRsdPct: Math.max(0.05, weightRsdPct(truth, seg.turretRpm) + rng.normal(0, N.weightRsdPct)),
      thicknessMm: out.thicknessMm + rng.normal(0, N.thicknessMm),
      hardnessN: out.hardnessN + rng.normal(0, N.hardnessN),
      cappingPct: (100 * capped) / inspected,
      ejectionN: out.ejectionForceN + rng.normal(0, N.ejectionN),
    };
  });
  const coatIn = { sprayRateGMin: s['coater.SprayRate'], inletAirC: s['coater.InletAirTemp'], airflowM3h: s['coater.Airflow'], panRpm: s['coater.PanSpeed'] };
  const coat = coatingModel(coatIn, truth.coating);
  const wgSamples: { min: number; weightGainPct: number }[] = [];
  for (let t = 10; ; t += 10) {
    const wg = coat.weightGainPctPerMin * t;
    wgSamples.push({ min: t, weightGainPct: wg + rng.normal(0, N.weightGainPct) });
    if (wg >= 3 || t >= 400) break;
  }
  const core = pressModel(segments[0]!, truth.press);
  const first = press[0]!;
  // the lab measures tensile strength by Fell–Newton from the measured hardness and thickness
  const tensileMeasured = (2 * first.hardnessN) / (Math.PI * truth.press.punchDiameterMm * first.thicknessMm);
  const wgFinal = 3 + rng.normal(0, N.weightGainPct);
  const released = dissolutionProfile(truth, core.tensileStrengthMpa, wgFinal).map((q) => q + rng.normal(0, N.dissolutionPct));
  return {
    id: plan.id,
    setpoints: { ...s },
    blend: { speedRpm: s['blender.Speed'], samples: blendSamples },
    drying: { inletC: s['fluidbed.InletAirTemp'], airflowM3h: s['fluidbed.Airflow'], samples: lodSamples },
    press,
    coating: { ...coatIn, exhaustC: coat.exhaustC + rng.normal(0, N.exhaustC), samples: wgSamples },
    dissolution: { tensileMpa: tensileMeasured, weightGainPct: wgFinal, timesMin: [...DISSOLUTION_TIMES_MIN], releasedPct: released },
  };
}

/** A random recipe inside `space`, for generating training and held-out batches. */
export function randomSetpoints(space: Readonly<DesignSpaceRanges>, rng: Rng): SetpointVector {
  const v = {} as SetpointVector;
  for (const id of SETPOINT_IDS) v[id] = rng.uniform(space[id].min, space[id].max);
  return v;
}

/**
 * `n` batch plans whose recipes and `segments` press segments each (the first
 * is the recipe's own) form a Latin hypercube over `space`, ids `<prefix>-<i>`.
 */
export function randomPlans(space: Readonly<DesignSpaceRanges>, n: number, rng: Rng, prefix = 'B', segments = 4): BatchPlan[] {
  const recipes = latinHypercube(space, n, rng);
  const extra = latinHypercube(space, n * Math.max(0, segments - 1), rng);
  return recipes.map((setpoints, i) => ({
    id: `${prefix}-${String(i + 1).padStart(3, '0')}`,
    setpoints,
    pressSegments: extra.slice(i * (segments - 1), (i + 1) * (segments - 1)).map(pressSetpoints),
  }));
}

/** Generate `n` recorded batches from a plant with parameters `truth`. */
export function recordBatches(truth: Readonly<ProcessParams>, space: Readonly<DesignSpaceRanges>, n: number, rng: Rng, prefix = 'B'): RecordedBatch[] {
  return randomPlans(space, n, rng, prefix).map((plan) => recordBatch(truth, plan, rng));
}
