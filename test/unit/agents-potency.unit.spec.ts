import { createHash } from 'node:crypto';
import jStat from 'jstat';
import { describe, expect, it } from 'vitest';
import { summariseRehearsal } from '../../src/agents/orchestrator.js';
import { decide, type PotencyScore, type QualityPotencyInput } from '../../src/agents/quality-potency.js';
import { DEFAULT_DESIGN_SPACE } from '../../src/twin/setpoints.js';
import { simulate } from '../../src/twin/simulate.js';
import { codeOf } from '../helpers/codes.js';
import { PARAMS, T0, noisy } from './agents-fixtures.js';

const PLS = { id: 'potency-pls-v1', version: 1 };
const sha = (i: number): string => createHash('sha256').update(`spectrum-${i}`).digest('hex');

function scores(values: readonly number[], model = PLS): PotencyScore[] {
  return values.map((potencyPct, i) => ({ spectrumId: 5000 + i, potencyPct, sha256: sha(i), model: { ...model } }));
}
const input = (values: readonly number[], over: Partial<QualityPotencyInput> = {}): QualityPotencyInput => ({ now: T0, scores: scores(values), spec: { minPct: 95, maxPct: 105 }, rmsepPct: 1.2, ...over });

describe('agent.quality_potency', () => {
  it('passes a batch on target; the trace keeps every spectrum hash and model version in order', () => {
    const values = noisy(20, 100, 1.5, 21);
    const out = decide(input(values));
    const m = values.reduce((a, b) => a + b, 0) / 20;
    const sd = Math.sqrt(values.reduce((a, b) => a + (b - m) ** 2, 0) / 19);
    const half = (jStat.studentt.inv(0.975, 19) * Math.max(sd, 1.2)) / Math.sqrt(20);
    expect(out.verdict).toMatchObject({ n: 20, pass: true, models: [PLS] });
    expect(out.verdict.meanPct!).toBeCloseTo(m, 9);
    expect(out.verdict.ciLowPct!).toBeCloseTo(m - half, 9);
    expect(out.verdict.ciHighPct!).toBeCloseTo(m + half, 9);
    expect(out.verdict.av!).toBeCloseTo(2.4 * sd, 1);
    const evidence = out.trace.inputs['evidence'] as { spectrumId: number; sha256: string; model: { id: string; version: number } }[];
    expect(evidence.map((e) => e.sha256)).toEqual(values.map((_, i) => sha(i)));
    expect(evidence.every((e) => e.model.id === 'potency-pls-v1' && e.model.version === 1)).toBe(true);
    expect(out.proposals).toEqual([]);
    expect(out.trace.why).toMatch(/waits for the named QA reviewer/);
  });

  it('fails when the interval reaches outside the specification, or with too few spectra', () => {
    const low = decide(input(noisy(20, 95.3, 1.5, 22)));
    expect(low.verdict.pass).toBe(false);
    expect(low.verdict.ciLowPct!).toBeLessThan(95);
    const few = decide(input(noisy(6, 100, 1, 23)));
    expect(few.verdict.pass).toBe(false);
    expect(few.trace.why).toMatch(/only 6 spectra/);
  });

  it('the RMSEP is the floor of the spread: identical predictions do not give a zero-width interval', () => {
    const out = decide(input(Array.from({ length: 12 }, () => 100)));
    expect(out.verdict.sdPct).toBe(0);
    expect(out.verdict.ciHighPct! - out.verdict.meanPct!).toBeCloseTo((jStat.studentt.inv(0.975, 11) * 1.2) / Math.sqrt(12), 9);
  });

  it('lists every model that scored the batch', () => {
    const s = [...scores(noisy(6, 100, 1, 1)), ...scores(noisy(6, 100, 1, 2), { id: 'potency-pls-v1', version: 2 }).map((x, i) => ({ ...x, spectrumId: 7000 + i }))];
    expect(decide({ now: T0, scores: s, spec: { minPct: 95, maxPct: 105 }, rmsepPct: 1.2 }).verdict.models).toEqual([PLS, { id: 'potency-pls-v1', version: 2 }]);
  });

  it('refuses a spectrum scored twice and a malformed hash', () => {
    const dup = input(noisy(12, 100, 1, 3));
    dup.scores[3]!.spectrumId = dup.scores[2]!.spectrumId;
    expect(codeOf(() => decide(dup))).toBe('LK_VALIDATION');
    const bad = input(noisy(12, 100, 1, 3));
    bad.scores[0]!.sha256 = 'abc';
    expect(codeOf(() => decide(bad))).toBe('LK_VALIDATION');
  });
});

describe('agent.orchestrator: the rehearsal summary line', () => {
  it('counts candidates, names the best and the capping outcome', () => {
    const r = simulate({ id: 'process-twin-v1', version: 1, params: PARAMS, validRanges: {} }, { candidates: 200, horizon: 'full batch', seed: 42, designSpace: DEFAULT_DESIGN_SPACE, cappingThresholdPct: 1.0 });
    const s = summariseRehearsal(r);
    expect(s.candidates).toBe(200);
    expect(s.ranked + s.discarded).toBe(200);
    expect(s.discardedBy.capping_risk).toBe(r.discarded.filter((d) => d.reasons[0]!.code === 'capping_risk').length);
    expect(s.capping.discarded).toBeGreaterThan(0);
    expect(s.capping.maxRankedPct!).toBeLessThanOrEqual(1.0);
    expect(s.best!.index).toBe(r.ranked[0]!.index);
    expect(s.best!.predicted['cappingRiskPct']).toBe(r.ranked[0]!.predicted.cappingRiskPct);
    expect(s.line).toMatch(/^200 candidates on process-twin-v1 v1 \(full batch, seed 42\): \d+ ranked, \d+ discarded \(\d+ capping > 1 %\); best #1: AV /);
    expect(JSON.parse(JSON.stringify(s))).toStrictEqual(s);
  });

  it('says so when no candidate passed', () => {
    const r = simulate({ id: 'process-twin-v1', version: 1, params: PARAMS, validRanges: {} }, { candidates: 20, horizon: '30 min', seed: 1, designSpace: DEFAULT_DESIGN_SPACE, cappingThresholdPct: 1e-6 });
    const s = summariseRehearsal(r);
    expect(s.best).toBeNull();
    expect(s.horizon).toBe('30.0 min');
    expect(s.line).toMatch(/no candidate passed/);
  });
});
