/**
 * The guarded writer's pure decision (src/engine/guard-decision.ts): a table of inputs → plan, with the
 * shipped bundle and contexts as values (no store, no connector, no clock).
 */
import { describe, expect, it } from 'vitest';
import { EMPTY_ARBITRATION, type ArbitrationState } from '../../src/arbitration/index.js';
import type { PolicyContext } from '../../src/domain/policy.js';
import { type WriteInput, type WritePlan, decideArbitration, decideRevert, decideWrite } from '../../src/engine/guard-decision.js';
import type { PendingWrite, WriteProposal } from '../../src/engine/writer-types.js';
import { T0, bundle, context } from './policy-helpers.js';

const proposal = (over: Partial<WriteProposal> = {}): WriteProposal => ({
  id: 'p1', tenant: 'acme-pharma', batch: 'B-1042', agent: 'agent.compress_fill', product: 'ir-family-a', tooling: 'round-10mm-ff',
  moves: [{ setpoint: 'press.MainForce', value: '12.5 kN' }], attribute: 'content_uniformity', justification: 'capping risk', ...over,
});

function input(over: { p?: Partial<WriteProposal>; ctx?: Partial<PolicyContext>; x?: Partial<WriteInput> } = {}): WriteInput {
  const p = proposal(over.p);
  const arb = decideArbitration(p, bundle, EMPTY_ARBITRATION, T0);
  if (arb.kind !== 'proceed') throw new Error('fixture: arbitration declined');
  return {
    proposal: p, bundle, now: T0, arb: EMPTY_ARBITRATION, arbResult: arb.result,
    contexts: p.moves.map(() => context(over.ctx)), current: new Map([['press.MainForce', 12]]),
    approving: null, pending: [], newPendingId: 'pw_new', ...over.x,
  };
}

const pendingOf = (id: string, p: WriteProposal, vectorHash = 'f'.repeat(64)): PendingWrite => ({
  id, proposal: p, vectorHash, needs: 'reviewer', since: T0 - 60_000, reasons: ['APPROVAL_REQUIRED'], bundleVersion: bundle.version,
});

/** The parts of a plan the table compares. */
function shape(plan: WritePlan): Record<string, unknown> {
  const out: Record<string, unknown> = { kind: plan.kind, decisions: plan.decisions.map((d) => d.outcome), entries: plan.decisionEntries.map((e) => e.kind) };
  if (plan.kind === 'closed') out.status = plan.status;
  if (plan.kind === 'queue') Object.assign(out, { needs: plan.pending.needs, pendingId: plan.pending.id, supersede: plan.supersede.map((w) => w.id) });
  if (plan.kind === 'write') Object.assign(out, { moves: plan.moves.map((m) => [m.setpoint, m.value, m.unit, m.old]), intents: plan.intents.map((e) => e.action), supersede: plan.supersede.map((w) => w.id) });
  return out;
}

