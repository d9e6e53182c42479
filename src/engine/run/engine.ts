/**
 * The run engine: composes the plan of a supervised batch run from a run request and a batch record, and
 * executes it durably. Every run and step state change commits in one transaction with its audit entry and
 * follows the transition tables of src/domain/run.ts. A step that was running when the daemon stopped is
 * INTERRUPTED (with the reason) and runs again from its start only when a named person resumes the run —
 * with fresh readings and fresh policy decisions: no write is ever replayed. The approval gate holds the run
 * until a named QA reviewer signs (R3); nothing releases a batch without that signature.
 */
import { randomBytes } from 'node:crypto';
import { every, sleep } from '../../clock.js';
import { isAbsolute, relative, resolve } from 'node:path';
import type { AuditEntryInput } from '../../audit/index.js';
import type { SiteConfig } from '../../config/schema.js';
import type { Attendance } from '../../domain/policy.js';
import { checkRunTransition, checkStepTransition, composePlan, formatDuration, planSummary, TERMINAL_RUN, type PlanStep, type RunStatus, type StepName, type StepStatus } from '../../domain/run.js';
import { LkError } from '../../errors.js';
import type { PolicyBundle } from '../../policy/index.js';
import { ExceptionStore, type ExceptionRecord } from '../../store/exception-store.js';
import { RunStore, type ApprovalRecord, type RunRecord, type StepRecord, type ToolCallRecord } from '../../store/run-store.js';
import type { TxContext } from '../../store/store.js';
import type { BatchContext } from '../guarded-writer.js';
import { json } from '../json.js';
import { canonical, sha256Hex, signRecord, type ActSignature, type Signature, type Signer } from './approval.js';
import { chooseMeaning, DEFAULT_SIGNATURE_MEANINGS, manifestationMeaning, MEANING_FILLED_MAX, MEANING_VALUES, type ChosenMeaning } from '../../domain/signature-meanings.js';
import { checkNamedPeople, personProblem, qaReviewerOf, qaRoles, reassignRoles, reasonOf, signAct, steeringRoles } from './lifecycle.js';
import { writeNotARelease } from './steps/release.js';
import { writeReleasePackageOffLoop } from '../release-offload.js';
import { reviewsOf } from '../../audit/review.js';
import type { StepServices } from './step-services.js';
import type { ReleaseAbort } from '../release-types.js';
import type { RevertOutcome } from '../lkg-revert.js';
import { closeException, markerOf, raiseException, withOpenExceptions, type CloseInput, type ExceptionDeps, type RaiseInput } from './exceptions.js';
import { AGENTS_OF_MODEL, checkModels, modelLostOf, tagged, type ModelLost } from './model-watch.js';
import { StepAborted, StepContext, type StepHost } from './step-context.js';
import { closeStepWaits } from './step-waits.js';
import { assertBatchOpen, assertLineReady, ingestedEntry, keepIngested, releaseInbox } from './start-checks.js';
import { setAutonomy } from '../../store/autonomy-store.js';
import { missingRoles, roleMapOf, STEP_ROLES } from '../../domain/roles.js';
import type { RunEngineOptions, RunView, StartRunInput, StepHandler, StepResult } from './types.js';
import { ViewCache, ViewFrame, type OpenStep, type ViewEncoder } from './view-cache.js';
import { releaseView } from './release-view.js';
import { judgeRun, qualityExceptions, releaseRefusal, type RunQuality } from './quality.js';
import { profileOf, profilesOf } from '../../../connectors/supervision.js';

export type { RunEngineOptions, RunView, StartRunInput } from './types.js';
export type { ViewEncoder } from './view-cache.js';

/** Batch state the policy sees for each run status (bundle `batch_states.writable` allows setup and running). */
const BATCH_STATE: Readonly<Record<RunStatus, string>> = { PENDING: 'setup', RUNNING: 'running', APPROVAL: 'hold', HELD: 'hold', INTERRUPTED: 'hold', SUCCEEDED: 'complete', FAILED: 'failed', REJECTED: 'rejected', ABORTED: 'aborted' };

/** A specification table's verdict with its counts, as the run's events and errors say it. */
const tally = (t: RunQuality['specTable']): string => `${t.verdict} (${t.counts.PASS} pass, ${t.counts.FAIL} fail, ${t.counts.NOT_EVALUATED} not evaluated)`;

/** The reason an execution loop is stopped by an abort (not a stop of the daemon): the abort closes the step itself. */
class RunAbortStop {
  constructor(readonly by: string) {}
  toString(): string {
    return `the run is being aborted by ${this.by}`;
  }
}

export class RunEngine {
  readonly runs: RunStore;
  /** The runs' exceptions (review by exception): raised by the steps and the supervision, closed by people. */
  readonly exceptions: ExceptionStore;
  private readonly exc: ExceptionDeps;
  private readonly executing = new Map<string, { abort: AbortController; done: Promise<void> }>();
  private readonly toolListeners = new Set<(row: ToolCallRecord, run: RunRecord) => void>();
  private readonly changeListeners = new Set<(run: RunView) => void>();
  private attendance: Attendance | null = null;
  private stopped = false;
  readonly host: StepHost;
  /** What a step handler gets besides its context: read-only views and the named transitions below (step-services.ts). */
  readonly services: StepServices;

  private readonly o: RunEngineOptions;
  private stopWatch: (() => void) | undefined;
  private readonly lost = new Map<string, ModelLost>();
  /** Views of recently read runs, dropped by the store's write announcements (view-cache.ts). */
  private readonly views: ViewCache;

  constructor(options: RunEngineOptions) {
    // model errors name the model kind, so a lost model drops exactly the agents that use it
    const o: RunEngineOptions = { ...options, models: tagged(options.models) };
    this.o = o;
    this.runs = new RunStore(o.store.db);
    this.views = new ViewCache(o.viewCacheSize ?? 256);
    this.runs.onWrite((run) => this.views.drop(run));
    this.exceptions = new ExceptionStore(o.store);
    // a view shows its exceptions (the steps' markers): a raise or a close drops it like a step change
    this.exceptions.onWrite((run) => this.views.drop(run));
    const notify = (row: ToolCallRecord): void => {
      const run = this.runs.runById(row.run);
      if (run) for (const l of this.toolListeners) l(row, run);
    };
    this.exc = { store: o.store, runs: this.runs, exceptions: this.exceptions, policy: o.policy, notify };
    this.host = {
      store: o.store,
      runs: this.runs,
      clock: o.clock,
      processClock: o.processClock,
      writer: o.writer,
      read: o.read,
      log: o.log,
      pollMs: o.pollMs ?? 250,
      connection: o.connection ?? (() => undefined),
      notify,
      raise: (run, e) => this.raiseException(run, e),
      profiles: profilesOf(o.site.equipment),
      roles: roleMapOf(o.site),
    };
    this.services = {
      sequencer: o.sequencer,
      models: o.models,
      policy: o.policy,
      site: o.site,
      dataDir: o.dataDir,
      mes: o.mes,
      lims: o.lims,
      runRecord: (id) => this.runs.runById(id),
      steps: (id) => this.runs.steps(id),
      readApproval: (id) => this.runs.approvalOfRun(id),
      events: (id) => this.runs.events(id),
      exceptionsOfRun: (id) => this.exceptions.ofRun(id),
      runView: (run) => this.view(run),
      trailReviewsOf: (tenant, id) => reviewsOf(o.store.db, tenant, id),
      waitWake: (id, signal, ms) => this.waitWake(id, signal, ms),
      requestApproval: (gate, a) => this.requestApproval(gate, a),
      approvalApproved: (id, by) => {
        this.o.store.tx((t) => this.setRun(t, this.runs.runById(id)!, 'RUNNING', null, by, 'batch release approved'));
      },
      releaseAfterRejection: (gate) => this.releaseAfterRejection(gate),
      writeReleasePackage: (dir, input) => writeReleasePackageOffLoop(o.store, dir, input),
    };
  }

  /**
   * The approval gate asks for the QA reviewer's signature, in one transaction: the approval row, the gate's
   * quality evaluation in the run's data, the gate step into APPROVAL and the run into APPROVAL (with their audit entries).
   */
  private requestApproval(gate: Pick<StepContext, 'run' | 'step'>, a: Parameters<StepServices['requestApproval']>[1]): void {
    const { run, step: plan } = gate;
    this.o.store.tx((t) => {
      this.runs.insertApproval(t, { id: a.id, run: run.id, tenant: run.tenant, reviewer: a.reviewer, record: a.record, recordHash: a.recordHash, requestedAt: this.o.clock.now() });
      this.runs.setData(t, run.id, { ...this.runs.runById(run.id)!.data, quality: json(a.quality) }, this.o.clock.now());
      const cur = this.runs.runById(run.id)!;
      const step = this.runs.steps(run.id).find((s) => s.seq === plan.seq)!;
      this.setStep(t, cur, step, 'APPROVAL', plan.agent, `batch_release requires approval by the named QA reviewer ${a.reviewer}`);
      this.setRun(t, cur, 'APPROVAL', `waits for QA reviewer ${a.reviewer}`, 'system', 'approval gate reached');
    });
  }

