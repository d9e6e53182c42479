/**
 * What the simulated plant "really" is: hidden true process parameters
 * (nominal values perturbed by the seed, so a fitted twin has something to
 * learn), the default last known-good (LKG) recipes, and instrument ranges of
 * measurements the configuration gives no range for.
 */
import { createRng } from '../../src/clock.js';
import { NOMINAL_PARAMS, type ProcessParams } from '../../src/twin/params.js';
import { perturbParams } from './ground/truth.js';

export interface NirTruth {
  /** True potency of the batch, % label claim. */
  potencyPct: number;
  /** Prediction error (RMSEP) of the analyser's PLS model, % label claim. */
  rmsepPct: number;
}

export interface VisionTruth {
  /** Defects other than capping (chipping, coating, foreign particles), % of tablets. */
  baseDefectPct: number;
}

/**
 * The plant's hidden parameters: the process relations' parameters from
 * ground/truth.ts `perturbParams` (the one source shared with the batch
 * generator the default twin is fitted on), plus the instruments' own truths. Read them in tests to
 * check that a fit moved toward them; never from production code.
 */
export interface TrueParameters extends Readonly<ProcessParams> {
  readonly seed: number;
  readonly nir: Readonly<NirTruth>;
  readonly vision: Readonly<VisionTruth>;
}

/**
 * The true parameters for a seed. A site whose tooling is not the nominal
 * 10 mm punch gets its own diameter (geometry is known exactly, not perturbed).
 */
export function trueParameters(seed: number, punchDiameterMm?: number): TrueParameters {
  const p = perturbParams(NOMINAL_PARAMS, seed);
  if (punchDiameterMm !== undefined) p.press.punchDiameterMm = punchDiameterMm;
  // a stream of its own, so the shared process parameters stay bit-identical to the twin's
  const rng = createRng(seed ^ 0x5eed);
  const nir: NirTruth = { potencyPct: 100 + rng.normal(0, 1.0), rmsepPct: 1.2 };
  const vision: VisionTruth = { baseDefectPct: 0.3 * Math.exp(rng.normal(0, 0.2)) };
  return deepFreeze({ ...p, seed, nir, vision });
}

function deepFreeze<T>(o: T): T {
  if (o && typeof o === 'object') {
    Object.freeze(o);
    for (const v of Object.values(o as object)) deepFreeze(v);
  }
  return o;
}

/**
 * The default LKG recipe of each equipment type: a validated, middle-of-the
 * design-space setpoint vector (≈300 mg, ≈120 N tablets). A setpoint the
 * table does not know starts at the middle of its configured range.
 */
export const DEFAULT_LKG_SETPOINTS: Readonly<Record<string, Readonly<Record<string, number>>>> = Object.freeze({
  press: { FillDepth: 8.5, MainForce: 12, PreForce: 2.5, TurretSpeed: 40 },
  coater: { SprayRate: 120, InletAirTemp: 60, Airflow: 1500, PanSpeed: 8 },
  fluidbed: { InletAirTemp: 60, Airflow: 250 },
  blender: { Speed: 20, TargetRevolutions: 300 },
  nir: { ScanInterval: 10 },
  vision: { RejectThreshold: 50 },
  plc: { LineSpeedFactor: 100 },
});

/** Recipe number of every default LKG recipe. */
export const DEFAULT_LKG_NUMBER = 7;

/** `LKG-<equipment>-0007`: the OPC UA form of a recipe number. */
export function lkgRecipeId(equipmentId: string, recipeNumber: number): string {
  return `LKG-${equipmentId}-${String(recipeNumber).padStart(4, '0')}`;
}

/**
 * Instrument range (OPC UA EURange) of measurements, which the configuration
 * does not state. AnalogItemType makes EURange mandatory; these are the spans
 * of the instruments, not limits of the process.
 */
export const MEASUREMENT_RANGES: Readonly<Record<string, { low: number; high: number }>> = Object.freeze({
  'press.TabletWeight': { low: 0, high: 1000 },
  'press.Hardness': { low: 0, high: 500 },
  'press.Thickness': { low: 0, high: 20 },
  'press.CappingRate': { low: 0, high: 100 },
  'press.EjectionForce': { low: 0, high: 5000 },
  'press.DwellTime': { low: 0, high: 1000 },
  'press.Output': { low: 0, high: 1_000_000 },
  'coater.ExhaustTemp': { low: -20, high: 120 },
  'coater.BedTemp': { low: -20, high: 120 },
  'coater.WeightGain': { low: 0, high: 100 },
  'coater.WettingRatio': { low: 0, high: 100 },
  'nir.Potency': { low: 0, high: 200 },
  'nir.BlendConcentration': { low: 0, high: 200 },
  'vision.DefectRate': { low: 0, high: 100 },
});

/** EURange of a measurement by equipment type and tag name; a wide default for unknown ones. */
export function measurementRange(equipmentType: string, tag: string): { low: number; high: number } {
  return MEASUREMENT_RANGES[`${equipmentType}.${tag}`] ?? { low: -1e9, high: 1e9 };
}
