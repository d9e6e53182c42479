/**
 * Requested values → a finite number in the setpoint's unit (pure). Accepts a
 * number (already in the setpoint's unit), a string `"12.5 kN"` /
 * `"140 [degF]"`, or `{ value, unit }`. Everything else — NaN, Infinity,
 * booleans, null, a bare numeric string without a unit, an unknown or
 * incompatible unit — is refused with a reason code, never coerced.
 */
import type { ReasonCode, RequestedValue } from '../domain/policy.js';
import { type BundleIndex, conversionFor } from './bundle.js';

export type ValueResult = { readonly ok: true; readonly value: number } | { readonly ok: false; readonly reason: ReasonCode };

const NUMBER_THEN_UNIT = /^([+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?)\s*(\S+)?$/;
const NON_FINITE_WORD = /^[+-]?(?:nan|inf|infinity)\b/i;

/** Split a value into a number and a unit (null = the setpoint's own unit). */
export function parseRequestedValue(v: unknown): { ok: true; value: number; unit: string | null } | { ok: false; reason: ReasonCode } {
  if (typeof v === 'number') return Number.isFinite(v) ? { ok: true, value: v, unit: null } : { ok: false, reason: 'VALUE_NOT_FINITE' };
  if (typeof v === 'string') {
    const s = v.trim();
    if (s.length > 96) return { ok: false, reason: 'VALUE_NOT_NUMERIC' };
    const m = NUMBER_THEN_UNIT.exec(s);
    if (!m) return { ok: false, reason: NON_FINITE_WORD.test(s) ? 'VALUE_NOT_FINITE' : 'VALUE_NOT_NUMERIC' };
    const n = Number(m[1]);
    if (!Number.isFinite(n)) return { ok: false, reason: 'VALUE_NOT_FINITE' };
    // a bare number in a string is ambiguous (which unit?): refuse rather than guess
    if (m[2] === undefined) return { ok: false, reason: 'UNIT_UNKNOWN' };
    return { ok: true, value: n, unit: m[2] };
  }
  if (typeof v === 'object' && v !== null && !Array.isArray(v)) {
    const o = v as { value?: unknown; unit?: unknown };
    if (typeof o.value !== 'number') return { ok: false, reason: 'VALUE_NOT_NUMERIC' };
    if (!Number.isFinite(o.value)) return { ok: false, reason: 'VALUE_NOT_FINITE' };
    if (typeof o.unit !== 'string') return { ok: false, reason: 'UNIT_UNKNOWN' };
    return { ok: true, value: o.value, unit: o.unit.trim() };
  }
  return { ok: false, reason: 'VALUE_NOT_NUMERIC' };
}

/** Parse and convert a requested value to `setpointUnit` with the bundle's compiled conversions. */
export function toSetpointUnit(index: BundleIndex, v: RequestedValue | unknown, setpointUnit: string): ValueResult {
  const p = parseRequestedValue(v);
  if (!p.ok) return p;
  if (p.unit === null || p.unit === setpointUnit) return { ok: true, value: p.value };
  const c = conversionFor(index, p.unit, setpointUnit);
  if (c.kind === 'unknown') return { ok: false, reason: 'UNIT_UNKNOWN' };
  if (c.kind === 'incompatible') return { ok: false, reason: 'UNIT_INCOMPATIBLE' };
  const y = c.a * p.value + c.b;
  return Number.isFinite(y) ? { ok: true, value: y } : { ok: false, reason: 'VALUE_NOT_FINITE' };
}

/**
 * Tolerance on range and step comparisons: a bound written in one unit and
 * requested in another (25 kN vs 25000 N) must compare equal despite the
 * last-bit error of the affine conversion.
 */
export function boundEpsilon(min: number, max: number): number {
  return 1e-9 * Math.max(1, Math.abs(min), Math.abs(max));
}