  /**
   * After a rejection is committed: the release step writes the genealogy and the rejection record (not a
   * release) with a context of its own; its data merges into the run's and step 10 is SKIPPED, in one transaction.
   */
  private async releaseAfterRejection(gate: Pick<StepContext, 'run' | 'step' | 'signal'>): Promise<void> {
    const { run } = gate;
    const cur = this.runs.runById(run.id)!;
    const step = this.runs.steps(run.id).find((s) => s.name === 'release.genealogy')!;
    const plan: PlanStep = { ...gate.step, seq: step.seq, name: 'release.genealogy', agent: step.agent, tool: step.tool, gate: false, continuous: false };
    const rctx = new StepContext(this.host, cur, plan, gate.signal, cur.data);
    const r = await this.o.steps['release.genealogy'](rctx, this.services);
    this.o.store.tx((t) => {
      if (r.data) this.runs.setData(t, run.id, { ...cur.data, ...r.data }, this.o.clock.now());
      this.setStep(t, cur, step, 'SKIPPED', 'system', `not a release: ${r.detail}`);
    });
  }

  /** Raise an exception of a run now (audited with its evidence; shown in the log, the stream and the genealogy). Null when the run has one for that condition. */
  raiseException(run: RunRecord, e: RaiseInput): ExceptionRecord | null {
    return raiseException(this.exc, run, e, this.o.clock.now());
  }

  /**
   * A LIMS result arrived, changed or went for `batch` of `tenant`. A batch already released is judged again on its
   * run's data and the results as they stand (the same pure `judgeRun` as at the gate and at the decision): a release
   * signed while a result was pending (an INCOMPLETE table, typically dissolution) does not end what the laboratory
   * can still find. When the table changed it is stored with a `qc` event; each specification that now FAILs is
   * raised as a critical SPEC_FAIL exception of the run, titled "after release", which the run's exceptions, its
   * stream and the console's waiting strip show to QA. The run's status and its signed release package stay as
   * they were: they record what was decided on what was known then, and what is done with a released batch that
   * failed (a recall) is decided by people. A batch not released yet is judged at its decision (assertReleasable).
   * @returns the exceptions raised (none when nothing new failed)
   */
  limsChanged(tenant: string, batch: string): ExceptionRecord[] {
    const raised: ExceptionRecord[] = [];
    for (const run of this.runs.runsOfBatch(tenant, batch)) {
      if (this.runs.approvalOfRun(run.id)?.status !== 'approved') continue;
      const again = this.judgeAgain(run, null, (t, was) => `specifications judged again after the release (a LIMS result): ${tally(t)}, was ${was} when released`, { afterRelease: true });
      if (!again) continue;
      for (const e of qualityExceptions(again.now)) {
        if (e.kind !== 'SPEC_FAIL') continue;
        const x = this.raiseException(run, { ...e, step: null, title: `after release: ${e.title}` });
        if (x) raised.push(x);
      }
    }
    return raised;
  }

  /**
   * A run's exceptions, in the order they were raised.
   * @throws LkError LK_NOT_FOUND (also for another tenant's run, R1).
   */
  exceptionsOf(tenant: string, runId: string): ExceptionRecord[] {
    const run = this.runs.run(tenant, runId);
    if (!run) throw new LkError('LK_NOT_FOUND', `no run ${runId}`, { run: runId });
    return this.exceptions.ofRun(run.id);
  }

  /**
   * A named person, re-authenticated by the surface, closes an open exception with a comment (signed when it is
   * critical or major). See exceptions.ts for who may close what.
   */
  closeException(tenant: string, id: string, c: CloseInput): ReturnType<typeof closeException> {
    const out = closeException(this.exc, tenant, id, c, this.o.clock.now());
    this.o.store.afterCommit(() => {
      const v = this.runs.runById(out.exception.run);
      if (v) this.changed(v);
    });
    return out;
  }

  /** What the guarded writer asks at every decision: batch state and assigned reviewer (R6), from the run in force. */
  readonly batches = (tenant: string, batch: string): BatchContext | null => {
    for (const run of this.runs.runs(tenant, 50)) {
      if (run.batch !== batch) continue;
      const reviewer = typeof run.record['reviewer'] === 'string' ? run.record['reviewer'] : null;
      return { state: BATCH_STATE[run.status], reviewer };
    }
    return null;
  };

  /** The attended operator (R5): set by whoever starts a run, kept alive by their presence heartbeats. */
  readonly attended = (): Attendance | null => this.attendance;

  /** A presence heartbeat of a signed-in operator (the console and the CLI send them while attached). */
  presence(operator: string): Attendance {
    this.attendance = { operator, lastPresenceAt: this.o.clock.now() };
    return this.attendance;
  }

  onToolCall(l: (row: ToolCallRecord, run: RunRecord) => void): () => void {
    this.toolListeners.add(l);
    return () => this.toolListeners.delete(l);
  }

  onChange(l: (run: RunView) => void): () => void {
    this.changeListeners.add(l);
    return () => this.changeListeners.delete(l);
  }

  /**
   * Start a run: parse the request, read the batch record from the MES, compose the plan and persist it
   * (audited), then execute it in the background.
   * @throws LkError LK_RUN_REQUEST_INVALID / LK_RUN_REQUEST_LOOSENS for a bad request; LK_NOT_FOUND when the
   *   MES has no such batch for the tenant or the line is not this site's; LK_BATCH_CLOSED when the batch ran
   *   already (batch-closure.ts); LK_BATCH_RECORD_INVALID; LK_LINE_BUSY when another run is active on the line (named only when it is the caller's tenant's);
   *   LK_LINE_NOT_READY (readiness.ts) listing why. Nothing is written then (a changed record of a closed batch
   *   is refused and audited).
   */
  start(input: StartRunInput): RunView {
    if (this.stopped) throw new LkError('LK_CONFLICT', 'the run engine is stopping');
    const site = this.o.site;
    if (!site.tenants.some((t) => t.id === input.tenant)) throw new LkError('LK_NOT_FOUND', `no tenant ${input.tenant}`);
    const req = this.o.parseRequest(input.request);
    if (req.line !== site.line.id) throw new LkError('LK_NOT_FOUND', `line ${req.line} is not supervised here (this node supervises ${site.line.id})`, { line: req.line });
    assertBatchOpen(this.o, this.runs, input.tenant, req.batch);
    const record = this.o.mes.read(input.tenant, req.batch);
    this.o.checkRecord(record, site);
    // the people the record names must be able to sign: a QA reviewer nobody can be blocks the line at its gate
    if (this.o.people) checkNamedPeople(record as Record<string, unknown>, input.tenant, this.o.people, this.o.policy());
    const busy = this.runs.activeOnLine(req.line);
    if (busy) {
      // another tenant's run is none of this tenant's business (R1/R9): the line is busy, not whose run it is
      if (busy.tenant !== input.tenant) throw new LkError('LK_LINE_BUSY', `line ${req.line} runs another tenant's batch; one run at a time per line`, { line: req.line });
      throw new LkError('LK_LINE_BUSY', `line ${req.line} runs ${busy.id} (${busy.status}); one run at a time per line`, { line: req.line, run: busy.id });
    }
    assertLineReady(this.o, this.runs, input.tenant, req.line);
    const autonomy = input.autonomy ?? req.autonomy ?? 'L3';
    const id = `run_${randomBytes(10).toString('hex')}`;
    const now = this.o.clock.now();
    const plan = composePlan();
    const recordJson = record as unknown as Record<string, unknown>;
    const limits = this.o.effectiveLimits(req, record, this.o.policy());
    const kept = keepIngested(this.o, input.tenant, req.batch);
    this.o.store.tx((t) => {
      try {
        this.runs.insertRun(t, {
          id, tenant: input.tenant, batch: req.batch, line: req.line, product: String(recordJson['product']), tooling: String(recordJson['tooling']),
          goal: req.goal, request: req, limits, autonomy, record: recordJson, recordSha: sha256Hex(canonical(recordJson)), seed: seedOf(`${input.tenant}/${req.batch}/${sha256Hex(canonical(recordJson))}`), startedBy: input.by, createdAt: now,
        }, plan);
      } catch (err) {
        if ((err as { code?: string }).code === 'SQLITE_CONSTRAINT_UNIQUE') throw new LkError('LK_LINE_BUSY', `line ${req.line} already has an active run`, { line: req.line });
        throw err;
      }
      t.audit.append(this.entry({ tenant: input.tenant, id, batch: req.batch }, input.by, 'run.start', {
        args: json({ request: req.text, goal: req.goal, autonomy, plan: planSummary(plan).text, batchRecordSha256: sha256Hex(canonical(recordJson)), limits }),
      }));
      const archived = ingestedEntry(kept, input.tenant, id, req.batch, sha256Hex(canonical(recordJson)), input.by);
      if (archived) t.audit.append(archived);
    });
    releaseInbox(this.o, input.tenant, req.batch, kept);
    this.presence(input.by);
    this.launch(id);
    return this.view(this.runs.runById(id)!);
  }

