/**
 * Every SQL statement of the run engine (migration 5): runs, steps, the tool-call log, agent calls, the
 * genealogy and the approval gate. Mutations take the caller's transaction (`TxContext`) so that a state
 * change commits with its audit entry; reads are tenant-scoped (R1): a run of another tenant is not found.
 * Every write to what a run's view shows (the run row, its steps, its approval) is announced to the
 * {@link RunStore.onWrite} listeners, so a cache of views is dropped exactly when its source changes.
 * The types here are rows (`…Record`, times in epoch ms); what the API answers is built from them as the wire
 * contract's views (`RunView`, `StepView`, `ToolCallLine`, src/contract/runs.ts).
 */
import type { Database, Statement } from 'better-sqlite3';
import type { PlanStep, RunStatus, StepStatus } from '../domain/run.js';
import type { TxContext } from './store.js';

export interface RunRecord {
  readonly id: string;
  readonly tenant: string;
  readonly batch: string;
  readonly line: string;
  readonly product: string;
  readonly tooling: string;
  readonly status: RunStatus;
  readonly goal: string;
  readonly request: unknown;
  readonly limits: unknown;
  readonly autonomy: 'L0' | 'L1' | 'L2' | 'L3';
  readonly record: Record<string, unknown>;
  readonly recordSha: string;
  readonly seed: number;
  readonly startedBy: string;
  readonly createdAt: number;
  readonly updatedAt: number;
  readonly endedAt: number | null;
  readonly reason: string | null;
  readonly data: Record<string, unknown>;
}

export interface StepRecord {
  readonly run: string;
  readonly seq: string;
  readonly name: string;
  readonly agent: string;
  readonly tool: string;
  readonly gate: boolean;
  readonly continuous: boolean;
  readonly status: StepStatus;
  readonly attempt: number;
  readonly startedAt: number | null;
  readonly endedAt: number | null;
  readonly detail: string;
}

export interface ToolCallRecord {
  readonly run: string;
  readonly id: number;
  readonly at: number;
  readonly kind: 'call' | 'ok' | 'error';
  readonly step: string;
  readonly agent: string;
  readonly tool: string;
  readonly args: unknown;
  readonly summary: string | null;
  readonly result: unknown;
  readonly auditSeq: number;
}

export interface AgentCallRecord {
  readonly run: string;
  readonly id: number;
  readonly at: number;
  readonly step: string;
  readonly agent: string;
  readonly fn: string;
  readonly model: string | null;
  /** Exact JSON text as recorded (replay compares bytes). */
  readonly input: string;
  readonly output: string;
}

export interface RunEventRecord {
  readonly run: string;
  readonly id: number;
  readonly at: number;
  readonly kind: string;
  readonly step: string | null;
  readonly agent: string | null;
  readonly tag: string | null;
  readonly summary: string;
  readonly data: unknown;
}

export interface ApprovalRecord {
  readonly id: string;
  readonly run: string;
  readonly tenant: string;
  readonly kind: 'batch_release';
  readonly status: 'pending' | 'approved' | 'rejected' | 'withdrawn';
  readonly reviewer: string;
  readonly record: string;
  readonly recordHash: string;
  readonly requestedAt: number;
  readonly decidedAt: number | null;
  readonly signature: Record<string, unknown> | null;
}

export type NewRun = Omit<RunRecord, 'status' | 'updatedAt' | 'endedAt' | 'reason' | 'data'>;

const parse = (s: string | null): unknown => (s === null ? null : JSON.parse(s));

/** Prepared statements over one connection; construct once per store. */
export class RunStore {
  private readonly st: Record<string, Statement>;
  private readonly writeListeners = new Set<(run: string) => void>();

