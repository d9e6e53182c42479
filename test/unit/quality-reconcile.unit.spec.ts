/**
 * src/quality/reconcile.ts and src/quality/fidelity.ts on hand-worked cases:
 * counts that reconcile within 0.5 % and counts that do not, and the twin's
 * residuals against the card's acceptance.
 */
import { describe, expect, it } from 'vitest';
import { fidelity } from '../../src/quality/fidelity.js';
import { reconcile } from '../../src/quality/reconcile.js';

describe('reconcile', () => {
  it('the yield line has its own tolerance: a press that ran 1.4 % past the batch size reconciles at 2 %, two counters 2.5 % apart do not at 0.5 %', () => {
    const r = reconcile({ batchSize: 30_000, pressed: 30_413, inspected: 31_183, rejected: 496, tolerancePct: 0.5, yieldTolerancePct: 2 });
    expect(r.lines.map((l) => [l.name, l.ok])).toEqual([['pressed vs batch size', true], ['inspected vs pressed', false], ['rejected ≤ inspected', true]]);
    expect(r.findings).toEqual(['inspected vs pressed: 31183 vs 30413, +770 (2.532 %), beyond ±0.5 % (152.065 tablets)']);
    expect(reconcile({ batchSize: 30_000, pressed: 30_601, inspected: 30_601, rejected: 0, tolerancePct: 0.5, yieldTolerancePct: 2 }).findings).toEqual(['pressed vs batch size: 30601 vs 30000, +601 (2.003 %), beyond ±2 % (600 tablets)']);
    // without it, the one tolerance applies to every line
    expect(reconcile({ batchSize: 30_000, pressed: 30_413, inspected: 30_413, rejected: 0 }).lines[0]!.ok).toBe(false);
  });

  it('counts within 0.5 % reconcile, line by line', () => {
    const r = reconcile({ batchSize: 300_000, pressed: 299_000, inspected: 298_600, rejected: 1_200 });
    expect(r).toEqual({
      ok: true,
      lines: [
        { name: 'pressed vs batch size', expected: 300_000, actual: 299_000, diff: -1_000, ok: true },
        { name: 'inspected vs pressed', expected: 299_000, actual: 298_600, diff: -400, ok: true },
        { name: 'rejected ≤ inspected', expected: 298_600, actual: 1_200, diff: -297_400, ok: true },
      ],
      findings: [],
    });
  });

  it('a difference beyond the tolerance is a finding that says by how much', () => {
    // 0.5 % of 300 000 is 1 500: 1 501 short is one too many
    const r = reconcile({ batchSize: 300_000, pressed: 298_499, inspected: 298_499, rejected: 0 });
    expect(r.ok).toBe(false);
    expect(r.lines.map((l) => l.ok)).toEqual([false, true, true]);
    expect(r.findings).toEqual(['pressed vs batch size: 298499 vs 300000, -1501 (-0.5 %), beyond ±0.5 % (1500 tablets)']);
    expect(reconcile({ batchSize: 300_000, pressed: 298_500, inspected: 298_500, rejected: 0 }).ok).toBe(true);
  });

  it('a count tolerance replaces the percentage; rejected above inspected fails', () => {
    const r = reconcile({ batchSize: 1_000, pressed: 1_000, inspected: 990, rejected: 991, toleranceCount: 5 });
    expect(r.lines.map((l) => [l.name, l.ok])).toEqual([
      ['pressed vs batch size', true],
      ['inspected vs pressed', false],
      ['rejected ≤ inspected', false],
    ]);
    expect(r.findings).toEqual(['inspected vs pressed: 990 vs 1000, -10 (-1 %), beyond ±5 tablets', 'rejected ≤ inspected: 991 rejected of 990 inspected']);
    expect(reconcile({ batchSize: 1_000, pressed: 1_000, inspected: 990, rejected: 0, tolerancePct: 1 }).ok).toBe(true);
  });

  it('a count that is not a whole number ≥ 0 never reconciles', () => {
    for (const bad of [Number.NaN, -1, 10.5, Number.POSITIVE_INFINITY]) {
      const r = reconcile({ batchSize: 1_000, pressed: bad, inspected: 1_000, rejected: 0 });
      expect(r.ok).toBe(false);
      expect(r.findings[0]).toContain('not a whole count');
    }
  });
});

describe('fidelity', () => {
  it('residual = measured mean − prediction, judged against absolute and relative acceptance', () => {
    const r = fidelity({
      predicted: { hardnessN: 120, weightMg: 300, thicknessMm: 4 },
      measured: { hardnessN: [126, 128, 130], weightMg: [301, 299, 303] },
      acceptance: { hardnessN: { maxAbsResidual: 6 }, weightMg: { maxRelResidualPct: 1 } },
    });
    expect(r.ok).toBe(false);
    const [h, w, t] = r.residuals;
    expect(h).toMatchObject({ attribute: 'hardnessN', predicted: 120, measuredMean: 128, n: 3, residual: 8, limit: { maxAbsResidual: 6 }, ok: false });
    expect(h!.relPct).toBeCloseTo(100 * (8 / 120), 12);
    expect(h!.reason).toBe('measured 128 (n 3) vs predicted 120: residual 8; |residual| 8 > 6');
    expect(w).toMatchObject({ measuredMean: 301, residual: 1, ok: true });
    expect(w!.relPct).toBeCloseTo(1 / 3, 12);
    // no measurements: listed with n 0, not judged
    expect(t).toEqual({ attribute: 'thicknessMm', predicted: 4, measuredMean: null, n: 0, residual: null, relPct: null, limit: null, ok: true, reason: 'no measurements: not judged' });
  });

  it('all within the acceptance is ok; a non-finite measurement or prediction is not', () => {
    expect(fidelity({ predicted: { a: 10 }, measured: { a: [10.4, 9.8] }, acceptance: { a: { maxAbsResidual: 0.5, maxRelResidualPct: 5 } } }).ok).toBe(true);
    const nan = fidelity({ predicted: { a: 10 }, measured: { a: [10, Number.NaN] }, acceptance: { a: { maxAbsResidual: 0.5 } } });
    expect(nan.ok).toBe(false);
    expect(nan.residuals[0]!.reason).toBe('1 non-finite measurement(s) (NaN)');
    expect(fidelity({ predicted: { a: Number.NaN }, measured: { a: [10] }, acceptance: {} }).ok).toBe(false);
  });
});