  /**
   * The run as the API returns it, from the view cache (deep-frozen when no step is running: do not mutate).
   * @throws LkError LK_NOT_FOUND (also for another tenant's run, R1).
   */
  get(tenant: string, id: string): RunView {
    return this.frame(tenant, id).at(this.o.clock.now());
  }

  /**
   * The file of the run's release package on this node (`json`, `pdf` or `bundle`), or null when the run has none or
   * the file is not inside the data directory. Runs keep the paths relative to the data directory (older runs
   * kept them absolute: both resolve here).
   * @throws LkError LK_NOT_FOUND (also for another tenant's run, R1).
   */
  releaseFile(tenant: string, id: string, file: 'json' | 'pdf' | 'bundle'): string | null {
    this.get(tenant, id);
    const kept = this.runs.runById(id)?.data['release'] as Record<string, unknown> | undefined;
    const at = kept?.[file];
    if (typeof at !== 'string') return null;
    const root = resolve(this.o.dataDir);
    const path = resolve(root, at);
    const rel = relative(root, path);
    return rel === '' || rel.startsWith('..') || isAbsolute(rel) ? null : path;
  }

  /**
   * The run as JSON text: `JSON.stringify(encode(get(tenant, id)))`, with `encode` (the API's response schema,
   * which validates) run once per state change of the run rather than once per read.
   * @throws LkError LK_NOT_FOUND (also for another tenant's run, R1); whatever `encode` throws for an invalid view.
   */
  viewJson(tenant: string, id: string, encode: ViewEncoder): string {
    return this.frame(tenant, id).json(this.o.clock.now(), encode);
  }

  /** The cached frame of a run of `tenant`, built from the store on a miss (outside a transaction only: a frame never holds uncommitted state). */
  private frame(tenant: string, id: string): ViewFrame {
    const cached = this.views.get(id);
    if (cached) {
      if (cached.tenant !== tenant) throw new LkError('LK_NOT_FOUND', `no run ${id}`, { run: id });
      return cached;
    }
    const run = this.runs.run(tenant, id);
    if (!run) throw new LkError('LK_NOT_FOUND', `no run ${id}`, { run: id });
    const built = this.compose(run);
    const frame = new ViewFrame(run.tenant, built.view, built.open);
    if (!this.o.store.db.inTransaction) this.views.set(id, frame);
    return frame;
  }

  list(tenant: string, limit = 50, cursor?: { createdAt: number; id: string }): RunView[] {
    return this.runs.runs(tenant, limit, cursor).map((r) => this.view(r));
  }

  /** Tool-call log lines after `afterId`. @throws LkError LK_NOT_FOUND. */
  toolCalls(tenant: string, id: string, afterId = 0, limit = 10_000): ToolCallRecord[] {
    this.get(tenant, id);
    return this.runs.toolCalls(id, afterId, limit);
  }

  pendingApprovals(tenant: string): ApprovalRecord[] {
    return this.runs.pendingApprovals(tenant);
  }

  /**
   * A named QA reviewer decides the batch release (R3), after the surface has re-authenticated them. The
   * decision is signed (identity, meaning, decision, timestamp, bound to the record hash) and committed with
   * its audit entry; the run then writes its genealogy and release package (approve) or ends REJECTED with
   * the genealogy still written (reject). The surface has taken `meaning` from the site's list (its id in
   * `meaningId`); a comment is signed and audited beside it.
   * @throws LkError LK_NOT_FOUND (no such approval for the tenant), LK_APPROVAL_DECIDED, LK_APPROVAL_FORBIDDEN
   *   (not the batch's named QA reviewer, not a QA role, or the person who started the run), LK_VALIDATION.
   */
  decide(tenant: string, approvalId: string, d: { signer: Signer; decision: 'approve' | 'reject'; meaning: string; meaningId?: string; comment?: string }): Signature {
    const a = this.runs.approval(tenant, approvalId);
    if (!a) throw new LkError('LK_NOT_FOUND', `no approval ${approvalId}`, { approval: approvalId });
    if (a.status !== 'pending') throw new LkError('LK_APPROVAL_DECIDED', `approval ${approvalId} was ${a.status} already`, { approval: approvalId, status: a.status });
    if (d.decision !== 'approve' && d.decision !== 'reject') throw new LkError('LK_VALIDATION', 'decision must be approve or reject');
    if (typeof d.meaning !== 'string' || d.meaning.trim().length < 3) throw new LkError('LK_VALIDATION', 'a signature needs its meaning in words');
    // the manifestation holds the whole of the words signed: longer ones are refused, never cut
    if (d.meaning.trim().length > MEANING_FILLED_MAX) throw new LkError('LK_VALIDATION', `a signature's meaning has at most ${MEANING_FILLED_MAX} characters, not ${d.meaning.trim().length}`);
    const run = this.runs.runById(a.run)!;
    const qaRoles = this.o.policy()?.content.approvers.qa ?? ['qa_reviewer'];
    if (!qaRoles.includes(d.signer.role)) throw new LkError('LK_APPROVAL_FORBIDDEN', `batch release is signed by a QA reviewer (${qaRoles.join(', ')}), not ${d.signer.role}`, { role: d.signer.role });
    if (d.signer.user !== a.reviewer) throw new LkError('LK_APPROVAL_FORBIDDEN', `batch ${run.batch} names ${a.reviewer} as its QA reviewer`, { reviewer: a.reviewer, user: d.signer.user });
    if (d.signer.user === run.startedBy) throw new LkError('LK_APPROVAL_FORBIDDEN', `${d.signer.user} started this run and cannot also release it`, { user: d.signer.user });
    // the truth of the batch first: a failed specification is never released (only rejected), judged again now on
    // the run's data and the LIMS results as they stand (a result may have arrived since the gate)
    if (d.decision === 'approve') this.assertReleasable(run);
    // review by exception: no release while a critical or major exception is open (a rejection stays possible)
    const blocking = this.exceptions.blocking(run.id);
    if (d.decision === 'approve' && blocking.length > 0) {
      throw new LkError('LK_EXCEPTIONS_OPEN', `batch ${run.batch} cannot be released: ${blocking.length} critical or major exception${blocking.length === 1 ? ' is' : 's are'} open (${blocking.map((e) => `${e.id} ${e.kind}`).join(', ')}); close ${blocking.length === 1 ? 'it' : 'them'} with a comment first`, {
        exceptions: blocking.map((e) => ({ id: e.id, kind: e.kind, severity: e.severity, step: e.step, title: e.title })),
      });
    }
    const all = this.exceptions.ofRun(run.id);
    // what the reviewer saw: the exceptions (closed, with who closed them) and the specification table, by hash
    const specTable = (run.data['quality'] as { specTable?: { sha256?: unknown } } | undefined)?.specTable;
    const reviewed = {
      exceptions: all.map((e) => e.id),
      exceptionsClosed: all.filter((e) => e.status === 'closed').map((e) => e.id),
      specTableSha256: typeof specTable?.sha256 === 'string' ? specTable.sha256 : null,
    };
    const at = this.o.clock.now();
    const sig = signRecord(this.o.store.audit.siteKey(), {
      format: 1, approval: a.id, run: run.id, tenant, batch: run.batch, recordHash: a.recordHash, user: d.signer.user, name: d.signer.name, role: d.signer.role,
      decision: d.decision, meaning: d.meaning.trim(), ...(d.meaningId !== undefined ? { meaningId: d.meaningId } : {}), ...(d.comment ? { comment: d.comment } : {}),
      timestamp: new Date(at).toISOString(), reviewed,
    });
    this.o.store.tx((t) => {
      if (!this.runs.decideApproval(t, a.id, d.decision === 'approve' ? 'approved' : 'rejected', at, sig as unknown as Record<string, unknown>)) {
        throw new LkError('LK_APPROVAL_DECIDED', `approval ${approvalId} was decided meanwhile`);
      }
      t.audit.append({
        ...this.entry(run, d.signer.user, 'approval.decide', {
          kind: 'approval', args: json({ approval: a.id, recordHash: a.recordHash, decision: d.decision, reviewed, ...(sig.meaningId !== undefined ? { meaningId: sig.meaningId } : {}), ...(sig.comment !== undefined ? { comment: sig.comment } : {}) }),
          result: json({ decision: d.decision, keyId: sig.keyId }),
        }),
        subject: { run: run.id, batch: run.batch, reviewer: d.signer.user, tool: 'approval.request' },
        signature: { user: d.signer.user, name: d.signer.name, meaning: manifestationMeaning(sig.meaning, d.decision), time: sig.timestamp, value: sig.signature },
      });
    });
    // the gate step waits on the stored decision; wake it
    this.wake(run.id);
    return sig;
  }

