import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { type ArbitrationRequest, type ArbitrationState, EMPTY_ARBITRATION, arbitrate, resolveEscalation } from '../../src/arbitration/index.js';
import { contestOutcome, contestText } from '../../src/arbitration/outcome.js';
import { T0, bundle } from './policy-helpers.js';
import { codeOf } from '../helpers/codes.js';

const scope = { product: 'ir-family-a', tooling: 'round-10mm-ff' } as const;
const W = bundle.content.ownershipWindowMs;

function req(id: string, agent: string, attribute: ArbitrationRequest['attribute'], value: ArbitrationRequest['value'], at = T0, setpoint = 'press.TurretSpeed'): ArbitrationRequest {
  return { id, agent, setpoint, value, attribute, justification: `${agent} wants ${String(value)}`, at };
}

const raise = req('r-yield', 'agent.yield_takt', 'takt', '60 {rev}/min', T0 - 2000);
const hold = req('r-cu', 'agent.quality_conf', 'content_uniformity', '45 {rev}/min', T0 - 1000);


describe('[ERR-ARBITRATION] rule 1: quality outranks yield, energy and takt, regardless of order', () => {
  it('the quality request wins; the throughput request is declined with its score and reason and told to re-plan', () => {
    for (const order of [
      [raise, hold],
      [hold, raise],
    ]) {
      const r = arbitrate(order, EMPTY_ARBITRATION, T0, bundle, scope);
      expect(r.winners.map((w) => w.request.id)).toEqual(['r-cu']);
      expect(r.winners[0]!.valueInSetpointUnit).toBe(45);
      expect(r.declined).toHaveLength(1);
      expect(r.declined[0]).toMatchObject({ request: { id: 'r-yield' }, score: 1, reason: 'OUTRANKED', replan: true, winner: { requestId: 'r-cu', agent: 'agent.quality_conf', score: 2 } });
    }
  });

  it('also when the throughput request arrived later with an earlier timestamp or a smaller id', () => {
    const early = req('a-first', 'agent.yield_takt', 'energy', '65 {rev}/min', T0 - 60_000);
    const late = req('z-last', 'agent.quality_conf', 'dissolution', '40 {rev}/min', T0);
    expect(arbitrate([early, late], EMPTY_ARBITRATION, T0, bundle, scope).winners[0]!.request.id).toBe('z-last');
  });

  it('the outcome does not depend on the order of the requests (property)', () => {
    const attrs = ['content_uniformity', 'potency', 'dissolution', 'defect_rate', 'yield', 'energy', 'takt'] as const;
    const agents = ['agent.quality_conf', 'agent.yield_takt', 'agent.compress_fill'] as const;
    const reqArb = fc.record({ agent: fc.constantFrom(...agents), attribute: fc.constantFrom(...attrs), rpm: fc.integer({ min: 30, max: 70 }), dt: fc.integer({ min: 0, max: 5000 }) });
    fc.assert(
      fc.property(fc.array(reqArb, { minLength: 1, maxLength: 5 }), fc.func(fc.integer()), (specs, shuffleKey) => {
        const rs = specs.map((s, i) => req(`r${i}`, s.agent, s.attribute, `${s.rpm} {rev}/min`, T0 - s.dt));
        const shuffled = [...rs].sort((a, b) => shuffleKey(a.id) - shuffleKey(b.id));
        const summary = (x: ReturnType<typeof arbitrate>): unknown => ({
          w: x.winners.map((w) => w.request.id).sort(),
          d: x.declined.map((d) => `${d.request.id}:${d.reason}`).sort(),
          e: x.escalated.map((e) => e.requests.map((q) => q.id).sort()),
        });
        expect(summary(arbitrate(shuffled, EMPTY_ARBITRATION, T0, bundle, scope))).toEqual(summary(arbitrate(rs, EMPTY_ARBITRATION, T0, bundle, scope)));
      }),
      { numRuns: 200 },
    );
  });
});

