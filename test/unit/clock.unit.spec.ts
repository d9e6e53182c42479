import { describe, expect, it } from 'vitest';
import { ManualClock, createRng, scaledClock } from '../../src/clock.js';

describe('clock and seed injection', () => {
  it('a seeded rng replays exactly and different seeds differ', () => {
    const draw = (seed: number) => {
      const r = createRng(seed);
      return [r.next(), r.uniform(5, 25), r.normal(0, 1), r.int(1, 6), r.fork().next()];
    };
    expect(draw(42)).toEqual(draw(42));
    expect(draw(42)).not.toEqual(draw(43));
  });

  it('uniform draws stay in range and look uniform', () => {
    const r = createRng(7);
    let sum = 0;
    for (let i = 0; i < 20_000; i++) {
      const x = r.next();
      expect(x).toBeGreaterThanOrEqual(0);
      expect(x).toBeLessThan(1);
      sum += x;
    }
    expect(sum / 20_000).toBeCloseTo(0.5, 1);
  });

  it('normal draws have the requested moments', () => {
    const r = createRng(11);
    const xs = Array.from({ length: 20_000 }, () => r.normal(10, 2));
    const mean = xs.reduce((a, b) => a + b, 0) / xs.length;
    const sd = Math.sqrt(xs.reduce((a, b) => a + (b - mean) ** 2, 0) / (xs.length - 1));
    expect(mean).toBeCloseTo(10, 1);
    expect(sd).toBeCloseTo(2, 1);
  });

  it('manual and scaled clocks move as told', () => {
    const base = new ManualClock(1_000);
    const fast = scaledClock(60, base);
    base.advance(1_000);
    expect(base.now()).toBe(2_000);
    expect(fast.now()).toBe(1_000 + 60_000);
    expect(() => scaledClock(0, base)).toThrow(RangeError);
  });
});
