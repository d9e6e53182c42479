/**
 * The setpoint vector the twin rehearses: one value per writable tag of the
 * line that the process relations depend on, keyed by the site's tag id
 * (`<equipment>.<Tag>`, config/site.yaml) so that a candidate maps 1:1 onto
 * guarded writes. Units are UCUM, as in the site configuration.
 */
import type { Rng } from '../clock.js';
import { LkError } from '../errors.js';

export const SETPOINTS = Object.freeze({
  'blender.Speed': { unit: '{rev}/min', label: 'blender speed' },
  'blender.TargetRevolutions': { unit: '{rev}', label: 'blend revolutions' },
  'fluidbed.InletAirTemp': { unit: 'Cel', label: 'dryer inlet air temperature' },
  'fluidbed.Airflow': { unit: 'm3/h', label: 'dryer airflow' },
  'press.FillDepth': { unit: 'mm', label: 'fill depth' },
  'press.MainForce': { unit: 'kN', label: 'main compression force' },
  'press.PreForce': { unit: 'kN', label: 'pre-compression force' },
  'press.TurretSpeed': { unit: '{rev}/min', label: 'turret speed' },
  'coater.SprayRate': { unit: 'g/min', label: 'spray rate' },
  'coater.InletAirTemp': { unit: 'Cel', label: 'coater inlet air temperature' },
  'coater.Airflow': { unit: 'm3/h', label: 'coater airflow' },
  'coater.PanSpeed': { unit: '{rev}/min', label: 'pan speed' },
} as const);

export type SetpointId = keyof typeof SETPOINTS;
export const SETPOINT_IDS = Object.freeze(Object.keys(SETPOINTS) as SetpointId[]);

/** A full setpoint vector, in the units of {@link SETPOINTS}. */
export type SetpointVector = Record<SetpointId, number>;

export interface Range {
  min: number;
  max: number;
  unit: string;
}

/** Approved limits per setpoint (the policy engine's design space, as a plain map so the twin stays pure). */
export type DesignSpaceRanges = Record<SetpointId, Range>;

/**
 * Built-in design space for the default product family (ir-family-a, 10 mm
 * round flat-faced tooling), from the typical ranges of PROCESS.md. Used by
 * the CLI until the policy engine's `DesignSpace.approved(product, tooling)`
 * is connected; always narrower than the tag ranges of config/site.yaml.
 */
export const DEFAULT_DESIGN_SPACE: Readonly<DesignSpaceRanges> = Object.freeze({
  'blender.Speed': { min: 10, max: 30, unit: '{rev}/min' },
  'blender.TargetRevolutions': { min: 150, max: 600, unit: '{rev}' },
  'fluidbed.InletAirTemp': { min: 50, max: 70, unit: 'Cel' },
  'fluidbed.Airflow': { min: 150, max: 400, unit: 'm3/h' },
  'press.FillDepth': { min: 7.5, max: 9.5, unit: 'mm' },
  'press.MainForce': { min: 8, max: 22, unit: 'kN' },
  'press.PreForce': { min: 1, max: 5, unit: 'kN' },
  'press.TurretSpeed': { min: 20, max: 70, unit: '{rev}/min' },
  'coater.SprayRate': { min: 60, max: 200, unit: 'g/min' },
  'coater.InletAirTemp': { min: 50, max: 70, unit: 'Cel' },
  'coater.Airflow': { min: 800, max: 2000, unit: 'm3/h' },
  'coater.PanSpeed': { min: 4, max: 15, unit: '{rev}/min' },
});

/** Centre of a design space: the reference recipe the dissolution reference profile is computed at. */
export function centreOf(space: Readonly<DesignSpaceRanges>): SetpointVector {
  const out = {} as SetpointVector;
  for (const id of SETPOINT_IDS) out[id] = (space[id].min + space[id].max) / 2;
  return out;
}

/**
 * Check a design-space map: every setpoint present, finite, min ≤ max, in the
 * setpoint's own unit. Throws LK_VALIDATION (missing/unknown key, min > max),
 * LK_VALUE_INVALID (non-finite bound) or LK_UNIT_INCOMPATIBLE (wrong unit).
 */
export function checkDesignSpace(space: unknown): DesignSpaceRanges {
  if (typeof space !== 'object' || space === null) throw new LkError('LK_VALIDATION', 'design space must be an object of { min, max, unit } per setpoint');
  const rec = space as Record<string, unknown>;
  for (const key of Object.keys(rec)) {
    // own keys only: `constructor` or `__proto__` are "in" every object
    if (!Object.hasOwn(SETPOINTS, key)) throw new LkError('LK_VALIDATION', `design space: unknown setpoint "${key}"`, { setpoint: key });
  }
  const out = {} as DesignSpaceRanges;
  for (const id of SETPOINT_IDS) {
    const r = rec[id] as Partial<Range> | undefined;
    if (!r || typeof r !== 'object') throw new LkError('LK_VALIDATION', `design space: missing setpoint "${id}"`, { setpoint: id });
    if (typeof r.min !== 'number' || typeof r.max !== 'number' || !Number.isFinite(r.min) || !Number.isFinite(r.max)) {
      throw new LkError('LK_VALUE_INVALID', `design space: ${id} needs finite numeric min and max`, { setpoint: id });
    }
    if (r.min > r.max) throw new LkError('LK_VALIDATION', `design space: ${id} min ${r.min} > max ${r.max}`, { setpoint: id });
    const unit = r.unit ?? SETPOINTS[id].unit;
    if (unit !== SETPOINTS[id].unit) {
      throw new LkError('LK_UNIT_INCOMPATIBLE', `design space: ${id} is in ${SETPOINTS[id].unit}, got ${unit}`, { setpoint: id, unit });
    }
    out[id] = { min: r.min, max: r.max, unit };
  }
  return out;
}