  constructor(private readonly db: Database) {
    this.st = {
      insertRun: db.prepare(`INSERT INTO run (id, tenant, batch, line, product, tooling, status, goal, request, limits, autonomy, record, record_sha, seed, started_by, created_at, updated_at)
        VALUES (@id, @tenant, @batch, @line, @product, @tooling, 'PENDING', @goal, @request, @limits, @autonomy, @record, @recordSha, @seed, @startedBy, @createdAt, @createdAt)`),
      insertStep: db.prepare('INSERT INTO run_step (run, seq, name, agent, tool, gate, continuous, status) VALUES (?, ?, ?, ?, ?, ?, ?, ?)'),
      getRun: db.prepare('SELECT * FROM run WHERE tenant = ? AND id = ?'),
      getRunAny: db.prepare('SELECT * FROM run WHERE id = ?'),
      listRuns: db.prepare('SELECT * FROM run WHERE tenant = ? AND (created_at < ? OR (created_at = ? AND id < ?)) ORDER BY created_at DESC, id DESC LIMIT ?'),
      runsOfBatch: db.prepare('SELECT * FROM run WHERE tenant = ? AND batch = ? ORDER BY created_at DESC, id DESC'),
      activeOnLine: db.prepare("SELECT * FROM run WHERE line = ? AND status IN ('PENDING','RUNNING','APPROVAL','HELD','INTERRUPTED')"),
      unfinished: db.prepare("SELECT * FROM run WHERE status IN ('PENDING','RUNNING','APPROVAL') ORDER BY created_at"),
      setStatus: db.prepare('UPDATE run SET status = ?, reason = ?, updated_at = ?, ended_at = ? WHERE id = ?'),
      setData: db.prepare('UPDATE run SET data = ?, updated_at = ? WHERE id = ?'),
      steps: db.prepare('SELECT * FROM run_step WHERE run = ? ORDER BY seq'),
      setStep: db.prepare('UPDATE run_step SET status = @status, attempt = @attempt, started_at = @startedAt, ended_at = @endedAt, detail = @detail WHERE run = @run AND seq = @seq'),
      nextTool: db.prepare('SELECT COALESCE(MAX(id), 0) + 1 FROM run_tool_call WHERE run = ?').pluck(),
      insertTool: db.prepare('INSERT INTO run_tool_call (run, id, at, kind, step, agent, tool, args, summary, result, audit_seq) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)'),
      toolCalls: db.prepare('SELECT * FROM run_tool_call WHERE run = ? AND id > ? ORDER BY id LIMIT ?'),
      nextAgent: db.prepare('SELECT COALESCE(MAX(id), 0) + 1 FROM run_agent_call WHERE run = ?').pluck(),
      insertAgent: db.prepare('INSERT INTO run_agent_call (run, id, at, step, agent, fn, model, input, output) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)'),
      agentCalls: db.prepare('SELECT * FROM run_agent_call WHERE run = ? ORDER BY id'),
      nextEvent: db.prepare('SELECT COALESCE(MAX(id), 0) + 1 FROM run_event WHERE run = ?').pluck(),
      insertEvent: db.prepare('INSERT INTO run_event (run, id, at, kind, step, agent, tag, summary, data) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)'),
      events: db.prepare('SELECT * FROM run_event WHERE run = ? ORDER BY at, id'),
      insertApproval: db.prepare(`INSERT INTO run_approval (id, run, tenant, kind, status, reviewer, record, record_hash, requested_at)
        VALUES (?, ?, ?, 'batch_release', 'pending', ?, ?, ?, ?)`),
      getApproval: db.prepare('SELECT * FROM run_approval WHERE tenant = ? AND id = ?'),
      approvalOfRun: db.prepare("SELECT * FROM run_approval WHERE run = ? ORDER BY requested_at DESC LIMIT 1"),
      pendingApprovals: db.prepare("SELECT * FROM run_approval WHERE tenant = ? AND status = 'pending' ORDER BY requested_at"),
      // RETURNING: the run whose view the decision changes, in the same statement
      decideApproval: db.prepare("UPDATE run_approval SET status = ?, decided_at = ?, signature = ? WHERE id = ? AND status = 'pending' RETURNING run").pluck(),
      withdrawApproval: db.prepare("UPDATE run_approval SET status = 'withdrawn', decided_at = ? WHERE run = ? AND status = 'pending' RETURNING id").pluck(),
      reassignApproval: db.prepare("UPDATE run_approval SET reviewer = ? WHERE run = ? AND status = 'pending' RETURNING id").pluck(),
    };
  }

  /**
   * Listen to every write of what a run's view shows — the run row, its steps, its approval — with the run id.
   * Listeners run synchronously inside the writing transaction (so a write that is then rolled back has still
   * dropped what depended on the old row: dropping too much is safe, keeping too much is not); a listener must
   * not read the store. Tool-call lines, agent calls and genealogy events are not part of the view and are not
   * announced.
   * @returns a function that removes the listener
   */
  onWrite(l: (run: string) => void): () => void {
    this.writeListeners.add(l);
    return () => this.writeListeners.delete(l);
  }

  private wrote(run: string): void {
    for (const l of this.writeListeners) l(run);
  }

