import { describe, expect, it } from 'vitest';
import { decide, LONG_REMAINING_MIN, type GranulateDryInput } from '../../src/agents/granulate-dry.js';
import { dryingRatePerMin, lodPct, productTempC } from '../../src/twin/process.js';
import { codeOf } from '../helpers/codes.js';
import { PARAMS, T0, TWIN, limit, series } from './agents-fixtures.js';

const D = PARAMS.drying;

/** The nominal bed after `minutes` at `inlet` (60 °C) and `airflow` (250 m3/h), read once a minute. */
function bedAt(minutes: number, over: Partial<GranulateDryInput> = {}, inlet = 60, airflow = 250): GranulateDryInput {
  const k = dryingRatePerMin(inlet, airflow, D);
  const times = Array.from({ length: Math.min(12, minutes + 1) }, (_, i) => minutes - Math.min(11, minutes) + i);
  return {
    now: T0,
    lod: series('fluidbed.Lod', '%', times.map((t) => lodPct(t, k, D)), T0, 60_000),
    productTemp: series('fluidbed.ProductTemp', 'Cel', times.map((t) => productTempC(lodPct(t, k, D), inlet, D)), T0, 60_000),
    inletAirTempC: inlet,
    airflowM3h: airflow,
    targetLodPct: 2,
    model: { ...TWIN },
    params: { ...D },
    designSpace: { 'fluidbed.InletAirTemp': limit('fluidbed.InletAirTemp'), 'fluidbed.Airflow': limit('fluidbed.Airflow') },
    ...over,
  };
}

describe('agent.granulate_dry', () => {
  it('early in drying: predicts the remaining minutes by the falling-rate model and proposes a bounded inlet raise (yield)', () => {
    const inp = bedAt(5);
    const out = decide(inp);
    const lodNow = inp.lod[inp.lod.length - 1]!.value;
    const expected = Math.log((lodNow - D.lodEq) / (2 - D.lodEq)) / dryingRatePerMin(60, 250, D);
    expect(out.verdict.endpoint).toBe(false);
    expect(out.verdict.predictedMinutesRemaining).toBeCloseTo(expected, 9);
    expect(expected).toBeGreaterThan(LONG_REMAINING_MIN);
    expect(out.proposals).toHaveLength(1);
    const p = out.proposals[0]!;
    expect(p).toMatchObject({ agent: 'agent.granulate_dry', attribute: 'yield', model: TWIN, moves: [{ setpoint: 'fluidbed.InletAirTemp', value: 62, unit: 'Cel' }] });
    expect(p.predicted!['minutesRemaining']).toBeLessThan(expected);
    expect(p.predicted!['minutesSaved']).toBeGreaterThan(1);
    // the observed rate of the readings agrees with the model's
    expect(out.trace.inputs['observedRateConstantPerMin']).toBeCloseTo(dryingRatePerMin(60, 250, D), 6);
  });

  it('near the end: no move; at the end point (LOD and the product-temperature cue): endpoint, 0 min', () => {
    const near = decide(bedAt(28));
    expect(near.verdict.endpoint).toBe(false);
    expect(near.verdict.predictedMinutesRemaining!).toBeLessThan(LONG_REMAINING_MIN);
    expect(near.proposals).toEqual([]);
    const done = decide(bedAt(45));
    expect(done.verdict).toMatchObject({ endpoint: true, predictedMinutesRemaining: 0 });
    expect(done.verdict.lodPct!).toBeLessThanOrEqual(2);
    expect(done.proposals).toEqual([]);
  });

  it('LOD at target but the product still near wet bulb is not an end point', () => {
    const inp = bedAt(45);
    inp.productTemp = series('fluidbed.ProductTemp', 'Cel', [31, 31.5, 32], T0, 60_000);
    const out = decide(inp);
    expect(out.verdict.endpoint).toBe(false);
    expect(out.trace.why).toMatch(/product temperature/);
  });

  it('never leaves the design space: capped at the maximum, nothing at it', () => {
    // a low airflow keeps the bed over 30 min from its end point even this hot
    const capped = decide(bedAt(1, {}, 67, 130));
    expect(capped.verdict.predictedMinutesRemaining!).toBeGreaterThan(LONG_REMAINING_MIN);
    expect(capped.proposals[0]!.moves[0]!.value).toBe(68);
    const atMax = decide(bedAt(1, {}, 68, 130));
    expect(atMax.verdict.predictedMinutesRemaining!).toBeGreaterThan(LONG_REMAINING_MIN);
    expect(atMax.proposals).toEqual([]);
    expect(atMax.trace.why).toMatch(/inside 55\.0–68\.0/);
  });

  it('a target at or under the equilibrium moisture is unreachable: no minutes claimed, no move', () => {
    const out = decide(bedAt(5, { targetLodPct: D.lodEq }));
    expect(out.verdict.predictedMinutesRemaining).toBeNull();
    expect(out.proposals).toEqual([]);
  });

  it('no readings yet: nulls, no move', () => {
    const out = decide(bedAt(5, { lod: [], productTemp: [] }));
    expect(out.verdict).toEqual({ endpoint: false, lodPct: null, predictedMinutesRemaining: null, productTempC: null });
  });

  it('refuses non-finite readings and a missing design limit', () => {
    const bad = bedAt(5);
    bad.lod[1]!.value = Number.POSITIVE_INFINITY;
    expect(codeOf(() => decide(bad))).toBe('LK_VALUE_INVALID');
    expect(codeOf(() => decide(bedAt(5, { designSpace: {} as never })))).toBe('LK_VALIDATION');
  });
});
