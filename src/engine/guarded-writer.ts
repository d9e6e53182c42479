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
import type { Connector, WriteCapability, WriteResult } from '../../connectors/types.js';
import { EMPTY_ARBITRATION, type ArbitrationRequest, type ArbitrationResult, type ArbitrationState, type Declined, type Escalation, arbitrate, resolveEscalation } from '../arbitration/index.js';
import type { AuditEntryInput, Json } from '../audit/index.js';
import type { Clock } from '../clock.js';
import type { SiteConfig } from '../config/schema.js';
import type { Approval, ArbitrationAttribute, Attendance, Decision, PolicyContext, RequestedValue } from '../domain/policy.js';
import { LkError } from '../errors.js';
import { type AutonomyState, type PolicyBundle, autonomyFor, combineDecisions, evaluate, initialAutonomy, vectorHash } from '../policy/index.js';
import type { Store } from '../store/store.js';

export interface WriteProposal {
  /** Unique id of the proposal (from the run engine or the agent). */
  readonly id: string;
  readonly tenant: string;
  readonly batch: string;
  readonly run?: string;
  readonly agent: string;
  readonly product: string;
  readonly tooling: string;
  readonly batchState: string;
  readonly moves: readonly { readonly setpoint: string; readonly value: RequestedValue }[];
  /** The attribute the moves serve (arbitration rank). */
  readonly attribute: ArbitrationAttribute;
  readonly justification: string;
  readonly model?: { readonly id: string; readonly version: string };
  readonly predictedCappingRisk?: number;
  /** Named reviewer assigned to the batch. */
  readonly reviewer?: string | null;
}

export type WriteStatus = 'written' | 'denied' | 'recommended' | 'pending' | 'declined' | 'escalated' | 'failed' | 'reverted' | 'rejected';

export interface WriteOutcome {
  readonly status: WriteStatus;
  readonly proposalId: string;
  readonly decisions: readonly Decision[];
  readonly vectorHash: string | null;
  readonly pending?: { readonly id: string; readonly needs: 'qa' | 'reviewer' };
  readonly results?: readonly WriteResult[];
  readonly declined?: readonly Declined[];
  readonly escalation?: Escalation;
  readonly error?: { readonly code: string; readonly message: string };
}

export interface PendingWrite {
  readonly id: string;
  readonly proposal: WriteProposal;
  readonly vectorHash: string;
  readonly needs: 'qa' | 'reviewer';
  readonly since: number;
  readonly reasons: readonly string[];
}

export interface GuardedWriterOptions {
  readonly store: Store;
  readonly site: SiteConfig;
  readonly connectors: readonly Connector[];
  readonly clock: Clock;
  /** The bundle in force; null when none could be loaded (every write is then denied). */
  readonly policy: () => PolicyBundle | null;
  /** Current autonomy state (default: the bundle's initial levels). */
  readonly autonomy?: () => AutonomyState;
  /** The attended operator session, if any (R5). */
  readonly attendance?: () => Attendance | null;
}

type Move = { readonly setpoint: string; readonly value: number; readonly unit: string; readonly old: number };

/** Replace what JSON cannot hold (NaN, Infinity, undefined, class instances) so the audit entry is always writable. */
function json(v: unknown): Json {
  if (v === null || typeof v === 'string' || typeof v === 'boolean') return v;
  if (typeof v === 'number') return Number.isFinite(v) ? v : String(v);
  if (Array.isArray(v)) return v.map(json);
  if (typeof v === 'object') {
    const out: Record<string, Json> = {};
    for (const [k, x] of Object.entries(v as object)) if (x !== undefined) out[k] = json(x);
    return out;
  }
  return String(v);
}

export class GuardedWriter {
  private readonly caps = new Map<string, WriteCapability>();
  private readonly readers = new Map<string, Connector>();
  private readonly tagConnector = new Map<string, string>();
  private readonly pendingWrites = new Map<string, PendingWrite>();
  private readonly lastMoves = new Map<string, { value: number; at: number }>();
  private arb: ArbitrationState = EMPTY_ARBITRATION;
  private queue: Promise<unknown> = Promise.resolve();
  private seq = 0;

  /** Claims the write capability of every connector: construct exactly one writer per process. */
  constructor(private readonly o: GuardedWriterOptions) {
    for (const c of o.connectors) {
      this.caps.set(c.id, c.claimWriter());
      this.readers.set(c.id, c);
    }
    for (const e of o.site.equipment) for (const t of e.tags) if (t.kind === 'setpoint') this.tagConnector.set(`${e.id}.${t.name}`, e.connection);
  }