  /**
   * Judge the run's specifications again on its data and the LIMS results as they stand (`judgeRun`, as at the gate).
   * When the table differs from the stored one, store it with a `qc` event (`summary` of the new table and the old
   * verdict) and return it; null when the run has no table or nothing changed.
   */
  private judgeAgain(run: RunRecord, step: string | null, summary: (t: RunQuality['specTable'], was: string) => string, extra: Record<string, unknown> = {}): { now: RunQuality } | null {
    const stored = run.data['quality'] as RunQuality | undefined;
    if (!stored?.specTable) return null;
    const now = judgeRun(run, run.data, this.o.lims?.results(run.tenant, run.batch) ?? []);
    if (now.specTable.sha256 === stored.specTable.sha256) return null;
    const at = this.o.clock.now();
    const t = now.specTable;
    this.o.store.tx((tx) => {
      this.runs.setData(tx, run.id, { ...this.runs.runById(run.id)!.data, quality: json(now) }, at);
      this.runs.appendEvent(tx, { run: run.id, at, kind: 'qc', step, agent: 'agent.orchestrator', tag: null, summary: summary(t, stored.specTable.verdict), data: json({ specTableSha256: t.sha256, was: stored.specTable.sha256, verdict: t.verdict, counts: t.counts, ...extra }) });
    });
    return { now };
  }

  /**
   * Refuse a release the run's data does not support (R3, review by exception). The specification table is judged
   * again on the run's data and the LIMS results as they stand: when it differs from the table of the approval
   * request (a LIMS result arrived), the new table is stored with an event, its failures are raised as SPEC_FAIL
   * exceptions, and the decision is refused so that the reviewer signs against what they saw.
   * @throws LkError LK_SPEC_FAILED (a specification FAILs, or there is no table), LK_SPEC_CHANGED.
   */
  private assertReleasable(run: RunRecord): void {
    const stored = run.data['quality'] as RunQuality | undefined;
    if (stored?.specTable) {
      const again = this.judgeAgain(run, 'approval.batch_release', (t, was) => `specifications judged again at the release decision: ${tally(t)}, was ${was}`);
      if (again) {
        const { now } = again;
        const t = now.specTable;
        const gate = { seq: '09', name: 'approval.batch_release' };
        for (const e of qualityExceptions(now)) this.raiseException(run, { ...e, step: gate });
        const refused = releaseRefusal(now, run.batch);
        if (refused) throw refused;
        throw new LkError('LK_SPEC_CHANGED', `the specification table of batch ${run.batch} changed since the release was requested (now ${t.verdict}: ${t.counts.PASS} pass, ${t.counts.FAIL} fail, ${t.counts.NOT_EVALUATED} not evaluated); review it again and sign`, { verdict: t.verdict, specTableSha256: t.sha256, was: stored.specTable.sha256 });
      }
    }
    const refused = releaseRefusal(stored, run.batch);
    if (refused) throw refused;
  }

  /**
   * A named person resumes a HELD or INTERRUPTED run: the step that stopped runs again from its start (a new
   * attempt, fresh readings and fresh policy decisions; no write is replayed). Audited with the person and the
   * reason, in the genealogy, and listed for QA as a minor MANUAL_ACTION exception (a person's intervention in
   * the batch is part of what the reviewer sees at the gate). `by` as a bare id is the engine's own callers
   * (no role to check); a signer's role must be a reviewer or QA role of the bundle.
   * @throws LkError LK_NOT_FOUND, LK_RUN_STATE (not HELD or INTERRUPTED), LK_APPROVAL_FORBIDDEN (a role that
   *   may not resume), LK_VALIDATION (no reason). Nothing is written then.
   */
  resume(tenant: string, id: string, by: string | Signer, reason: string): RunView {
    const run = this.runs.run(tenant, id);
    if (!run) throw new LkError('LK_NOT_FOUND', `no run ${id}`, { run: id });
    if (run.status !== 'HELD' && run.status !== 'INTERRUPTED') throw new LkError('LK_RUN_STATE', `run ${id} is ${run.status}; only a HELD or INTERRUPTED run resumes`, { status: run.status, run: id });
    const person = typeof by === 'string' ? null : by;
    const user = person?.user ?? (by as string);
    if (person) {
      const roles = steeringRoles(this.o.policy());
      if (!roles.includes(person.role)) throw new LkError('LK_APPROVAL_FORBIDDEN', `a run is resumed by a process engineer or QA reviewer (${roles.join(', ')}), not a ${person.role}`, { role: person.role });
    }
    const why = reasonOf(reason);
    if (this.lifecycleBusy.has(id)) throw new LkError('LK_RUN_STATE', `run ${id} is being aborted`, { run: id });
    const step = this.runs.steps(id).find((s) => s.status === 'HELD' || s.status === 'INTERRUPTED');
    const at = this.o.clock.now();
    this.o.store.tx((t) => {
      this.setRun(t, run, 'RUNNING', null, user, why);
      if (step) this.setStep(t, run, step, 'RUNNING', user, `resumed by ${user}: ${why}`, { attempt: step.attempt + 1, startedAt: at, endedAt: null });
      t.audit.append(this.entry(run, user, 'run.resume', { args: json({ from: run.status, step: step ? `${step.seq} ${step.name}` : null, attempt: step ? step.attempt + 1 : null, role: person?.role ?? null }), reason: why }));
      this.runs.appendEvent(t, { run: id, at, kind: 'step', step: step?.name ?? null, agent: user, tag: null, summary: `${run.status} run resumed by ${person ? `${person.name} (${user}, ${person.role})` : user}${step ? `: step ${step.seq} ${step.name} runs again as attempt ${step.attempt + 1}` : ''}: ${why}`, data: json({ from: run.status, user, reason: why }) });
    });
    const n = this.exceptions.ofRun(id).filter((e) => e.key.startsWith('MANUAL_ACTION:resume:')).length;
    this.raiseException(this.runs.runById(id)!, {
      kind: 'MANUAL_ACTION', key: `MANUAL_ACTION:resume:${n + 1}`, step: step ? { seq: step.seq, name: step.name } : null, by: user,
      title: `run resumed from ${run.status} by ${user}${step ? ` (step ${step.seq} ${step.name}, attempt ${step.attempt + 1})` : ''}: ${why}`,
      evidence: { from: run.status, user, role: person?.role ?? null, reason: why, step: step ? `${step.seq} ${step.name}` : null, attempt: step ? step.attempt + 1 : null },
    });
    this.presence(user);
    this.launch(id);
    return this.get(tenant, id);
  }

  /** A run that went HELD is an exception of the batch (RUN_HELD, one per step attempt): QA sees why it stopped. */
  private raiseHeld(run: RunRecord, step: StepRecord, why: string): void {
    if (run.status !== 'HELD') return;
    const s = this.runs.steps(run.id).find((x) => x.seq === step.seq) ?? step;
    this.raiseException(run, {
      kind: 'RUN_HELD', key: `RUN_HELD:${s.seq}:${s.attempt}`, step: { seq: s.seq, name: s.name }, by: 'system',
      title: `run held in ${s.seq} ${s.name} (attempt ${s.attempt}): ${why}`, evidence: { step: `${s.seq} ${s.name}`, attempt: s.attempt, reason: why },
    });
  }

  /** Runs an abort is working on (a resume, a reassignment or a second abort waits for it to end). */
  private readonly lifecycleBusy = new Set<string>();
  /** Aborts under way, settled when each ends: {@link stop} waits for them (their "not a release" package). */
  private readonly aborting = new Set<Promise<void>>();

