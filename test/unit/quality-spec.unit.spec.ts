/**
 * src/quality/spec.ts: every specification of the demo batch record is judged,
 * always all eleven, in one order; nothing is PASS without its data, a
 * non-finite value or an unconvertible unit never passes, the record's limits
 * are converted to the data's unit, and a twin prediction never stands in for
 * a LIMS result.
 */
import { readFileSync } from 'node:fs';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { type BatchSpecifications, parseBatchRecord } from '../../src/domain/batch-record.js';
import { evaluateSpecifications, type QualityInput, RSD_SET_N, sampleSets, SPEC_IDS, type SpecId, type SpecResult, specTableText } from '../../src/quality/spec.js';

const RECORD = parseBatchRecord(JSON.parse(readFileSync(new URL('../../config/batches/acme-pharma/B-1042.json', import.meta.url), 'utf8')), 'acme-pharma/B-1042.json');
const SPEC = RECORD.specifications;

/** n values spread evenly over [lo, hi] (first lo, last hi). */
const spread = (n: number, lo: number, hi: number): number[] => Array.from({ length: n }, (_, i) => lo + ((hi - lo) * i) / (n - 1));

/** In-spec data of every kind and a passing LIMS dissolution and assay. */
function good(over: Partial<QualityInput> = {}): QualityInput {
  return {
    spec: SPEC,
    inProcess: { weightMg: spread(40, 296, 304), hardnessN: spread(42, 118, 131), thicknessMm: spread(20, 2.9, 3.1) },
    blend: { rsdPct: 3.1 },
    dry: { lodPct: 1.8 },
    coat: { weightGainPct: 3.4 },
    inspection: { inspected: 10_000, rejected: 120 },
    potency: { valuesPct: spread(30, 98.5, 101.5), refs: ['nir:5000'] },
    lims: [
      { test: 'dissolution', result: 88, unit: '%', status: 'pass', lims_ref: 'LIMS-D-1' },
      { test: 'assay', result: 99.6, unit: '%', status: 'pass', lims_ref: 'LIMS-A-1' },
    ],
    ...over,
  };
}
const byId = (results: readonly SpecResult[], id: SpecId): SpecResult => results.find((r) => r.id === id)!;
const withSpec = (patch: Partial<BatchSpecifications>): BatchSpecifications => ({ ...SPEC, ...patch });

