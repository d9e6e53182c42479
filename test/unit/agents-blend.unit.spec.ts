import jStat from 'jstat';
import { describe, expect, it } from 'vitest';
import { decide, type BlendDispenseInput } from '../../src/agents/blend-dispense.js';
import { blendRsdPct } from '../../src/twin/process.js';
import { codeOf } from '../helpers/codes.js';
import { DS, PARAMS, T0, TWIN, noisy } from './agents-fixtures.js';

const LIMITS = { rsdMaxPct: 5, meanMinPct: 90, meanMaxPct: 110, block: 10, consecutive: 3, confidence: 0.95 };

function input(values: readonly number[], over: Partial<BlendDispenseInput> = {}): BlendDispenseInput {
  return {
    now: T0,
    scans: values.map((concentrationPct, i) => ({ seq: 100 + i, concentrationPct, at: T0 - (values.length - i) * 10_000 })),
    revolutions: 300,
    targetRevolutions: 300,
    limits: { ...LIMITS },
    ...over,
  };
}

describe('agent.blend_dispense', () => {
  it('[LIM-BLEND-END-POINT] reaches the end point on a low-RSD scan series, naming the scan and every block', () => {
    const out = decide(input(noisy(40, 100, 1.5, 11)));
    expect(out.verdict.endpoint).toBe(true);
    expect(out.verdict.blocks).toHaveLength(31);
    // the first passing run of three blocks ends at the twelfth scan
    expect(out.verdict.endpointSeq).toBe(111);
    expect(out.verdict.blocks[0]).toMatchObject({ from: 100, to: 109 });
    for (const b of out.verdict.blocks) expect(b.ok).toBe(b.uclRsdPct <= 5 && b.meanPct >= 90 && b.meanPct <= 110);
    expect(out.proposals).toEqual([]);
    expect(out.trace.why).toMatch(/end point at scan 111/);
  });

  it('[LIM-BLEND-END-POINT] judges the UPPER chi-square bound of the block RSD, not the RSD itself', () => {
    // a block RSD of about 3.5 %: under the 5 % limit itself, over it once its 95 % upper bound is taken
    const values = noisy(30, 100, 3.5, 5);
    const out = decide(input(values));
    const factor = Math.sqrt(9 / jStat.chisquare.inv(0.05, 9));
    for (const b of out.verdict.blocks) expect(b.uclRsdPct / b.rsdPct).toBeCloseTo(factor, 9);
    const underLimitButFailing = out.verdict.blocks.filter((b) => b.rsdPct <= 5 && !b.ok);
    expect(underLimitButFailing.length).toBeGreaterThan(0);
    for (const b of underLimitButFailing) expect(b.uclRsdPct).toBeGreaterThan(5);
  });

  it('no end point on a noisy series; stopped at target, it proposes 50 more revolutions (content uniformity)', () => {
    const out = decide(input(noisy(40, 100, 8, 3)));
    expect(out.verdict.endpoint).toBe(false);
    expect(out.verdict.endpointSeq).toBeNull();
    expect(out.proposals).toHaveLength(1);
    const p = out.proposals[0]!;
    expect(p).toMatchObject({ agent: 'agent.blend_dispense', attribute: 'content_uniformity', moves: [{ setpoint: 'blender.TargetRevolutions', value: 350, unit: '{rev}' }] });
    expect(p.trace.candidates.filter((c) => c.chosen)).toHaveLength(1);
    expect(p.justification).toMatch(/upper 95 % bound/);
  });

  it('does not propose while the blender is still turning', () => {
    const out = decide(input(noisy(40, 100, 8, 3), { revolutions: 180 }));
    expect(out.verdict.endpoint).toBe(false);
    expect(out.proposals).toEqual([]);
    expect(out.trace.why).toMatch(/still turning/);
  });

  it('stays inside the approved limit and its max step, and stops proposing at the maximum', () => {
    const lim = { ...DS['blender.TargetRevolutions']! };
    expect(decide(input(noisy(40, 100, 8, 3), { revolutions: 580, targetRevolutions: 580, targetRevolutionsLimit: lim })).proposals[0]!.moves[0]!.value).toBe(600);
    expect(decide(input(noisy(40, 100, 8, 3), { targetRevolutionsLimit: { ...lim, maxStep: 20 } })).proposals[0]!.moves[0]!.value).toBe(320);
    const atMax = decide(input(noisy(40, 100, 8, 3), { revolutions: 600, targetRevolutions: 600, targetRevolutionsLimit: lim }));
    expect(atMax.proposals).toEqual([]);
    expect(atMax.trace.why).toMatch(/approved maximum/);
  });

  it('a uniform blend off target is a dispensing problem: no more revolutions', () => {
    const out = decide(input(noisy(40, 85, 1, 8)));
    expect(out.verdict.endpoint).toBe(false);
    expect(out.proposals).toEqual([]);
    expect(out.trace.candidates[0]!.why).toMatch(/dispensing/);
  });

  it('with the fitted blend model, the proposal carries the predicted RSD at the new target', () => {
    const out = decide(input(noisy(40, 100, 8, 3), { blendModel: { model: { ...TWIN }, params: { ...PARAMS.blend } } }));
    const p = out.proposals[0]!;
    expect(p.model).toEqual(TWIN);
    expect(p.predicted!['blendRsdPct']).toBeCloseTo(blendRsdPct(350, PARAMS.blend), 12);
    const [hold, raise] = p.trace.candidates;
    expect(raise!.score).toBeLessThan(hold!.score);
  });

  it('fewer scans than a block: no blocks, no move', () => {
    const out = decide(input([100, 101, 99]));
    expect(out.verdict.blocks).toEqual([]);
    expect(out.proposals).toEqual([]);
  });

  it('refuses scans out of order, non-positive predictions and a bad clock with stable codes', () => {
    const bad = input(noisy(12, 100, 1, 1));
    bad.scans[5]!.seq = 90;
    expect(codeOf(() => decide(bad))).toBe('LK_VALIDATION');
    const neg = input(noisy(12, 100, 1, 1));
    neg.scans[2]!.concentrationPct = -3;
    expect(codeOf(() => decide(neg))).toBe('LK_VALUE_INVALID');
    expect(codeOf(() => decide(input([100], { now: Number.NaN })))).toBe('LK_VALIDATION');
    expect(codeOf(() => decide(input([100], { limits: { ...LIMITS, block: 2 } })))).toBe('LK_VALIDATION');
  });
});