  /**
   * A named person aborts a run that is not final (PENDING, RUNNING, APPROVAL, HELD, INTERRUPTED), after the
   * surface re-authenticated them: a Part 11 signature over the act. The step under way is stopped, every PLC of
   * the line is commanded to its last known-good recipe through the guarded writer (the outcome per PLC is what
   * its read-back says), a pending approval gate is withdrawn (no longer signable), the step under way ends
   * ABORTED and the steps not started SKIPPED, the run ABORTED (its line free), and a package that says "not a
   * release" is written with the genealogy. `meaning` is the surface's choice from the site's signature meanings
   * (the built-in one when not given); the reason is signed beside it.
   * @throws LkError LK_NOT_FOUND, LK_RUN_STATE (final already, or being aborted), LK_APPROVAL_FORBIDDEN (not a
   *   reviewer or QA role), LK_VALIDATION (no reason). Nothing is written then.
   */
  async abort(tenant: string, id: string, a: { signer: Signer; reason: string; meaning?: ChosenMeaning }): Promise<{ run: RunView; reverted: ReleaseAbort['reverted']; signature: ActSignature; approvalWithdrawn: string | null }> {
    const run = this.runs.run(tenant, id);
    if (!run) throw new LkError('LK_NOT_FOUND', `no run ${id}`, { run: id });
    if (TERMINAL_RUN.has(run.status)) throw new LkError('LK_RUN_STATE', `run ${id} is ${run.status} already; only a run that is not final is aborted`, { status: run.status, run: id });
    const roles = steeringRoles(this.o.policy());
    if (!roles.includes(a.signer.role)) throw new LkError('LK_APPROVAL_FORBIDDEN', `a run is aborted by a process engineer or QA reviewer (${roles.join(', ')}), not a ${a.signer.role}`, { role: a.signer.role });
    const why = reasonOf(a.reason);
    if (this.lifecycleBusy.has(id)) throw new LkError('LK_RUN_STATE', `run ${id} is being aborted already`, { run: id });
    this.lifecycleBusy.add(id);
    // a stop waits for this abort: its package is written in a worker thread, and the store must not close under it
    let ended: () => void = () => undefined;
    const ending = new Promise<void>((r) => (ended = r));
    this.aborting.add(ending);
    try {
      // stop the execution first: nothing of the run moves the equipment once the revert starts
      const e = this.executing.get(id);
      if (e) {
        e.abort.abort(new RunAbortStop(a.signer.user));
        await e.done;
      }
      const from = this.runs.runById(id)!;
      if (TERMINAL_RUN.has(from.status)) throw new LkError('LK_RUN_STATE', `run ${id} ended ${from.status} meanwhile`, { status: from.status, run: id });
      const steps = this.runs.steps(id);
      const current = steps.find((s) => s.status === 'RUNNING' || s.status === 'APPROVAL' || s.status === 'HELD' || s.status === 'INTERRUPTED');
      const reverted = await this.o.writer.revertToLkg(this.supervisedUnits(), { tenant, run: id, batch: from.batch, reason: `run aborted by ${a.signer.user}: ${why}`, actor: a.signer.user });
      this.raiseUnverified(from, current ? { seq: current.seq, name: current.name } : null, reverted);
      const at = this.o.clock.now();
      // the meaning the surface took from the site's list; called directly, the built-in one (the reason is signed beside it)
      const meaning = a.meaning ?? chooseMeaning(DEFAULT_SIGNATURE_MEANINGS, 'run_abort', undefined, MEANING_VALUES.run_abort(from));
      const { record, signature } = signAct(this.o.store.audit.siteKey(), from, 'abort', a.signer, meaning, at, { reason: why, step: current ? `${current.seq} ${current.name}` : null, reverted: revertSummary(reverted) });
      let withdrawn: string | null = null;
      this.o.store.tx((t) => {
        withdrawn = this.runs.withdrawApproval(t, id, at);
        if (withdrawn) this.toolLine(t, from, current?.name ?? 'approval.batch_release', 'agent.orchestrator', 'approval.request', { summary: `withdrawn: run aborted by ${a.signer.name} (${a.signer.user}); approval ${withdrawn} can no longer be signed`, result: { approval: withdrawn, withdrawn: true, by: a.signer.user } });
        if (current) this.setStep(t, from, current, 'ABORTED', a.signer.user, `aborted by ${a.signer.user}: ${why}`, { endedAt: at });
        // step 10 is closed once the "not a release" package is written (writeAbortPackage)
        for (const s of steps) if (s.status === 'PENDING' && s.name !== 'release.genealogy') this.setStep(t, from, s, 'SKIPPED', a.signer.user, `not run: the run was aborted by ${a.signer.user}`);
        this.setRun(t, from, 'ABORTED', `aborted by ${a.signer.user}: ${why}`, a.signer.user, why);
        t.audit.append({
          ...this.entry(from, a.signer.user, 'run.abort', { kind: 'approval', args: json({ from: from.status, step: current ? `${current.seq} ${current.name}` : null, approvalWithdrawn: withdrawn, keyId: signature.keyId }), result: json(record), reason: why }),
          subject: { run: id, batch: from.batch, reviewer: a.signer.user, tool: 'run.abort' },
          signature: { user: a.signer.user, name: a.signer.name, meaning: manifestationMeaning(meaning.text, 'abort'), time: signature.timestamp, value: signature.signature },
        });
        this.runs.appendEvent(t, {
          run: id, at, kind: 'approval', step: current?.name ?? null, agent: a.signer.user, tag: null,
          summary: `run aborted from ${from.status} by ${a.signer.name} (${a.signer.user}, ${a.signer.role}), signed: ${why}; PLCs on their last known-good recipe (read back): ${revertSummary(reverted).filter((r) => r.ok).length}/${reverted.length}${withdrawn ? `; approval ${withdrawn} withdrawn` : ''}`,
          data: json({ from: from.status, user: a.signer.user, reason: why, reverted: revertSummary(reverted), approvalWithdrawn: withdrawn, recordHash: signature.recordHash }),
        });
      });
      // what the run left waiting for a person (moves, deadlocks) is withdrawn and recorded like at any run end
      if (current) await this.waitsEnded(id, current, current.attempt, 'ABORTED');
      await this.waitsEnded(id, null, 0, 'ABORTED');
      await this.writeAbortPackage(id, { user: a.signer.user, name: a.signer.name, role: a.signer.role, at: new Date(at).toISOString(), reason: why, from: from.status, step: current ? `${current.seq} ${current.name}` : null, reverted: revertSummary(reverted), recordHash: signature.recordHash, signature: signature.signature, keyId: signature.keyId });
      return { run: this.get(tenant, id), reverted: revertSummary(reverted), signature, approvalWithdrawn: withdrawn };
    } finally {
      this.lifecycleBusy.delete(id);
      this.aborting.delete(ending);
      ended();
    }
  }

  /** The "not a release" package of an aborted run (release.genealogy's generator, with the abort), step 10 then SKIPPED. */
  private async writeAbortPackage(id: string, abort: ReleaseAbort): Promise<void> {
    const run = this.runs.runById(id)!;
    const step = this.runs.steps(id).find((s) => s.name === 'release.genealogy')!;
    const plan = composePlan().find((p) => p.name === 'release.genealogy')!;
    const ctx = new StepContext(this.host, run, plan, new AbortController().signal, run.data);
    let detail: string;
    let data: Record<string, unknown> = {};
    try {
      const r = await writeNotARelease(ctx, this.services, abort);
      detail = `not a release: ${r.detail}`;
      data = r.data ?? {};
    } catch (err) {
      // the abort stands (signed, audited, the line reverted); the package's failure is on the record too
      this.o.log.error({ err, run: id }, 'the package of an aborted run could not be written');
      detail = `not a release; the package could not be written: ${LkError.is(err) ? `${err.code}: ${err.message}` : String(err)}`;
    }
    this.o.store.tx((t) => {
      const cur = this.runs.runById(id)!;
      if (Object.keys(data).length > 0) this.runs.setData(t, id, { ...cur.data, ...data }, this.o.clock.now());
      const s = this.runs.steps(id).find((x) => x.seq === step.seq)!;
      if (s.status === 'PENDING') this.setStep(t, cur, s, 'SKIPPED', 'system', detail);
      else t.audit.append(this.entry(cur, 'system', 'release.not_a_release', { reason: detail }));
    });
  }

  /** Inside `t`: one line of a run's tool-call log with its audit entry (a person's act closing an open call). */
  private toolLine(t: TxContext, run: RunRecord, step: string, agent: string, tool: string, v: { summary: string; result: unknown }): void {
    const e = t.audit.append({ tenant: run.tenant, actor: agent, kind: 'tool_result', action: tool, subject: { run: run.id, batch: run.batch, agent, tool }, result: json({ ok: false, summary: v.summary, detail: v.result }) });
    const rec: Omit<ToolCallRecord, 'id'> = { run: run.id, at: this.o.clock.now(), kind: 'error', step, agent, tool, args: undefined, summary: v.summary, result: json(v.result), auditSeq: e.seq };
    const row = { ...rec, id: this.runs.appendToolCall(t, rec) } as ToolCallRecord;
    this.o.store.afterCommit(() => this.host.notify(row));
  }

