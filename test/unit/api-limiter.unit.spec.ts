import { describe, expect, it } from 'vitest';
import { FailureLimiter } from '../../src/api/limiter.js';
import { ManualClock } from '../../src/clock.js';

describe('FailureLimiter (sign-in throttling)', () => {
  it('refuses a key after max failures until its window ends; the first refusal of a window is flagged once', () => {
    const clock = new ManualClock(1_000_000);
    const l = new FailureLimiter(clock, { max: 2, windowMs: 10_000 });
    l.fail('k');
    expect(l.blocked('k')).toBeNull();
    clock.advance(3_000);
    l.fail('k');
    expect(l.blocked('k')).toEqual({ retryAfterMs: 7_000, first: true });
    expect(l.blocked('k')).toEqual({ retryAfterMs: 7_000, first: false });
    expect(l.blocked('other')).toBeNull();
    clock.advance(7_000);
    expect(l.blocked('k')).toBeNull();
    expect(l.size).toBe(0);
  });

  it('forgets a key on clear, and stays bounded by forgetting the oldest key', () => {
    const clock = new ManualClock(0);
    const l = new FailureLimiter(clock, { max: 1, windowMs: 60_000, maxKeys: 3 });
    for (const k of ['a', 'b', 'c', 'd']) l.fail(k);
    expect(l.size).toBe(3);
    expect(l.blocked('a')).toBeNull();
    expect(l.blocked('d')).not.toBeNull();
    l.clear('d');
    expect(l.blocked('d')).toBeNull();
  });
});
