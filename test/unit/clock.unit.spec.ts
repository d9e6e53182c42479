import prand from 'pure-rand';
import { describe, expect, it } from 'vitest';
import { ManualClock, createRng, every, scaledClock, sleep } from '../../src/clock.js';

describe('clock and seed injection', () => {
  it('a seeded rng replays exactly and different seeds differ', () => {
    const draw = (seed: number) => {
      const r = createRng(seed);
      return [r.next(), r.uniform(5, 25), r.normal(0, 1), r.int(1, 6), r.fork().next()];
    };
    expect(draw(42)).toEqual(draw(42));
    expect(draw(42)).not.toEqual(draw(43));
  });

  it('next() is the stream of pure-rand: xoroshiro128+, 26 + 27 bits from its uniform distribution (as the seeded models and golden data were drawn)', () => {
    for (const seed of [0, 1, 20261121, -7, 0x7fffffff]) {
      const gen = prand.xoroshiro128plus(seed);
      const rng = createRng(seed);
      for (let i = 0; i < 10_000; i++) {
        const hi = prand.unsafeUniformIntDistribution(0, (1 << 26) - 1, gen);
        const lo = prand.unsafeUniformIntDistribution(0, (1 << 27) - 1, gen);
        expect(rng.next()).toBe((hi * 2 ** 27 + lo) / 2 ** 53);
      }
    }
  });

  it('clone draws what the stream would draw next; skipNormals(n) leaves the stream where n normal() calls leave it', () => {
    for (let n = 0; n <= 9; n++) {
      for (const pendingHalf of [false, true]) {
        const a = createRng(100 + n);
        if (pendingHalf) a.normal(); // a half-pair waits for the next call
        const b = a.clone();
        const c = a.clone();
        for (let i = 0; i < n; i++) a.normal();
        b.skipNormals(n);
        const seqA = Array.from({ length: 7 }, (_, i) => (i % 3 === 0 ? a.next() : a.normal()));
        const seqB = Array.from({ length: 7 }, (_, i) => (i % 3 === 0 ? b.next() : b.normal()));
        expect(seqB).toEqual(seqA);
        // the clone was not moved by either
        expect(c.clone().normal()).toBe(c.normal());
      }
    }
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

  it('virtual time: a manual clock fires sleeps in time order when run, an abort ends a sleep at once, and nothing fires before its time', async () => {
    const clock = new ManualClock(0);
    const fired: string[] = [];
    const stop = new AbortController();
    void sleep(clock, 300).then(() => fired.push(`c@${clock.now()}`));
    void sleep(clock, 100).then(() => fired.push(`a@${clock.now()}`));
    void sleep(clock, 200, stop.signal).then(() => fired.push(`b@${clock.now()}`));
    // a chain: each wake sets the next sleep, which must fire in the same run when it falls due
    void (async () => {
      for (let i = 0; i < 3; i++) {
        await sleep(clock, 120);
        fired.push(`t${i}@${clock.now()}`);
      }
    })();
    await new Promise((r) => setImmediate(r));
    expect(fired).toEqual([]);
    stop.abort();
    await new Promise((r) => setImmediate(r));
    expect(fired).toEqual(['b@0']);
    expect(await clock.run(250)).toBe(3);
    expect(fired).toEqual(['b@0', 'a@100', 't0@120', 't1@240']);
    expect(clock.now()).toBe(250);
    await clock.run(1_000);
    expect(fired).toEqual(['b@0', 'a@100', 't0@120', 't1@240', 'c@300', 't2@360']);
    expect(clock.pending().count).toBe(0);
  });

  it('every: one call per period of the injected clock, calls never overlap, a throwing call does not end the schedule, stop ends it', async () => {
    const clock = new ManualClock(0);
    const at: number[] = [];
    const errors: unknown[] = [];
    const stop = every(clock, 1_000, () => {
      at.push(clock.now());
      if (at.length === 2) throw new Error('boom');
    }, (e) => errors.push(e));
    await clock.run(3_500);
    expect(at).toEqual([1_000, 2_000, 3_000]);
    expect(errors).toHaveLength(1);
    stop();
    await clock.run(10_000);
    expect(at).toEqual([1_000, 2_000, 3_000]);
    // a scaled clock over a manual one waits its scaled time: 60 s of process time is 1 s of base time
    const fast = scaledClock(60, clock);
    let woke = false;
    void sleep(fast, 60_000).then(() => (woke = true));
    await clock.run(clock.now() + 999);
    expect(woke).toBe(false);
    await clock.run(clock.now() + 1);
    expect(woke).toBe(true);
  });
});