describe('the specification table on the demo batch record', () => {
  it('in-spec data of every kind and a passing LIMS dissolution: every specification PASS, overall PASS', () => {
    const t = evaluateSpecifications(good());
    expect(t.results.map((r) => [r.id, r.verdict])).toEqual(SPEC_IDS.map((id) => [id, 'PASS']));
    expect(t).toMatchObject({ verdict: 'PASS', counts: { PASS: 11, FAIL: 0, NOT_EVALUATED: 0 } });
    for (const r of t.results) expect(r.reason.length).toBeGreaterThan(0);
    expect(byId(t.results, 'tablet_weight')).toMatchObject({ limits: '285–315 mg (300 mg ± 5 %)', limit: { min: 285, max: 315, unit: 'mg' } });
    expect(byId(t.results, 'hardness')).toMatchObject({ limits: '80–150 N', data: { n: 42, min: 118, max: 131, unit: 'N' } });
    expect(byId(t.results, 'potency').data.refs).toEqual(['nir:5000', 'LIMS-A-1']);
    expect(byId(t.results, 'content_uniformity').limits).toBe('AV ≤ 15.0 (USP <905> L1)');
    expect(byId(t.results, 'dissolution').limits).toBe('Q = 80 % at 30 min');
  });

  it('weight RSD is judged per sample set of 20 consecutive samples: a drift between sets is not scatter, one scattered set fails the batch', () => {
    // three sets, each tight around its own level, 291 → 300 → 309 mg: over all 60 the RSD is about 2.5 %, no set is over 0.1 %
    const drift = [...spread(20, 290.9, 291.1), ...spread(20, 299.9, 300.1), ...spread(20, 308.9, 309.1)];
    const whole = evaluateSpecifications(good({ inProcess: { ...good().inProcess, weightMg: drift } }));
    expect(byId(whole.results, 'tablet_weight_rsd')).toMatchObject({ verdict: 'PASS', data: { n: 60 } });
    expect(byId(whole.results, 'tablet_weight_rsd').data.rsdPct!).toBeGreaterThan(2);
    expect(byId(whole.results, 'tablet_weight_rsd').reason).toMatch(/^every set ≤ 2\.0 %; worst set \d of 3 \(samples \d+–\d+\): RSD 0\.\d+ % \(3 sets of 20 consecutive samples, n 60\)$/);
    // the second set scattered ± 4 % around 300 mg (RSD about 2.4 %), the others tight: FAIL, naming the set
    const scattered = [...spread(20, 299.9, 300.1), ...Array.from({ length: 20 }, (_, i) => (i % 2 === 0 ? 288 : 312)), ...spread(20, 299.9, 300.1)];
    const bad = byId(evaluateSpecifications(good({ inProcess: { ...good().inProcess, weightMg: scattered } })).results, 'tablet_weight_rsd');
    expect(bad.verdict).toBe('FAIL');
    expect(bad.reason).toMatch(/^1 of 3 sets over 2\.0 %; worst set 2 of 3 \(samples 21–40\): RSD 4\.1 % > 2\.0 %/);
  });

  it('property: the sample sets cover every sample once, in order, each of 10 to 29 samples (one set under 10 only when there are fewer)', () => {
    fc.assert(fc.property(fc.integer({ min: 1, max: 2000 }), (n) => {
      const sets = sampleSets(n);
      expect(sets[0]![0]).toBe(0);
      expect(sets.at(-1)![1]).toBe(n);
      for (let i = 1; i < sets.length; i++) expect(sets[i]![0]).toBe(sets[i - 1]![1]);
      for (const [from, to] of sets) expect(to - from).toBeLessThan(RSD_SET_N + 10);
      if (n >= 10) for (const [from, to] of sets) expect(to - from).toBeGreaterThanOrEqual(10);
      else expect(sets).toEqual([[0, n]]);
    }));
  });

  it('hardness samples of 151–176 N: hardness FAIL naming how many and the worst, overall FAIL', () => {
    const t = evaluateSpecifications(good({ inProcess: { ...good().inProcess, hardnessN: spread(26, 151, 176) } }));
    const h = byId(t.results, 'hardness');
    expect(h.verdict).toBe('FAIL');
    expect(h.reason).toBe('26 of 26 outside 80–150 N; worst 176 N');
    expect(t.verdict).toBe('FAIL');
  });

  it('no LIMS: dissolution NOT_EVALUATED (a twin prediction is shown as such and passes nothing), overall INCOMPLETE', () => {
    const t = evaluateSpecifications(good({ lims: [] }));
    expect(byId(t.results, 'dissolution')).toMatchObject({ verdict: 'NOT_EVALUATED', reason: 'no LIMS dissolution result yet' });
    expect(t.verdict).toBe('INCOMPLETE');
    const p = evaluateSpecifications(good({ lims: [], dissolutionPrediction: { pct: 87, atMin: 30, model: 'dissolution-weibull v3' } }));
    const d = byId(p.results, 'dissolution');
    expect(d.verdict).toBe('NOT_EVALUATED');
    expect(d.reason).toContain('twin surrogate predicts 87 % at 30 min (dissolution-weibull v3) — a prediction, not a release result');
    expect(d.data).toEqual({ n: 0, unit: '%', prediction: { pct: 87, atMin: 30, model: 'dissolution-weibull v3' } });
    expect(p.verdict).toBe('INCOMPLETE');
  });

  it('dissolution fails below Q, on a failing LIMS status, and a passing retest does not erase a failure', () => {
    const diss = (result: number, status: string, ref = 'LIMS-D-1') => ({ test: 'dissolution', result, unit: '%', status, lims_ref: ref });
    expect(byId(evaluateSpecifications(good({ lims: [diss(78, 'pass')] })).results, 'dissolution')).toMatchObject({ verdict: 'FAIL', reason: 'LIMS-D-1: 78 % < Q 80 %' });
    expect(byId(evaluateSpecifications(good({ lims: [diss(85, 'oos')] })).results, 'dissolution').verdict).toBe('FAIL');
    expect(byId(evaluateSpecifications(good({ lims: [diss(70, 'fail'), diss(90, 'pass', 'LIMS-D-2')] })).results, 'dissolution').verdict).toBe('FAIL');
    expect(byId(evaluateSpecifications(good({ lims: [{ ...diss(0, 'pass'), result: 'conforms' }] })).results, 'dissolution').verdict).toBe('NOT_EVALUATED');
  });

  it('a LIMS assay outside the potency limits fails potency even when the NIR mean is inside', () => {
    const t = evaluateSpecifications(good({ lims: [{ test: 'assay', result: 93.9, unit: '%', status: 'pass', lims_ref: 'LIMS-A-9' }] }));
    expect(byId(t.results, 'potency')).toMatchObject({ verdict: 'FAIL', reason: 'LIMS-A-9: assay 93.9 % outside 95.0–105.0 %' });
  });

  it('tablet weight (Ph. Eur. 2.9.5 style): 2 of 20 outside ±5 % pass, 3 fail, 1 outside ±10 % fails, 19 units are not enough', () => {
    const weights = (outside5: number, outside10 = 0, n = 20): number[] => [...Array<number>(outside5).fill(320), ...Array<number>(outside10).fill(331), ...Array<number>(n - outside5 - outside10).fill(300)];
    const tw = (w: number[]): SpecResult => byId(evaluateSpecifications(good({ inProcess: { ...good().inProcess, weightMg: w } })).results, 'tablet_weight');
    expect(tw(weights(2)).verdict).toBe('PASS');
    expect(tw(weights(3))).toMatchObject({ verdict: 'FAIL' });
    expect(tw(weights(3)).reason).toContain('3 of 20 outside ±5 %');
    expect(tw(weights(0, 1)).verdict).toBe('FAIL');
    expect(tw(weights(0, 0, 19))).toMatchObject({ verdict: 'NOT_EVALUATED', reason: '19 finite weight(s); the test needs 20 (Ph. Eur. 2.9.5)' });
  });
});