  /** Pending writes waiting for a named reviewer or QA, oldest first. */
  pending(): PendingWrite[] {
    return [...this.pendingWrites.values()];
  }

  /** Current arbitration state (owners, pending escalations). */
  arbitration(): ArbitrationState {
    return this.arb;
  }

  /**
   * Run a proposal through the whole guard.
   * @throws LkError(LK_VALIDATION) for a malformed proposal and LK_NOT_FOUND when the tenant does not run the
   *   product (R1); nothing is written or audited then. Every other refusal is a {@link WriteOutcome}.
   */
  propose(p: WriteProposal): Promise<WriteOutcome> {
    return this.serial(async () => {
      this.check(p);
      return this.run(p, null);
    });
  }

  /**
   * A named reviewer approves a pending write; the vector is re-checked at call time with the approval.
   * @throws LkError LK_NOT_FOUND (no such pending write), LK_APPROVAL_STALE (the approval names another vector),
   *   LK_NEEDS_QA (a reviewer approval for a write that waits for QA).
   */
  approve(pendingId: string, approval: Approval & { readonly vectorHash: string }): Promise<WriteOutcome> {
    return this.serial(async () => {
      const pw = this.pendingWrites.get(pendingId);
      if (!pw) throw new LkError('LK_NOT_FOUND', `no pending write ${pendingId}`, { pendingId });
      if (approval.vectorHash !== pw.vectorHash) {
        throw new LkError('LK_APPROVAL_STALE', `approval is for vector ${approval.vectorHash.slice(0, 12)}…, the pending write is ${pw.vectorHash.slice(0, 12)}…`, { pendingId });
      }
      if (pw.needs === 'qa' && approval.kind !== 'qa') throw new LkError('LK_NEEDS_QA', `pending write ${pendingId} waits for a QA approval`, { pendingId });
      this.audit(pw.proposal, {
        actor: approval.by,
        kind: 'approval',
        action: 'setpoint.approve',
        subject: { reviewer: approval.by },
        args: json({ pendingId, vectorHash: pw.vectorHash, kind: approval.kind, role: approval.role }),
      });
      const out = await this.run(pw.proposal, { by: approval.by, role: approval.role, kind: approval.kind });
      if (out.status !== 'pending' && out.status !== 'recommended') this.pendingWrites.delete(pendingId);
      return out;
    });
  }

  /** A named reviewer rejects a pending write (audited). @throws LkError LK_NOT_FOUND when there is no such pending write. */
  reject(pendingId: string, by: { readonly person: string; readonly role: string }, reason: string): Promise<WriteOutcome> {
    return this.serial(async () => {
      const pw = this.pendingWrites.get(pendingId);
      if (!pw) throw new LkError('LK_NOT_FOUND', `no pending write ${pendingId}`, { pendingId });
      this.pendingWrites.delete(pendingId);
      this.audit(pw.proposal, { actor: by.person, kind: 'approval', action: 'setpoint.reject', subject: { reviewer: by.person }, reason, args: json({ pendingId, vectorHash: pw.vectorHash, role: by.role }) });
      return { status: 'rejected', proposalId: pw.proposal.id, decisions: [], vectorHash: pw.vectorHash };
    });
  }

  /**
   * A named reviewer decides a pending arbitration deadlock (audited); the winner's agent then proposes again.
   * @throws LkError as {@link resolveEscalation}; LK_POLICY_BUNDLE when no bundle is loaded.
   */
  resolve(tenant: string, setpoint: string, decision: { readonly requestId: string; readonly by: { readonly person: string; readonly role: string }; readonly reason: string }): Promise<ArbitrationResult> {
    return this.serial(async () => {
      const bundle = this.o.policy();
      if (!bundle) throw new LkError('LK_POLICY_BUNDLE', 'no policy bundle is loaded');
      const r = resolveEscalation(this.arb, setpoint, decision, this.o.clock.now(), bundle);
      this.o.store.audit.append({ tenant, actor: decision.by.person, kind: 'arbitration', action: 'arbitration.resolve', subject: { setpoint, reviewer: decision.by.person }, reason: decision.reason, result: json({ winners: r.winners, declined: r.declined }) });
      this.arb = r.state;
      return r;
    });
  }

  private serial<T>(fn: () => Promise<T>): Promise<T> {
    const next = this.queue.then(fn, fn);
    this.queue = next.catch(() => undefined);
    return next;
  }

