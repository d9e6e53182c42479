/**
 * R11 on the golden batch: every recorded agent decision of a real run replays, in memory and without a
 * daemon, to byte-identical output; a different twin changes the recommendations and the diff says how.
 */
import { describe, expect, it } from 'vitest';
import { REPLAYABLE, replayableAgent } from '../../src/engine/run/replay-agents.js';
import { diffProposals, diffVerdict, firstDifference } from '../../src/engine/run/replay-diff.js';
import { parseModelRef, replayCalls, type RecordedAgentCall } from '../../src/engine/run/replay.js';
import type { TwinModel } from '../../src/twin/simulate.js';
import { perturbParams } from '../../connectors/sim/ground/truth.js';
import { codeOf } from '../helpers/codes.js';
import { goldenCalls, goldenTwin } from '../helpers/golden.js';

const golden = goldenCalls();
const TWIN_FNS = ['granulate_dry.decide', 'compress_fill.decide', 'quality_conf.decide', 'coat_dry.decide'];

/** The golden batch's twin with its parameters perturbed: what a refit on other batches could give. */
function perturbedTwin(seed: number): TwinModel {
  const v1 = goldenTwin();
  return { id: 'process-twin-v2', version: 2, params: perturbParams(v1.params, seed), validRanges: v1.validRanges };
}

describe('replay of the golden batch [R11]', () => {
  it('holds a whole run: every agent function of the line, each call with its model', () => {
    expect(golden.run).toMatchObject({ tenant: 'acme-pharma', batch: 'B-1042', line: 'line-3' });
    expect(new Set(golden.calls.map((c) => c.fn))).toEqual(new Set(Object.keys(REPLAYABLE)));
    expect(golden.calls.map((c) => c.id)).toEqual(golden.calls.map((_, i) => i + 1));
    for (const c of golden.calls.filter((x) => TWIN_FNS.includes(x.fn))) expect(c.model).toBe('process-twin-v1@1');
  });

  it('replays every recorded call to byte-identical output with the recorded models', () => {
    const t0 = performance.now();
    const r = replayCalls(golden.run, golden.calls);
    const ms = performance.now() - t0;
    expect(r.model).toBeNull();
    expect(r.calls).toHaveLength(golden.calls.length);
    const bad = r.calls.filter((c) => !c.identical).map((c) => ({ id: c.id, fn: c.fn, error: c.error, at: c.firstDifference }));
    expect(bad).toEqual([]);
    expect(r.summary).toEqual({ calls: golden.calls.length, identical: golden.calls.length, differing: 0, errors: 0, substituted: 0, proposalsChanged: 0, movesChanged: 0, verdictsChanged: 0, nondeterministic: 0 });
    for (const c of r.calls) expect(c.replayModel).toBe(c.recordedModel);
    // for the record, not a limit
    process.stdout.write(`golden batch: ${golden.calls.length} agent calls replayed in ${ms.toFixed(0)} ms\n`);
  });

  it('replays byte-identically straight through the agent table, without the report machinery', () => {
    for (const c of golden.calls) expect(JSON.stringify(replayableAgent(c.fn)!.call(JSON.parse(c.input))), `call ${c.id} ${c.fn}`).toBe(c.output);
  });

  it('carries the fixture twin inside the recorded inputs: substituting the very same model changes no byte', () => {
    const v1 = goldenTwin();
    const press = JSON.parse(golden.calls.find((c) => c.fn === 'compress_fill.decide')!.input) as { params: unknown; validRanges: unknown; model: unknown };
    expect(press.params).toEqual(v1.params);
    expect(press.validRanges).toEqual(v1.validRanges);
    expect(press.model).toEqual({ id: 'process-twin-v1', version: 1 });
    const dry = JSON.parse(golden.calls.find((c) => c.fn === 'granulate_dry.decide')!.input) as { params: unknown };
    expect(dry.params).toEqual(v1.params.drying);
    const r = replayCalls(golden.run, golden.calls, { model: v1 });
    expect(r.summary.substituted).toBe(golden.calls.filter((c) => TWIN_FNS.includes(c.fn)).length);
    expect(r.summary.identical).toBe(golden.calls.length);
  });

  it('against a perturbed twin, a compress_fill recommendation changes and the diff names the setpoint and both values', () => {
    const r = replayCalls(golden.run, golden.calls, { model: perturbedTwin(1) });
    expect(r.model).toBe('process-twin-v2@2');
    const press = r.calls.filter((c) => c.fn === 'compress_fill.decide');
    expect(press.length).toBeGreaterThan(0);
    for (const c of press) expect(c).toMatchObject({ substituted: true, recordedModel: 'process-twin-v1@1', replayModel: 'process-twin-v2@2', identical: false });
    // a move another value, or proposed on one side only (then the setpoint stays at its current value)
    const moved = press.flatMap((c) => c.proposals.map((p) => ({ c, p }))).filter(({ p }) => p.change === 'value' || p.change === 'withdrawn' || p.change === 'proposed');
    expect(moved.length).toBeGreaterThan(0);
    const { c, p } = moved[0]!;
    expect(p.setpoint).toMatch(/^press\./);
    expect(p.current).toBe((JSON.parse(golden.calls.find((x) => x.id === c.id)!.input) as { current: Record<string, number> }).current[p.setpoint]);
    const before = p.recorded ?? p.current;
    const after = p.replayed ?? p.current;
    expect(typeof before).toBe('number');
    expect(typeof after).toBe('number');
    expect(after).not.toBe(before);
    // the recorded value is the recorded output's, not something recomputed
    const recordedMoves = (JSON.parse(golden.calls.find((x) => x.id === c.id)!.output) as { proposals: { moves: { setpoint: string; value: number }[] }[] }).proposals.flatMap((x) => x.moves);
    expect(recordedMoves.find((m) => m.setpoint === p.setpoint)?.value ?? null).toBe(p.recorded);
    // and the predictions of each proposal come along
    expect(press.some((x) => x.proposals.some((d) => d.recordedPredicted?.['hardnessN'] !== undefined && d.replayedPredicted?.['hardnessN'] !== undefined && d.recordedPredicted['hardnessN'] !== d.replayedPredicted['hardnessN']))).toBe(true);
    expect(r.summary.movesChanged).toBeGreaterThan(0);
  });

  it('against another twin, the calls without a twin still replay byte-identically (no determinism bug hides behind the diff)', () => {
    const r = replayCalls(golden.run, golden.calls, { model: perturbedTwin(1) });
    const others = r.calls.filter((c) => !TWIN_FNS.includes(c.fn));
    expect(others.length).toBeGreaterThan(0);
    for (const c of others) expect(c).toMatchObject({ substituted: false, identical: true, replayModel: c.recordedModel });
    expect(r.summary.nondeterministic).toBe(0);
    expect(r.summary.substituted + others.length).toBe(golden.calls.length);
  });

  it('is itself deterministic: the same calls and model give the same report', () => {
    expect(JSON.stringify(replayCalls(golden.run, golden.calls, { model: perturbedTwin(3) }))).toBe(JSON.stringify(replayCalls(golden.run, golden.calls, { model: perturbedTwin(3) })));
  });
});

