/**
 * Times for people in the site's time zone (src/domain/site-time.ts): the UTC time as recorded, and beside it
 * the same instant on the site's clock with its offset — summer and winter time, a half-hour zone, a date that
 * differs from the UTC date; a site on UTC sees UTC only.
 */
import { describe, expect, it } from 'vitest';
import { isUtcZone, printedTime, zonedParts } from '../../src/domain/site-time.js';

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
