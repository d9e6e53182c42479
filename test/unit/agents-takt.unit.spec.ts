import { describe, expect, it } from 'vitest';
import { arbitrate, EMPTY_ARBITRATION, type ArbitrationRequest } from '../../src/arbitration/index.js';
import { arbitrationNote } from '../../src/agents/orchestrator.js';
import * as qualityConf from '../../src/agents/quality-conf.js';
import type { Proposal } from '../../src/agents/types.js';
import * as yieldTakt from '../../src/agents/yield-takt.js';
import { contentUniformity } from '../../src/twin/predict.js';
import { codeOf } from '../helpers/codes.js';
import { PARAMS, T0, noisy, series } from './agents-fixtures.js';
import { bundle } from './policy-helpers.js';

const SPACE = { min: 30, max: 70, maxStep: 5 };
const takt = (output: number, speed = 40): yieldTakt.YieldTaktInput => ({ now: T0, outputTabletsPerHour: output, targetTabletsPerHour: 100_000, turretSpeed: speed, designSpace: { ...SPACE } });
/** 30 weights with a mean of exactly 300 mg and a sample RSD of exactly `rsdPct`. */
function weightsWithRsd(rsdPct: number): number[] {
  const v = noisy(30, 300, 1, 9);
  const m = v.reduce((a, b) => a + b, 0) / v.length;
  const sd = Math.sqrt(v.reduce((a, b) => a + (b - m) ** 2, 0) / (v.length - 1));
  return v.map((x) => 300 + ((x - m) * 3 * rsdPct) / sd);
}
const conf = (rsdPct: number, speed = 45): qualityConf.QualityConfInput => ({
  now: T0,
  weights: series('press.TabletWeight', 'mg', weightsWithRsd(rsdPct)),
  turretSpeed: speed,
  targets: { weightMg: 300, weightRsdMaxPct: 2 },
  params: PARAMS,
});

function asRequest(p: Proposal, id: string, at: number): ArbitrationRequest {
  const m = p.moves[0]!;
  return { id, agent: p.agent, setpoint: m.setpoint, value: { value: m.value, unit: m.unit }, attribute: p.attribute, justification: p.justification, at };
}

describe('agent.yield_takt', () => {
  it('behind takt: proposes raising press.TurretSpeed by at most the max step (takt)', () => {
    const out = yieldTakt.decide(takt(86_400));
    expect(out.verdict.behind).toBe(true);
    expect(out.verdict.neededTurretSpeed!).toBeCloseTo((40 * 100_000) / 86_400, 9);
    expect(out.proposals).toHaveLength(1);
    expect(out.proposals[0]).toMatchObject({ agent: 'agent.yield_takt', attribute: 'takt', moves: [{ setpoint: 'press.TurretSpeed', value: 45, unit: '{rev}/min' }] });
    expect(out.proposals[0]!.predicted!['tabletsPerHour']).toBeCloseTo(86_400 * (45 / 40), 6);
  });

  it('a small deficit takes only the speed it needs; on takt, at the maximum or stopped: no move', () => {
    expect(yieldTakt.decide(takt(96_000)).proposals[0]!.moves[0]!.value).toBe(41.7);
    expect(yieldTakt.decide(takt(99_000)).proposals).toEqual([]);
    expect(yieldTakt.decide(takt(86_400, 68)).proposals[0]!.moves[0]!.value).toBe(70);
    expect(yieldTakt.decide(takt(86_400, 70)).proposals).toEqual([]);
    const stopped = yieldTakt.decide(takt(0));
    expect(stopped.proposals).toEqual([]);
    expect(stopped.verdict).toEqual({ behind: false, taktAttainmentPct: null, neededTurretSpeed: null });
  });

  it('replan re-sequences the next changeover, without moves, for the time it can win back', () => {
    const r = yieldTakt.replan(
      { setpoint: 'press.TurretSpeed', reason: 'OUTRANKED', score: 1 },
      { now: T0, outputTabletsPerHour: 86_400, targetTabletsPerHour: 100_000, remainingTablets: 200_000, nextChangeover: { planned: true, plannedMin: 90, offlineMin: 25 } },
    );
    const deficit = (200_000 / 86_400 - 200_000 / 100_000) * 60;
    expect(r.action).toBe('re-sequence next changeover');
    expect(r.moves).toEqual([]);
    expect(r.deficitMin).toBeCloseTo(deficit, 9);
    expect(r.expectedTaktGainMin).toBe(Math.min(25, deficit));
    expect(r.detail).toMatch(/external set-up/);
    const none = yieldTakt.replan({ setpoint: 'press.TurretSpeed', reason: 'OUTRANKED', score: 1 }, { now: T0, outputTabletsPerHour: 86_400, targetTabletsPerHour: 100_000, remainingTablets: 200_000, nextChangeover: null });
    expect(none).toMatchObject({ action: 'report takt deficit to planning', expectedTaktGainMin: 0, moves: [] });
  });
});