  private check(p: WriteProposal): void {
    const bad = (m: string): never => {
      throw new LkError('LK_VALIDATION', `write proposal: ${m}`);
    };
    if (typeof p !== 'object' || p === null) bad('must be an object');
    for (const k of ['id', 'tenant', 'batch', 'agent', 'product', 'tooling', 'batchState', 'attribute', 'justification'] as const) {
      if (typeof p[k] !== 'string' || p[k].length === 0) bad(`${k} must be a non-empty string`);
    }
    if (!Array.isArray(p.moves) || p.moves.length === 0) bad('moves must be a non-empty array');
    const seen = new Set<string>();
    for (const m of p.moves) {
      if (typeof m?.setpoint !== 'string') bad('every move needs a setpoint');
      if (seen.has(m.setpoint)) bad(`setpoint ${m.setpoint} appears twice (a vector moves each setpoint once)`);
      seen.add(m.setpoint);
    }
    const tenant = this.o.site.tenants.find((t) => t.id === p.tenant);
    if (!tenant || !tenant.products.includes(p.product)) throw new LkError('LK_NOT_FOUND', `tenant ${p.tenant} runs no product ${p.product}`);
  }

  private async run(p: WriteProposal, approval: Approval | null): Promise<WriteOutcome> {
    const bundle = this.o.policy();
    const now = this.o.clock.now();
    const base = { proposalId: p.id };
    // 1. arbitration (a move outside the design space does not contest; policy sends it to QA or denies it)
    let arbResult: ArbitrationResult | null = null;
    if (bundle) {
      const reqs: ArbitrationRequest[] = p.moves.map((m) => ({ id: `${p.id}:${m.setpoint}`, agent: p.agent, setpoint: m.setpoint, value: m.value, attribute: p.attribute, justification: p.justification, at: now }));
      arbResult = arbitrate(reqs, this.arb, now, bundle, { product: p.product, tooling: p.tooling });
      if (arbResult.declined.length > 0 || arbResult.escalated.length > 0) {
        this.arb = this.withoutWins(arbResult, p);
        this.audit(p, { kind: 'arbitration', action: 'arbitration.decline', result: json({ declined: arbResult.declined, escalated: arbResult.escalated }), reason: arbResult.declined.map((d) => d.reason).join(', ') || 'DEADLOCK_EQUAL_RANK' });
        const esc = arbResult.escalated[0];
        return { ...base, status: esc ? 'escalated' : 'declined', decisions: [], vectorHash: null, declined: arbResult.declined, ...(esc ? { escalation: esc } : {}) };
      }
    }
    // 2. policy at call time, with the current values read from the equipment
    const current = await this.readCurrent(p.moves.map((m) => m.setpoint));
    const decisions = p.moves.map((m) => evaluate({ agent: p.agent, setpoint: m.setpoint, value: m.value, product: p.product, tooling: p.tooling }, bundle, this.context(p, m.setpoint, now, current, approval, bundle)));
    const decisionEntries = decisions.map((d, i) =>
      this.entry(p, { kind: 'policy_decision', action: 'policy.evaluate', subject: { setpoint: p.moves[i]!.setpoint }, args: json(d.inputs), result: json({ ...d, inputs: undefined }), reason: d.reasons.join(', ') || d.outcome }),
    );
    const combined = combineDecisions(decisions);
    const moves: Move[] | null = decisions.every((d) => d.valueInSetpointUnit !== null && d.setpointUnit !== null)
      ? decisions.map((d, i) => ({ setpoint: p.moves[i]!.setpoint, value: d.valueInSetpointUnit!, unit: d.setpointUnit!, old: current.get(p.moves[i]!.setpoint) ?? Number.NaN }))
      : null;
    const hash = moves ? vectorHash({ agent: p.agent, product: p.product, tooling: p.tooling, moves }) : null;
    const keep = combined.outcome === 'allow' || combined.pendingApproval !== 'none';
    if (arbResult) this.arb = keep ? arbResult.state : this.withoutWins(arbResult, p);
    if (combined.outcome !== 'allow') this.o.store.audit.appendBatch(decisionEntries);
    if (combined.outcome === 'deny') return { ...base, status: 'denied', decisions, vectorHash: hash };
    if (combined.outcome !== 'allow') {
      if (combined.pendingApproval === 'none' || !hash) return { ...base, status: 'recommended', decisions, vectorHash: hash };
      const needs = combined.pendingApproval;
      const existing = [...this.pendingWrites.values()].find((w) => w.proposal.id === p.id);
      const id = existing?.id ?? `pw_${now.toString(36)}_${(this.seq++).toString(36)}`;
      this.supersede(p, id);
      this.pendingWrites.set(id, { id, proposal: p, vectorHash: hash, needs, since: existing?.since ?? now, reasons: decisions.flatMap((d) => d.reasons) });
      this.audit(p, { kind: 'state_change', action: 'setpoint.pending', args: json({ pendingId: id, vectorHash: hash, needs }), reason: `waits for ${needs === 'qa' ? 'QA' : 'a named reviewer'}` });
      return { ...base, status: 'pending', decisions, vectorHash: hash, pending: { id, needs } };
    }
    // 3. write the vector
    this.supersede(p, null);
    return this.execute(p, moves!, decisions, hash!, decisionEntries);
  }

