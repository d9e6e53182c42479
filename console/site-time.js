// The site's clock for people. Every time the console shows is the site's wall clock (site.timezone, an IANA zone
// the daemon names in GET /line) with its UTC offset and the zone — "2026-11-27 16:43:00 UTC+01:00 (Europe/Rome)" —
// whatever the browser's own zone; a site on UTC reads "2026-11-27 15:43:00 UTC" as before. Records stay UTC (the
// API, the exports). The same rules as src/domain/site-time.ts (the zone rules are the browser's, Intl), written
// again here because the console has no build step. No imports: the formatters are tested in Node.

/** True when `tz` is UTC itself: the time is then said in UTC alone. */
export const isUtc = (tz) => !tz || tz === 'UTC' || tz === 'Etc/UTC' || tz === 'Etc/GMT' || tz === 'GMT';

// one formatter per zone (building one costs far more than using it: the run's log formats a time per row)
const formats = new Map();
function formatOf(tz) {
  let f = formats.get(tz);
  if (!f) {
    f = new Intl.DateTimeFormat('en-CA', {
      timeZone: tz, year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit', second: '2-digit',
      hourCycle: 'h23', timeZoneName: 'longOffset',
    });
    formats.set(tz, f);
  }
  return f;
}

const msOf = (at) => (typeof at === 'number' ? at : Date.parse(at ?? ''));

/**
 * The wall-clock date ("2026-11-27"), time ("16:43:00") and UTC offset ("+01:00") of `at` (ISO 8601 or epoch ms) in
 * `tz`; null when `at` is no time.
 */
export function partsIn(at, tz) {
  const ms = msOf(at);
  if (!Number.isFinite(ms)) return null;
  if (isUtc(tz)) {
    const iso = new Date(ms).toISOString();
    return { date: iso.slice(0, 10), time: iso.slice(11, 19), offset: '+00:00', utc: true };
  }
  const p = Object.fromEntries(formatOf(tz).formatToParts(new Date(ms)).map((x) => [x.type, x.value]));
  // 'GMT' alone is offset zero; else 'GMT+01:00' / 'GMT-03:30'
  const offset = (p.timeZoneName ?? 'GMT').replace(/^GMT/, '') || '+00:00';
  return { date: `${p.year}-${p.month}-${p.day}`, time: `${p.hour}:${p.minute}:${p.second}`, offset, utc: false };
}

/** "UTC+01:00" of a zone's parts, "UTC" for UTC itself. */
const offsetText = (z) => (z.utc ? 'UTC' : `UTC${z.offset}`);

/** `at` as people read it: "2026-11-27 16:43:00 UTC+01:00 (Europe/Rome)"; on UTC "2026-11-27 15:43:00 UTC"; '—' when none. */
export function stampIn(at, tz) {
  if (at === null || at === undefined || at === '') return '—';
  const z = partsIn(at, tz);
  if (!z) return String(at);
  return `${z.date} ${z.time} ${offsetText(z)}${z.utc ? '' : ` (${tz})`}`;
}

/**
 * The time of day of `at` with its offset: "16:43:00 UTC+01:00" ("16:43 UTC+01:00" without seconds; "15:43:00 UTC" on
 * UTC) — for where the date is plain (a run's log, a span of events, the session's end).
 */
export function clockIn(at, tz, { seconds = true } = {}) {
  if (at === null || at === undefined || at === '') return '—';
  const z = partsIn(at, tz);
  if (!z) return String(at);
  return `${seconds ? z.time : z.time.slice(0, 5)} ${offsetText(z)}`;
}

/**
 * From `a` to `b` as one span: "10:00:00–10:05:00 UTC+05:30"; both offsets when they differ (a change of summer
 * time between them: "02:59:00 UTC+02:00–02:01:00 UTC+01:00"); `a` alone when they are the same instant.
 */
export function spanIn(a, b, tz) {
  const x = partsIn(a, tz);
  const y = partsIn(b, tz);
  if (!x || !y) return clockIn(a, tz);
  if (msOf(a) === msOf(b)) return clockIn(a, tz);
  return x.offset === y.offset ? `${x.time}–${y.time} ${offsetText(y)}` : `${x.time} ${offsetText(x)}–${y.time} ${offsetText(y)}`;
}

/**
 * A tick of a time axis on the site's clock (the axis's label names the zone): the date and hour:minute over a range
 * longer than a day, seconds over one shorter than ten minutes, else hour:minute. `range` in seconds.
 */
export function tickIn(ms, tz, range) {
  const z = partsIn(ms, tz);
  if (!z) return '';
  return range > 86_400 ? `${z.date.slice(5)} ${z.time.slice(0, 5)}` : range < 600 ? z.time : z.time.slice(0, 5);
}

/**
 * The label of a time axis from `fromMs` to `toMs`: "time (UTC)" on UTC; else "time (Europe/Rome, UTC+01:00)", with
 * both offsets when summer time changes within it ("time (Europe/Rome, UTC+02:00 → UTC+01:00)").
 */
export function axisLabelIn(tz, fromMs, toMs) {
  if (isUtc(tz)) return 'time (UTC)';
  const a = partsIn(fromMs, tz);
  const b = partsIn(toMs, tz);
  if (!a && !b) return `time (${tz})`;
  const offsets = [...new Set([a, b].filter(Boolean).map(offsetText))];
  return `time (${tz}, ${offsets.join(' → ')})`;
}

// The site's zone, as the daemon last said it: null until its first answer; `unanswered` once asking failed
// before any answer (the console then says times in UTC, and moves to the site's clock at the first answer).
let state = { zone: null, unanswered: false };
const listeners = new Set();

export const zoneState = () => state;
/** The zone the console shows times in now: the site's, or UTC until the daemon said it. */
export const siteZone = () => state.zone ?? 'UTC';

function set(next) {
  if (next.zone === state.zone && next.unanswered === state.unanswered) return;
  state = next;
  for (const l of listeners) l(state);
}

/** True when this browser knows the zone `tz` (its Intl throws otherwise). */
function known(tz) {
  try {
    formatOf(tz);
    return true;
  } catch {
    return false;
  }
}

/**
 * The daemon said the site's zone (GET /line's `timezone`). An older daemon says none, and a zone this browser does
 * not know cannot be shown: UTC then, said as UTC.
 */
export const setSiteZone = (tz) => set({ zone: typeof tz === 'string' && tz && known(tz) ? tz : 'UTC', unanswered: false });
/** Asking failed; times go on in the zone known, or in UTC when none is known yet. */
export const zoneUnanswered = () => set({ zone: state.zone, unanswered: state.zone === null });

export function onSiteZone(fn) {
  listeners.add(fn);
  return () => listeners.delete(fn);
}
