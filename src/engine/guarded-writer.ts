/**
 * The guarded writer: the only code that holds the connectors' write
 * capability (an architecture test proves it). Every proposal goes
 *   arbitration → policy (at call time) → audit intent → connector write →
 *   read-back within tolerance → audit outcome,
 * and every step leaves an audit entry. `needs_qa` and L2 proposals wait in
 * a pending queue for a named reviewer; an approval binds to the hash of the
 * exact setpoint vector, so a changed vector needs a new approval. A vector
 * is written whole or not at all: a failed write or a read-back mismatch
 * raises an alarm entry and reverts what was written. Nothing is merged or
 * silently dropped: a superseded pending write is declined and audited.
 * Operations run one at a time (a promise queue), so no two interleave.
 */
import { randomBytes } from 'node:crypto';
import type { WriteCapability, WriteResult } from '../../connectors/types.js';
import { type ArbitrationRequest, type ArbitrationResult, type ArbitrationState, type Escalation, arbitrate, resolveEscalation } from '../arbitration/index.js';
import type { AuditEntryInput } from '../audit/index.js';
import type { Approval, PolicyContext } from '../domain/policy.js';
import { LkError } from '../errors.js';
import type { PolicyBundle } from '../policy/index.js';
import type { TxContext } from '../store/store.js';
import { ArbitrationStore } from '../store/arbitration-store.js';
import { roleMapOf } from '../domain/roles.js';
import { cappingRisk, isPressMove, modelRecordOf, PRESS_SETPOINTS } from './capping.js';
import { decisionContext } from './decision-context.js';
import { json } from './json.js';
import type { RevertCause, RevertOutcome } from './lkg-revert.js';
import { type Move, type WritePlan, decideArbitration, decideRevert, decideWrite, revertIntent } from './guard-decision.js';
import { checkProposal, entryFor } from './proposal.js';
import { closeOpenIntents } from './recovery.js';
import { SetpointReader } from './setpoint-reader.js';
import { type LastMove, WriterState } from './writer-state.js';
import { outcomeUnknown } from './write-errors.js';
import type { GuardedWriterOptions, PendingWrite, RecoveryReport, WriteOutcome, WriteProposal } from './writer-types.js';

export type { BatchContext, BatchRegistry, GuardedWriterOptions, PendingWrite, RecoveryReport, WriteOutcome, WriteProposal, WriteStatus } from './writer-types.js';

type SignedApproval = Approval & { readonly vectorHash: string };
/** Why a pending write left the queue without a decision (superseded, its step or run ended), by id. */
type Withdrawal = { readonly tenant: string; readonly reason: string };
/** One orchestrator round: requests for one setpoint, arbitrated against the state in force and persisted with its audit entry. */
export interface ContestRound {
  readonly tenant: string;
  readonly product: string;
  readonly tooling: string;
  readonly requests: readonly ArbitrationRequest[];
  /** The round's audit entry, from its result (committed with the state it leaves). */
  readonly audit: (r: ArbitrationResult) => AuditEntryInput;
}
type Resolution = { readonly requestId: string; readonly by: { readonly person: string; readonly role: string }; readonly reason: string };
type Inputs = { readonly current: ReadonlyMap<string, number | null>; readonly contexts: PolicyContext[] };
/** A move of the vector sent to the equipment: its result, or null when the outcome of the write is unknown. */
type Done = { readonly move: Move; readonly result: WriteResult | null };
type Base = Omit<WriteOutcome, 'status'>;
type Failure = { readonly code: string; readonly message: string };
/**
 * An approval being executed: the pending write it came from and the vector hash it binds to. `settled` turns
 * true once the pending row was closed or put back to waiting — committed in the same transaction as the last
 * audit entry of the approved write, so no crash can leave a written vector pending.
 */
type Approving = { readonly approval: Approval; readonly pendingId: string; readonly vectorHash: string; settled: boolean };

