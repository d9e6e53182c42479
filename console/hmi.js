// What an operator's screen says about a reading besides its value: how old it is and whether it is outside the
// limits in force. Both are judged on linekeeper's clock and data only — a value's age is the view's `at` minus the
// value's `at` (when the daemon received it), never the browser's clock, which may be minutes or days away from
// the daemon's (a paced virtual line in a test, a PC whose clock drifts on the shop floor). Every judgement is said
// in words with a glyph; colour only repeats it.
import { numberIn, unitLabel } from './units.js';

/** The key process values of the line, by the role their tag plays (src/domain/roles.ts), in the page's order. */
export const KEY_VALUES = Object.freeze([
  { role: 'press.TabletWeight', title: 'Tablet weight', unit: 'press' },
  { role: 'press.Hardness', title: 'Hardness', unit: 'press' },
  { role: 'press.Thickness', title: 'Thickness', unit: 'press' },
  { role: 'press.CappingRate', title: 'Capping rate', unit: 'press' },
  { role: 'fluidbed.Lod', title: 'LOD', unit: 'dryer' },
]);

/** The age of a reading in ms on the daemon's clock (view.at − value.at), or null when either is missing. */
export function ageMs(viewAt, valueAt) {
  const a = Date.parse(viewAt ?? '');
  const b = Date.parse(valueAt ?? '');
  return Number.isFinite(a) && Number.isFinite(b) ? Math.max(0, a - b) : null;
}

/** An age as people say it: "0 s", "14 s", "3 min 5 s", "2 h 4 min". */
export function ageText(ms) {
  if (ms === null || ms === undefined) return 'age unknown';
  const s = Math.floor(ms / 1000);
  if (s < 60) return `${s} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m} min ${s % 60} s`;
  const h = Math.floor(m / 60);
  return h < 48 ? `${h} h ${m % 60} min` : `${Math.floor(h / 24)} d ${h % 24} h`;
}

/** Is a reading of this age stale (older than the daemon's staleAfterMs)? */
export const isStale = (ms, staleAfterMs) => ms !== null && ms > (staleAfterMs ?? 10_000);

/** A limit as the record states it: its own digits (not a reading's precision), the unit as people write it. */
export const limitNum = (v) => String(+v.toPrecision(6));
export function limitText(l) {
  if (!l) return 'no limit';
  const u = unitLabel(l.unit);
  const tail = u ? ` ${u}` : '';
  if (l.min !== undefined && l.max !== undefined) return `${limitNum(l.min)}–${limitNum(l.max)}${tail}`;
  if (l.max !== undefined) return `≤ ${limitNum(l.max)}${tail}`;
  return `≥ ${limitNum(l.min)}${tail}`;
}

/** Phases the line PLC reports after drying (the embedded default's names): an end-of-drying limit is judged by then. */
const AFTER_DRYING = new Set(['COMPRESS', 'COAT', 'INSPECT', 'PACK', 'COMPLETE', 'DONE']);

/**
 * A reading against its limit: 'in' / 'out' (inside or outside an in-process limit: out of specification),
 * 'above_end' (outside an end-point limit while drying runs, or while the phase is not one this console knows:
 * judged when drying ends, not now), 'after_end' (an end-point limit once the line PLC reports a phase past
 * drying: the unit's reading no longer is the batch's — the end point was judged when drying ended and is in the
 * batch's specification table, so this page says so rather than judge an idle dryer), or null (no limit, no number).
 */
export function judge(v, l, phase = null) {
  if (!l || !v || typeof v.value !== 'number' || !Number.isFinite(v.value) || v.quality !== 'good') return null;
  if (l.applies === 'end_point' && AFTER_DRYING.has(String(phase))) return 'after_end';
  const outside = (l.min !== undefined && v.value < l.min) || (l.max !== undefined && v.value > l.max);
  if (!outside) return 'in';
  return l.applies === 'end_point' ? 'above_end' : 'out';
}

/** The words of a judgement (with its glyph), for a cell or a screen reader. */
export function judgementText(j, l) {
  switch (j) {
    case 'out': return `✗ out of spec (limit ${limitText(l)})`;
    case 'after_end': return `◇ drying has ended: its end point (${limitText(l)}) is in the specification table`;
    case 'in': return l.applies === 'end_point' ? `✓ within the end-of-drying limit ${limitText(l)}` : `✓ in spec (${limitText(l)})`;
    case 'above_end': return `◇ above the end-of-drying limit ${limitText(l)}: judged when drying ends`;
    default: return l ? `limit ${limitText(l)}` : 'no limit in force';
  }
}

/** A reading with its unit at the unit's precision (console/units.js), for a legend or an axis. */
export const reading = (v, code) => `${numberIn(v, code)}${unitLabel(code) ? ` ${unitLabel(code)}` : ''}`;

/** The tag playing `role` among a line view's values (site tags may be renamed: the daemon names each tag's role). */
export function tagOfRole(line, role) {
  for (const e of line?.equipment ?? []) for (const [tag, v] of Object.entries(e.values ?? {})) if (v.role === role) return { tag, v, equipment: e };
  return null;
}