describe('rule 2: the design space is a limit, not a target', () => {
  it('[LIM-SETPOINT-BOUNDS] refuses a request outside the design space before arbitration, so it cannot win or contest', () => {
    const outside = req('r-out', 'agent.quality_conf', 'content_uniformity', '75 {rev}/min');
    const r = arbitrate([outside, raise], EMPTY_ARBITRATION, T0, bundle, scope);
    expect(r.refused).toEqual([{ request: outside, reasons: ['OUTSIDE_DESIGN_SPACE'] }]);
    expect(r.winners.map((w) => w.request.id)).toEqual(['r-yield']);
    expect(r.state.owners['press.TurretSpeed']).toMatchObject({ agent: 'agent.yield_takt', expiresAt: T0 + W });
  });

  it('refuses bad values, unknown units, unknown setpoints and unknown attributes', () => {
    const r = arbitrate(
      [
        req('a', 'agent.quality_conf', 'content_uniformity', 'NaN {rev}/min'),
        req('b', 'agent.quality_conf', 'content_uniformity', '50 kN'),
        req('c', 'agent.quality_conf', 'content_uniformity', '50 {rev}/min', T0, 'press.Nope'),
        req('d', 'agent.quality_conf', 'mood' as never, '50 {rev}/min'),
      ],
      EMPTY_ARBITRATION,
      T0,
      bundle,
      scope,
    );
    expect(r.refused.map((x) => [x.request.id, x.reasons])).toEqual([
      ['a', ['VALUE_NOT_FINITE']],
      ['b', ['UNIT_INCOMPATIBLE']],
      ['c', ['TAG_UNKNOWN']],
      ['d', ['ATTRIBUTE_UNKNOWN']],
    ]);
    expect(r.winners).toEqual([]);
  });
});

describe('[LIM-OWNERSHIP] rule 3: ownership is time-boxed; after the window the owner must re-justify', () => {
  const first = arbitrate([raise, hold], EMPTY_ARBITRATION, T0, bundle, scope);

  it('gives the winner of a contest the setpoint until the window ends', () => {
    expect(first.state.owners['press.TurretSpeed']).toMatchObject({ agent: 'agent.quality_conf', requestId: 'r-cu', since: T0, expiresAt: T0 + W, value: 45 });
  });

  it('within the window a lower rank is declined with when the owner must re-justify', () => {
    const again = req('r-yield-2', 'agent.yield_takt', 'takt', '62 {rev}/min', T0 + 10_000);
    const r = arbitrate([again], first.state, T0 + 10_000, bundle, scope);
    expect(r.winners).toEqual([]);
    expect(r.declined.map((d) => [d.request.id, d.reason, d.winner?.requestId, d.ownedUntil, d.replan])).toEqual([['r-yield-2', 'OUTRANKED', 'r-cu', T0 + W, true]]);
    expect(r.state.owners['press.TurretSpeed']!.expiresAt).toBe(T0 + W);
  });

  it('within the window an equal rank with another target deadlocks against the owner (both go to the human)', () => {
    const peer = req('r-pot', 'agent.compress_fill', 'potency', '50 {rev}/min', T0 + 10_000);
    const r = arbitrate([peer], first.state, T0 + 10_000, bundle, scope);
    expect(r.winners).toEqual([]);
    expect(r.escalated[0]!.requests.map((x) => x.id).sort()).toEqual(['r-cu', 'r-pot']);
    expect(r.state.owners['press.TurretSpeed']).toBeUndefined();
  });

  it('the owner may move its own setpoint again within the window, without extending it', () => {
    const own = req('r-cu-b', 'agent.quality_conf', 'content_uniformity', '47 {rev}/min', T0 + 20_000);
    const r = arbitrate([own, req('r-y', 'agent.yield_takt', 'yield', '66 {rev}/min', T0 + 20_000)], first.state, T0 + 20_000, bundle, scope);
    expect(r.winners.map((w) => w.request.id)).toEqual(['r-cu-b']);
    expect(r.declined.map((d) => [d.request.id, d.reason])).toEqual([['r-y', 'OUTRANKED']]);
    expect(r.state.owners['press.TurretSpeed']).toMatchObject({ requestId: 'r-cu-b', value: 47, since: T0, expiresAt: T0 + W });
  });

  it('a strictly higher rank takes a setpoint from a throughput owner within the window', () => {
    const t1 = arbitrate([req('y1', 'agent.yield_takt', 'takt', '60 {rev}/min'), req('y2', 'agent.compress_fill', 'yield', '60 {rev}/min')], EMPTY_ARBITRATION, T0, bundle, scope);
    expect(t1.state.owners['press.TurretSpeed']!.score).toBe(1);
    const t2 = arbitrate([req('q1', 'agent.quality_conf', 'defect_rate', '40 {rev}/min', T0 + 1000)], t1.state, T0 + 1000, bundle, scope);
    expect(t2.winners.map((w) => w.request.id)).toEqual(['q1']);
    expect(t2.state.owners['press.TurretSpeed']!.agent).toBe('agent.quality_conf');
  });
});