export class GuardedWriter {
  private readonly caps = new Map<string, WriteCapability>();
  private readonly reader: SetpointReader;
  private readonly pendingWrites = new Map<string, PendingWrite>();
  /** Pending writes withdrawn since start (older ones are found in the audit trail). */
  private readonly withdrawnWrites = new Map<string, Withdrawal>();
  private readonly lastMoves: Map<string, LastMove>;
  private readonly state: WriterState;
  /** Pending writes whose approval was running when the process stopped (resolved by {@link recover}). */
  private interruptedApprovals: string[] = [];
  private readonly arbStore: ArbitrationStore;
  private arb: ArbitrationState;
  private queue: Promise<unknown> = Promise.resolve();

  /**
   * Claims the write capability of every connector: construct exactly one writer per process. Reloads the
   * pending queue, the last moves and the arbitration state (owners, pending escalations) from the store, so a
   * restart loses nothing that was acknowledged.
   * @throws LkError LK_WRITER_CLAIMED when a capability was claimed already; LK_STORE_MIGRATION when the store
   *   has no engine tables.
   */
  constructor(private readonly o: GuardedWriterOptions) {
    this.state = new WriterState(o.store);
    this.reader = new SetpointReader(o.connectors, o.site);
    for (const c of o.connectors) this.caps.set(c.id, c.claimWriter());
    for (const { write, approving } of this.state.loadPending()) {
      this.pendingWrites.set(write.id, write);
      if (approving) this.interruptedApprovals.push(write.id);
    }
    this.lastMoves = this.state.loadLastMoves();
    this.arbStore = new ArbitrationStore(o.store);
    this.arb = this.arbStore.load();
  }

  /**
   * Once after the connectors are connected, before serving: close every intent a crash left open with an
   * `interrupted` outcome carrying what the equipment holds now (read back; `unknown` when it cannot be read),
   * and put pending writes whose approval was running back to waiting (audited; they need a new approval).
   */
  recover(): Promise<RecoveryReport> {
    return this.serial(async () => {
      const approvals = this.interruptedApprovals;
      this.interruptedApprovals = [];
      for (const id of approvals) {
        const pw = this.pendingWrites.get(id);
        if (!pw) continue;
        this.o.store.tx((t) => this.state.approvalInterrupted(t, pw));
      }
      const { interrupted, moves } = await closeOpenIntents(this.o.store, this.state, (sp) => this.reader.one(sp), (sp) => this.reader.tolerance(sp), this.lastMoves);
      for (const [sp, m] of moves) this.lastMoves.set(sp, m);
      return { interrupted, approvalsInterrupted: approvals };
    });
  }

  /** Pending writes waiting for a named reviewer or QA, oldest first. */
  pending(): PendingWrite[] {
    return [...this.pendingWrites.values()];
  }

  /**
   * What the equipment holds now for `setpoints`, read as the writer reads them to judge a move (null where unknown):
   * what a reviewer of a pending write compares the proposed value with. Never throws.
   */
  current(setpoints: readonly string[]): Promise<Map<string, number | null>> {
    return this.reader.current(setpoints);
  }

  /** Current arbitration state (owners, pending escalations). */
  arbitration(): ArbitrationState {
    return this.arb;
  }

  /**
   * Pending deadlocks with the tenant whose proposal last changed each (the API shows a tenant only its own),
   * oldest first. Read-only: a person decides one with {@link resolve}.
   */
  escalations(): { readonly tenant: string; readonly escalation: Escalation }[] {
    const tenants = this.arbStore.escalationTenants();
    return Object.values(this.arb.escalations)
      .flatMap((escalation) => {
        const tenant = tenants.get(escalation.setpoint);
        return tenant === undefined ? [] : [{ tenant, escalation }];
      })
      .sort((a, b) => a.escalation.since - b.escalation.since || (a.escalation.setpoint < b.escalation.setpoint ? -1 : 1));
  }

