/**
 * What every agent needs and nothing else: input checks that name the bad
 * field, small statistics, and {@link plain}, the last step of every agent,
 * which turns an output into JSON-safe data so that a recorded call replays
 * to a deep-equal (and byte-identical JSON) output.
 */
import { LkError } from '../errors.js';
import type { DesignLimit, ModelRef, Reading } from './types.js';

/** `now` must be finite epoch ms (replay feeds it back). Throws LK_VALIDATION. */
export function checkNow(now: unknown): number {
  if (typeof now !== 'number' || !Number.isFinite(now)) throw new LkError('LK_VALIDATION', 'agent input `now` must be finite epoch milliseconds', { path: 'now' });
  return now;
}

/** A finite number at `path`. Throws LK_VALUE_INVALID naming the path. */
export function finite(path: string, x: unknown): number {
  if (typeof x !== 'number' || !Number.isFinite(x)) throw new LkError('LK_VALUE_INVALID', `${path} must be a finite number`, { path });
  return x;
}

/** A finite number > 0 at `path`. Throws LK_VALUE_INVALID. */
export function positive(path: string, x: unknown): number {
  const v = finite(path, x);
  if (!(v > 0)) throw new LkError('LK_VALUE_INVALID', `${path} must be positive`, { path });
  return v;
}

/** Readings with finite values and times. Throws LK_VALIDATION (not an array) or LK_VALUE_INVALID. */
export function checkReadings(path: string, rs: unknown): readonly Reading[] {
  if (!Array.isArray(rs)) throw new LkError('LK_VALIDATION', `${path} must be an array of readings`, { path });
  rs.forEach((r: Partial<Reading> | null, i) => {
    if (typeof r !== 'object' || r === null) throw new LkError('LK_VALIDATION', `${path}[${i}] must be a reading`, { path: `${path}[${i}]` });
    finite(`${path}[${i}].value`, r.value);
    finite(`${path}[${i}].at`, r.at);
  });
  return rs as Reading[];
}

/**
 * A design limit with min ≤ max and a positive max step, in `unit` when given (the setpoint's own UCUM
 * unit: the bundle converts limits once, so another unit here is a wiring error).
 * Throws LK_VALIDATION, LK_VALUE_INVALID or LK_UNIT_INCOMPATIBLE.
 */
export function checkLimit(path: string, l: Partial<DesignLimit> | undefined, unit?: string): DesignLimit {
  if (typeof l !== 'object' || l === null) throw new LkError('LK_VALIDATION', `${path} must be a design limit { min, max, unit, maxStep }`, { path });
  const min = finite(`${path}.min`, l.min);
  const max = finite(`${path}.max`, l.max);
  const maxStep = positive(`${path}.maxStep`, l.maxStep);
  if (min > max) throw new LkError('LK_VALIDATION', `${path}: min ${min} > max ${max}`, { path });
  if (typeof l.unit !== 'string') throw new LkError('LK_VALIDATION', `${path}.unit must be a UCUM code`, { path: `${path}.unit` });
  if (unit !== undefined && l.unit !== unit) throw new LkError('LK_UNIT_INCOMPATIBLE', `${path} is in ${l.unit}, the setpoint in ${unit}`, { path: `${path}.unit`, unit: l.unit });
  return { min, max, unit: l.unit, maxStep };
}

/** A model reference with a string id and a positive integer version. Throws LK_VALIDATION. */
export function checkModel(path: string, m: Partial<ModelRef> | undefined): ModelRef {
  if (typeof m !== 'object' || m === null || typeof m.id !== 'string' || m.id === '' || !Number.isSafeInteger(m.version) || (m.version as number) < 1) {
    throw new LkError('LK_VALIDATION', `${path} must be a model reference { id, version }`, { path });
  }
  return { id: m.id, version: m.version as number };
}

export function mean(xs: readonly number[]): number {
  let s = 0;
  for (const x of xs) s += x;
  return s / xs.length;
}

/** Sample standard deviation (n − 1); 0 for fewer than two values. */
export function sampleSd(xs: readonly number[]): number {
  if (xs.length < 2) return 0;
  const m = mean(xs);
  let ss = 0;
  for (const x of xs) ss += (x - m) ** 2;
  return Math.sqrt(ss / (xs.length - 1));
}

export function clamp(x: number, lo: number, hi: number): number {
  return x < lo ? lo : x > hi ? hi : x;
}

/** Round to a multiple of `step` (the resolution a setpoint is written at), without -0. */
export function roundTo(x: number, step: number): number {
  const r = Math.round(x / step) * step;
  // the multiplication leaves binary noise (8.299999…); a decimal round trip removes it
  const digits = Math.max(0, -Math.floor(Math.log10(step)));
  return Number(r.toFixed(digits)) + 0;
}

/** Fixed-point text for reasoning traces (deterministic on every platform). */
export function fmt(x: number, digits = 2): string {
  return (Math.abs(x) < 0.5 * 10 ** -digits ? 0 : x).toFixed(digits);
}

/**
 * A deep copy of `x` that is plain JSON data: `-0` becomes 0, object keys with
 * `undefined` values are dropped. It shares nothing with the agent's input.
 * @throws LkError(LK_INTERNAL) naming the path of a non-finite number, an
 *   `undefined` array element, a function, or a non-plain object (a class
 *   instance, a typed array): an agent must never produce one, and a replay
 *   could not reproduce it.
 */
export function plain<T>(x: T): T {
  return copy(x, '$') as T;
}

function copy(x: unknown, path: string): unknown {
  if (x === null || typeof x === 'string' || typeof x === 'boolean') return x;
  if (typeof x === 'number') {
    if (!Number.isFinite(x)) throw new LkError('LK_INTERNAL', `agent output ${path} is not a finite number`, { path });
    return x + 0;
  }
  if (Array.isArray(x)) {
    return x.map((v: unknown, i) => {
      if (v === undefined) throw new LkError('LK_INTERNAL', `agent output ${path}[${i}] is undefined`, { path: `${path}[${i}]` });
      return copy(v, `${path}[${i}]`);
    });
  }
  if (typeof x === 'object') {
    const proto = Object.getPrototypeOf(x) as unknown;
    if (proto !== Object.prototype && proto !== null) throw new LkError('LK_INTERNAL', `agent output ${path} is not a plain object`, { path });
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(x)) {
      if (v === undefined) continue;
      Object.defineProperty(out, k, { value: copy(v, `${path}.${k}`), enumerable: true, writable: true, configurable: true });
    }
    return out;
  }
  throw new LkError('LK_INTERNAL', `agent output ${path} is a ${typeof x}, not JSON data`, { path });
}