describe('agent.quality_conf', () => {
  it('computes the expected USP <905> AV from the weights and the fitted blend RSD', () => {
    const inp = conf(1.0);
    const out = qualityConf.decide(inp);
    const w = inp.weights.map((r) => r.value);
    const m = w.reduce((a, b) => a + b, 0) / w.length;
    const rsd = (100 * Math.sqrt(w.reduce((a, b) => a + (b - m) ** 2, 0) / (w.length - 1))) / m;
    expect(out.verdict.weightRsdPct!).toBeCloseTo(rsd, 9);
    expect(out.verdict.av!).toBeCloseTo(contentUniformity(PARAMS.blend.rsdInf, rsd, m, 300).av, 9);
    expect(out.verdict.holdSpeed).toBe(false);
    expect(out.proposals).toEqual([]);
  });

  it('weight RSD near its limit: asks to HOLD the turret speed at its current value (content uniformity)', () => {
    const out = qualityConf.decide(conf(1.7));
    expect(out.verdict.weightRsdPct!).toBeCloseTo(1.7, 9);
    expect(out.verdict.holdSpeed).toBe(true);
    // 1.5 % is under 80 % of the 2 % limit, and the expected AV is far from 15: no hold
    expect(qualityConf.decide(conf(1.5)).verdict.holdSpeed).toBe(false);
    expect(out.proposals).toHaveLength(1);
    expect(out.proposals[0]).toMatchObject({ agent: 'agent.quality_conf', attribute: 'content_uniformity', moves: [{ setpoint: 'press.TurretSpeed', value: 45, unit: '{rev}/min' }] });
  });

  it('under ten weights: no judgement', () => {
    const inp = conf(1.8);
    inp.weights = inp.weights.slice(0, 9);
    expect(qualityConf.decide(inp).verdict).toMatchObject({ av: null, holdSpeed: false });
  });

  it('the hold wins arbitration over the takt raise; the declined raise re-plans; the note records the loser', () => {
    const hold = qualityConf.decide(conf(1.8)).proposals[0]!;
    const raise = yieldTakt.decide(takt(86_400, 45)).proposals[0]!;
    // the raise came first: arbitration ranks quality, not arrival order
    const result = arbitrate([asRequest(raise, 'r-takt', T0 - 2000), asRequest(hold, 'r-cu', T0 - 1000)], EMPTY_ARBITRATION, T0, bundle, { product: 'ir-family-a', tooling: 'round-10mm-ff' });
    expect(result.winners.map((w) => w.request.id)).toEqual(['r-cu']);
    expect(result.winners[0]!.valueInSetpointUnit).toBe(45);
    expect(result.declined).toHaveLength(1);
    const d = result.declined[0]!;
    expect(d).toMatchObject({ reason: 'OUTRANKED', replan: true });
    const r = yieldTakt.replan(
      { setpoint: d.request.setpoint, reason: d.reason, score: d.score },
      { now: T0, outputTabletsPerHour: 86_400, targetTabletsPerHour: 100_000, remainingTablets: 150_000, nextChangeover: { planned: true, plannedMin: 60, offlineMin: 20 } },
    );
    expect(r.action).toBe('re-sequence next changeover');
    expect(r.expectedTaktGainMin).toBeGreaterThan(0);
    const note = arbitrationNote(result);
    expect(note.declined[0]).toMatchObject({ agent: 'agent.yield_takt', attribute: 'takt', score: 1, reason: 'OUTRANKED', replan: true, winner: { agent: 'agent.quality_conf' } });
    expect(note.lines.some((l) => /agent\.yield_takt declined .*OUTRANKED.*re-plans/.test(l))).toBe(true);
    expect(JSON.parse(JSON.stringify(note))).toStrictEqual(note);
  });

  it('refuses a bad design limit or non-finite output with stable codes', () => {
    expect(codeOf(() => yieldTakt.decide({ ...takt(1), designSpace: { min: 70, max: 30, maxStep: 5 } }))).toBe('LK_VALIDATION');
    expect(codeOf(() => yieldTakt.decide(takt(Number.NaN)))).toBe('LK_VALUE_INVALID');
    expect(codeOf(() => qualityConf.decide({ ...conf(1), targets: { weightMg: 0, weightRsdMaxPct: 2 } }))).toBe('LK_VALUE_INVALID');
    const zero = conf(1);
    zero.weights[7]!.value = 0;
    expect(codeOf(() => qualityConf.decide(zero))).toBe('LK_VALUE_INVALID');
  });
});
