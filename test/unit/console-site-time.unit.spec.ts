/**
 * The console's times for people (console/site-time.js): every time on the site's clock (site.timezone, which GET
 * /line names) with its UTC offset and the zone, never the browser's zone — the hour Europe/Rome repeats at the end
 * of summer time told apart by its offset, a zone half an hour off the hour, a date after the UTC date, a site on
 * UTC as before; and the zone the console keeps: UTC until the daemon said it, UTC for a zone the browser does not
 * know.
 */
import { afterEach, describe, expect, it } from 'vitest';
// @ts-expect-error -- the console's plain ES module, without declarations
import { axisLabelIn, clockIn, onSiteZone, partsIn, setSiteZone, siteZone, spanIn, stampIn, tickIn, zoneState, zoneUnanswered } from '../../console/site-time.js';

// Europe/Rome leaves summer time on Sunday 25 October 2026 at 01:00 UTC: 03:00 CEST becomes 02:00 CET
const FIRST = '2026-10-25T00:30:00.000Z';
const SECOND = '2026-10-25T01:30:00.000Z';

describe('[P11.10(e)] console/site-time.js: the site\u2019s clock with its offset, never the browser\u2019s zone', () => {
  afterEach(() => setSiteZone('UTC'));

  it('Europe/Rome at the end of October: 02:30 twice, +02:00 then +01:00; the zone named', () => {
    expect(stampIn(FIRST, 'Europe/Rome')).toBe('2026-10-25 02:30:00 UTC+02:00 (Europe/Rome)');
    expect(stampIn(SECOND, 'Europe/Rome')).toBe('2026-10-25 02:30:00 UTC+01:00 (Europe/Rome)');
    expect(stampIn('2026-11-27T15:43:00.000Z', 'Europe/Rome')).toBe('2026-11-27 16:43:00 UTC+01:00 (Europe/Rome)');
    expect(clockIn(Date.parse(FIRST), 'Europe/Rome')).toBe('02:30:00 UTC+02:00');
    // a span over the change says both offsets; one within an offset says it once
    expect(spanIn(FIRST, SECOND, 'Europe/Rome')).toBe('02:30:00 UTC+02:00–02:30:00 UTC+01:00');
    expect(spanIn(SECOND, '2026-10-25T01:35:00.000Z', 'Europe/Rome')).toBe('02:30:00–02:35:00 UTC+01:00');
    expect(axisLabelIn('Europe/Rome', Date.parse(FIRST), Date.parse(SECOND))).toBe('time (Europe/Rome, UTC+02:00 → UTC+01:00)');
  });

  it('Asia/Kolkata, +05:30: the wall clock, the offset and a date a day after the UTC date', () => {
    expect(stampIn('2026-11-27T15:43:00.000Z', 'Asia/Kolkata')).toBe('2026-11-27 21:13:00 UTC+05:30 (Asia/Kolkata)');
    expect(stampIn(Date.parse('2026-11-27T20:00:00.000Z'), 'Asia/Kolkata')).toBe('2026-11-28 01:30:00 UTC+05:30 (Asia/Kolkata)');
    expect(partsIn('2026-11-27T20:00:00.000Z', 'Asia/Kolkata')).toEqual({ date: '2026-11-28', time: '01:30:00', offset: '+05:30', utc: false });
    expect(clockIn('2026-11-27T15:43:00.000Z', 'Asia/Kolkata', { seconds: false })).toBe('21:13 UTC+05:30');
    expect(axisLabelIn('Asia/Kolkata', Date.parse('2026-11-27T15:00:00Z'), Date.parse('2026-11-27T16:00:00Z'))).toBe('time (Asia/Kolkata, UTC+05:30)');
    // axis ticks: seconds over a short range, hour:minute over a longer one, the date over more than a day
    const t = Date.parse('2026-11-27T15:43:07.000Z');
    expect([tickIn(t, 'Asia/Kolkata', 60), tickIn(t, 'Asia/Kolkata', 3600), tickIn(t, 'Asia/Kolkata', 2 * 86_400)]).toEqual(['21:13:07', '21:13', '11-27 21:13']);
  });

  it('a site on UTC reads UTC as before; no time is a dash, text that is no time stays as it is', () => {
    for (const tz of ['UTC', 'Etc/UTC', undefined]) {
      expect(stampIn('2026-11-27T15:43:00.000Z', tz)).toBe('2026-11-27 15:43:00 UTC');
      expect(clockIn('2026-11-27T15:43:00.000Z', tz)).toBe('15:43:00 UTC');
      expect(axisLabelIn(tz, 0, 1)).toBe('time (UTC)');
    }
    expect(spanIn('2026-11-27T10:00:00.000Z', '2026-11-27T10:05:00.000Z', 'UTC')).toBe('10:00:00–10:05:00 UTC');
    expect([stampIn(null, 'Asia/Kolkata'), stampIn(undefined, 'UTC'), stampIn('', 'UTC')]).toEqual(['—', '—', '—']);
    expect(stampIn('soon', 'Asia/Kolkata')).toBe('soon');
    // a zone at offset zero that is not UTC says so
    expect(stampIn('2026-01-01T00:00:00.000Z', 'Africa/Abidjan')).toBe('2026-01-01 00:00:00 UTC+00:00 (Africa/Abidjan)');
  });

  it('the zone kept: UTC until the daemon says one; listeners hear a change; a zone this runtime does not know is UTC', () => {
    const heard: unknown[] = [];
    const off = onSiteZone((z: unknown) => heard.push(z));
    setSiteZone('Asia/Kolkata');
    expect(siteZone()).toBe('Asia/Kolkata');
    expect(zoneState()).toEqual({ zone: 'Asia/Kolkata', unanswered: false });
    // a failed question keeps the zone known
    zoneUnanswered();
    expect(zoneState()).toEqual({ zone: 'Asia/Kolkata', unanswered: false });
    setSiteZone('Mars/Olympus_Mons');
    expect(siteZone()).toBe('UTC');
    setSiteZone(undefined);
    expect(siteZone()).toBe('UTC');
    off();
    setSiteZone('Europe/Rome');
    expect(heard).toEqual([{ zone: 'Asia/Kolkata', unanswered: false }, { zone: 'UTC', unanswered: false }]);
  });
});