  /**
   * Run a proposal through the whole guard.
   * @throws LkError(LK_VALIDATION) for a malformed proposal and LK_NOT_FOUND when the tenant does not run the
   *   product (R1); nothing is written or audited then. Every other refusal is a {@link WriteOutcome}.
   */
  propose(p: WriteProposal): Promise<WriteOutcome> {
    return this.serial(async () => {
      checkProposal(p, this.o.site);
      return this.run(p, null);
    });
  }

  /**
   * A named reviewer approves a pending write; the vector is re-evaluated at call time, with the bundle then in
   * force, and the approval binds to the vector hash: when that bundle computes another vector, the approval is
   * stale (the pending write carries the new hash and waits for a new approval).
   * @throws LkError LK_NOT_FOUND (no such pending write), LK_APPROVAL_STALE (the approval names another vector),
   *   LK_NEEDS_QA (a reviewer approval for a write that waits for QA).
   */
  approve(pendingId: string, approval: SignedApproval): Promise<WriteOutcome> {
    return this.serial(async () => {
      const pw = this.pendingWrites.get(pendingId);
      if (!pw) throw this.notPending(pendingId);
      if (approval.vectorHash !== pw.vectorHash) {
        throw new LkError('LK_APPROVAL_STALE', `approval is for vector ${approval.vectorHash.slice(0, 12)}…, the pending write is ${pw.vectorHash.slice(0, 12)}…`, { pendingId });
      }
      if (pw.needs === 'qa' && approval.kind !== 'qa') throw new LkError('LK_NEEDS_QA', `pending write ${pendingId} waits for a QA approval`, { pendingId });
      const a: Approval = { by: approval.by, role: approval.role, kind: approval.kind };
      const inForce = this.o.policy()?.version ?? null;
      this.o.store.tx((t) => {
        t.audit.append(entryFor(pw.proposal, {
          actor: approval.by,
          kind: 'approval',
          action: 'setpoint.approve',
          subject: { reviewer: approval.by },
          args: json({ pendingId, vectorHash: pw.vectorHash, kind: approval.kind, role: approval.role, queuedUnder: pw.bundleVersion, bundleInForce: inForce }),
        }));
        this.state.setApproving(t, pendingId, { ...a, vectorHash: pw.vectorHash });
      });
      const running: Approving = { approval: a, pendingId, vectorHash: pw.vectorHash, settled: false };
      let out: WriteOutcome;
      try {
        out = await this.run(pw.proposal, running);
      } catch (err) {
        // failed before its last transaction: the write waits again (a failure after it found the row settled)
        if (!running.settled) this.o.store.tx((t) => this.settle(t, running, LkError.is(err) ? err.code : 'LK_INTERNAL', false));
        throw err;
      }
      if (!running.settled) this.o.store.tx((t) => this.settle(t, running, out.status));
      return out;
    });
  }

  /** A named reviewer rejects a pending write (audited). @throws LkError LK_NOT_FOUND when there is no such pending write. */
  reject(pendingId: string, by: { readonly person: string; readonly role: string }, reason: string): Promise<WriteOutcome> {
    return this.serial(async () => {
      const pw = this.pendingWrites.get(pendingId);
      if (!pw) throw this.notPending(pendingId);
      this.o.store.tx((t) => {
        this.state.deletePending(t, pendingId);
        t.audit.append(entryFor(pw.proposal, {
          actor: by.person, kind: 'approval', action: 'setpoint.reject', subject: { reviewer: by.person }, reason,
          args: json({ pendingId, vectorHash: pw.vectorHash, role: by.role }),
        }));
      });
      this.pendingWrites.delete(pendingId);
      return { status: 'rejected', proposalId: pw.proposal.id, decisions: [], vectorHash: pw.vectorHash };
    });
  }

  /**
   * Why the pending write `id` of `tenant` was withdrawn (superseded by a newer proposal, its step or its run
   * ended), or null when it was not: a withdrawn move can no longer be signed (LK_MOVE_WITHDRAWN).
   */
  withdrawn(tenant: string, id: string): string | null {
    const w = this.withdrawnWrites.get(id);
    if (w) return w.tenant === tenant ? w.reason : null;
    return this.state.withdrawnReason(tenant, id);
  }