describe('rule 4 and deadlock: losers are recorded; equal rank escalates to a human and never times out', () => {
  const a = req('cu', 'agent.quality_conf', 'content_uniformity', '45 {rev}/min');
  const b = req('pot', 'agent.compress_fill', 'potency', '55 {rev}/min');
  const dead = arbitrate([a, b, raise], EMPTY_ARBITRATION, T0, bundle, scope);

  it('[ERR-DEADLOCK] [ERR-ARBITRATION] two requests of equal rank with different targets escalate; the lower rank is held with the escalation, not declined without a winner', () => {
    expect(dead.winners).toEqual([]);
    expect(dead.escalated).toHaveLength(1);
    expect(dead.escalated[0]).toMatchObject({ setpoint: 'press.TurretSpeed', reason: 'DEADLOCK_EQUAL_RANK', score: 2, since: T0 });
    expect(dead.escalated[0]!.requests.map((r) => r.id).sort()).toEqual(['cu', 'pot']);
    expect(dead.escalated[0]!.outranked?.map((r) => r.id)).toEqual(['r-yield']);
    expect(dead.declined).toEqual([]);
  });

  it('[ERR-DEADLOCK] stays pending however much time passes; later equal-rank requests join it, one side per agent (its latest request)', () => {
    let state: ArbitrationState = dead.state;
    for (const later of [W, 10 * W, 1000 * W]) {
      const r = arbitrate([req(`x${later}`, 'agent.quality_potency', 'potency', '50 {rev}/min', T0 + later), req(`y${later}`, 'agent.yield_takt', 'takt', '66 {rev}/min', T0 + later)], state, T0 + later, bundle, scope);
      expect(r.winners).toEqual([]);
      expect(r.declined).toEqual([]);
      expect(r.escalated.map((e) => e.since)).toEqual([T0]);
      expect(r.state.escalations['press.TurretSpeed']).toBeDefined();
      state = r.state;
    }
    expect(state.escalations['press.TurretSpeed']!.requests.map((r) => r.id)).toEqual(['cu', 'pot', `x${1000 * W}`]);
    expect(state.escalations['press.TurretSpeed']!.outranked?.map((r) => r.id)).toEqual([`y${1000 * W}`]);
  });

  it('[ERR-DEADLOCK] a named reviewer resolves it: the chosen request wins and owns the setpoint, the other sides are declined as HUMAN_DECISION, the lower rank as OUTRANKED by the winner', () => {
    const r = resolveEscalation(dead.state, 'press.TurretSpeed', { requestId: 'pot', by: { person: 'q.russo', role: 'qa_reviewer' }, reason: 'potency trend' }, T0 + 60_000, bundle);
    expect(r.winners.map((w) => w.request.id)).toEqual(['pot']);
    expect(r.declined.map((d) => [d.request.id, d.reason, d.winner?.requestId])).toEqual([['cu', 'HUMAN_DECISION', 'pot'], ['r-yield', 'OUTRANKED', 'pot']]);
    expect(r.state.escalations['press.TurretSpeed']).toBeUndefined();
    expect(r.state.owners['press.TurretSpeed']).toMatchObject({ agent: 'agent.compress_fill', since: T0 + 60_000 });
  });

  it('[ERR-DEADLOCK] only a named person with a reviewer or QA role may resolve, and only a pending escalation', () => {
    expect(codeOf(() => resolveEscalation(dead.state, 'press.TurretSpeed', { requestId: 'pot', by: { person: 'op', role: 'operator' }, reason: '' }, T0, bundle))).toBe('LK_POLICY_DENIED');
    expect(codeOf(() => resolveEscalation(dead.state, 'press.TurretSpeed', { requestId: 'nope', by: { person: 'q', role: 'qa_reviewer' }, reason: '' }, T0, bundle))).toBe('LK_NOT_FOUND');
    expect(codeOf(() => resolveEscalation(EMPTY_ARBITRATION, 'press.TurretSpeed', { requestId: 'pot', by: { person: 'q', role: 'qa_reviewer' }, reason: '' }, T0, bundle))).toBe('LK_NOT_FOUND');
  });

  it('equal rank with the same target is no deadlock: the earliest stands, the other is declined explicitly (never merged)', () => {
    const r = arbitrate([req('p2', 'agent.compress_fill', 'potency', '45 {rev}/min', T0), req('p1', 'agent.quality_conf', 'content_uniformity', '2700 /h', T0 - 5)], EMPTY_ARBITRATION, T0, bundle, scope);
    expect(r.escalated).toEqual([]);
    expect(r.winners.map((w) => w.request.id)).toEqual(['p1']);
    expect(r.declined.map((d) => [d.request.id, d.reason])).toEqual([['p2', 'SAME_TARGET']]);
  });

  it('an agent superseding its own request in one round gets the earlier one declined, not dropped', () => {
    const r = arbitrate([req('old', 'agent.yield_takt', 'takt', '60 {rev}/min', T0 - 10), req('new', 'agent.yield_takt', 'takt', '62 {rev}/min', T0)], EMPTY_ARBITRATION, T0, bundle, scope);
    expect(r.winners.map((w) => w.request.id)).toEqual(['new']);
    expect(r.declined.map((d) => [d.request.id, d.reason, d.winner?.requestId])).toEqual([['old', 'SUPERSEDED', 'new']]);
  });

  it('refuses duplicate request ids and a non-finite clock (LK_VALIDATION)', () => {
    expect(codeOf(() => arbitrate([a, a], EMPTY_ARBITRATION, T0, bundle, scope))).toBe('LK_VALIDATION');
    expect(codeOf(() => arbitrate([a], EMPTY_ARBITRATION, Number.NaN, bundle, scope))).toBe('LK_VALIDATION');
  });
});