  /**
   * A named person (a role of the bundle's `approvers.reassign`, re-authenticated by the surface) reassigns the
   * QA reviewer of a run that is not final: the new reviewer must be an active user holding a QA role for the
   * tenant. A pending approval gate waits for the new reviewer from then on. Signed and audited with the old and
   * the new reviewer; the batch record as ingested (and its hash) is not changed: the reassignment is the run's.
   * `meaning` is the surface's choice from the site's signature meanings (the built-in one when not given).
   * @throws LkError LK_NOT_FOUND, LK_RUN_STATE (final, or being aborted), LK_APPROVAL_FORBIDDEN (a role that may
   *   not reassign), LK_REVIEWER_INVALID (the new reviewer is not an active QA user of the tenant, is the
   *   current one, or started the run), LK_VALIDATION (no reason). Nothing is written then.
   */
  reassign(tenant: string, id: string, a: { signer: Signer; to: string; reason: string; meaning?: ChosenMeaning }): { run: RunView; from: string | null; to: string; signature: ActSignature; approval: string | null } {
    const run = this.runs.run(tenant, id);
    if (!run) throw new LkError('LK_NOT_FOUND', `no run ${id}`, { run: id });
    if (TERMINAL_RUN.has(run.status)) throw new LkError('LK_RUN_STATE', `run ${id} is ${run.status}; the reviewer of a final run is not reassigned`, { status: run.status, run: id });
    if (this.lifecycleBusy.has(id)) throw new LkError('LK_RUN_STATE', `run ${id} is being aborted`, { run: id });
    const bundle = this.o.policy();
    const roles = reassignRoles(bundle);
    if (!roles.includes(a.signer.role)) throw new LkError('LK_APPROVAL_FORBIDDEN', `the QA reviewer of a run is reassigned by ${roles.join(', ')}, not a ${a.signer.role}`, { role: a.signer.role });
    const why = reasonOf(a.reason);
    const from = qaReviewerOf(run);
    if (a.to === from) throw new LkError('LK_REVIEWER_INVALID', `${a.to} is the QA reviewer of run ${id} already`, { field: 'to', user: a.to });
    if (a.to === run.startedBy) throw new LkError('LK_REVIEWER_INVALID', `${a.to} started run ${id} and cannot also release it`, { field: 'to', user: a.to });
    const problem = this.o.people ? personProblem(this.o.people, a.to, tenant, qaRoles(bundle), 'QA reviewer') : 'this site has no directory of its people to check a reviewer against';
    if (problem) throw new LkError('LK_REVIEWER_INVALID', `${a.to} cannot review run ${id}: ${problem}`, { field: 'to', user: a.to });
    const at = this.o.clock.now();
    const meaning = a.meaning ?? chooseMeaning(DEFAULT_SIGNATURE_MEANINGS, 'run_reassign', undefined, MEANING_VALUES.run_reassign(run, a.to));
    const { record, signature } = signAct(this.o.store.audit.siteKey(), run, 'reassign', a.signer, meaning, at, { reviewer: { old: from, new: a.to }, reason: why });
    let approval: string | null = null;
    this.o.store.tx((t) => {
      const cur = this.runs.runById(id)!;
      this.runs.setData(t, id, { ...cur.data, qaReviewer: a.to }, at);
      approval = this.runs.reassignApproval(t, id, a.to);
      t.audit.append({
        ...this.entry(run, a.signer.user, 'run.reassign', { kind: 'approval', old: from, new: a.to, args: json({ approval, keyId: signature.keyId }), result: json(record), reason: why }),
        subject: { run: id, batch: run.batch, reviewer: a.to, tool: 'run.reassign' },
        signature: { user: a.signer.user, name: a.signer.name, meaning: manifestationMeaning(meaning.text, 'reassign'), time: signature.timestamp, value: signature.signature },
      });
      this.runs.appendEvent(t, { run: id, at, kind: 'approval', step: null, agent: a.signer.user, tag: null, summary: `QA reviewer reassigned from ${from ?? 'nobody'} to ${a.to} by ${a.signer.name} (${a.signer.user}, ${a.signer.role}), signed: ${why}`, data: json({ old: from, new: a.to, approval, recordHash: signature.recordHash }) });
    });
    this.o.store.afterCommit(() => {
      const v = this.runs.runById(id);
      if (v) this.changed(v);
    });
    return { run: this.get(tenant, id), from, to: a.to, signature, approval };
  }

  /**
   * At start, before anything runs: a run left RUNNING or PENDING by a daemon that did not stop cleanly is
   * INTERRUPTED with the step it was in (never resumed by itself: the PLCs went to LKG when the heartbeat
   * stopped, and a person decides); a run waiting at the gate keeps waiting.
   */
  recover(): { interrupted: string[]; waiting: string[] } {
    const interrupted: string[] = [];
    const waiting: string[] = [];
    for (const run of this.runs.unfinished()) {
      if (run.status === 'APPROVAL') {
        waiting.push(run.id);
        this.launch(run.id);
        continue;
      }
      const step = this.runs.steps(run.id).find((s) => s.status === 'RUNNING');
      const reason = `linekeeper stopped without a clean stop${step ? ` during step ${step.seq} ${step.name}` : ''}; resume needs a named person`;
      this.o.store.tx((t) => {
        if (step) this.setStep(t, run, step, 'INTERRUPTED', 'system', reason, { endedAt: this.o.clock.now() });
        this.setRun(t, run, run.status === 'PENDING' ? 'FAILED' : 'INTERRUPTED', reason, 'system', reason);
      });
      interrupted.push(run.id);
    }
    return { interrupted, waiting };
  }

  /** Resolves when the run's execution loop has returned (the run is terminal, held, interrupted or waiting). */
  async settled(id: string): Promise<void> {
    await this.executing.get(id)?.done;
  }

  /**
   * Stop every execution: the step under way is INTERRUPTED with the reason (audited). A release package being
   * written (step 10, in a worker thread) is not interrupted: the stop waits until it is written and its result
   * audited, or its failure audited, so a signed release is never left half-written. An abort under way is waited
   * for too, with its "not a release" package.
   */
  async stop(reason: string): Promise<void> {
    this.stopped = true;
    this.stopWatch?.();
    this.stopWatch = undefined;
    for (const e of this.executing.values()) e.abort.abort(reason);
    await Promise.allSettled([...[...this.executing.values()].map((e) => e.done), ...this.aborting]);
  }

  private wakers = new Map<string, () => void>();

  private wake(id: string): void {
    this.wakers.get(id)?.();
  }

  /** Wait until `wake(run)` or one poll period of the engine's clock passes (the gate re-reads its decision from the store). */
  waitWake(id: string, signal: AbortSignal, ms: number): Promise<void> {
    const woken = new AbortController();
    const wake = (): void => woken.abort();
    this.wakers.set(id, wake);
    return sleep(this.o.clock, ms, AbortSignal.any([signal, woken.signal])).finally(() => {
      if (this.wakers.get(id) === wake) this.wakers.delete(id);
    });
  }

  private launch(id: string): void {
    if (this.executing.has(id)) return;
    this.stopWatch ??= every(this.o.clock, this.o.modelWatchMs ?? 2000, () => this.watchModels(), (err) => this.o.log.error({ err }, 'model watch failed'));
    const abort = new AbortController();
    const done = this.execute(id, abort.signal)
      .catch((err: unknown) => this.o.log.error({ err, run: id }, 'run execution failed'))
      .finally(() => this.executing.delete(id));
    this.executing.set(id, { abort, done });
  }