  /**
   * Withdraw every pending write `which` selects, each audited with the reason (`setpoint.withdrawn`) in the
   * transaction that takes it off the queue: its step or run ended before a person decided. @returns them.
   */
  withdraw(which: (w: PendingWrite) => boolean, reason: string): Promise<PendingWrite[]> {
    return this.serial(async () => {
      const out = [...this.pendingWrites.values()].filter(which);
      if (out.length === 0) return out;
      this.o.store.tx((t) => {
        for (const w of out) this.state.withdraw(t, w, reason);
      });
      for (const w of out) {
        this.pendingWrites.delete(w.id);
        this.withdrawnWrites.set(w.id, { tenant: w.proposal.tenant, reason });
      }
      return out;
    });
  }

  /**
   * One orchestrator round for a contested setpoint (two agents' requests), arbitrated against the owners and
   * escalations in force and persisted: the state it leaves (a new owner, or an escalation that holds the
   * setpoint for a person and appears in {@link escalations}) commits with the round's audit entry. Nothing is
   * written to the equipment here. @throws LkError LK_POLICY_BUNDLE when no bundle is loaded; as {@link arbitrate}.
   */
  contest(round: ContestRound): Promise<ArbitrationResult> {
    return this.serial(async () => {
      const bundle = this.o.policy();
      if (!bundle) throw new LkError('LK_POLICY_BUNDLE', 'no policy bundle is loaded');
      const r = arbitrate(round.requests, this.arb, this.o.clock.now(), bundle, { product: round.product, tooling: round.tooling });
      this.o.store.tx((t) => {
        const e = t.audit.append(round.audit(r));
        this.keepArb(t, r.state, round.tenant, e.seq);
      });
      return r;
    });
  }

  private notPending(id: string): LkError {
    const w = this.withdrawnWrites.get(id);
    if (w) return new LkError('LK_MOVE_WITHDRAWN', `move ${id} was withdrawn (${w.reason}): it can no longer be signed`, { pendingId: id, reason: w.reason });
    return new LkError('LK_NOT_FOUND', `no pending write ${id}`, { pendingId: id });
  }

  /**
   * A named reviewer decides a pending arbitration deadlock (audited); the winner's agent then proposes again.
   * @throws LkError as {@link resolveEscalation}; LK_POLICY_BUNDLE when no bundle is loaded.
   */
  resolve(tenant: string, setpoint: string, decision: Resolution): Promise<ArbitrationResult> {
    return this.serial(async () => {
      const bundle = this.o.policy();
      if (!bundle) throw new LkError('LK_POLICY_BUNDLE', 'no policy bundle is loaded');
      const r = resolveEscalation(this.arb, setpoint, decision, this.o.clock.now(), bundle);
      this.o.store.tx((t) => {
        const e = t.audit.append({
          tenant, actor: decision.by.person, kind: 'arbitration', action: 'arbitration.resolve', subject: { setpoint, reviewer: decision.by.person },
          reason: decision.reason, result: json({ winners: r.winners, declined: r.declined }),
        });
        this.keepArb(t, r.state, tenant, e.seq);
      });
      return r;
    });
  }

  /**
   * R8's active revert: command each equipment's own revert to its last known-good recipe, one at a time in
   * the writer's queue (no write interleaves), each with its audit intent and outcome. Always allowed: it is
   * the fail-safe. The equipment then refuses supervisory writes until a named person re-arms it.
   */
  revertToLkg(equipment: readonly string[], cause: RevertCause): Promise<RevertOutcome[]> {
    return this.serial(async () => {
      const out: RevertOutcome[] = [];
      for (const eq of equipment) {
        const conn = this.o.site.equipment.find((e) => e.id === eq)?.connection;
        out.push(await this.commandLkg(conn ? this.caps.get(conn) : undefined, eq, cause));
      }
      return out;
    });
  }