  private context(p: WriteProposal, setpoint: string, now: number, current: Map<string, number | null>, approval: Approval | null, bundle: PolicyBundle | null): PolicyContext {
    const state = this.o.autonomy?.() ?? (bundle ? initialAutonomy(bundle) : null);
    const lv = state ? autonomyFor(state, p.agent, setpoint) : null;
    const last = this.lastMoves.get(setpoint);
    return {
      now,
      batchState: p.batchState,
      ...(lv ? { autonomy: { agent: lv.agent, setpoint: lv.setpoint } } : {}),
      ...(p.model ? { model: p.model } : {}),
      current: current.get(setpoint) ?? null,
      lastMove: last ?? null,
      reviewer: p.reviewer ?? null,
      attendance: this.o.attendance?.() ?? null,
      approval,
      ...(p.predictedCappingRisk !== undefined ? { predictedCappingRisk: p.predictedCappingRisk } : {}),
    };
  }

  private async execute(p: WriteProposal, moves: Move[], decisions: Decision[], hash: string, decisionEntries: AuditEntryInput[]): Promise<WriteOutcome> {
    const base = { proposalId: p.id, decisions, vectorHash: hash };
    const done: { move: Move; result: WriteResult | null }[] = [];
    for (const [i, m] of moves.entries()) {
      const cap = this.capFor(m.setpoint);
      const intentEntry = this.entry(p, { kind: 'intent', action: 'setpoint.write', subject: { setpoint: m.setpoint }, args: json({ decision: decisions[i]!.id, bundleVersion: decisions[i]!.bundleVersion, vectorHash: hash, unit: m.unit }), old: json(m.old), new: m.value });
      // the decisions and the first intent commit together: one durable sync fewer per write
      const intent = this.o.store.tx((t) => {
        if (i === 0) t.audit.appendBatch(decisionEntries);
        return t.audit.intent(intentEntry);
      });
      let result: WriteResult;
      try {
        if (!cap) throw new LkError('LK_TAG_UNKNOWN', `no connector serves ${m.setpoint}`);
        result = await cap.write(m.setpoint, m.value);
      } catch (err) {
        const e = LkError.is(err) ? { code: err.code, message: err.message } : { code: 'LK_WRITE_FAILED', message: String(err) };
        this.o.store.audit.outcome(intent, { actor: p.agent, action: 'setpoint.write', subject: { setpoint: m.setpoint }, result: json({ ok: false, error: e }), reason: e.code });
        // a timeout leaves the equipment state unknown: put it back too; a refusal changed nothing there
        if (e.code === 'LK_CONN_TIMEOUT') done.push({ move: m, result: null });
        return this.fail(p, base, done, `write of ${m.setpoint} failed: ${e.code}`, e);
      }
      this.o.store.audit.outcome(intent, { actor: p.agent, action: 'setpoint.write', subject: { setpoint: m.setpoint }, result: json(result), old: json(m.old), new: json(result.readBack) });
      done.push({ move: m, result });
      if (!result.verified) {
        return this.fail(p, base, done, `read-back of ${m.setpoint} is ${String(result.readBack)} (${result.readBackQuality}), wrote ${result.written}`, { code: 'LK_READBACK_MISMATCH', message: 'read-back does not match the written value' });
      }
    }
    const at = this.o.clock.now();
    for (const d of done) this.lastMoves.set(d.move.setpoint, { value: d.move.value, at });
    return { ...base, status: 'written', results: done.map((d) => d.result!) };
  }

