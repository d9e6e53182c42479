import { describe, expect, it } from 'vitest';
import { createRng } from '../../src/clock.js';
import { blendEndPoint } from '../../src/twin/nir/endpoint.js';
import { blendRsdPct, NOMINAL_BLEND } from '../../src/twin/process.js';

describe('blend end point (moving-block RSD, chi-square upper bound)', () => {
  it('uses the chi-square upper confidence bound of the block SD', () => {
    const preds = [100, 102, 98, 101, 99, 100, 103, 97, 100, 100];
    const r = blendEndPoint(preds, { block: 10, consecutive: 1 });
    const b = r.blocks[0]!;
    // χ²(0.05, 9) = 3.3251: UCL factor √(9 / 3.3251) = 1.6452
    expect(b.uclRsdPct / b.rsdPct).toBeCloseTo(Math.sqrt(9 / 3.32511), 4);
    expect(b.rsdPct).toBeCloseTo((100 * Math.sqrt(preds.reduce((a, x) => a + (x - 100) ** 2, 0) / 9)) / 100, 9);
  });

  it('is reached once the blend homogenises, and not before its RSD bound is under the limit', () => {
    const rng = createRng(4);
    const revs = Array.from({ length: 60 }, (_, i) => 10 + 10 * i);
    const preds = revs.map((n) => 100 * (1 + (blendRsdPct(n, NOMINAL_BLEND) / 100) * rng.normal()) + rng.normal(0, 0.5));
    const r = blendEndPoint(preds, { block: 10, limitRsdPct: 5, consecutive: 3 });
    expect(r.reached).toBe(true);
    const at = revs[r.index!]!;
    expect(blendRsdPct(at - 90, NOMINAL_BLEND)).toBeLessThan(5); // the whole passing window was already blended
    expect(at).toBeGreaterThan(150); // not at the start, where the RSD is 20–30 %
    for (const b of r.blocks.slice(0, r.index! - 9 - 2)) if (b.pass) expect(b.uclRsdPct).toBeLessThanOrEqual(5);
  });

  it('is not reached by a blend stuck at 6 % RSD, nor by a uniform blend off target', () => {
    const rng = createRng(5);
    expect(blendEndPoint(Array.from({ length: 50 }, () => rng.normal(100, 6))).reached).toBe(false);
    expect(blendEndPoint(Array.from({ length: 50 }, () => rng.normal(85, 0.5))).reached).toBe(false);
  });

  it('refuses bad options and non-finite predictions', () => {
    expect(() => blendEndPoint([1, 2, 3], { block: 2 })).toThrow(expect.objectContaining({ code: 'LK_VALIDATION' }));
    expect(() => blendEndPoint([100, Number.NaN, 100])).toThrow(expect.objectContaining({ code: 'LK_VALUE_INVALID' }));
    expect(() => blendEndPoint([100], { confidence: 1 })).toThrow(expect.objectContaining({ code: 'LK_VALIDATION' }));
  });
});