  private async commandLkg(cap: WriteCapability | undefined, equipment: string, cause: RevertCause): Promise<RevertOutcome> {
    const subject = { setpoint: `${equipment}.SupervisorState`, ...(cause.run ? { run: cause.run } : {}), ...(cause.batch ? { batch: cause.batch } : {}) };
    const actor = cause.actor ?? 'system';
    const intent = this.o.store.audit.intent({ tenant: cause.tenant, actor, action: 'plc.revert_lkg', subject, reason: cause.reason, new: 'LOST' });
    let out: RevertOutcome;
    try {
      if (!cap) throw new LkError('LK_TAG_UNKNOWN', `no connector serves ${equipment}`);
      out = { equipment, ok: true, result: await cap.commandLkg(equipment) };
    } catch (err) {
      out = { equipment, ok: false, error: LkError.is(err) ? { code: err.code, message: err.message } : { code: 'LK_WRITE_FAILED', message: String(err) } };
    }
    const closing = out.ok ? { new: json(out.result.state) } : { reason: out.error.code };
    this.o.store.audit.outcome(intent, { actor, action: 'plc.revert_lkg', subject, result: json(out), ...closing });
    return out;
  }

  /**
   * A named person re-arms a LOST equipment (SupervisorState := ATTENDED) in the writer's queue, with its audit
   * intent (`plc.rearm`, the person and the reason) and outcome (what the equipment reports after it). The PLC
   * decides: it refuses while no heartbeat arrives. The surface checks who may do this (src/engine/rearm.ts).
   */
  rearm(equipment: string, cause: RevertCause & { readonly actor: string }): Promise<RevertOutcome> {
    return this.serial(async () => {
      const conn = this.o.site.equipment.find((e) => e.id === equipment)?.connection;
      const cap = conn ? this.caps.get(conn) : undefined;
      const subject = { setpoint: `${equipment}.SupervisorState`, ...(cause.run ? { run: cause.run } : {}), ...(cause.batch ? { batch: cause.batch } : {}) };
      const intent = this.o.store.audit.intent({ tenant: cause.tenant, actor: cause.actor, action: 'plc.rearm', subject, reason: cause.reason, old: 'LOST', new: 'ATTENDED' });
      let out: RevertOutcome;
      try {
        if (!cap) throw new LkError('LK_TAG_UNKNOWN', `no connector serves ${equipment}`);
        out = { equipment, ok: true, result: await cap.commandRearm(equipment) };
      } catch (err) {
        out = { equipment, ok: false, error: LkError.is(err) ? { code: err.code, message: err.message } : { code: 'LK_WRITE_FAILED', message: String(err) } };
      }
      const closing = out.ok ? { new: json(out.result.state) } : { reason: out.error.code };
      this.o.store.audit.outcome(intent, { actor: cause.actor, action: 'plc.rearm', subject, result: json(out), ...closing });
      return out;
    });
  }

  /** Resolves when every write, approval and rejection queued so far has finished (and its outcome is audited). */
  idle(): Promise<void> {
    return this.queue.then(() => undefined);
  }

  private serial<T>(fn: () => Promise<T>): Promise<T> {
    const next = this.queue.then(fn, fn);
    this.queue = next.catch(() => undefined);
    return next;
  }

  /**
   * Inside `t`, the last transaction of an approved write: the pending write leaves the queue (closed) or waits
   * again, audited with the row change; memory follows on commit. No-op for a proposal (`a` null).
   */
  private settle(t: TxContext, a: Approving | null, status: string, close = status !== 'pending' && status !== 'recommended'): void {
    const pw = a && !a.settled ? this.pendingWrites.get(a.pendingId) : undefined;
    if (!a || !pw) return; // a proposal, or superseded meanwhile: already audited
    this.state.settle(t, pw, close, status);
    this.o.store.afterCommit(() => {
      a.settled = true;
      if (close) this.pendingWrites.delete(pw.id);
    });
  }