describe('replay reports what it cannot reproduce', () => {
  const yieldCall = golden.calls.find((c) => c.fn === 'yield_takt.decide')!;

  it('names the first differing path of a call whose output does not reproduce (a determinism bug)', () => {
    const out = JSON.parse(yieldCall.output) as { verdict: { taktAttainmentPct: number } };
    const tampered: RecordedAgentCall = { ...yieldCall, output: JSON.stringify({ ...out, verdict: { ...out.verdict, taktAttainmentPct: out.verdict.taktAttainmentPct + 1 } }) };
    const r = replayCalls(golden.run, [tampered]);
    expect(r.summary).toMatchObject({ identical: 0, differing: 1, nondeterministic: 1 });
    expect(r.calls[0]!.firstDifference).toEqual({ path: '$.verdict.taktAttainmentPct', recorded: out.verdict.taktAttainmentPct + 1, replayed: out.verdict.taktAttainmentPct });
    expect(r.calls[0]!.verdict.map((v) => v.field)).toEqual(['taktAttainmentPct']);
  });

  it('reports an agent that throws on replay, and a function it does not know, as not replayed', () => {
    const input = JSON.parse(yieldCall.input) as Record<string, unknown>;
    const broken: RecordedAgentCall = { ...yieldCall, id: 1, input: JSON.stringify({ ...input, now: null }) };
    const unknown: RecordedAgentCall = { ...yieldCall, id: 2, fn: 'yield_takt.forecast' };
    const r = replayCalls(golden.run, [unknown, broken]);
    expect(r.calls.map((c) => c.error?.code)).toEqual(['LK_VALIDATION', 'LK_NOT_FOUND']);
    expect(r.summary).toMatchObject({ calls: 2, errors: 2, identical: 0, nondeterministic: 2 });
  });
});