describe('units: the record’s limits are converted to the data’s unit', () => {
  it('hardness in kgf: 8–15 kgf is 78.45–147.1 N, so 79 N passes and 148 N fails', () => {
    const spec = withSpec({ hardness: { min: 8, max: 15, unit: 'kgf' } });
    const h = (values: number[]) => byId(evaluateSpecifications(good({ spec, inProcess: { ...good().inProcess, hardnessN: values } })).results, 'hardness');
    const pass = h([79, 120, 147]);
    expect(pass.verdict).toBe('PASS');
    expect(pass.limit.min).toBeCloseTo(78.4532, 9);
    expect(pass.limit.max).toBeCloseTo(147.09975, 9);
    expect(pass.limits).toBe('8–15 kgf (78.45–147.1 N)');
    expect(h([120, 148])).toMatchObject({ verdict: 'FAIL', reason: '1 of 2 outside 78.45–147.1 N; worst 148 N' });
  });

  it('tablet weight in g: target 0.3 g is 300 mg', () => {
    const t = evaluateSpecifications(good({ spec: withSpec({ tablet_weight: { target: 0.3, unit: 'g', rsd_max_pct: 2 } }) }));
    const w = byId(t.results, 'tablet_weight');
    expect(w.verdict).toBe('PASS');
    expect(w.limit.min).toBeCloseTo(285, 9);
    expect(w.limits).toBe('285–315 mg (0.3 g ± 5 %)');
  });

  it('a unit that does not convert to the data’s is NOT_EVALUATED, never compared as if it did', () => {
    const spec = withSpec({ hardness: { min: 80, max: 150, unit: 'mg' } });
    const h = byId(evaluateSpecifications(good({ spec })).results, 'hardness');
    expect(h.verdict).toBe('NOT_EVALUATED');
    expect(h.reason).toBe('the record\'s unit "mg" cannot be converted to the data\'s unit "N"');
  });
});