  /** Inside `t`: persist the arbitration state `next` (its rows name the audit entry `seq`); memory follows on commit. */
  private keepArb(t: TxContext, next: ArbitrationState, tenant: string, seq: number): void {
    if (next === this.arb) return;
    this.arbStore.sync(t, this.arb, next, tenant, seq);
    this.o.store.afterCommit(() => {
      this.arb = next;
    });
  }

  /** Decide (guard-decision.ts) and carry the plan out; the only reads here are the inputs a decision needs. */
  private async run(p: WriteProposal, approving: Approving | null): Promise<WriteOutcome> {
    const bundle = this.o.policy();
    const now = this.o.clock.now();
    const arbPlan = decideArbitration(p, bundle, this.arb, now);
    if (arbPlan.kind === 'declined') {
      const { status, entry, arbNext } = arbPlan;
      // the decline, the ownership and escalations it leaves, and a settled approval: one transaction
      this.o.store.tx((t) => {
        this.keepArb(t, arbNext, p.tenant, t.audit.append(entry).seq);
        this.settle(t, approving, status);
      });
      const esc = arbPlan.escalation ? { escalation: arbPlan.escalation } : {};
      return { proposalId: p.id, status, decisions: [], vectorHash: null, declined: arbPlan.declined, ...esc };
    }
    const { current, contexts } = await this.inputsOf(p, bundle, now, approving?.approval ?? null);
    // the id of a write this decision may queue, drawn only when it is read: a write or a denial queues nothing
    // and draws no random bytes (~20 µs a write in a profile of the guarded-write bench, as much as evaluate)
    const o = this.o;
    let pendingId: string | undefined;
    const plan = decideWrite({
      proposal: p, bundle, now, arb: this.arb, arbResult: arbPlan.result, contexts, current, approving,
      pending: [...this.pendingWrites.values()],
      get newPendingId(): string {
        return (pendingId ??= `pw_${now.toString(36)}_${o.randomHex ? o.randomHex(4) : randomBytes(4).toString('hex')}`);
      },
    });
    const base = { proposalId: p.id, decisions: plan.decisions, vectorHash: plan.vectorHash };
    if (plan.kind === 'stale') return this.stale(plan, approving!);
    const decided = (t: TxContext): void => {
      const es = t.audit.appendBatch(plan.decisionEntries);
      this.keepArb(t, plan.arbNext, p.tenant, es.at(-1)!.seq);
    };
    if (plan.kind === 'closed') {
      this.o.store.tx((t) => {
        decided(t);
        this.settle(t, approving, plan.status);
      });
      return { ...base, status: plan.status };
    }
    if (plan.kind === 'queue') {
      const w = plan.pending;
      // decisions, superseded writes and the queued one: one transaction, so the queue and the trail agree
      this.o.store.tx((t) => {
        decided(t);
        this.state.supersede(t, p, plan.supersede);
        this.state.putPending(t, w, t.audit.append(plan.entry).seq);
        this.settle(t, approving, 'pending');
      });
      this.superseded(p, plan.supersede);
      this.pendingWrites.set(w.id, w);
      const waitsFor = w.needs === 'reviewer' ? (this.o.batches(p.tenant, p.batch)?.reviewer ?? null) : null;
      const moves = p.moves.map((m, i) => ({ setpoint: m.setpoint, from: current.get(m.setpoint) ?? null, to: plan.decisions[i]?.valueInSetpointUnit ?? null, unit: plan.decisions[i]?.setpointUnit ?? null }));
      return { ...base, status: 'pending', pending: { id: w.id, needs: w.needs, waitsFor, since: w.since, moves } };
    }
    return this.execute(p, plan, approving, (t) => {
      decided(t);
      this.state.supersede(t, p, plan.supersede);
    });
  }

