/**
 * What changed between two reports' `data`, as a validation lead compares two configuration specifications: every
 * value added, removed or changed, by its path (`configuration.equipment[press].tags[MainForce].range.max: 40 → 45`).
 *
 * A small recursive diff of our own, not a library: microdiff (zero dependencies, well kept) was the candidate, but it
 * compares arrays by position, so one equipment added at the top of the list would show every equipment after it as
 * changed. Here a list whose elements are objects with a unique `id` (or else `name`) is compared element by element
 * by that key — equipment, tags, tenants, connections, users — and any other list is one value (an allow-list that
 * gained a setpoint shows as the list before → the list after). Pure: no I/O, the same changes in the same order for
 * the same inputs.
 */
import type { Json } from '../audit/entry.js';

export interface DataChange {
  op: 'added' | 'removed' | 'changed';
  /** `a.b[key].c`: `[key]` is the element of a list with that id (or name), `["x.y"]` a key that is not a plain name. */
  path: string;
  /** The value before (changed, removed). */
  from?: Json;
  /** The value after (added, changed). */
  to?: Json;
}

type Obj = { [key: string]: Json };
const isObj = (v: Json | undefined): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The key elements of `list` are told apart by (`id`, else `name`), or null when they are not all objects with a unique one. */
function listKey(list: readonly Json[]): 'id' | 'name' | null {
  if (list.length === 0 || !list.every(isObj)) return null;
  for (const k of ['id', 'name'] as const) {
    const keys = list.map((e) => (e as Obj)[k]);
    if (keys.every((x) => typeof x === 'string' && x.length > 0) && new Set(keys).size === keys.length) return k;
  }
  return null;
}

const PLAIN = /^[A-Za-z_][A-Za-z0-9_]*$/;
const member = (path: string, key: string): string => (PLAIN.test(key) ? (path ? `${path}.${key}` : key) : `${path}[${JSON.stringify(key)}]`);
const same = (a: Json, b: Json): boolean => JSON.stringify(a) === JSON.stringify(b);

function walk(a: Json, b: Json, path: string, out: DataChange[]): void {
  if (isObj(a) && isObj(b)) {
    for (const k of [...new Set([...Object.keys(a), ...Object.keys(b)])].sort()) {
      const p = member(path, k);
      if (!(k in b)) out.push({ op: 'removed', path: p, from: a[k]! });
      else if (!(k in a)) out.push({ op: 'added', path: p, to: b[k]! });
      else walk(a[k]!, b[k]!, p, out);
    }
    return;
  }
  if (Array.isArray(a) && Array.isArray(b)) {
    const ka = listKey(a);
    const kb = listKey(b);
    const key = a.length === 0 ? kb : b.length === 0 ? ka : ka === kb ? ka : null;
    if (key) {
      const before = new Map(a.map((e) => [(e as Obj)[key] as string, e]));
      const after = new Map(b.map((e) => [(e as Obj)[key] as string, e]));
      // in the order of the list after, then what it no longer has, in the order it had them
      for (const [k, e] of after) {
        const p = `${path}[${k}]`;
        const old = before.get(k);
        if (old === undefined) out.push({ op: 'added', path: p, to: e });
        else walk(old, e, p, out);
      }
      for (const [k, e] of before) if (!after.has(k)) out.push({ op: 'removed', path: `${path}[${k}]`, from: e });
      return;
    }
  }
  if (!same(a, b)) out.push({ op: 'changed', path: path || '(root)', from: a, to: b });
}

/** Every difference from `before` to `after`, in a stable order (keys sorted, keyed lists in their order after). */
export function diffData(before: { [key: string]: Json }, after: { [key: string]: Json }): DataChange[] {
  const out: DataChange[] = [];
  walk(before, after, '', out);
  return out;
}

/** A value as one short line: strings bare, the rest as JSON, cut at `max` characters. */
export function shownValue(v: Json | undefined, max = 160): string {
  const s = v === undefined ? '(none)' : typeof v === 'string' ? v : JSON.stringify(v);
  return s.length > max ? `${s.slice(0, max - 1)}…` : s;
}

/** One change as a line: `~ path: old → new`, `+ path: value`, `- path: value`. */
export function changeLine(c: DataChange): string {
  switch (c.op) {
    case 'changed': return `~ ${c.path}: ${shownValue(c.from)} → ${shownValue(c.to)}`;
    case 'added': return `+ ${c.path}: ${shownValue(c.to)}`;
    case 'removed': return `- ${c.path}: ${shownValue(c.from)}`;
  }
}
