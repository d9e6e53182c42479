/** JSON for audit entries and state rows written by the engine. */
import type { Json } from '../audit/index.js';

/** Replace what JSON cannot hold (NaN, Infinity, undefined, class instances) so an audit entry is always writable. */
export function json(v: unknown): Json {
  if (v === null || typeof v === 'string' || typeof v === 'boolean') return v;
  if (typeof v === 'number') return Number.isFinite(v) ? v : String(v);
  if (Array.isArray(v)) return v.map(json);
  if (typeof v === 'object') {
    const out: Record<string, Json> = {};
    const o = v as Record<string, unknown>;
    // own enumerable string keys, as Object.entries gives them, without a [key, value] array per property
    for (const k of Object.keys(o)) {
      const x = o[k];
      if (x !== undefined) out[k] = json(x);
    }
    return out;
  }
  return String(v);
}
