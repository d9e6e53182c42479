/**
 * The release rule, src/engine/run/quality.ts: a batch whose specification table has a FAIL is never released.
 * `judgeRun` judges a run's data (the same pure function at the gate and again when QA decides) and
 * `releaseRefusal` is what `RunEngine.decide` throws before any approval is signed. Proved here over arbitrary run
 * data and LIMS results on the demo batch record: refused exactly when some specification FAILs, every failed
 * one named; a missing table or a table that says FAIL without naming a result is refused too (fail safe).
 * The wiring into `decide` is proved over REST and the CLI on a real daemon (api-run, cli-daemon, run-fidelity).
 */
import { readFileSync } from 'node:fs';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { judgeRun, releaseRefusal, type LimsRow, type RunQuality } from '../../src/engine/run/quality.js';
import type { RunRecord } from '../../src/store/run-store.js';

const RECORD = JSON.parse(readFileSync(new URL('../../config/batches/acme-pharma/B-1042.json', import.meta.url), 'utf8')) as Record<string, unknown>;
const RUN: RunRecord = {
  id: 'run_0123456789abcdef0123', tenant: 'acme-pharma', batch: 'B-1042', line: 'line-3', product: 'ir-family-a', tooling: 'round-10mm-ff', status: 'APPROVAL',
  goal: 'test', request: {}, limits: {}, autonomy: 'L3', record: RECORD, recordSha: '0'.repeat(64), seed: 1, startedBy: 'o.operator',
  createdAt: 0, updatedAt: 0, endedAt: null, reason: null, data: {},
};

/** Mostly in-specification values, sometimes outside, sometimes not a number at all. */
const value = (lo: number, hi: number, outLo: number, outHi: number) =>
  fc.oneof(
    { weight: 12, arbitrary: fc.double({ min: lo, max: hi, noNaN: true }) },
    { weight: 1, arbitrary: fc.double({ min: outLo, max: outHi, noNaN: true }) },
    { weight: 1, arbitrary: fc.constantFrom(Number.NaN, Number.POSITIVE_INFINITY) },
  );
const series = (lo: number, hi: number, outLo: number, outHi: number) => fc.array(value(lo, hi, outLo, outHi), { maxLength: 70 });
const data = fc.record(
  {
    compress: fc.record({
      samples: fc.record({ weightMg: series(294, 306, 250, 350), hardnessN: series(100, 140, 50, 200), thicknessMm: series(2.9, 3.2, 2, 4) }),
      tablets: fc.integer({ min: 0, max: 40_000 }),
    }),
    inspection: fc.record({ inspected: fc.integer({ min: 0, max: 40_000 }), rejected: fc.integer({ min: 0, max: 2_000 }) }),
    evidence: fc.record({ nir: fc.array(fc.record({ potencyPct: value(98, 102, 80, 120), spectrumId: fc.nat(), spectrumSha256: fc.constant('ab'.repeat(32)) }), { maxLength: 12 }) }),
    blend: fc.record({ blendRsdPct: value(1, 4, 5, 20) }),
    dry: fc.record({ lodPct: value(1, 1.9, 2.1, 6) }),
    coat: fc.record({ weightGainPct: value(3, 3.5, 1, 2.9) }),
  },
  { requiredKeys: [] },
);
const lims = fc.array(
  fc.record({ test: fc.constantFrom('dissolution', 'assay'), result: fc.oneof(fc.double({ min: 60, max: 110, noNaN: true }), fc.constant('conforms')), unit: fc.constant('%'), status: fc.constantFrom('pass', 'fail', 'oos', 'pending'), lims_ref: fc.constantFrom('LIMS-1', 'LIMS-2') }),
  { maxLength: 3 },
) as fc.Arbitrary<LimsRow[]>;

describe('a batch that failed a specification is never released', () => {
  it('[INV-RELEASE-EXCEPTIONS] property: refused (LK_SPEC_FAILED) exactly when a specification FAILs, naming every failed one; the judgement is the same twice', () => {
    const seen = { refused: 0, allowed: 0 };
    fc.assert(
      fc.property(data, lims, (d, l) => {
        const q = judgeRun(RUN, d as Record<string, unknown>, l);
        expect(judgeRun(RUN, d as Record<string, unknown>, l).specTable.sha256).toBe(q.specTable.sha256);
        const failed = q.specTable.results.filter((r) => r.verdict === 'FAIL').map((r) => r.id);
        const refusal = releaseRefusal(q, RUN.batch);
        if (failed.length > 0) {
          seen.refused++;
          expect(q.specTable.verdict).toBe('FAIL');
          expect(refusal?.code).toBe('LK_SPEC_FAILED');
          expect((refusal!.detail as { failed: { id: string }[] }).failed.map((f) => f.id)).toEqual(failed);
        } else {
          seen.allowed++;
          expect(q.specTable.verdict).not.toBe('FAIL');
          expect(refusal).toBeNull();
        }
      }),
      { numRuns: 400 },
    );
    // both sides of the rule were exercised
    expect(seen.refused).toBeGreaterThan(20);
    expect(seen.allowed).toBeGreaterThan(20);
  });

  it('[INV-RELEASE-EXCEPTIONS] no table, or a table whose verdict says FAIL without a failed result, is refused all the same', () => {
    expect(releaseRefusal(undefined, 'B-1042')?.code).toBe('LK_SPEC_FAILED');
    expect(releaseRefusal({} as RunQuality, 'B-1042')?.code).toBe('LK_SPEC_FAILED');
    const q = judgeRun(RUN, {}, []);
    expect(q.specTable.verdict).toBe('INCOMPLETE');
    expect(releaseRefusal(q, 'B-1042')).toBeNull();
    const forged = { specTable: { ...q.specTable, verdict: 'FAIL' as const } };
    expect(releaseRefusal(forged, 'B-1042')?.code).toBe('LK_SPEC_FAILED');
  });

  it('a LIMS result that arrives after the gate changes the judgement: a failing dissolution makes a releasable batch unreleasable', () => {
    const before = judgeRun(RUN, {}, []);
    const after = judgeRun(RUN, {}, [{ test: 'dissolution', result: 71, unit: '%', status: 'pass', lims_ref: 'LIMS-D-9' }]);
    expect(after.specTable.sha256).not.toBe(before.specTable.sha256);
    expect(releaseRefusal(before, 'B-1042')).toBeNull();
    const refusal = releaseRefusal(after, 'B-1042');
    expect(refusal?.code).toBe('LK_SPEC_FAILED');
    expect(refusal?.message).toContain('LIMS-D-9: 71 % < Q 80 %');
  });
});