describe('replay diffs', () => {
  const proposal = (moves: [string, number][], attribute = 'content_uniformity', predicted: Record<string, number> = { w: 1 }) => ({
    agent: 'agent.compress_fill', attribute, predicted, moves: moves.map(([setpoint, value]) => ({ setpoint, value, unit: 'kN' })), justification: '', trace: {},
  });
  const out = (...proposals: unknown[]) => ({ proposals, verdict: { onTarget: false }, trace: { why: '' } });

  it('classifies each changed move: another value, withdrawn (stays at current), proposed, other attribute, other predictions', () => {
    const a = out(proposal([['press.MainForce', 10.5], ['press.PreForce', 3], ['press.FillDepth', 8.65]]));
    const b = out(proposal([['press.MainForce', 11.25], ['press.PreForce', 3]], 'content_uniformity', { w: 2 }), proposal([['press.TurretSpeed', 40]], 'takt'));
    const d = diffProposals(a, b, { 'press.FillDepth': 8.5 });
    expect(d.map((x) => [x.setpoint, x.change, x.recorded, x.replayed])).toEqual([
      ['press.MainForce', 'value', 10.5, 11.25],
      ['press.PreForce', 'predicted', 3, 3],
      ['press.FillDepth', 'withdrawn', 8.65, null],
      ['press.TurretSpeed', 'proposed', null, 40],
    ]);
    expect(d[2]).toMatchObject({ current: 8.5, recordedPredicted: { w: 1 }, replayedPredicted: null });
    expect(d[1]).toMatchObject({ current: null, recordedPredicted: { w: 1 }, replayedPredicted: { w: 2 } });
    expect(diffProposals(a, out(proposal([['press.MainForce', 10.5], ['press.PreForce', 3], ['press.FillDepth', 8.65]], 'defect_rate')))[0]!.change).toBe('attribute');
    expect(diffProposals(a, a)).toEqual([]);
  });

  it('compares verdicts field by field, and a re-plan on its fields other than the trace', () => {
    expect(diffVerdict({ proposals: [], verdict: { a: 1, b: [1, 2] }, trace: {} }, { proposals: [], verdict: { a: 1, b: [1, 3], c: true }, trace: {} })).toEqual([
      { field: 'b', recorded: [1, 2], replayed: [1, 3] },
      { field: 'c', recorded: null, replayed: true },
    ]);
    expect(diffVerdict({ action: 'x', deficitMin: 3, trace: { a: 1 } }, { action: 'y', deficitMin: 3, trace: { a: 2 } })).toEqual([{ field: 'action', recorded: 'x', replayed: 'y' }]);
  });

  it('finds the first differing path, a missing key and a key order that changes the bytes', () => {
    expect(firstDifference({ a: [1, { b: 2 }] }, { a: [1, { b: 3 }] })).toEqual({ path: '$.a[1].b', recorded: 2, replayed: 3 });
    expect(firstDifference({ a: 1, 'x.y': 2 }, { a: 1 })).toEqual({ path: '$["x.y"]', recorded: 2 });
    expect(firstDifference([1], [1, 2])).toEqual({ path: '$[1]', replayed: 2 });
    expect(firstDifference({ a: 1, b: 2 }, { b: 2, a: 1 })).toEqual({ path: '$', recorded: ['a', 'b'], replayed: ['b', 'a'] });
    expect(firstDifference({ a: [1, 'x'] }, { a: [1, 'x'] })).toBeNull();
  });
});

describe('the twin in an agent input', () => {
  it('replaces the whole set, a unit operation\'s group, valid ranges and the model reference; leaves the recorded input alone', () => {
    const v2 = perturbedTwin(1);
    const dryInput = JSON.parse(golden.calls.find((c) => c.fn === 'granulate_dry.decide')!.input) as Record<string, unknown>;
    const copy = structuredClone(dryInput);
    const dry = replayableAgent('granulate_dry.decide')!.withTwin(dryInput, v2)!;
    expect(dry['params']).toEqual(v2.params.drying);
    expect(dry['model']).toEqual({ id: 'process-twin-v2', version: 2 });
    expect(dryInput).toEqual(copy);
    const pressInput = JSON.parse(golden.calls.find((c) => c.fn === 'compress_fill.decide')!.input) as Record<string, unknown>;
    const press = replayableAgent('compress_fill.decide')!.withTwin(pressInput, v2)!;
    expect(press['params']).toEqual(v2.params);
    expect(press['validRanges']).toEqual(v2.validRanges);
    expect(Object.keys(press)).toEqual(Object.keys(pressInput));
    const coat = replayableAgent('coat_dry.decide')!.withTwin(JSON.parse(golden.calls.find((c) => c.fn === 'coat_dry.decide')!.input) as Record<string, unknown>, v2)!;
    expect(coat['params']).toEqual(v2.params.coating);
  });

  it('leaves agents without a twin, and a blend call recorded without its blend model, as they were', () => {
    const v2 = perturbedTwin(1);
    for (const fn of ['yield_takt.decide', 'yield_takt.replan', 'defect_inspect.decide', 'quality_potency.decide', 'blend_dispense.decide']) {
      const c = golden.calls.find((x) => x.fn === fn)!;
      expect(replayableAgent(fn)!.withTwin(JSON.parse(c.input) as Record<string, unknown>, v2), fn).toBeNull();
    }
    const blend = replayableAgent('blend_dispense.decide')!.withTwin({ now: 1, blendModel: { model: { id: 'process-twin-v1', version: 1 }, params: {} } }, v2)!;
    expect(blend['blendModel']).toEqual({ model: { id: 'process-twin-v2', version: 2 }, params: v2.params.blend });
  });
});

describe('model references', () => {
  it('parses <id>@<version> and refuses what is not one', () => {
    expect(parseModelRef('process-twin-v2@2')).toEqual({ id: 'process-twin-v2', version: 2 });
    for (const bad of ['process-twin-v2', 'process-twin-v2@', 'process-twin-v2@two', 'process-twin-v2@3', 'twin@1', 'process-twin-v2@0', '@2', 'process-twin-v2@2.0']) {
      expect(codeOf(() => parseModelRef(bad)), bad).toBe('LK_VALIDATION');
    }
  });
});
