/**
 * Objects of a tenant in a real daemon's store without running a batch: a run persisted and audited exactly as
 * `RunEngine.start` leaves it — the batch record from the MES inbox, the plan of 10 steps — but with no
 * execution behind it, so the test decides its status; tool-call lines through the engine's own StepContext
 * (audited, and delivered to the engine's listeners as a step's are); a batch release waiting at the gate; and a
 * setpoint write the guarded writer itself queues for a person, from a proposal run through the real policy.
 */
import { randomBytes } from 'node:crypto';
import type { Daemon } from '../../src/daemon.js';
import { composePlan, type RunStatus } from '../../src/domain/run.js';
import { canonical, sha256Hex } from '../../src/engine/run/approval.js';
import { StepContext } from '../../src/engine/run/step-context.js';
import { judgeRun } from '../../src/engine/run/quality.js';
import { json } from '../../src/engine/json.js';
import type { PendingWrite } from '../../src/engine/guarded-writer.js';
import type { ApprovalRecord, RunRecord } from '../../src/store/run-store.js';
import { plantOf } from './run-site.js';

/** A run of `batch` started by `by`, RUNNING (the batch is then writable for the guarded writer). */
export function seedRun(d: Daemon, o: { tenant: string; batch: string; by: string }): RunRecord {
  const engine = d.engine;
  const record = engine.options.mes.read(o.tenant, o.batch) as Record<string, unknown>;
  const id = `run_${randomBytes(10).toString('hex')}`;
  const sha = sha256Hex(canonical(record));
  const text = `run batch ${o.batch} on line-3`;
  d.store.tx((t) => {
    engine.runs.insertRun(t, {
      id, tenant: o.tenant, batch: o.batch, line: d.loaded.config.line.id, product: String(record['product']), tooling: String(record['tooling']), goal: 'seeded by a test',
      request: { batch: o.batch, line: d.loaded.config.line.id, goal: 'seeded by a test', text, limits: {} }, limits: {}, autonomy: 'L3', record, recordSha: sha, seed: 1, startedBy: o.by, createdAt: d.engine.options.clock.now(),
    }, composePlan());
    t.audit.append({ tenant: o.tenant, actor: o.by, kind: 'state_change', action: 'run.start', subject: { run: id, batch: o.batch }, args: { request: text, batchRecordSha256: sha } });
  });
  setStatus(d, id, 'RUNNING');
  return engine.runs.runById(id)!;
}

/** Move a seeded run through the engine's own (checked, audited) transition. */
export function setStatus(d: Daemon, id: string, to: RunStatus, reason: string | null = null): void {
  d.store.tx((t) => d.engine.setRun(t, d.engine.runs.runById(id)!, to, reason, 'system', reason ?? `test: ${to}`));
}

/** The run's step context for step `seq` (default 03): what a step handler writes its log lines with. */
export function stepOf(d: Daemon, id: string, seq = '03'): StepContext {
  const step = composePlan().find((s) => s.seq === seq)!;
  return new StepContext(d.engine.host, d.engine.runs.runById(id)!, step, new AbortController().signal, {});
}

/** `n` call/ok pairs of the step's tool in the run's log (and an event in its genealogy). */
export function logLines(d: Daemon, id: string, n: number): void {
  const ctx = stepOf(d, id);
  for (let i = 0; i < n; i++) {
    ctx.line('call', ctx.step.tool, ctx.step.agent, { args: { i } });
    ctx.line('ok', ctx.step.tool, ctx.step.agent, { summary: `seeded ${i}`, result: { i } });
  }
  ctx.event('seeded', `${n} seeded tool calls`);
}

/** A batch release waiting for the batch's named QA reviewer; the run goes to APPROVAL. */
export function seedGate(d: Daemon, id: string): ApprovalRecord {
  const run = d.engine.runs.runById(id)!;
  const record = canonical({ format: 1, kind: 'batch_release', run: run.id, tenant: run.tenant, batch: run.batch, seeded: true });
  const approval = `apr_${randomBytes(8).toString('hex')}`;
  // the gate stores the specification table judged on the run's data (a seeded run has none: every
  // specification NOT_EVALUATED, nothing failed) before it requests the release
  const quality = json(judgeRun(run, run.data, []));
  d.store.tx((t) => {
    d.engine.runs.setData(t, id, { ...run.data, quality }, d.engine.options.clock.now());
    d.engine.runs.insertApproval(t, { id: approval, run: id, tenant: run.tenant, reviewer: String(run.record['qa_reviewer']), record, recordHash: sha256Hex(record), requestedAt: d.engine.options.clock.now() });
  });
  setStatus(d, id, 'APPROVAL', `waits for QA reviewer ${String(run.record['qa_reviewer'])}`);
  return d.engine.runs.approval(run.tenant, approval)!;
}

let proposals = 0;

/**
 * Have the guarded writer queue a write of `setpoint` for a person: the equipment is first put at `from` (as an
 * operator at the HMI would), then an agent proposes `to` — beyond the design space it waits for QA, an L2 move
 * inside it for the batch's reviewer.
 * @throws Error when the writer did not queue it (the policy answered otherwise)
 */
export async function queueWrite(d: Daemon, o: { run: RunRecord; agent: string; setpoint: string; from: number; to: number; unit: string }): Promise<PendingWrite> {
  const [equipment, tag] = o.setpoint.split('.') as [string, string];
  plantOf(d).writeSetpoint(equipment, tag, o.from);
  const out = await d.writer.propose({
    id: `test-proposal-${++proposals}`, tenant: o.run.tenant, batch: o.run.batch, run: o.run.id, agent: o.agent, product: o.run.product, tooling: o.run.tooling,
    moves: [{ setpoint: o.setpoint, value: `${o.to} ${o.unit}` }], attribute: 'content_uniformity', justification: 'queued by a test for a person to decide',
  });
  const w = out.pending ? d.writer.pending().find((p) => p.id === out.pending!.id) : undefined;
  if (!w) throw new Error(`the writer did not queue ${o.setpoint} → ${o.to}: ${out.status} ${JSON.stringify(out.decisions.map((x) => x.reasons))}`);
  return w;
}
