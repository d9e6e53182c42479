import { describe, expect, it } from 'vitest';
import { decide as coat, WETTING_RATIO_AIM, type CoatDryInput } from '../../src/agents/coat-dry.js';
import { decide as inspect, type DefectInspectInput } from '../../src/agents/defect-inspect.js';
import { coatingModel } from '../../src/twin/process.js';
import { codeOf } from '../helpers/codes.js';
import { PARAMS, T0, TWIN, limit, series } from './agents-fixtures.js';

const CURRENT = { 'coater.SprayRate': 120, 'coater.InletAirTemp': 60, 'coater.Airflow': 1500, 'coater.PanSpeed': 8 };

function coatInput(ratio: number, wg = 1.2, over: Partial<CoatDryInput> = {}): CoatDryInput {
  return {
    now: T0,
    weightGain: series('coater.WeightGain', '%', [wg - 0.02, wg - 0.01, wg]),
    wettingRatio: series('coater.WettingRatio', '1', [ratio, ratio, ratio]),
    exhaustC: series('coater.ExhaustTemp', 'Cel', [42, 42, 42]),
    current: { ...CURRENT },
    targetWeightGainPct: 3,
    params: { ...PARAMS.coating },
    model: { ...TWIN },
    designSpace: {
      'coater.SprayRate': limit('coater.SprayRate'),
      'coater.InletAirTemp': limit('coater.InletAirTemp'),
      'coater.Airflow': limit('coater.Airflow'),
      'coater.PanSpeed': limit('coater.PanSpeed'),
    },
    ...over,
  };
}

describe('agent.coat_dry', () => {
  it('normal wetting: no move, and the time to the end point from the weight-gain rate', () => {
    const model = coatingModel({ sprayRateGMin: 120, inletAirC: 60, airflowM3h: 1500, panRpm: 8 }, PARAMS.coating);
    const out = coat(coatInput(model.wettingRatio));
    expect(out.verdict).toEqual({ endpoint: false, weightGainPct: 1.2, wettingRatio: model.wettingRatio, overWetting: false });
    expect(out.proposals).toEqual([]);
    expect(out.trace.prediction!['minutesToEndPoint']).toBeCloseTo((3 - 1.2) / model.weightGainPctPerMin, 9);
  });

  it('over-wetting: lowers the spray rate within one max step (dissolution), to the rate that reaches the aim', () => {
    const out = coat(coatInput(0.95));
    expect(out.verdict.overWetting).toBe(true);
    expect(out.proposals).toHaveLength(1);
    const p = out.proposals[0]!;
    expect(p).toMatchObject({ agent: 'agent.coat_dry', attribute: 'dissolution', model: TWIN });
    const m = p.moves[0]!;
    expect(m.setpoint).toBe('coater.SprayRate');
    expect(m.value).toBeLessThan(120);
    expect(120 - m.value).toBeLessThanOrEqual(20);
    // the ratio scales with the spray rate: 120 · 0.85 / 0.95 ≈ 107.4 g/min
    expect(m.value).toBeCloseTo((120 * WETTING_RATIO_AIM) / 0.95, 1);
    expect(p.predicted!['wettingRatio']).toBeCloseTo(WETTING_RATIO_AIM, 2);
    expect(p.predicted!['minutesToEndPoint']).toBeGreaterThan(out.trace.prediction!['minutesToEndPoint']!);
  });

  it('a ratio far over the limit takes the full step, not more', () => {
    expect(coat(coatInput(1.4)).proposals[0]!.moves[0]!.value).toBe(100);
  });

  it('end point reached: no move even at a high ratio; at the minimum spray rate: escalate, no move', () => {
    const done = coat(coatInput(0.95, 3.01));
    expect(done.verdict.endpoint).toBe(true);
    expect(done.proposals).toEqual([]);
    const atMin = coat(coatInput(0.95, 1.2, { current: { ...CURRENT, 'coater.SprayRate': 40 } }));
    expect(atMin.proposals).toEqual([]);
    expect(atMin.trace.why).toMatch(/approved minimum/);
  });

  it('an exhaust at the over-wetting temperature is a risk even before the ratio shows it', () => {
    const out = coat(coatInput(0.7, 1.2, { exhaustC: series('coater.ExhaustTemp', 'Cel', [37.5, 37.1, 36.8]) }));
    expect(out.verdict.overWetting).toBe(true);
    expect(out.proposals[0]!.moves[0]!.value).toBeLessThan(120);
  });

  it('refuses a non-finite setpoint with a stable code', () => {
    expect(codeOf(() => coat(coatInput(0.9, 1.2, { current: { ...CURRENT, 'coater.Airflow': Number.NaN } })))).toBe('LK_VALUE_INVALID');
  });
});

function inspectInput(over: Partial<DefectInspectInput> = {}): DefectInspectInput {
  return { now: T0, inspected: 100_000, rejected: 400, defectRatePct: 0.38, specMaxPct: 1, ...over };
}

describe('agent.defect_inspect', () => {
  it('within the specification: ok, classes sorted by count, no move', () => {
    const out = inspect(inspectInput({ classified: [{ label: 'chipped', count: 12 }, { label: 'capped', count: 30 }, { label: 'good', count: 3 }, { label: 'broken', count: 12 }] }));
    expect(out.verdict).toMatchObject({ ok: true, defectRatePct: 0.4, liveDefectRatePct: 0.38, thresholdSuspect: false });
    expect(out.verdict.byClass.map((c) => c.label)).toEqual(['capped', 'broken', 'chipped', 'good']);
    expect(out.verdict.byClass[0]!.pctOfClassified).toBeCloseTo((100 * 30) / 57, 9);
    expect(out.verdict.falseRejectPct).toBeCloseTo((100 * 3) / 57, 9);
    expect(out.proposals).toEqual([]);
  });

  it('over the specification with genuine defects: not ok, and no threshold change hides them', () => {
    const out = inspect(inspectInput({ rejected: 1500, defectRatePct: 1.6, classified: [{ label: 'capped', count: 40 }, { label: 'good', count: 2 }] }));
    expect(out.verdict.ok).toBe(false);
    expect(out.proposals).toEqual([]);
    expect(out.trace.why).toMatch(/process problem/);
  });

  it('many good tablets among the rejects: a recommendation to raise the threshold one step', () => {
    const classified = [{ label: 'good', count: 25 }, { label: 'chipped', count: 15 }];
    const bare = inspect(inspectInput({ classified }));
    expect(bare.verdict.thresholdSuspect).toBe(true);
    expect(bare.proposals).toEqual([]);
    const out = inspect(inspectInput({ classified, rejectThreshold: { valuePct: 50, limit: limit('vision.RejectThreshold') } }));
    expect(out.proposals).toHaveLength(1);
    expect(out.proposals[0]).toMatchObject({ agent: 'agent.defect_inspect', attribute: 'defect_rate', moves: [{ setpoint: 'vision.RejectThreshold', value: 55, unit: '%' }] });
    expect(out.proposals[0]!.justification).toMatch(/^Recommendation only/);
    // too few classified rejects prove nothing
    expect(inspect(inspectInput({ classified: [{ label: 'good', count: 10 }, { label: 'chipped', count: 5 }] })).verdict.thresholdSuspect).toBe(false);
  });

  it('refuses contradictory counts and duplicate labels', () => {
    expect(codeOf(() => inspect(inspectInput({ rejected: 200_000 })))).toBe('LK_VALIDATION');
    expect(codeOf(() => inspect(inspectInput({ classified: [{ label: 'good', count: 1 }, { label: 'good', count: 2 }] })))).toBe('LK_VALIDATION');
  });
});