describe('nothing unjudged is shown as passed', () => {
  it('[INV-RELEASE-EXCEPTIONS] non-finite data is never PASS, and the reason names it', () => {
    const ip = good().inProcess;
    const t = evaluateSpecifications(
      good({
        inProcess: { weightMg: [...ip.weightMg, Number.NaN], hardnessN: [...ip.hardnessN, Number.POSITIVE_INFINITY], thicknessMm: [...ip.thicknessMm.slice(1), 9, Number.NaN] },
        potency: { valuesPct: [...spread(30, 99, 101), Number.NaN] },
        dry: { lodPct: Number.NaN },
        coat: { weightGainPct: Number.POSITIVE_INFINITY },
        blend: { rsdPct: Number.NaN },
        inspection: { inspected: Number.NaN, rejected: 1 },
      }),
    );
    for (const id of ['tablet_weight', 'tablet_weight_rsd', 'hardness', 'content_uniformity', 'potency', 'lod_end', 'coat_weight_gain', 'blend_rsd', 'defect_rate'] as const) {
      expect([id, byId(t.results, id).verdict]).toEqual([id, 'NOT_EVALUATED']);
      expect(byId(t.results, id).reason).toMatch(/NaN|Infinity/);
    }
    // the finite values already prove a failure: FAIL, and the NaN is still named
    expect(byId(t.results, 'thickness')).toMatchObject({ verdict: 'FAIL', reason: '1 of 21 outside 2.6–3.4 mm; worst 9 mm; 1 non-finite value (NaN)' });
    expect(t.verdict).toBe('FAIL');
  });

  it('an empty run: all eleven specifications listed in order, every one NOT_EVALUATED with a reason', () => {
    const t = evaluateSpecifications({ spec: SPEC, inProcess: { weightMg: [], hardnessN: [], thicknessMm: [] }, lims: [] });
    expect(t.results.map((r) => r.id)).toEqual([...SPEC_IDS]);
    expect(t.results.every((r) => r.verdict === 'NOT_EVALUATED' && r.reason.length > 0)).toBe(true);
    expect(byId(t.results, 'thickness').reason).toBe('no in-process thickness samples');
    expect(t).toMatchObject({ verdict: 'INCOMPLETE', counts: { PASS: 0, FAIL: 0, NOT_EVALUATED: 11 } });
  });

  it('[INV-RELEASE-EXCEPTIONS] property: arbitrary partial inputs never PASS a specification whose data is missing or non-finite', () => {
    const value = (lo: number, hi: number) => fc.oneof({ weight: 8, arbitrary: fc.double({ min: lo, max: hi, noNaN: true }) }, { weight: 1, arbitrary: fc.constantFrom(Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY) });
    const arr = (lo: number, hi: number) => fc.oneof(fc.constant([] as number[]), fc.array(value(lo, hi), { minLength: 1, maxLength: 40 }));
    const scalar = (lo: number, hi: number) => fc.option(fc.record({ v: fc.option(value(lo, hi)) }), { nil: undefined });
    const input = fc.record({
      w: arr(280, 320),
      h: arr(70, 160),
      th: arr(3.5, 4.5),
      pot: fc.option(arr(90, 110), { nil: undefined }),
      lod: scalar(0, 4),
      coat: scalar(1, 5),
      blend: scalar(1, 8),
      insp: fc.option(fc.record({ inspected: fc.integer({ min: 0, max: 1000 }), rejected: fc.integer({ min: 0, max: 30 }) }), { nil: undefined }),
      lims: fc.array(fc.record({ test: fc.constantFrom('dissolution', 'assay', 'hardness'), result: fc.oneof(fc.double({ min: 60, max: 110 }), fc.constant('conforms')), status: fc.constantFrom('pass', 'fail', 'oos', 'pending'), lims_ref: fc.constantFrom('L-1', 'L-2') }), { maxLength: 3 }),
    });
    let passes = 0;
    fc.assert(
      fc.property(input, (x) => {
        const q: QualityInput = {
          spec: SPEC,
          inProcess: { weightMg: x.w, hardnessN: x.h, thicknessMm: x.th },
          ...(x.pot ? { potency: { valuesPct: x.pot } } : {}),
          ...(x.lod ? { dry: { lodPct: x.lod.v } } : {}),
          ...(x.coat ? { coat: { weightGainPct: x.coat.v } } : {}),
          ...(x.blend ? { blend: { rsdPct: x.blend.v } } : {}),
          ...(x.insp ? { inspection: x.insp } : {}),
          lims: x.lims,
        };
        const t = evaluateSpecifications(q);
        expect(t.results.map((r) => r.id)).toEqual([...SPEC_IDS]);
        const bad = (xs: readonly number[] | undefined): boolean => !xs || xs.length === 0 || xs.some((v) => !Number.isFinite(v));
        const badScalar = (s: { v: number | null } | undefined): boolean => !s || s.v === null || !Number.isFinite(s.v);
        const limsNums = (test: string) => x.lims.filter((r) => r.test === test);
        const missing: Record<SpecId, boolean> = {
          tablet_weight: bad(x.w) || x.w.length < 20,
          tablet_weight_rsd: bad(x.w) || x.w.length < 10,
          hardness: bad(x.h),
          thickness: bad(x.th),
          content_uniformity: bad(x.pot) || x.pot!.length < 10,
          dissolution: limsNums('dissolution').length === 0 || limsNums('dissolution').some((r) => typeof r.result !== 'number' || r.status !== 'pass'),
          defect_rate: !x.insp || x.insp.inspected === 0 || x.insp.rejected > x.insp.inspected,
          potency: (bad(x.pot) && limsNums('assay').length === 0) || (x.pot !== undefined && x.pot.some((v) => !Number.isFinite(v))) || limsNums('assay').some((r) => typeof r.result !== 'number' || r.status !== 'pass'),
          lod_end: badScalar(x.lod),
          coat_weight_gain: badScalar(x.coat),
          blend_rsd: badScalar(x.blend),
        };
        for (const r of t.results) {
          if (missing[r.id]) expect([r.id, r.verdict]).not.toEqual([r.id, 'PASS']);
          if (r.verdict === 'PASS') passes++;
          expect(r.reason.length).toBeGreaterThan(0);
        }
        if (t.verdict === 'PASS') expect(t.results.every((r) => r.verdict === 'PASS')).toBe(true);
      }),
      { numRuns: 300 },
    );
    // the property is not vacuous: some specifications did pass
    expect(passes).toBeGreaterThan(100);
  });
});

describe('specTableText', () => {
  it('one plain line per specification: verdict, title, limits, data, and the reason unless PASS', () => {
    const lines = specTableText(evaluateSpecifications(good({ lims: [] })));
    expect(lines).toHaveLength(11);
    expect(lines[2]).toMatch(/^PASS +Hardness +80–150 N {2}n 42, 118–131 N$/);
    expect(lines[5]).toMatch(/^NOT_EVALUATED {2}Dissolution +Q = 80 % at 30 min {2}no data — no LIMS dissolution result yet$/);
  });
});
