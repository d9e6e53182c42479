// Units as people write them, with the precision a reading of that quantity deserves: one table keyed by the
// UCUM code the site and the daemon use (src/domain/roles.ts, the site's tags). A code not in the table is shown
// as its code (annotations' braces dropped) with five significant digits, never hidden. Readings are rounded
// to their precision; a value someone signs (a move's target) keeps every digit it has, only its unit is written
// as people write it.

/** UCUM code → what a person writes, and how many decimals a reading of it carries. */
export const UNITS = Object.freeze({
  '1': { sym: '', dp: null },
  '%': { sym: '%', dp: 2 },
  Cel: { sym: '°C', dp: 1 },
  'm3/h': { sym: 'm³/h', dp: 0 },
  '{rev}/min': { sym: 'rpm', dp: 1 },
  '{rev}': { sym: 'rev', dp: 0 },
  '{tbl}/h': { sym: 'tablets/h', dp: 0 },
  kN: { sym: 'kN', dp: 2 },
  N: { sym: 'N', dp: 1 },
  mm: { sym: 'mm', dp: 2 },
  nm: { sym: 'nm', dp: 0 },
  mg: { sym: 'mg', dp: 1 },
  'g/min': { sym: 'g/min', dp: 1 },
  kW: { sym: 'kW', dp: 2 },
  'kW.h': { sym: 'kWh', dp: 1 },
  s: { sym: 's', dp: 1 },
  ms: { sym: 'ms', dp: 1 },
  min: { sym: 'min', dp: 1 },
});

/** The unit as a person writes it ('Cel' → '°C', 'm3/h' → 'm³/h', '{rev}/min' → 'rpm'); '' for a count or ratio ('1'). */
export function unitLabel(code) {
  if (!code) return '';
  return UNITS[code]?.sym ?? code.replace(/\{([^}]+)\}/g, '$1');
}

/**
 * A number at its unit's precision: the table's decimals, but at least two significant digits for a small
 * reading (0.017 rpm, not 0.0 rpm); five significant digits for a unit the table does not know.
 */
export function numberIn(v, code) {
  if (typeof v !== 'number' || !Number.isFinite(v)) return v === null || v === undefined ? '—' : String(v);
  const dp = UNITS[code ?? '1']?.dp;
  if (dp === null || dp === undefined) return Number.isInteger(v) ? String(v) : String(+v.toPrecision(5));
  if (v !== 0 && Math.abs(v) < 10 ** -dp) return String(+v.toPrecision(2));
  const s = v.toFixed(dp);
  return s === `-${(0).toFixed(dp)}` ? s.slice(1) : s;
}

/** A reading with its unit, as on an HMI: '59.8 °C', '1200 m³/h', '0.45 %'; a non-number as it is. */
export function quantity(v, code) {
  if (typeof v !== 'number') return v === null || v === undefined ? '—' : typeof v === 'object' ? JSON.stringify(v) : String(v);
  const u = unitLabel(code);
  return u ? `${numberIn(v, code)} ${u}` : numberIn(v, code);
}