  /** Alarm, then put back every setpoint of the vector touched so far (the vector is all or nothing). */
  private async fail(p: WriteProposal, base: Omit<WriteOutcome, 'status'>, done: { move: Move; result: WriteResult | null }[], what: string, error: { code: string; message: string }): Promise<WriteOutcome> {
    this.audit(p, { actor: 'system', kind: 'alarm', action: error.code === 'LK_READBACK_MISMATCH' ? 'setpoint.readback_mismatch' : 'setpoint.write_failed', reason: what, result: json({ error, moves: done.map((d) => d.move.setpoint) }) });
    let reverted = true;
    for (const { move } of [...done].reverse()) {
      const cap = this.capFor(move.setpoint);
      if (!Number.isFinite(move.old) || !cap) {
        reverted = false;
        continue;
      }
      const intent = this.o.store.audit.intent(this.entry(p, { actor: 'system', kind: 'intent', action: 'setpoint.revert', subject: { setpoint: move.setpoint }, old: move.value, new: move.old, reason: what }));
      try {
        const r = await cap.write(move.setpoint, move.old);
        reverted &&= r.verified;
        this.o.store.audit.outcome(intent, { actor: 'system', action: 'setpoint.revert', subject: { setpoint: move.setpoint }, result: json(r) });
      } catch (err) {
        reverted = false;
        this.o.store.audit.outcome(intent, { actor: 'system', action: 'setpoint.revert', subject: { setpoint: move.setpoint }, result: json({ ok: false, error: LkError.is(err) ? err.code : String(err) }) });
      }
    }
    return { ...base, status: reverted ? 'reverted' : 'failed', results: done.flatMap((d) => (d.result ? [d.result] : [])), error };
  }

  /** Pending writes sharing a setpoint with a newer proposal are declined explicitly, never merged or dropped. */
  private supersede(p: WriteProposal, keepId: string | null): void {
    const touched = new Set(p.moves.map((m) => m.setpoint));
    for (const w of [...this.pendingWrites.values()]) {
      if (w.id === keepId || !w.proposal.moves.some((m) => touched.has(m.setpoint))) continue;
      this.pendingWrites.delete(w.id);
      this.audit(w.proposal, { kind: 'state_change', action: 'setpoint.superseded', args: json({ pendingId: w.id, vectorHash: w.vectorHash, supersededBy: p.id }), reason: `superseded by proposal ${p.id} of ${p.agent}` });
    }
  }

  /** The arbitration state without the ownership this proposal's moves would have gained (it did not move anything). */
  private withoutWins(r: ArbitrationResult, p: WriteProposal): ArbitrationState {
    const owners = { ...r.state.owners };
    for (const w of r.winners) {
      if (!w.request.id.startsWith(`${p.id}:`)) continue;
      const prev = this.arb.owners[w.request.setpoint];
      if (prev) owners[w.request.setpoint] = prev;
      else delete owners[w.request.setpoint];
    }
    return { owners, escalations: r.state.escalations };
  }

  private capFor(setpoint: string): WriteCapability | undefined {
    const conn = this.tagConnector.get(setpoint);
    return conn ? this.caps.get(conn) : undefined;
  }

  private async readCurrent(setpoints: readonly string[]): Promise<Map<string, number | null>> {
    const out = new Map<string, number | null>();
    const byConn = new Map<string, string[]>();
    for (const s of setpoints) {
      const c = this.tagConnector.get(s);
      if (c && this.readers.has(c)) byConn.set(c, [...(byConn.get(c) ?? []), s]);
    }
    for (const [c, tags] of byConn) {
      try {
        for (const smp of await this.readers.get(c)!.read(tags)) out.set(smp.tag, smp.quality === 'good' && typeof smp.value === 'number' && Number.isFinite(smp.value) ? smp.value : null);
      } catch {
        // unknown current value: the policy denies the move (CURRENT_VALUE_UNKNOWN)
      }
    }
    return out;
  }

  private entry(p: WriteProposal, e: Partial<AuditEntryInput> & Pick<AuditEntryInput, 'kind' | 'action'>): AuditEntryInput {
    return { tenant: p.tenant, actor: p.agent, ...e, subject: { batch: p.batch, agent: p.agent, ...(p.run ? { run: p.run } : {}), ...e.subject } };
  }

  private audit(p: WriteProposal, e: Partial<AuditEntryInput> & Pick<AuditEntryInput, 'kind' | 'action'>): void {
    this.o.store.audit.append(this.entry(p, e));
  }
}