/**
 * Check a design space against the instrument ranges (EURange of the configured tags, in each setpoint's unit):
 * a what-if design space may be wider than the approved one, never wider than what the equipment accepts.
 * Setpoints without an instrument range are not checked.
 * @throws LkError LK_PLC_OUT_OF_RANGE naming the setpoint, its bounds and the instrument range
 */
export function checkWithinInstruments(space: Readonly<DesignSpaceRanges>, instruments: Readonly<Partial<DesignSpaceRanges>>): void {
  for (const id of SETPOINT_IDS) {
    const r = instruments[id];
    const s = space[id];
    if (!r) continue;
    if (s.min < r.min || s.max > r.max) {
      throw new LkError('LK_PLC_OUT_OF_RANGE', `design space: ${id} ${s.min}…${s.max} ${s.unit} is outside the instrument range ${r.min}…${r.max} ${r.unit} of the configuration`, {
        setpoint: id, min: s.min, max: s.max, instrumentMin: r.min, instrumentMax: r.max, unit: r.unit,
      });
    }
  }
}

/** Check a setpoint vector: every setpoint present and finite. Throws LK_VALIDATION or LK_VALUE_INVALID. */
export function checkSetpoints(v: unknown): SetpointVector {
  if (typeof v !== 'object' || v === null) throw new LkError('LK_VALIDATION', 'setpoint vector must be an object');
  const rec = v as Record<string, unknown>;
  const out = {} as SetpointVector;
  for (const key of Object.keys(rec)) {
    // own keys only: `constructor` or `__proto__` are "in" every object
    if (!Object.hasOwn(SETPOINTS, key)) throw new LkError('LK_VALIDATION', `unknown setpoint "${key}"`, { setpoint: key });
  }
  for (const id of SETPOINT_IDS) {
    const x = rec[id];
    if (x === undefined) throw new LkError('LK_VALIDATION', `missing setpoint "${id}"`, { setpoint: id });
    if (typeof x !== 'number' || !Number.isFinite(x)) throw new LkError('LK_VALUE_INVALID', `${id} must be a finite number`, { setpoint: id });
    out[id] = x;
  }
  return out;
}

/** Setpoints of `v` outside `ranges` (inclusive bounds), with the range each breaks. */
export function outOfRange(v: Readonly<SetpointVector>, ranges: Readonly<Partial<DesignSpaceRanges>>): { setpoint: SetpointId; value: number; min: number; max: number; unit: string }[] {
  const out: { setpoint: SetpointId; value: number; min: number; max: number; unit: string }[] = [];
  for (const id of SETPOINT_IDS) {
    const r = ranges[id];
    if (!r) continue;
    const x = v[id];
    // a relative tolerance so that a range learnt from data includes its own end points after a JSON round trip
    const tol = 1e-9 * Math.max(1, Math.abs(r.max), Math.abs(r.min));
    if (x < r.min - tol || x > r.max + tol) out.push({ setpoint: id, value: x, min: r.min, max: r.max, unit: r.unit });
  }
  return out;
}

/**
 * `n` setpoint vectors by Latin hypercube sampling of `space`: each setpoint's
 * range is cut into n strata and every stratum is used exactly once, so even a
 * few samples reach the edges of the space. Deterministic for the rng state.
 */
export function latinHypercube(space: Readonly<DesignSpaceRanges>, n: number, rng: Rng): SetpointVector[] {
  const out: SetpointVector[] = Array.from({ length: n }, () => ({}) as SetpointVector);
  for (const id of SETPOINT_IDS) {
    const perm = Array.from({ length: n }, (_, i) => i);
    for (let i = n - 1; i > 0; i--) {
      const j = rng.int(0, i);
      const t = perm[i]!;
      perm[i] = perm[j]!;
      perm[j] = t;
    }
    const { min, max } = space[id];
    for (let i = 0; i < n; i++) out[i]![id] = min + ((perm[i]! + rng.next()) / n) * (max - min);
  }
  return out;
}

/** `space` widened by `fraction` of its width on each side (a knowledge space around a design space). */
export function widen(space: Readonly<DesignSpaceRanges>, fraction: number): DesignSpaceRanges {
  const out = {} as DesignSpaceRanges;
  for (const id of SETPOINT_IDS) {
    const r = space[id];
    const w = (r.max - r.min) * fraction;
    out[id] = { min: Math.max(r.min - w, r.min > 0 ? r.min * 0.5 : r.min - w), max: r.max + w, unit: r.unit };
  }
  return out;
}
