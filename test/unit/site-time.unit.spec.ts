/**
 * Times for people in the site's time zone (src/domain/site-time.ts): the UTC time as recorded, and beside it
 * the same instant on the site's clock with its offset — summer and winter time, a half-hour zone, a date that
 * differs from the UTC date; a site on UTC sees UTC only. The command line's tables (siteIso, siteClock, the
 * genealogy text) print the site's clock with its offset: the hour Europe/Rome repeats at the end of October is two
 * different instants, told apart by the offset.
 */
import { describe, expect, it } from 'vitest';
import { isUtcZone, printedTime, siteClock, siteIso, zonedParts } from '../../src/domain/site-time.js';
import { renderGenealogyText } from '../../src/engine/genealogy-text.js';

describe('[A11.8] printed times: UTC as recorded, the site\'s time beside it', () => {
  it('shows Europe/Rome in winter (+01:00) and in summer (+02:00), with the date when it differs', () => {
    expect(printedTime('2026-11-27T15:43:00.000Z', 'Europe/Rome')).toBe('2026-11-27 15:43:00.000 UTC (16:43:00.000 Europe/Rome, UTC+01:00)');
    expect(printedTime('2026-07-01T23:30:00.000Z', 'Europe/Rome')).toBe('2026-07-01 23:30:00.000 UTC (2026-07-02 01:30:00.000 Europe/Rome, UTC+02:00)');
  });

  it('a half-hour zone west of UTC, and a zone on UTC+00:00 that is not UTC itself', () => {
    expect(printedTime('2026-11-27T15:43:00.000Z', 'America/St_Johns')).toBe('2026-11-27 15:43:00.000 UTC (12:13:00.000 America/St_Johns, UTC-03:30)');
    expect(zonedParts(Date.UTC(2026, 0, 1), 'Africa/Abidjan')).toEqual({ date: '2026-01-01', time: '00:00:00.000', offset: '+00:00' });
  });

  it('a site on UTC (or none given) sees the UTC time alone', () => {
    for (const tz of [undefined, 'UTC', 'Etc/UTC']) {
      expect(isUtcZone(tz)).toBe(true);
      expect(printedTime('2026-11-27T15:43:00.000Z', tz)).toBe('2026-11-27 15:43:00.000 UTC');
    }
    expect(isUtcZone('Europe/London')).toBe(false);
  });
});

describe('[P11.10(e)] the command line\'s tables: the site\'s clock with its offset, the same instant as recorded', () => {
  // Europe/Rome leaves summer time on Sunday 25 October 2026 at 01:00 UTC: 03:00 CEST becomes 02:00 CET, so 02:30 happens twice
  const FIRST = '2026-10-25T00:30:00.000Z';
  const SECOND = '2026-10-25T01:30:00.000Z';

  it('the end of summer time in Europe/Rome: the repeated hour twice, told apart by its offset, each parsing back to its instant', () => {
    expect(siteIso(FIRST, 'Europe/Rome')).toBe('2026-10-25T02:30:00.000+02:00');
    expect(siteIso(SECOND, 'Europe/Rome')).toBe('2026-10-25T02:30:00.000+01:00');
    for (const t of [FIRST, SECOND]) expect(new Date(siteIso(t, 'Europe/Rome')).toISOString()).toBe(t);
    expect(siteClock(FIRST, 'Europe/Rome')).toBe('02:30:00+02:00');
    expect(siteClock(Date.parse(SECOND), 'Europe/Rome')).toBe('02:30:00+01:00');
  });

  it('a zone half an hour off the hour (Asia/Kolkata, +05:30), its date a day after the UTC date late in the UTC evening', () => {
    expect(siteIso('2026-11-27T15:43:00.000Z', 'Asia/Kolkata')).toBe('2026-11-27T21:13:00.000+05:30');
    expect(siteIso(Date.parse('2026-11-27T20:00:00.000Z'), 'Asia/Kolkata')).toBe('2026-11-28T01:30:00.000+05:30');
    expect(siteClock('2026-11-27T20:00:00.000Z', 'Asia/Kolkata')).toBe('01:30:00+05:30');
  });

  it('a site on UTC prints the time as recorded; what is no time is printed as it is', () => {
    expect(siteIso('2026-11-27T15:43:00.000Z', 'UTC')).toBe('2026-11-27T15:43:00.000Z');
    expect(siteIso(Date.parse('2026-11-27T15:43:00.000Z'))).toBe('2026-11-27T15:43:00.000Z');
    expect(siteClock('2026-11-27T15:43:00.000Z', 'Etc/UTC')).toBe('15:43:00Z');
    expect(siteIso('not a time', 'Asia/Kolkata')).toBe('not a time');
  });

  it('the genealogy text (runs show --format genealogy) on the site\'s clock: a day line per date and per change of offset', () => {
    const events = [FIRST, SECOND, '2026-10-25T23:30:00.000Z'].map((t, i) => ({ at: Date.parse(t), kind: 'step' as const, step: `0${i + 1} step`, summary: `event ${i + 1}` }));
    const rome = renderGenealogyText(events, { timezone: 'Europe/Rome' }).split('\n');
    expect(rome.filter((l) => l.startsWith('--'))).toEqual([
      '-- 2026-10-25 (Europe/Rome, UTC+02:00) --', '-- 2026-10-25 (Europe/Rome, UTC+01:00) --', '-- 2026-10-26 (Europe/Rome, UTC+01:00) --',
    ]);
    expect(rome.filter((l) => /event \d$/.test(l)).map((l) => l.trim().slice(0, 8))).toEqual(['02:30:00', '02:30:00', '00:30:00']);
    expect(rome).toContain("3 entries, times on the site's clock (Europe/Rome).");
    const utc = renderGenealogyText(events).split('\n');
    expect(utc.filter((l) => l.startsWith('--'))).toEqual(['-- 2026-10-25 (UTC) --']);
    expect(utc).toContain('3 entries, times UTC.');
    expect(renderGenealogyText(events, { timezone: 'UTC' })).toBe(renderGenealogyText(events));
  });
});