  insertRun(t: TxContext, run: NewRun, plan: readonly PlanStep[]): void {
    void t;
    this.wrote(run.id);
    this.st.insertRun!.run({ ...run, request: JSON.stringify(run.request), limits: JSON.stringify(run.limits), record: JSON.stringify(run.record) });
    for (const s of plan) this.st.insertStep!.run(run.id, s.seq, s.name, s.agent, s.tool, s.gate ? 1 : 0, s.continuous ? 1 : 0, 'PENDING');
  }

  /** The run of this tenant, or null (another tenant's run is not found, R1). */
  run(tenant: string, id: string): RunRecord | null {
    const r = this.st.getRun!.get(tenant, id) as RunRow | undefined;
    return r ? toRun(r) : null;
  }

  /** A run by id, whatever its tenant: for the engine's own bookkeeping only, never for a request. */
  runById(id: string): RunRecord | null {
    const r = this.st.getRunAny!.get(id) as RunRow | undefined;
    return r ? toRun(r) : null;
  }

  /** Newest first, a page at a time: pass the last row's (createdAt, id) as the cursor. */
  runs(tenant: string, limit: number, cursor?: { createdAt: number; id: string }): RunRecord[] {
    const at = cursor?.createdAt ?? Number.MAX_SAFE_INTEGER;
    return (this.st.listRuns!.all(tenant, at, at, cursor?.id ?? '\uffff', limit) as RunRow[]).map(toRun);
  }

  /** Every run of a tenant's batch, newest first (a batch normally has one). */
  runsOfBatch(tenant: string, batch: string): RunRecord[] {
    return (this.st.runsOfBatch!.all(tenant, batch) as RunRow[]).map(toRun);
  }

  activeOnLine(line: string): RunRecord | null {
    const r = this.st.activeOnLine!.get(line) as RunRow | undefined;
    return r ? toRun(r) : null;
  }

  /** Runs a stopped daemon left PENDING, RUNNING or waiting at the gate. */
  unfinished(): RunRecord[] {
    return (this.st.unfinished!.all() as RunRow[]).map(toRun);
  }

  setStatus(t: TxContext, id: string, status: RunStatus, reason: string | null, at: number, ended: boolean): void {
    void t;
    this.wrote(id);
    this.st.setStatus!.run(status, reason, at, ended ? at : null, id);
  }

  setData(t: TxContext, id: string, data: Record<string, unknown>, at: number): void {
    void t;
    this.wrote(id);
    this.st.setData!.run(JSON.stringify(data), at, id);
  }

  steps(run: string): StepRecord[] {
    return (this.st.steps!.all(run) as StepRow[]).map(toStep);
  }

  setStep(t: TxContext, s: Pick<StepRecord, 'run' | 'seq' | 'status' | 'attempt' | 'startedAt' | 'endedAt' | 'detail'>): void {
    void t;
    this.wrote(s.run);
    this.st.setStep!.run(s);
  }

  /** Append a tool-call log line inside `t` (with its audit entry); returns its id (monotonic per run). */
  appendToolCall(t: TxContext, row: Omit<ToolCallRecord, 'id'>): number {
    void t;
    const id = this.st.nextTool!.get(row.run) as number;
    this.st.insertTool!.run(row.run, id, row.at, row.kind, row.step, row.agent, row.tool, row.args === undefined ? null : JSON.stringify(row.args), row.summary, row.result === undefined ? null : JSON.stringify(row.result), row.auditSeq);
    return id;
  }

  toolCalls(run: string, afterId = 0, limit = 10_000): ToolCallRecord[] {
    return (this.st.toolCalls!.all(run, afterId, limit) as ToolRow[]).map((r) => ({ run: r.run, id: r.id, at: r.at, kind: r.kind, step: r.step, agent: r.agent, tool: r.tool, args: parse(r.args), summary: r.summary, result: parse(r.result), auditSeq: r.audit_seq }));
  }

  appendAgentCall(t: TxContext, row: Omit<AgentCallRecord, 'id'>): number {
    void t;
    const id = this.st.nextAgent!.get(row.run) as number;
    this.st.insertAgent!.run(row.run, id, row.at, row.step, row.agent, row.fn, row.model, row.input, row.output);
    return id;
  }

  agentCalls(run: string): AgentCallRecord[] {
    return this.st.agentCalls!.all(run) as AgentCallRecord[];
  }

  appendEvent(t: TxContext, row: Omit<RunEventRecord, 'id'>): number {
    void t;
    const id = this.st.nextEvent!.get(row.run) as number;
    this.st.insertEvent!.run(row.run, id, row.at, row.kind, row.step, row.agent, row.tag, row.summary, row.data === undefined || row.data === null ? null : JSON.stringify(row.data));
    return id;
  }

