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