  /**
   * The inputs of the policy at call time: current values read from the equipment, the safety inputs computed
   * here (the capping risk of a press move from the tenant's twin, the named model's record from the registry)
   * and each move's context.
   */
  private async inputsOf(p: WriteProposal, bundle: PolicyBundle | null, now: number, approval: Approval | null): Promise<Inputs> {
    const press = p.moves.some((m) => isPressMove(bundle, m.setpoint));
    const roles = roleMapOf(this.o.site);
    const current = await this.reader.current([...new Set([...p.moves.map((m) => m.setpoint), ...(press ? PRESS_SETPOINTS.map((r) => roles.tag(r)) : [])])]);
    const capping = press && bundle ? cappingRisk(this.o.twin, p, current, bundle, roles) : undefined;
    const modelRecord = modelRecordOf(this.o.models, p);
    const contexts = p.moves.map((m) => {
      const computed = { modelRecord, ...(capping && isPressMove(bundle, m.setpoint) ? { capping } : {}) };
      return decisionContext(this.o, p, m.setpoint, now, current, inProcessTime(this.lastMoves.get(m.setpoint), now, this.o.processTimeScale), approval, bundle, computed);
    });
    return { current, contexts };
  }

  /** The bundle in force computes another vector than the one approved: re-key the pending write, refuse the approval. */
  private stale(plan: Extract<WritePlan, { kind: 'stale' }>, approving: Approving): never {
    this.o.store.tx((t) => {
      t.audit.appendBatch(plan.decisionEntries);
      if (!plan.requeue) return;
      const w = plan.requeue.pending;
      this.state.putPending(t, w, t.audit.append(plan.requeue.entry).seq);
      this.pendingWrites.set(w.id, w);
      this.settle(t, approving, 'LK_APPROVAL_STALE', false);
    });
    const detail = { pendingId: approving.pendingId, vectorHash: plan.vectorHash };
    const why = `the bundle in force computes vector ${plan.vectorHash.slice(0, 12)}…, the approval was for ${approving.vectorHash.slice(0, 12)}…`;
    throw new LkError('LK_APPROVAL_STALE', why, detail);
  }

  /** Journal each move's intent, write it, read it back, journal the outcome; the first failure reverts the vector. */
  private async execute(p: WriteProposal, plan: Extract<WritePlan, { kind: 'write' }>, approving: Approving | null, first: (t: TxContext) => void): Promise<WriteOutcome> {
    const base = { proposalId: p.id, decisions: plan.decisions, vectorHash: plan.vectorHash };
    const { moves } = plan;
    const done: Done[] = [];
    for (const [i, m] of moves.entries()) {
      const cap = this.capFor(m.setpoint);
      const subject = { setpoint: m.setpoint };
      // the decisions, superseded pending writes and the first intent commit together: one durable sync fewer per write
      const intent = this.o.store.tx((t) => {
        if (i === 0) first(t);
        return t.audit.intent(plan.intents[i]!);
      });
      if (i === 0) this.superseded(p, plan.supersede);
      let result: WriteResult;
      try {
        if (!cap) throw new LkError('LK_TAG_UNKNOWN', `no connector serves ${m.setpoint}`);
        result = await cap.write(m.setpoint, m.value);
      } catch (err) {
        const e = LkError.is(err) ? { code: err.code, message: err.message } : { code: 'LK_WRITE_FAILED', message: String(err) };
        this.o.store.audit.outcome(intent, { actor: p.agent, action: 'setpoint.write', subject, result: json({ ok: false, error: e }), reason: e.code });
        // a write whose outcome is unknown may have moved the equipment: put it back too; a refusal changed nothing
        if (outcomeUnknown(err)) done.push({ move: m, result: null });
        return this.fail(p, base, done, `write of ${m.setpoint} failed: ${e.code}`, e, approving);
      }
      done.push({ move: m, result });
      const whole = result.verified && i === moves.length - 1;
      const at = this.o.clock.now();
      // the vector's last outcome, the moves the rate check remembers and the approved pending write's closing commit together
      this.o.store.tx((t) => {
        const out = t.audit.outcome(intent, { actor: p.agent, action: 'setpoint.write', subject, result: json(result), old: json(m.old), new: json(result.readBack) });
        if (!whole) return;
        for (const d of done) this.state.putLastMove(t, d.move.setpoint, { value: d.move.value, at }, p.tenant, out.seq);
        this.settle(t, approving, 'written');
      });
      if (whole) for (const d of done) this.lastMoves.set(d.move.setpoint, { value: d.move.value, at });
      if (!result.verified) {
        const what = `read-back of ${m.setpoint} is ${String(result.readBack)} (${result.readBackQuality}), wrote ${result.written}`;
        return this.fail(p, base, done, what, { code: 'LK_READBACK_MISMATCH', message: 'read-back does not match the written value' }, approving);
      }
    }
    return { ...base, status: 'written', results: done.map((d) => d.result!) };
  }

