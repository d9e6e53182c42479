import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { DEADBAND, decide, PRESS_SETPOINTS } from '../../src/agents/compress-fill.js';
import { pressModel } from '../../src/twin/process.js';
import { codeOf } from '../helpers/codes.js';
import { NOMINAL_PRESS, PARAMS, TWIN, numbersOf, pressInput, type PressVec } from './agents-fixtures.js';

const at = (over: Partial<PressVec>): PressVec => ({ ...NOMINAL_PRESS, ...over });
const twin = (v: PressVec) => pressModel({ fillDepthMm: v['press.FillDepth'], mainForceKn: v['press.MainForce'], preForceKn: v['press.PreForce'], turretRpm: v['press.TurretSpeed'] }, PARAMS.press);

describe('agent.compress_fill', () => {
  it('on target: holds, and says why (the best move is inside the deadband)', () => {
    const out = decide(pressInput(NOMINAL_PRESS));
    expect(out.verdict.onTarget).toBe(true);
    expect(out.verdict.weightMeanMg!).toBeCloseTo(twin(NOMINAL_PRESS).tabletWeightMg, -1);
    expect(out.proposals).toEqual([]);
    const hold = out.trace.candidates.find((c) => c.chosen)!;
    expect(hold.moves).toEqual([]);
    expect(out.trace.why).toMatch(/deadband/);
  });

  it('weight low: moves FillDepth up by at most one step, with the predicted capping risk and the model', () => {
    const cur = at({ 'press.FillDepth': 7.8 });
    const out = decide(pressInput(cur));
    expect(out.verdict.weightMeanMg!).toBeLessThan(285);
    expect(out.verdict.onTarget).toBe(false);
    expect(out.proposals).toHaveLength(1);
    const p = out.proposals[0]!;
    expect(p.attribute).toBe('content_uniformity');
    // what the move is for, in the reasoning's own terms: the weight first, from the measured mean to the prediction
    expect(p.serves![0]).toMatchObject({ tag: 'press.TabletWeight', from: out.verdict.weightMeanMg!, to: p.predicted!['tabletWeightMg']!, unit: 'mg' });
    expect(p.model).toEqual(TWIN);
    const fill = p.moves.find((m) => m.setpoint === 'press.FillDepth')!;
    expect(fill.unit).toBe('mm');
    expect(fill.value).toBeGreaterThan(7.8);
    expect(fill.value).toBeLessThanOrEqual(8.1 + 1e-9);
    expect(Math.abs(p.predicted!['tabletWeightMg']! - 300)).toBeLessThan(Math.abs(out.verdict.weightMeanMg! - 300));
    expect(p.predicted!['cappingRiskPct']).toBeLessThanOrEqual(1.5);
    expect(p.predicted!['holdScore']! - p.predicted!['score']!).toBeGreaterThanOrEqual(DEADBAND);
    // the trace names every candidate considered, exactly one chosen
    expect(out.trace.candidates.length).toBeGreaterThan(40);
    expect(out.trace.candidates.filter((c) => c.chosen)).toHaveLength(1);
    expect(p.trace.candidates.map((c) => c.chosen)).toEqual([false, true]);
  });

  it('at the start of compression, before any tablet is measured, rehearses the first move on the twin alone', () => {
    // hard tablets at the recipe: the twin alone (no bias) chooses one step toward the centre of the hardness band
    const cur = at({ 'press.MainForce': 14 });
    expect(twin(cur).hardnessN).toBeGreaterThan(150);
    const none = { weights: [], hardness: [], capping: [] };
    const out = decide(pressInput(cur, { ...none, blindStart: true }));
    expect(out.proposals).toHaveLength(1);
    const p = out.proposals[0]!;
    const force = p.moves.find((m) => m.setpoint === 'press.MainForce')!;
    expect(force.value).toBeLessThan(14);
    expect(force.value).toBeGreaterThanOrEqual(14 - 1.5 - 1e-9);
    expect(p.predicted!['hardnessN']!).toBeLessThan(twin(cur).hardnessN);
    // a move about hardness says so; the class it is ranked by (dissolution) is not what it is for
    expect(p.serves![0]).toMatchObject({ tag: 'press.Hardness', unit: 'N' });
    expect(p.serves![0]!.from).toBeCloseTo(twin(cur).hardnessN, 6);
    expect(p.justification).toMatch(/^No tablet measured yet/);
    expect(p.justification).toMatch(/alone: no measured bias yet/);
    expect((out.trace.inputs as { blindStart?: boolean }).blindStart).toBe(true);
    // without the flag, or with any reading at all, the minimum samples still apply
    expect(decide(pressInput(cur, none)).proposals).toEqual([]);
    const some = pressInput(cur, { blindStart: true });
    expect(decide({ ...some, weights: some.weights.slice(0, 2), hardness: some.hardness.slice(0, 1), capping: [] }).trace.why).toMatch(/too few samples/);
  });

  it('weight high: moves FillDepth down', () => {
    const p = decide(pressInput(at({ 'press.FillDepth': 9.1 }))).proposals[0]!;
    expect(p.moves.find((m) => m.setpoint === 'press.FillDepth')!.value).toBeLessThan(9.1);
  });

  it('never proposes a candidate over the capping threshold, and discards those with the reason', () => {
    // soft tablets at a fast turret: more force would help hardness but raises capping past a tight threshold
    const cur = at({ 'press.MainForce': 9, 'press.PreForce': 1.5, 'press.TurretSpeed': 60, 'press.FillDepth': 9.5 });
    const out = decide(pressInput(cur, { cappingThresholdPct: 0.6, targets: { weightMg: 300, weightTolerancePct: 5, hardnessMinN: 100, hardnessMaxN: 150 } }));
    const capped = out.trace.candidates.filter((c) => c.why.startsWith('discarded (capping_risk)'));
    expect(capped.length).toBeGreaterThan(0);
    for (const c of capped) {
      expect(c.chosen).toBe(false);
      expect(c.predicted['cappingRiskPct']).toBeGreaterThan(0.6);
    }
    for (const c of out.trace.candidates) if (c.chosen) expect(c.predicted['cappingRiskPct']!).toBeLessThanOrEqual(0.6);
    expect(out.proposals).toHaveLength(1);
    expect(out.proposals[0]!.predicted!['cappingRiskPct']).toBeLessThanOrEqual(0.6);
  });

  it('corrects the twin by the measured bias: the line weighs light though the twin says 300 mg', () => {
    // measurements are what fill depth 8.0 makes, the setpoint says 8.5: bias ≈ −18 mg
    const inp = pressInput(NOMINAL_PRESS, {}, at({ 'press.FillDepth': 8.0 }));
    const out = decide(inp);
    const bias = (out.trace.inputs['bias'] as { weightMg: number }).weightMg;
    expect(bias).toBeLessThan(-10);
    const p = out.proposals[0]!;
    const next = { ...NOMINAL_PRESS };
    for (const m of p.moves) next[m.setpoint as keyof PressVec] = m.value;
    expect(next['press.FillDepth']).toBeGreaterThan(8.5);
    expect(p.predicted!['tabletWeightMg']).toBeCloseTo(twin(next).tabletWeightMg + bias, 9);
  });

  it('does not steer with a twin that is far off, nor outside its valid ranges, nor on too few samples', () => {
    const far = decide(pressInput(NOMINAL_PRESS, {}, at({ 'press.FillDepth': 7.0 })));
    expect(far.proposals).toEqual([]);
    expect(far.trace.why).toMatch(/refit/);
    const invalid = pressInput(at({ 'press.FillDepth': 8.0 }));
    invalid.validRanges['press.FillDepth'] = { min: 8.2, max: 11, unit: 'mm' };
    const inv = decide(invalid);
    expect(inv.proposals).toEqual([]);
    expect(inv.trace.why).toMatch(/valid range/);
    const stopped = decide(pressInput(at({ 'press.FillDepth': 7.8, 'press.TurretSpeed': 0 }), {}, at({ 'press.FillDepth': 7.8 })));
    expect(stopped.proposals).toEqual([]);
    expect(stopped.trace.why).toMatch(/turret is stopped/);
    const few = pressInput(at({ 'press.FillDepth': 8.0 }));
    few.weights = few.weights.slice(0, 3);
    expect(decide(few).proposals).toEqual([]);
  });

  it('discards candidates outside the twin’s valid ranges instead of extrapolating', () => {
    const inp = pressInput(at({ 'press.FillDepth': 8.0 }));
    inp.validRanges['press.FillDepth'] = { min: 6.5, max: 8.15, unit: 'mm' };
    const out = decide(inp);
    const outside = out.trace.candidates.filter((c) => c.why.startsWith('discarded (outside_valid_range)'));
    expect(outside.length).toBeGreaterThan(0);
    for (const c of outside) expect(c.predicted).toEqual({});
    expect(out.proposals[0]!.moves.find((m) => m.setpoint === 'press.FillDepth')!.value).toBeLessThanOrEqual(8.15);
  });

  it('the seed only adds candidates: same seed, same output; another seed, other draws', () => {
    const a = decide(pressInput(at({ 'press.FillDepth': 8.0 })));
    expect(JSON.stringify(decide(pressInput(at({ 'press.FillDepth': 8.0 }))))).toBe(JSON.stringify(a));
    const b = decide(pressInput(at({ 'press.FillDepth': 8.0 }), { seed: 43 }));
    expect(b.trace.candidates.map((c) => c.moves)).not.toEqual(a.trace.candidates.map((c) => c.moves));
  });

  it('property: every move is within one max step and the design space, under the threshold, and all numbers finite', () => {
    const vec = fc.record({
      'press.FillDepth': fc.double({ min: 7.0, max: 10.5, noNaN: true }),
      'press.MainForce': fc.double({ min: 8, max: 18, noNaN: true }),
      'press.PreForce': fc.double({ min: 1.5, max: 4, noNaN: true }),
      'press.TurretSpeed': fc.double({ min: 30, max: 70, noNaN: true }),
    });
    fc.assert(
      fc.property(vec, fc.double({ min: -0.04, max: 0.04, noNaN: true }), fc.double({ min: 0.3, max: 3, noNaN: true }), fc.integer(), (cur, shift, threshold, seed) => {
        const truth = { ...cur, 'press.FillDepth': cur['press.FillDepth'] * (1 + shift) };
        const inp = pressInput(cur, { cappingThresholdPct: threshold, seed }, truth, 3);
        const out = decide(inp);
        for (const n of numbersOf(out)) expect(Number.isFinite(n.value)).toBe(true);
        for (const p of out.proposals) {
          expect(p.predicted!['cappingRiskPct']!).toBeLessThanOrEqual(threshold);
          for (const m of p.moves) {
            const l = inp.designSpace[m.setpoint as (typeof PRESS_SETPOINTS)[number]];
            expect(Math.abs(m.value - cur[m.setpoint as keyof PressVec])).toBeLessThanOrEqual(l.maxStep + 1e-9);
            expect(m.value).toBeGreaterThanOrEqual(l.min);
            expect(m.value).toBeLessThanOrEqual(l.max);
            expect(m.setpoint).not.toBe('press.TurretSpeed');
          }
        }
      }),
      { numRuns: 150, seed: 20261120 },
    );
  });

  it('refuses non-finite measurements and a non-integer seed with stable codes', () => {
    const bad = pressInput(NOMINAL_PRESS);
    bad.weights[4]!.value = Number.NaN;
    expect(codeOf(() => decide(bad))).toBe('LK_VALUE_INVALID');
    expect(codeOf(() => decide(pressInput(NOMINAL_PRESS, { seed: 1.5 })))).toBe('LK_VALIDATION');
    expect(codeOf(() => decide(pressInput(NOMINAL_PRESS, { cappingThresholdPct: 0 })))).toBe('LK_VALUE_INVALID');
    const mixed = pressInput(NOMINAL_PRESS);
    mixed.designSpace['press.MainForce'] = { ...mixed.designSpace['press.MainForce'], unit: 'N' };
    expect(codeOf(() => decide(mixed))).toBe('LK_UNIT_INCOMPATIBLE');
  });
});

describe('what a press move serves starts from what was measured', () => {
  it('capping measured below the twin\u2019s risk: the move\u2019s capping starts at the measured rate and moves by the predicted change (the recorded batch\u2019s third round)', async () => {
    const { readFileSync } = await import('node:fs');
    const calls = (JSON.parse(readFileSync('test/fixtures/golden-batch/agent-calls.json', 'utf8')) as { calls: { agent: string; input: string }[] }).calls
      .filter((c) => c.agent === 'agent.compress_fill');
    let seen = 0;
    for (const c of calls) {
      const out = decide(JSON.parse(c.input));
      const p = out.proposals[0]!;
      for (const s of p.serves ?? []) {
        const measured = { 'press.TabletWeight': out.verdict.weightMeanMg, 'press.Hardness': out.verdict.hardnessMeanN, 'press.CappingRate': out.verdict.cappingMeanPct }[s.tag];
        expect(s.from, s.tag).toBe(measured);
        expect(s.to).toBeGreaterThanOrEqual(0);
        seen++;
      }
    }
    expect(seen).toBeGreaterThanOrEqual(6);
  });
});
