import { describe, expect, it } from 'vitest';
import { type AutonomyChange, attendanceTransition, autonomyFor, changeAutonomy, evaluate, initialAutonomy, isAttended } from '../../src/policy/index.js';
import { T0, bundle, context, request } from './policy-helpers.js';
import { codeOf } from '../helpers/codes.js';

const qa = { person: 'q.russo', role: 'qa_reviewer' };
const pe = { person: 'p.costa', role: 'process_engineer' };


describe('autonomy levels per agent and per setpoint', () => {
  const s0 = initialAutonomy(bundle);
  // the shipped bundle graduated compress_fill to L3 (CC-2026-0219); a site that lowered it to L2 again raises it from there
  const l2 = changeAutonomy(s0, { target: { agent: 'agent.compress_fill' }, to: 'L2', at: T0 - 1 }, bundle).state;

  it('starts agents at the bundle level and every new agent at L0 (shadow)', () => {
    expect(s0.agents['agent.compress_fill']).toBe('L3');
    expect(s0.agents['agent.coat_dry']).toBe('L3');
    expect(s0.agents['agent.blend_dispense']).toBe('L1');
    expect(autonomyFor(s0, 'agent.brand_new', 'press.MainForce')).toEqual({ agent: 'L0', setpoint: 'L3', effective: 'L0' });
    expect(autonomyFor(s0, 'agent.compress_fill', 'plc.LineSpeedFactor').effective).toBe('L1');
  });

  it('[LIM-AUTONOMY] raises one level with a named person of a permitted role and a change reference, recording who and why', () => {
    const r = changeAutonomy(l2, { target: { agent: 'agent.compress_fill' }, to: 'L3', by: qa, changeRef: 'CC-2026-0150', reason: '30 shadow batches clean', at: T0 }, bundle);
    expect(r.state.agents['agent.compress_fill']).toBe('L3');
    expect(l2.agents['agent.compress_fill']).toBe('L2'); // pure: the old state is untouched
    expect(r.event).toMatchObject({ type: 'autonomy_raised', from: 'L2', to: 'L3', by: qa, changeRef: 'CC-2026-0150', at: T0, bundleVersion: bundle.version });
  });

  it('[LIM-AUTONOMY] refuses to raise without a person, without a change reference, by a role the bundle does not permit, or by two levels', () => {
    const base: AutonomyChange = { target: { agent: 'agent.brand_new' }, to: 'L1', by: pe, changeRef: 'CC-1', at: T0 };
    expect(changeAutonomy(s0, base, bundle).state.agents['agent.brand_new']).toBe('L1');
    expect(codeOf(() => changeAutonomy(s0, { ...base, by: undefined }, bundle))).toBe('LK_AUTONOMY_CHANGE');
    expect(codeOf(() => changeAutonomy(s0, { ...base, by: { person: ' ', role: 'qa_reviewer' } }, bundle))).toBe('LK_AUTONOMY_CHANGE');
    expect(codeOf(() => changeAutonomy(s0, { ...base, changeRef: undefined }, bundle))).toBe('LK_AUTONOMY_CHANGE');
    expect(codeOf(() => changeAutonomy(l2, { ...base, target: { agent: 'agent.compress_fill' }, to: 'L3', by: pe }, bundle))).toBe('LK_AUTONOMY_CHANGE');
    expect(codeOf(() => changeAutonomy(s0, { ...base, to: 'L2', by: qa }, bundle))).toBe('LK_AUTONOMY_CHANGE');
    expect(codeOf(() => changeAutonomy(s0, { ...base, to: 'L4' as never, by: qa }, bundle))).toBe('LK_AUTONOMY_CHANGE');
  });

  it('[LIM-AUTONOMY] lowers immediately, by any number of levels, without a role or change reference', () => {
    const r = changeAutonomy(s0, { target: { setpoint: 'press.MainForce' }, to: 'L0', by: { person: 'system', role: 'watchdog' }, reason: 'model lost', at: T0 }, bundle);
    expect(r.event).toMatchObject({ type: 'autonomy_lowered', from: 'L3', to: 'L0' });
    const d = evaluate(request(), bundle, context({ autonomy: autonomyFor(r.state, 'agent.compress_fill', 'press.MainForce') }));
    expect(d.outcome).toBe('recommend_only');
    expect(changeAutonomy(s0, { target: { agent: 'agent.coat_dry' }, to: 'L0', at: T0 }, bundle).event.type).toBe('autonomy_lowered');
  });

  it('refuses unknown setpoints and malformed agent ids', () => {
    expect(codeOf(() => changeAutonomy(s0, { target: { setpoint: 'press.Nope' }, to: 'L0', at: T0 }, bundle))).toBe('LK_AUTONOMY_CHANGE');
    expect(codeOf(() => changeAutonomy(s0, { target: { agent: 'compress_fill' }, to: 'L0', at: T0 }, bundle))).toBe('LK_AUTONOMY_CHANGE');
  });

  it('the level drives the outcome of the same request through evaluate', () => {
    let s = changeAutonomy(s0, { target: { agent: 'agent.compress_fill' }, to: 'L3', by: qa, changeRef: 'CC-9', at: T0 }, bundle).state;
    expect(evaluate(request(), bundle, context({ autonomy: autonomyFor(s, 'agent.compress_fill', 'press.MainForce') })).outcome).toBe('allow');
    s = changeAutonomy(s, { target: { agent: 'agent.compress_fill' }, to: 'L1', at: T0 + 1 }, bundle).state;
    expect(evaluate(request(), bundle, context({ autonomy: autonomyFor(s, 'agent.compress_fill', 'press.MainForce') })).reasons).toEqual(['AUTONOMY_RECOMMEND_ONLY']);
  });
});

describe('attendance', () => {
  const W = bundle.content.attendanceWindowMs;
  const op = { operator: 'l.verdi', lastPresenceAt: T0 };

  it('is attended while the presence heartbeat is within the window', () => {
    expect(isAttended(op, T0 + W, W)).toBe(true);
    expect(isAttended(op, T0 + W + 1, W)).toBe(false);
    expect(isAttended(null, T0, W)).toBe(false);
    expect(isAttended({ operator: 'l.verdi', lastPresenceAt: Number.NaN }, T0, W)).toBe(false);
  });

  it('reports a lapse once (with when the window ran out) and a resumption once, for the audit trail', () => {
    const a = attendanceTransition(true, op, T0 + 1000, W);
    expect(a.event).toBeNull();
    const lapse = attendanceTransition(true, op, T0 + W + 5000, W);
    expect(lapse).toMatchObject({ attended: false, event: { type: 'attendance_lapsed', operator: 'l.verdi', effectiveAt: T0 + W } });
    expect(attendanceTransition(false, op, T0 + W + 6000, W).event).toBeNull();
    const back = attendanceTransition(false, { ...op, lastPresenceAt: T0 + W + 7000 }, T0 + W + 7000, W);
    expect(back.event?.type).toBe('attendance_resumed');
  });

  it('[R5] a lapse turns an L3 allow into recommend_only with UNATTENDED', () => {
    const at = T0 + W + 1;
    const d = evaluate(request(), bundle, context({ now: at, attendance: op, lastMove: null }));
    expect(d.outcome).toBe('recommend_only');
    expect(d.reasons).toEqual(['UNATTENDED']);
  });
});