  private async execute(id: string, signal: AbortSignal): Promise<void> {
    let run = this.runs.runById(id)!;
    if (run.status === 'PENDING') {
      this.o.store.tx((t) => this.setRun(t, run, 'RUNNING', null, 'system', 'plan composed, execution starts'));
      run = this.runs.runById(id)!;
    }
    for (;;) {
      if (TERMINAL_RUN.has(run.status) || run.status === 'HELD' || run.status === 'INTERRUPTED') return this.waitsEnded(id, null, 0, run.status);
      const steps = this.runs.steps(id);
      const step = steps.find((s) => s.status !== 'SUCCEEDED' && s.status !== 'SKIPPED' && s.status !== 'REJECTED');
      if (!step) {
        this.o.store.tx((t) => this.setRun(t, run, 'SUCCEEDED', null, 'system', 'every step succeeded'));
        return this.waitsEnded(id, null, 0, 'SUCCEEDED');
      }
      const plan = composePlan().find((p) => p.seq === step.seq)!;
      // a step whose roles this site does not map is not run: skipped (a line without that unit) or held (a line that
      // cannot make the batch without it), with the roles and the reason
      const missing = missingRoles(plan.name, this.host.roles!);
      const without = missing.length > 0 ? `${STEP_ROLES[plan.name]!.without} (roles not mapped on this site: ${missing.join(', ')})` : '';
      if (missing.length > 0 && step.status === 'PENDING' && STEP_ROLES[plan.name]!.missing === 'skip') {
        this.o.store.tx((t) => this.setStep(t, run, step, 'SKIPPED', 'system', without));
        run = this.runs.runById(id)!;
        continue;
      }
      if (step.status === 'PENDING') {
        this.o.store.tx((t) => this.setStep(t, run, step, 'RUNNING', 'system', '', { attempt: 1, startedAt: this.o.clock.now() }));
      }
      // a resumed step is RUNNING already with its new attempt number; a fresh one starts as attempt 1
      const ctx = new StepContext(this.host, run, plan, signal, run.data, step.status === 'PENDING' ? 1 : step.attempt);
      const handler: StepHandler = missing.length > 0 ? async () => ({ status: 'HELD', detail: `${without}; a person decides` }) : this.o.steps[plan.name as StepName];
      let result: StepResult;
      try {
        result = await handler(ctx, this.services);
      } catch (err) {
        const lost = this.lost.get(id) ?? modelLostOf(err);
        if (lost) {
          await this.failSafe(id, step, lost);
          await this.waitsEnded(id, step, ctx.attempt, 'HELD');
          return this.waitsEnded(id, null, 0, 'HELD');
        }
        // an abort closes the step and the run itself (abort below), with the person and the signature
        if (signal.reason instanceof RunAbortStop) return;
        if (err instanceof StepAborted || signal.aborted) {
          const why = `linekeeper stopped during step ${step.seq} ${step.name}: ${String(signal.reason ?? (err as Error).message)}`;
          this.o.store.tx((t) => {
            const cur = this.runs.runById(id)!;
            const s = this.runs.steps(id).find((x) => x.seq === step.seq)!;
            // a run waiting at the approval gate keeps waiting across a stop: no equipment acts while it waits
            if (s.status === 'RUNNING') this.setStep(t, cur, s, 'INTERRUPTED', 'system', why, { endedAt: this.o.clock.now() });
            if (cur.status === 'RUNNING') this.setRun(t, cur, 'INTERRUPTED', why, 'system', why);
          });
          await this.waitsEnded(id, step, ctx.attempt, 'INTERRUPTED');
          return this.waitsEnded(id, null, 0, 'INTERRUPTED');
        }
        const msg = LkError.is(err) ? `${err.code}: ${err.message}` : err instanceof Error ? err.message : String(err);
        this.o.log.error({ err, run: id, step: step.name }, 'step failed');
        result = { status: 'HELD', detail: `${step.name} stopped: ${msg}; the run is held for a person` };
      }
      if (result.status !== 'APPROVAL') await this.waitsEnded(id, step, ctx.attempt, result.status);
      this.o.store.tx((t) => {
        const cur = this.runs.runById(id)!;
        const s = this.runs.steps(id).find((x) => x.seq === step.seq)!;
        if (result.data) this.runs.setData(t, id, { ...cur.data, ...result.data }, this.o.clock.now());
        const terminalStep = result.status !== 'APPROVAL';
        // a step that succeeded with exceptions of its own still open says so on its line (the gate judges the batch)
        const detail = result.status === 'SUCCEEDED' ? withOpenExceptions(result.detail, this.exceptions.ofRun(id), `${step.seq} ${step.name}`) : result.detail;
        this.setStep(t, cur, s, result.status, step.agent, detail, terminalStep ? { endedAt: this.o.clock.now() } : {});
        if (result.status === 'HELD') this.setRun(t, cur, 'HELD', result.detail, 'system', result.detail);
        else if (result.status === 'FAILED') this.setRun(t, cur, 'FAILED', result.detail, 'system', result.detail);
        else if (result.status === 'REJECTED') this.setRun(t, cur, 'REJECTED', result.detail, 'system', result.detail);
      });
      run = this.runs.runById(id)!;
      if (result.status === 'HELD') this.raiseHeld(run, step, result.detail);
      if (result.status === 'REJECTED' && result.after) await result.after();
    }
  }

  /**
   * What a step (`step`) or the run (null) leaves waiting for a person when it ends: its pending moves are
   * withdrawn and raised as MOVE_UNREVIEWED, its open deadlocks as ESCALATION_UNRESOLVED (step-waits.ts). A
   * failure here is logged, never thrown: a move left pending is still refused by the policy (batch state).
   */
  private async waitsEnded(id: string, step: { seq: string; name: string } | null, attempt: number, how: string): Promise<void> {
    const run = this.runs.runById(id);
    if (!run) return;
    try {
      await closeStepWaits({ writer: this.o.writer, raise: (r, e) => this.raiseException(r, e), reviewer: (t, b) => this.batches(t, b)?.reviewer ?? null }, run, step, attempt, how);
    } catch (err) {
      this.o.log.error({ err, run: id, step: step?.name }, 'could not close what the step left waiting');
    }
  }

  /**
   * What the PLC watchdogs report (reverts to LKG, re-arms, a PLC found LOST at a reconnect) goes into the
   * genealogy of every run in progress on the line, beside the site chain's record of it.
   */
  plcEvent(e: { readonly equipment: string; readonly event: string; readonly new?: Readonly<Record<string, unknown>> }): void {
    for (const id of this.executing.keys()) {
      const run = this.runs.runById(id);
      if (!run || TERMINAL_RUN.has(run.status)) continue;
      const step = this.runs.steps(id).find((s) => s.status === 'RUNNING' || s.status === 'APPROVAL');
      this.o.store.tx((t) => this.runs.appendEvent(t, { run: id, at: this.o.clock.now(), kind: 'watchdog', step: step?.name ?? null, agent: null, tag: `${e.equipment}.SupervisorState`, summary: `${e.equipment}: ${e.event}`, data: json(e) }));
      // a PLC that went to its last known-good recipe during a run is a deviation of that batch
      if (e.event === 'lkg_revert' || e.event === 'found_lost') {
        const n = this.exceptions.ofRun(id).filter((x) => x.kind === 'PLC_LOST' && x.key.startsWith(`PLC_LOST:${e.equipment}:`)).length;
        this.raiseException(run, {
          kind: 'PLC_LOST', key: `PLC_LOST:${e.equipment}:${n + 1}`, step: step ? { seq: step.seq, name: step.name } : null, by: 'system', tag: `${e.equipment}.SupervisorState`,
          title: `PLC_LOST ${e.equipment}: ${e.event === 'lkg_revert' ? 'watchdog reverted it to its last known-good recipe' : 'found LOST on its last known-good recipe'}${step ? ` during ${step.seq} ${step.name}` : ''}`,
          evidence: { equipment: e.equipment, event: e.event, state: e.new ?? null },
        });
      }
    }
  }

  /** The model watch: every executing run's models, loaded (hash checked) as the steps load them. */
  private watchModels(): void {
    for (const [id, e] of this.executing) {
      const run = this.runs.runById(id);
      if (!run || run.status !== 'RUNNING' || this.lost.has(id)) continue;
      let lost: ModelLost | null;
      try {
        lost = checkModels(this.o.models, run.tenant);
      } catch (err) {
        this.o.log.error({ err, run: id }, 'model watch failed');
        continue;
      }
      if (!lost) continue;
      this.lost.set(id, lost);
      this.o.log.error({ run: id, model: lost.kind, code: lost.code }, 'model lost: reverting the line to its last known-good recipe');
      e.abort.abort(lost);
    }
  }

  /** The units linekeeper commands: those with a SupervisorState, never a monitor-only one (it only reads those). */
  private supervisedUnits(): string[] {
    return this.o.site.equipment.filter((e) => e.tags.some((t) => t.name === 'SupervisorState') && profileOf(e).mode !== 'monitor_only').map((e) => e.id);
  }

  /**
   * A commanded revert that the read-back did not verify is never a success: each one is a critical
   * REVERT_UNVERIFIED exception of the run (the PLC may still run a supervised recipe — or, with a wrong state
   * convention, have been re-armed by the command), and an error in the log.
   */
  private raiseUnverified(run: RunRecord, step: { seq: string; name: string } | null, reverted: readonly RevertOutcome[]): void {
    for (const r of revertSummary(reverted)) {
      if (r.ok) continue;
      this.o.log.error({ equipment: r.equipment, run: run.id, error: r.error }, 'revert to LKG not verified by read-back');
      this.raiseException(run, {
        kind: 'REVERT_UNVERIFIED', key: `REVERT_UNVERIFIED:${r.equipment}:${this.o.clock.now()}`, step, by: 'system', tag: `${r.equipment}.SupervisorState`,
        title: `REVERT_UNVERIFIED ${r.equipment}: the commanded revert to its last known-good recipe is not verified (${r.error ?? r.state ?? 'no read-back'}); check the PLC at its HMI`,
        evidence: { equipment: r.equipment, ...(r.state ? { state: r.state } : {}), ...(r.error ? { error: r.error } : {}) },
      });
    }
  }