  events(run: string): RunEventRecord[] {
    return (this.st.events!.all(run) as (Omit<RunEventRecord, 'data'> & { data: string | null })[]).map((r) => ({ ...r, data: parse(r.data) }));
  }

  insertApproval(t: TxContext, a: Pick<ApprovalRecord, 'id' | 'run' | 'tenant' | 'reviewer' | 'record' | 'recordHash' | 'requestedAt'>): void {
    void t;
    this.wrote(a.run);
    this.st.insertApproval!.run(a.id, a.run, a.tenant, a.reviewer, a.record, a.recordHash, a.requestedAt);
  }

  approval(tenant: string, id: string): ApprovalRecord | null {
    const r = this.st.getApproval!.get(tenant, id) as ApprovalRow | undefined;
    return r ? toApproval(r) : null;
  }

  approvalOfRun(run: string): ApprovalRecord | null {
    const r = this.st.approvalOfRun!.get(run) as ApprovalRow | undefined;
    return r ? toApproval(r) : null;
  }

  pendingApprovals(tenant: string): ApprovalRecord[] {
    return (this.st.pendingApprovals!.all(tenant) as ApprovalRow[]).map(toApproval);
  }

  /** @returns false when the approval was not pending any more (decided concurrently). */
  decideApproval(t: TxContext, id: string, status: 'approved' | 'rejected', at: number, signature: Record<string, unknown>): boolean {
    void t;
    const run = this.st.decideApproval!.get(status, at, JSON.stringify(signature), id) as string | undefined;
    if (run === undefined) return false;
    this.wrote(run);
    return true;
  }

  /** The run's pending approval gate can no longer be signed (the run was aborted). @returns its id, or null when none was pending. */
  withdrawApproval(t: TxContext, run: string, at: number): string | null {
    void t;
    this.wrote(run);
    return (this.st.withdrawApproval!.get(at, run) as string | undefined) ?? null;
  }

  /** The run's pending approval gate waits for `reviewer` now. @returns its id, or null when none was pending. */
  reassignApproval(t: TxContext, run: string, reviewer: string): string | null {
    void t;
    this.wrote(run);
    return (this.st.reassignApproval!.get(reviewer, run) as string | undefined) ?? null;
  }
}

interface RunRow {
  id: string; tenant: string; batch: string; line: string; product: string; tooling: string; status: RunStatus; goal: string; request: string; limits: string;
  autonomy: RunRecord['autonomy']; record: string; record_sha: string; seed: number; started_by: string; created_at: number; updated_at: number; ended_at: number | null; reason: string | null; data: string;
}
interface StepRow { run: string; seq: string; name: string; agent: string; tool: string; gate: number; continuous: number; status: StepStatus; attempt: number; started_at: number | null; ended_at: number | null; detail: string }
interface ToolRow { run: string; id: number; at: number; kind: ToolCallRecord['kind']; step: string; agent: string; tool: string; args: string | null; summary: string | null; result: string | null; audit_seq: number }
interface ApprovalRow { id: string; run: string; tenant: string; kind: 'batch_release'; status: ApprovalRecord['status']; reviewer: string; record: string; record_hash: string; requested_at: number; decided_at: number | null; signature: string | null }

function toRun(r: RunRow): RunRecord {
  return {
    id: r.id, tenant: r.tenant, batch: r.batch, line: r.line, product: r.product, tooling: r.tooling, status: r.status, goal: r.goal,
    request: JSON.parse(r.request), limits: JSON.parse(r.limits), autonomy: r.autonomy, record: JSON.parse(r.record) as Record<string, unknown>, recordSha: r.record_sha,
    seed: r.seed, startedBy: r.started_by, createdAt: r.created_at, updatedAt: r.updated_at, endedAt: r.ended_at, reason: r.reason, data: JSON.parse(r.data) as Record<string, unknown>,
  };
}

function toStep(r: StepRow): StepRecord {
  return { run: r.run, seq: r.seq, name: r.name, agent: r.agent, tool: r.tool, gate: r.gate === 1, continuous: r.continuous === 1, status: r.status, attempt: r.attempt, startedAt: r.started_at, endedAt: r.ended_at, detail: r.detail };
}

function toApproval(r: ApprovalRow): ApprovalRecord {
  return { id: r.id, run: r.run, tenant: r.tenant, kind: r.kind, status: r.status, reviewer: r.reviewer, record: r.record, recordHash: r.record_hash, requestedAt: r.requested_at, decidedAt: r.decided_at, signature: parse(r.signature) as Record<string, unknown> | null };
}
