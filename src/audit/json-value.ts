/**
 * What a JSON value in an audit entry may be: one that has a single canonical form (RFC 8785) to hash. Shared by
 * the entry's plain checks (entry.ts) and its schema (entry-schema.ts), without either's imports.
 */
export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

export const MAX_DEPTH = 32;
export const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** Why `v` is not a JSON value we can hash reproducibly, or undefined when it is. */
export function jsonProblem(v: unknown, depth = 0): string | undefined {
  if (depth > MAX_DEPTH) return `nested deeper than ${MAX_DEPTH}`;
  if (v === null || typeof v === 'boolean') return undefined;
  if (typeof v === 'number') return Number.isFinite(v) ? undefined : `number ${String(v)} is not finite`;
  if (typeof v === 'string') return LONE_SURROGATE.test(v) ? 'string has a lone surrogate' : undefined;
  if (Array.isArray(v)) {
    for (const x of v) {
      if (x === undefined) return 'array holds undefined';
      const p = jsonProblem(x, depth + 1);
      if (p) return p;
    }
    return undefined;
  }
  if (typeof v === 'object') {
    const proto = Object.getPrototypeOf(v) as unknown;
    if (proto !== Object.prototype && proto !== null) return 'only plain objects are allowed';
    for (const [k, x] of Object.entries(v)) {
      if (LONE_SURROGATE.test(k)) return 'key has a lone surrogate';
      if (x === undefined) continue;
      const p = jsonProblem(x, depth + 1);
      if (p) return `${k}: ${p}`;
    }
    return undefined;
  }
  return `${typeof v} is not a JSON type`;
}