  /**
   * R8, model lost: revert the line's equipment to its last known-good recipe through the guarded writer (each
   * command audited), drop the agents that use the model to L0, hold the step and the run for a person.
   */
  private async failSafe(id: string, step: StepRecord, lost: ModelLost): Promise<void> {
    const run = this.runs.runById(id)!;
    const reason = `${lost.message}; line reverted to its last known-good recipe, ${AGENTS_OF_MODEL[lost.kind].join(', ')} dropped to L0; a named person decides`;
    const reverted = await this.o.writer.revertToLkg(this.supervisedUnits(), { tenant: run.tenant, run: run.id, batch: run.batch, reason: lost.message });
    this.raiseUnverified(run, { seq: step.seq, name: step.name }, reverted);
    const bundle = this.o.policy();
    const dropped: string[] = [];
    if (bundle) {
      for (const agent of AGENTS_OF_MODEL[lost.kind]) {
        try {
          setAutonomy(this.o.store, bundle, { tenant: run.tenant, agent, to: 'L0', by: { person: 'system', role: 'watchdog' }, reason: `model lost during ${run.id}: ${lost.code}` });
          dropped.push(agent);
        } catch (err) {
          this.o.log.error({ err, agent }, 'could not drop an agent to L0');
        }
      }
    }
    this.o.store.tx((t) => {
      t.audit.append({ ...this.entry(run, 'system', 'model.lost', { kind: 'watchdog', result: json({ model: lost.kind, code: lost.code, reverted, dropped }), reason: lost.message }) });
      this.runs.appendEvent(t, { run: id, at: this.o.clock.now(), kind: 'watchdog', step: step.name, agent: 'agent.orchestrator', tag: null, summary: `model lost (${lost.code}): ${revertSummary(reverted).filter((r) => r.ok).length}/${reverted.length} PLCs reverted to LKG (verified by read-back); ${dropped.join(', ') || 'no agent'} dropped to L0`, data: json({ reverted, dropped, model: lost.kind }) });
      const s = this.runs.steps(id).find((x) => x.seq === step.seq)!;
      if (s.status === 'RUNNING') this.setStep(t, run, s, 'HELD', 'system', reason, { endedAt: this.o.clock.now() });
      if (run.status === 'RUNNING') this.setRun(t, run, 'HELD', reason, 'system', reason);
    });
    this.lost.delete(id);
    this.raiseHeld(this.runs.runById(id)!, step, reason);
  }

  /** Inside `t`: a run status change with its audit entry (transition checked). */
  setRun(t: TxContext, run: RunRecord, to: RunStatus, reason: string | null, actor: string, why: string): void {
    if (run.status === to) return;
    checkRunTransition(run.status, to, run.id);
    const at = this.o.clock.now();
    this.runs.setStatus(t, run.id, to, reason, at, TERMINAL_RUN.has(to));
    t.audit.append(this.entry(run, actor, 'run.status', { old: run.status, new: to, reason: why || to }));
    this.o.store.afterCommit(() => {
      const v = this.runs.runById(run.id);
      if (v) this.changed(v);
    });
  }

  /** Inside `t`: a step status change with its audit entry (transition checked). */
  setStep(t: TxContext, run: RunRecord, s: StepRecord, to: StepStatus, actor: string, detail: string, times: { attempt?: number; startedAt?: number; endedAt?: number | null } = {}): void {
    checkStepTransition(s.status, to, `${s.seq} ${s.name}`);
    this.runs.setStep(t, {
      run: run.id, seq: s.seq, status: to, attempt: times.attempt ?? s.attempt, startedAt: times.startedAt ?? s.startedAt,
      endedAt: times.endedAt === undefined ? s.endedAt : times.endedAt, detail: detail || s.detail,
    });
    t.audit.append({ ...this.entry(run, actor, 'step.status', { old: s.status, new: to, reason: detail || to }), subject: { run: run.id, batch: run.batch, agent: s.agent, tool: s.tool } });
  }

  private entry(run: Pick<RunRecord, 'tenant' | 'id' | 'batch'>, actor: string, action: string, e: Partial<AuditEntryInput>): AuditEntryInput {
    return { tenant: run.tenant, actor: actorOf(actor), kind: 'state_change', action, subject: { run: run.id, batch: run.batch }, ...e };
  }

  /** Tell the change listeners: the view is composed once for all of them (it reads the store), not once each. */
  private changed(run: RunRecord): void {
    if (this.changeListeners.size === 0) return;
    const view = this.view(run);
    for (const l of this.changeListeners) l(view);
  }

  /** The run as the API, the CLI and the console show it. */
  view(run: RunRecord): RunView {
    return this.compose(run).view;
  }

  /** The view of a run, and its steps whose durations run on with the clock. */
  private compose(run: RunRecord): { view: RunView; open: OpenStep[] } {
    const steps = this.runs.steps(run.id);
    const exceptions = this.exceptions.ofRun(run.id);
    const plan: PlanStep[] = composePlan();
    const now = this.o.clock.now();
    const gate = this.runs.approvalOfRun(run.id);
    const open: OpenStep[] = [];
    steps.forEach((s, index) => {
      if (s.startedAt !== null && s.endedAt === null) open.push({ index, startedAt: s.startedAt, continuous: s.continuous });
    });
    const view: RunView = {
      id: run.id, tenant: run.tenant, batch: run.batch, line: run.line, product: run.product, tooling: run.tooling, status: run.status, goal: run.goal,
      autonomy: run.autonomy, startedBy: run.startedBy, createdAt: new Date(run.createdAt).toISOString(), endedAt: run.endedAt === null ? null : new Date(run.endedAt).toISOString(),
      reason: run.reason, plan: planSummary(plan),
      steps: steps.map((s) => ({
        seq: s.seq, name: s.name, agent: s.agent, tool: s.tool, status: s.status, gate: s.gate, attempt: s.attempt,
        durationMs: s.startedAt === null ? null : (s.endedAt ?? now) - s.startedAt,
        duration: formatDuration(s.startedAt === null ? null : (s.endedAt ?? now) - s.startedAt, s.continuous && s.startedAt !== null),
        detail: s.detail,
        exceptions: markerOf(exceptions.filter((e) => e.step === `${s.seq} ${s.name}`)),
      })),
      exceptions: markerOf(exceptions),
      approvalGate: gate
        ? { id: gate.id, step: '09', status: gate.status, reviewer: gate.reviewer, recordHash: gate.recordHash, requestedAt: new Date(gate.requestedAt).toISOString(), signature: gate.signature }
        : { id: null, step: '09', status: 'not_reached', reviewer: qaReviewerOf(run), recordHash: null, requestedAt: null, signature: null },
      genealogy: `/v1/tenants/${run.tenant}/runs/${run.id}/genealogy`,
      release: releaseView(run),
    };
    return { view, open };
  }

  /** The engine's options (the API's readiness check reads them; a step gets {@link services}, never these). */
  get options(): RunEngineOptions {
    return this.o;
  }
}

/**
 * What the read-back of each PLC's revert said, for the signed record and the package: `ok` only when the
 * equipment reads back LOST on its last known-good recipe (`verified`), never for a command merely sent.
 */
function revertSummary(reverted: readonly RevertOutcome[]): ReleaseAbort['reverted'] {
  return reverted.map((r) => {
    if (!r.ok) return { equipment: r.equipment, ok: false, error: `${r.error.code}: ${r.error.message}` };
    const x = r.result;
    return x.verified
      ? { equipment: r.equipment, ok: true, state: `${x.state} on recipe ${String(x.activeRecipe)}` }
      : { equipment: r.equipment, ok: false, state: String(x.state), error: `read back ${x.state} on recipe ${String(x.activeRecipe)}, last known-good is ${String(x.lkgRecipe)}: not verified` };
  });
}

/** A person's id as an audit actor; the engine's own changes are `system`. */
function actorOf(a: string): string {
  return a.length > 0 ? a : 'system';
}

/**
 * The run's seed, from the tenant, the batch and its record: the same batch record rehearses the same
 * candidates on the same twin, whichever run executes it (and a replay needs nothing else).
 */
function seedOf(key: string): number {
  return Number.parseInt(sha256Hex(key).slice(0, 8), 16) | 0;
}

export type { StepHandler, StepResult, PolicyBundle };