describe('one contest, one outcome: a winner and its declined losers, or an escalation — never both', () => {
  const attrs = ['content_uniformity', 'potency', 'dissolution', 'defect_rate', 'yield', 'energy', 'takt'] as const;
  const agents = ['agent.quality_conf', 'agent.yield_takt', 'agent.compress_fill', 'agent.quality_potency'] as const;
  const spec = fc.record({ agent: fc.constantFrom(...agents), attribute: fc.constantFrom(...attrs), rpm: fc.integer({ min: 30, max: 70 }), dt: fc.integer({ min: 0, max: 5000 }) });

  it('holds for any rounds, with or without an owner or an escalation already pending (property)', () => {
    fc.assert(
      fc.property(fc.array(fc.array(spec, { minLength: 1, maxLength: 4 }), { minLength: 1, maxLength: 4 }), fc.integer({ min: 0, max: 2 * W }), (rounds, gap) => {
        let state: ArbitrationState = EMPTY_ARBITRATION;
        rounds.forEach((round, k) => {
          const now = T0 + k * gap;
          const rs = round.map((s, i) => req(`k${k}r${i}`, s.agent, s.attribute, `${s.rpm} {rev}/min`, now - s.dt));
          const r = arbitrate(rs, state, now, bundle, scope);
          const escalated = r.escalated.some((e) => e.setpoint === 'press.TurretSpeed');
          const contested = r.declined.filter((d) => d.reason !== 'SUPERSEDED');
          if (escalated) {
            expect(r.winners).toEqual([]);
            expect(contested).toEqual([]);
            // the escalation holds the setpoint: nobody owns it meanwhile
            expect(r.state.owners['press.TurretSpeed']).toBeUndefined();
          }
          // a decline always names who won (or the owner that holds the setpoint), never "declined by no one"
          for (const d of contested) expect(d.winner).not.toBeNull();
          expect(contestText(contestOutcome('press.TurretSpeed', r))).not.toMatch(/contested: ;|: ;/);
          state = r.state;
        });
      }),
      { numRuns: 300 },
    );
  });

  it('the outcome reads as one line: the escalation with both sides and what is held; a win with its losers', () => {
    const a = req('cu', 'agent.quality_conf', 'content_uniformity', '45 {rev}/min');
    const b = req('pot', 'agent.compress_fill', 'potency', '55 {rev}/min');
    const dead = arbitrate([a, b, raise], EMPTY_ARBITRATION, T0, bundle, scope);
    const o = contestOutcome('press.TurretSpeed', dead);
    expect(o).toMatchObject({ kind: 'escalated', opened: true });
    expect(contestText(o)).toBe(
      'press.TurretSpeed contested: deadlock of equal rank (quality) between agent.quality_conf (content_uniformity) 45 {rev}/min and agent.compress_fill (potency) 55 {rev}/min: escalated to a person; '
      + 'the setpoint is held until a named person decides; held with it, lower rank: agent.yield_takt (takt) 60 {rev}/min',
    );
    const again = arbitrate([req('cu2', 'agent.quality_conf', 'content_uniformity', '44 {rev}/min', T0 + 5)], dead.state, T0 + 5, bundle, scope);
    expect(contestOutcome('press.TurretSpeed', again)).toMatchObject({ kind: 'escalated', opened: false });
    expect(contestText(contestOutcome('press.TurretSpeed', again))).toContain(`still held by the deadlock escalated at ${new Date(T0).toISOString()}`);
    const won = arbitrate([raise, hold], EMPTY_ARBITRATION, T0, bundle, scope);
    expect(contestText(contestOutcome('press.TurretSpeed', won))).toBe(
      'press.TurretSpeed contested: agent.quality_conf (content_uniformity, score 2) wins with 45 {rev}/min; agent.yield_takt declined (requested 60 {rev}/min, score 1): OUTRANKED by agent.quality_conf (content_uniformity, score 2), re-plans by other means',
    );
  });
});