describe('decideWrite: inputs → plan', () => {
  const other = proposal({ id: 'p0' });
  const unrelated = proposal({ id: 'p9', moves: [{ setpoint: 'press.FillDepth', value: '8 mm' }] });
  const rows: [string, Parameters<typeof input>[0], Record<string, unknown>][] = [
    ['allowed at L3, attended: write the vector in the setpoint unit, old value from the equipment', {},
      { kind: 'write', decisions: ['allow'], entries: ['policy_decision'], moves: [['press.MainForce', 12.5, 'kN', 12]], intents: ['setpoint.write'], supersede: [] }],
    ['a value in another unit is written in the setpoint unit', { p: { moves: [{ setpoint: 'press.MainForce', value: '12500 N' }] } },
      { kind: 'write', decisions: ['allow'], entries: ['policy_decision'], moves: [['press.MainForce', 12.5, 'kN', 12]], intents: ['setpoint.write'], supersede: [] }],
    ['current value unknown: denied, nothing written', { ctx: { current: null } },
      { kind: 'closed', status: 'denied', decisions: ['deny'], entries: ['policy_decision'] }],
    ['batch on hold: denied', { ctx: { batchState: 'hold' } },
      { kind: 'closed', status: 'denied', decisions: ['deny'], entries: ['policy_decision'] }],
    ['L1: recommended only', { ctx: { autonomy: { agent: 'L1' } } },
      { kind: 'closed', status: 'recommended', decisions: ['recommend_only'], entries: ['policy_decision'] }],
    ['L2: queued for the named reviewer under the id drawn by the executor', { ctx: { autonomy: { agent: 'L2' } } },
      { kind: 'queue', decisions: ['recommend_only'], entries: ['policy_decision'], needs: 'reviewer', pendingId: 'pw_new', supersede: [] }],
    ['outside the approved range: queued for QA', { p: { moves: [{ setpoint: 'press.MainForce', value: '18.5 kN' }] }, ctx: { current: 18.4, lastMove: null } },
      { kind: 'queue', decisions: ['needs_qa'], entries: ['policy_decision'], needs: 'qa', pendingId: 'pw_new', supersede: [] }],
    ['L2 again for a queued proposal: keeps its pending id', { ctx: { autonomy: { agent: 'L2' } }, x: { pending: [pendingOf('pw_old', proposal())] } },
      { kind: 'queue', decisions: ['recommend_only'], entries: ['policy_decision'], needs: 'reviewer', pendingId: 'pw_old', supersede: [] }],
    ['allowed: supersedes pending writes on the same setpoint, not others', { x: { pending: [pendingOf('pw_a', other), pendingOf('pw_b', unrelated)] } },
      { kind: 'write', decisions: ['allow'], entries: ['policy_decision'], moves: [['press.MainForce', 12.5, 'kN', 12]], intents: ['setpoint.write'], supersede: ['pw_a'] }],
  ];
  it.each(rows)('%s', (_name, over, want) => {
    expect(shape(decideWrite(input(over)))).toEqual(want);
  });

  it('is a function of its inputs: the same input gives the same plan', () => {
    expect(decideWrite(input())).toEqual(decideWrite(input()));
  });

  it('an approval whose vector the bundle in force computes differently is stale: re-key the pending write', () => {
    const p = proposal();
    const w = pendingOf('pw_1', p, 'a'.repeat(64));
    const approval = { by: 'a.bianchi', role: 'process_engineer', kind: 'reviewer' as const };
    const plan = decideWrite(input({ ctx: { autonomy: { agent: 'L2' }, approval }, x: { pending: [w], approving: { approval, pendingId: 'pw_1', vectorHash: 'a'.repeat(64) } } }));
    expect(plan.kind).toBe('stale');
    if (plan.kind !== 'stale') return;
    expect(plan.requeue?.pending).toMatchObject({ id: 'pw_1', vectorHash: plan.vectorHash, since: w.since });
    expect(plan.requeue?.entry.args).toMatchObject({ staleApproval: 'a'.repeat(64) });
  });

  it('an approval of the vector the bundle computes writes it and does not supersede its own pending write', () => {
    const p = proposal();
    const approval = { by: 'a.bianchi', role: 'process_engineer', kind: 'reviewer' as const };
    const first = decideWrite(input({ ctx: { autonomy: { agent: 'L2' } } }));
    const w = pendingOf('pw_1', p, first.vectorHash!);
    const plan = decideWrite(input({ ctx: { autonomy: { agent: 'L2' }, approval }, x: { pending: [w], approving: { approval, pendingId: 'pw_1', vectorHash: first.vectorHash! } } }));
    expect(shape(plan)).toMatchObject({ kind: 'write', decisions: ['allow'], supersede: [] });
  });

  it('a kept move owns its setpoint; a refused one leaves the arbitration state as it was', () => {
    const allowed = decideWrite(input());
    const denied = decideWrite(input({ ctx: { batchState: 'hold' } }));
    if (allowed.kind !== 'write' || denied.kind !== 'closed') throw new Error('unexpected plans');
    expect(Object.keys(allowed.arbNext.owners)).toEqual(['press.MainForce']);
    expect(denied.arbNext.owners).toEqual({});
  });
});

describe('decideArbitration', () => {
  it('without a bundle nothing is arbitrated (policy denies later)', () => {
    expect(decideArbitration(proposal(), null, EMPTY_ARBITRATION, T0)).toEqual({ kind: 'proceed', result: null });
  });

  it('[ERR-ARBITRATION] a setpoint owned for a quality attribute declines a throughput proposal, with the entry to audit', () => {
    const first = decideArbitration(proposal(), bundle, EMPTY_ARBITRATION, T0);
    if (first.kind !== 'proceed' || !first.result) throw new Error('fixture');
    const owned: ArbitrationState = first.result.state;
    const plan = decideArbitration(proposal({ id: 'p2', agent: 'agent.yield_takt', attribute: 'takt' }), bundle, owned, T0 + 1000);
    expect(plan.kind).toBe('declined');
    if (plan.kind !== 'declined') return;
    expect(plan.status).toBe('declined');
    expect(plan.entry).toMatchObject({ kind: 'arbitration', action: 'arbitration.decline', tenant: 'acme-pharma' });
    expect(plan.arbNext.owners['press.MainForce']).toEqual(owned.owners['press.MainForce']);
  });
});

describe('decideRevert', () => {
  const m = (setpoint: string, old: number) => ({ setpoint, value: 1, unit: 'kN', old });
  const err = { code: 'LK_READBACK_MISMATCH', message: 'read-back does not match' };
  it.each([
    ['every touched move, last first', [m('a', 1), m('b', 2)], () => true, ['b', 'a'], true, 'setpoint.readback_mismatch'],
    ['an unknown old value cannot be put back: incomplete', [m('a', Number.NaN), m('b', 2)], () => true, ['b'], false, 'setpoint.readback_mismatch'],
    ['a setpoint without connector cannot be put back: incomplete', [m('a', 1), m('b', 2)], (s: string) => s !== 'a', ['b'], false, 'setpoint.readback_mismatch'],
    ['nothing touched: complete, nothing to do', [], () => true, [], true, 'setpoint.readback_mismatch'],
  ] as const)('%s', (_n, touched, writable, want, complete, action) => {
    const plan = decideRevert(proposal(), touched, 'why', err, writable);
    expect(plan.revert.map((x) => x.setpoint)).toEqual(want);
    expect(plan.complete).toBe(complete);
    expect(plan.alarm).toMatchObject({ actor: 'system', kind: 'alarm', action });
  });
});
