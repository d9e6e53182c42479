/**
 * Times for people, in the site's time zone (`site.timezone`, IANA): records stay UTC (every audit entry,
 * signature and release.json holds ISO 8601 UTC); a printout or a screen shows the UTC time and, where the site
 * is not on UTC, the same instant in the site's zone with its offset — "2026-11-27 15:43:00.000 UTC
 * (16:43:00.000 Europe/Rome, UTC+01:00)" — so a reader on the site reads their own clock and nobody has to
 * guess which zone a time is in. Pure; the zone rules are the runtime's (Intl, ICU).
 */

/** True when `tz` is an IANA time zone this runtime knows (Intl throws a RangeError otherwise). */
export function isKnownTimeZone(tz: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: tz });
    return true;
  } catch {
    return false;
  }
}

/** The wall-clock date and time of `ms` in `tz` ("2026-11-27 16:43:00.000") and its UTC offset ("+01:00"). */
export function zonedParts(ms: number, tz: string): { date: string; time: string; offset: string } {
  const f = new Intl.DateTimeFormat('en-CA', {
    timeZone: tz, year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit', second: '2-digit',
    fractionalSecondDigits: 3, hourCycle: 'h23', timeZoneName: 'longOffset',
  });
  const p = Object.fromEntries(f.formatToParts(new Date(ms)).map((x) => [x.type, x.value])) as Record<string, string>;
  // 'GMT' alone is offset zero; else 'GMT+01:00' / 'GMT-03:30'
  const off = (p['timeZoneName'] ?? 'GMT').replace(/^GMT/, '') || '+00:00';
  return { date: `${p['year']}-${p['month']}-${p['day']}`, time: `${p['hour']}:${p['minute']}:${p['second']}.${p['fractionalSecond']}`, offset: off };
}

/** True when `tz` is UTC itself (no second time is shown then). */
export function isUtcZone(tz: string | undefined): boolean {
  return tz === undefined || tz === 'UTC' || tz === 'Etc/UTC' || tz === 'Etc/GMT' || tz === 'GMT';
}

/**
 * `iso` (ISO 8601 UTC) as printed: "2026-11-27 15:43:00.000 UTC", and when the site is not on UTC, the site's
 * time beside it: " (16:43:00.000 Europe/Rome, UTC+01:00)", with the date too when it differs from the UTC date.
 */
export function printedTime(iso: string, tz?: string): string {
  const utc = `${iso.replace('T', ' ').replace('Z', '')} UTC`;
  if (isUtcZone(tz)) return utc;
  const ms = Date.parse(iso);
  if (!Number.isFinite(ms)) return utc;
  const z = zonedParts(ms, tz!);
  const sameDay = z.date === iso.slice(0, 10);
  return `${utc} (${sameDay ? '' : `${z.date} `}${z.time} ${tz}, UTC${z.offset})`;
}

/** Epoch ms of `at` (ISO 8601 or epoch ms); NaN when it is not a time. */
const msOf = (at: string | number): number => (typeof at === 'number' ? at : Date.parse(at));

/**
 * `at` (ISO 8601 UTC, or epoch ms) as the command line's tables print it: ISO 8601 on the site's clock with its
 * offset — "2026-11-27T16:43:00.000+01:00", the same instant, which people read as their own clock and a script
 * still parses. A site on UTC prints the time as recorded ("2026-11-27T15:43:00.000Z"); text that is no time is
 * printed as it is.
 */
export function siteIso(at: string | number, tz?: string): string {
  const ms = msOf(at);
  if (!Number.isFinite(ms)) return String(at);
  if (isUtcZone(tz)) return typeof at === 'string' ? at : new Date(ms).toISOString();
  const z = zonedParts(ms, tz!);
  return `${z.date}T${z.time}${z.offset}`;
}

/** The time of day of `at` on the site's clock with its offset, for a log line: "16:43:00+01:00"; on UTC "15:43:00Z". */
export function siteClock(at: string | number, tz?: string): string {
  const ms = msOf(at);
  if (!Number.isFinite(ms)) return String(at);
  if (isUtcZone(tz)) return `${new Date(ms).toISOString().slice(11, 19)}Z`;
  const z = zonedParts(ms, tz!);
  return `${z.time.slice(0, 8)}${z.offset}`;
}
