/**
 * Inputs of the agent tests, built from the twin's nominal (fitted-twin)
 * parameters and the approved design space of ir-family-a × round-10mm-ff
 * (config/policy/design-space.yaml), with seeded noise only.
 */
import { createRng } from '../../src/clock.js';
import type { CompressFillInput } from '../../src/agents/compress-fill.js';
import type { DesignLimit, Reading } from '../../src/agents/types.js';
import { pressModel } from '../../src/twin/process.js';
import { NOMINAL_PARAMS, cloneParams } from '../../src/twin/params.js';

export const T0 = Date.UTC(2026, 10, 20, 9, 0, 0);
export const PARAMS = cloneParams(NOMINAL_PARAMS);
export const TWIN = { id: 'process-twin-v1', version: 1 } as const;

/** ir-family-a × round-10mm-ff, as the bundle approves it. */
export const DS: Record<string, DesignLimit> = {
  'blender.TargetRevolutions': { min: 200, max: 600, unit: '{rev}', maxStep: 50 },
  'fluidbed.InletAirTemp': { min: 55, max: 68, unit: 'Cel', maxStep: 2 },
  'fluidbed.Airflow': { min: 120, max: 380, unit: 'm3/h', maxStep: 30 },
  'press.FillDepth': { min: 7.0, max: 10.5, unit: 'mm', maxStep: 0.3 },
  'press.MainForce': { min: 8, max: 18, unit: 'kN', maxStep: 1.5 },
  'press.PreForce': { min: 1.5, max: 4, unit: 'kN', maxStep: 0.5 },
  'press.TurretSpeed': { min: 30, max: 70, unit: '{rev}/min', maxStep: 5 },
  'coater.SprayRate': { min: 40, max: 220, unit: 'g/min', maxStep: 20 },
  'coater.InletAirTemp': { min: 50, max: 65, unit: 'Cel', maxStep: 2 },
  'coater.Airflow': { min: 800, max: 2400, unit: 'm3/h', maxStep: 200 },
  'coater.PanSpeed': { min: 4, max: 14, unit: '{rev}/min', maxStep: 1 },
  'vision.RejectThreshold': { min: 40, max: 90, unit: '%', maxStep: 5 },
};

export function limit(id: string): DesignLimit {
  return { ...DS[id]! };
}

/** Readings of one tag, `stepMs` apart, ending at `end`. */
export function series(tag: string, unit: string, values: readonly number[], end = T0, stepMs = 10_000): Reading[] {
  return values.map((value, i) => ({ tag, value, unit, at: end - (values.length - 1 - i) * stepMs }));
}

/** `n` values around `mean` with relative scatter `rsdPct`, from a seed. */
export function noisy(n: number, mean: number, rsdPct: number, seed: number): number[] {
  const rng = createRng(seed);
  return Array.from({ length: n }, () => mean * (1 + (rsdPct / 100) * rng.normal()));
}

export type PressVec = CompressFillInput['current'];

/**
 * A compress_fill input whose measurements are what the nominal press makes at
 * `truth` setpoints (plus seeded scatter) while the twin is told the line runs
 * at `current` — equal unless a test wants a bias.
 */
export function pressInput(current: PressVec, over: Partial<CompressFillInput> = {}, truth: PressVec = current, seed = 1): CompressFillInput {
  const o = pressModel({ fillDepthMm: truth['press.FillDepth'], mainForceKn: truth['press.MainForce'], preForceKn: truth['press.PreForce'], turretRpm: truth['press.TurretSpeed'] }, PARAMS.press);
  return {
    now: T0,
    seed: 42,
    weights: series('press.TabletWeight', 'mg', noisy(20, o.tabletWeightMg, 1, seed)),
    hardness: series('press.Hardness', 'N', noisy(10, o.hardnessN, 3, seed + 1)),
    capping: series('press.CappingRate', '%', noisy(5, o.cappingPct, 10, seed + 2)),
    current,
    targets: { weightMg: 300, weightTolerancePct: 5, hardnessMinN: 80, hardnessMaxN: 150 },
    cappingThresholdPct: 1.5,
    model: { ...TWIN },
    params: cloneParams(PARAMS),
    validRanges: {
      'press.FillDepth': { min: 6.5, max: 11, unit: 'mm' },
      'press.MainForce': { min: 6, max: 20, unit: 'kN' },
      'press.PreForce': { min: 1, max: 5, unit: 'kN' },
      'press.TurretSpeed': { min: 20, max: 75, unit: '{rev}/min' },
    },
    designSpace: {
      'press.FillDepth': limit('press.FillDepth'),
      'press.MainForce': limit('press.MainForce'),
      'press.PreForce': limit('press.PreForce'),
      'press.TurretSpeed': limit('press.TurretSpeed'),
    },
    ...over,
  };
}

export const NOMINAL_PRESS: PressVec = { 'press.FillDepth': 8.5, 'press.MainForce': 12, 'press.PreForce': 2.5, 'press.TurretSpeed': 40 };

/** Every number in a JSON value, with its path. */
export function numbersOf(x: unknown, path = '$'): { path: string; value: number }[] {
  if (typeof x === 'number') return [{ path, value: x }];
  if (Array.isArray(x)) return x.flatMap((v, i) => numbersOf(v, `${path}[${i}]`));
  if (x !== null && typeof x === 'object') return Object.entries(x).flatMap(([k, v]) => numbersOf(v, `${path}.${k}`));
  return [];
}
