/**
 * src/quality/stats.ts: the descriptive statistics agree with jstat on random
 * finite data, and the USP <905> acceptance value and its two stages agree
 * with cases computed by hand.
 */
import fc from 'fast-check';
import jStatModule from 'jstat';
import { describe, expect, it } from 'vitest';
import { acceptanceValue, contentUniformity, max, mean, min, rsdPct, sampleSd, summarize } from '../../src/quality/stats.js';

/** `n` values (n even) with exactly this mean and sample SD: mean ± a in pairs. */
function withMeanSd(n: number, m: number, s: number): number[] {
  const a = s * Math.sqrt((n - 1) / n);
  return Array.from({ length: n }, (_, i) => (i % 2 === 0 ? m - a : m + a));
}

// src/twin/jstat.d.ts declares only what the twin uses; these are jstat's own descriptive statistics
const jStat = jStatModule as unknown as { mean(x: number[]): number; stdev(x: number[], sample: boolean): number; min(x: number[]): number; max(x: number[]): number };

const close = (a: number, b: number, scale: number): boolean => Math.abs(a - b) <= 1e-9 * (1 + Math.abs(scale));

describe('descriptive statistics against jstat', () => {
  it('mean, sample SD (n − 1), min and max of random finite arrays', () => {
    fc.assert(
      fc.property(fc.array(fc.double({ min: -1e6, max: 1e6, noNaN: true }), { minLength: 2, maxLength: 60 }), (xs) => {
        const scale = Math.max(...xs.map(Math.abs));
        expect(close(mean(xs), jStat.mean(xs), scale)).toBe(true);
        expect(close(sampleSd(xs), jStat.stdev(xs, true), scale)).toBe(true);
        expect(min(xs)).toBe(jStat.min(xs));
        expect(max(xs)).toBe(jStat.max(xs));
      }),
    );
  });

  it('RSD % is 100·s/|mean| with jstat’s s and mean', () => {
    fc.assert(
      fc.property(fc.array(fc.double({ min: 1, max: 1000, noNaN: true }), { minLength: 2, maxLength: 60 }), (xs) => {
        const want = (100 * jStat.stdev(xs, true)) / jStat.mean(xs);
        expect(Math.abs(rsdPct(xs) - want)).toBeLessThanOrEqual(1e-9 * (1 + want));
      }),
    );
  });

  it('what needs more values is NaN, never a number that reads as data', () => {
    expect(summarize([])).toEqual({ n: 0, mean: Number.NaN, sd: Number.NaN, rsdPct: Number.NaN, min: Number.NaN, max: Number.NaN });
    expect(summarize([5])).toMatchObject({ n: 1, mean: 5, min: 5, max: 5 });
    expect(sampleSd([5])).toBeNaN();
    expect(rsdPct([-1, 1])).toBeNaN();
  });
});

describe('USP <905> acceptance value', () => {
  it('mean inside 98.5–101.5: M = X̄, AV = k·s (10 units: 2.4·2 = 4.8; 30 units: 2.0·2 = 4.0)', () => {
    const ten = acceptanceValue(withMeanSd(10, 99, 2));
    expect(ten.mean).toBeCloseTo(99, 12);
    expect(ten.sd).toBeCloseTo(2, 12);
    expect(ten).toMatchObject({ n: 10, k: 2.4 });
    expect(ten.m).toBeCloseTo(99, 12);
    expect(ten.av).toBeCloseTo(4.8, 12);
    const thirty = acceptanceValue(withMeanSd(30, 99, 2));
    expect(thirty.k).toBe(2.0);
    expect(thirty.av).toBeCloseTo(4.0, 12);
  });

  it('mean below 98.5 takes M = 98.5; above 101.5 takes M = 101.5', () => {
    const low = acceptanceValue(withMeanSd(10, 97, 1.5));
    expect(low.m).toBe(98.5);
    expect(low.av).toBeCloseTo(1.5 + 2.4 * 1.5, 12);
    const high = acceptanceValue(withMeanSd(10, 103, 1.5));
    expect(high.m).toBe(101.5);
    expect(high.av).toBeCloseTo(1.5 + 2.4 * 1.5, 12);
  });

  it('is defined for 10 or 30 units only', () => {
    expect(() => acceptanceValue(withMeanSd(12, 100, 1))).toThrow(RangeError);
  });
});

describe('USP <905> stages', () => {
  it('under 10 units, or a non-finite unit, is NOT_EVALUATED with the reason', () => {
    expect(contentUniformity(withMeanSd(8, 100, 1))).toMatchObject({ verdict: 'NOT_EVALUATED', stage: null, reason: '8 unit(s); USP <905> stage 1 needs 10' });
    const nan = contentUniformity([...withMeanSd(10, 100, 1), Number.NaN]);
    expect(nan.verdict).toBe('NOT_EVALUATED');
    expect(nan.reason).toContain('NaN');
  });

  it('stage 1 passes at AV ≤ L1 on the first 10 units; the record may tighten L1 but not loosen it', () => {
    expect(contentUniformity(withMeanSd(10, 99, 2))).toMatchObject({ verdict: 'PASS', stage: 1 });
    // AV 6.3 against a record's av_max of 5.0
    expect(contentUniformity(withMeanSd(10, 97, 2), 5)).toMatchObject({ verdict: 'FAIL', l1: 5 });
    // AV 16.8 against a claimed L1 of 20: still judged against 15
    expect(contentUniformity(withMeanSd(10, 100, 7), 20)).toMatchObject({ verdict: 'FAIL', l1: 15 });
  });

  it('stage 1 over L1 with fewer than 30 units fails, saying stage 2 was not tested', () => {
    const r = contentUniformity(withMeanSd(10, 100, 7));
    expect(r).toMatchObject({ verdict: 'FAIL', stage: 1, stage2: null });
    expect(r.reason).toBe('stage 1 AV 16.80 > L1 15.0; stage 2 (30 units) not tested');
  });

  it('stage 2: AV(30) ≤ L1 and every unit inside (1 ± 0.25)·M; the unit-range rule alone can fail it', () => {
    // first 10: one low unit among nine at 100 → stage 1 AV > 15; all 30: AV ≈ 11 or 8.8
    const units = (low: number): number[] => [low, ...Array<number>(29).fill(100)];
    const inside = contentUniformity(units(76)); // M = 99.2, range 74.4–124.0
    expect(inside.stage1!.av).toBeGreaterThan(15);
    expect(inside).toMatchObject({ verdict: 'PASS', stage: 2, outsideL2: 0 });
    const outside = contentUniformity(units(70)); // M = 99, range 74.25–123.75
    expect(outside.stage2!.av).toBeCloseTo(2 * Math.sqrt(30), 9);
    expect(outside.stage2!.av).toBeLessThanOrEqual(15);
    expect(outside).toMatchObject({ verdict: 'FAIL', stage: 2, outsideL2: 1 });
    expect(outside.reason).toContain('1 unit(s) outside 74.3–123.8 %');
    // stage 2 with AV(30) over L1
    expect(contentUniformity(withMeanSd(30, 100, 8))).toMatchObject({ verdict: 'FAIL', stage: 2 });
  });
});