  /**
   * Alarm, then put back every setpoint of the vector touched so far (the vector is all or nothing). A revert
   * the equipment answered is that setpoint's last move (the rate check counts both moves); the last
   * transaction also settles an approved pending write.
   */
  private async fail(p: WriteProposal, base: Base, done: Done[], what: string, error: Failure, approving: Approving | null): Promise<WriteOutcome> {
    const plan = decideRevert(p, done.map((d) => d.move), what, error, (sp) => this.capFor(sp) !== undefined);
    const todo = plan.revert;
    let reverted = plan.complete;
    const status = (): 'reverted' | 'failed' => (reverted ? 'reverted' : 'failed');
    this.o.store.tx((t) => {
      t.audit.append(plan.alarm);
      if (todo.length === 0) this.settle(t, approving, status());
    });
    for (const [i, move] of todo.entries()) {
      const intent = this.o.store.audit.intent(revertIntent(p, move, what));
      let result: unknown;
      let moved: LastMove;
      try {
        const r = await this.capFor(move.setpoint)!.write(move.setpoint, move.old);
        reverted &&= r.verified;
        result = r;
        moved = { value: move.old, at: this.o.clock.now() };
      } catch (err) {
        reverted = false;
        result = { ok: false, error: LkError.is(err) ? err.code : String(err) };
        // the forward write was applied and not undone: for the rate check the equipment moved to it, now
        moved = { value: move.value, at: this.o.clock.now() };
      }
      this.o.store.tx((t) => {
        const out = t.audit.outcome(intent, { actor: 'system', action: 'setpoint.revert', subject: { setpoint: move.setpoint }, result: json(result) });
        this.state.putLastMove(t, move.setpoint, moved, p.tenant, out.seq);
        if (i === todo.length - 1) this.settle(t, approving, status());
      });
      this.lastMoves.set(move.setpoint, moved);
    }
    return { ...base, status: status(), results: done.flatMap((d) => (d.result ? [d.result] : [])), error };
  }

  /** After the commit that declined them: superseded pending writes leave the queue and count as withdrawn. */
  private superseded(by: WriteProposal, victims: readonly PendingWrite[]): void {
    for (const v of victims) {
      this.pendingWrites.delete(v.id);
      this.withdrawnWrites.set(v.id, { tenant: v.proposal.tenant, reason: `superseded by proposal ${by.id} of ${by.agent}` });
    }
  }

  private capFor(setpoint: string): WriteCapability | undefined {
    const conn = this.reader.connectionOf.get(setpoint);
    return conn ? this.caps.get(conn) : undefined;
  }
}

/**
 * A setpoint's last move as the rate-of-change check sees it: its time shifted so that `now − at` is the process
 * time elapsed since it (wall time × the process time scale). Unchanged on a real line (scale 1).
 */
export function inProcessTime(last: LastMove | undefined, now: number, scale = 1): LastMove | undefined {
  if (!last || !(scale > 0) || scale === 1 || !Number.isFinite(scale)) return last;
  return { ...last, at: now - (now - last.at) * scale };
}
