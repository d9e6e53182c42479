/**
 * Step 09, the approval gate (R3): batch release waits for the named QA reviewer of the batch record,
 * whatever the autonomy level. The step asks the policy engine (a release is always `needs_qa`), writes the
 * record to be signed and its hash, logs `approval.request`, has the engine put the run in APPROVAL
 * (StepServices.requestApproval) and waits — across restarts — for the reviewer's signed decision. No code path
 * leaves this step SUCCEEDED without a signed approval.
 */
import { randomBytes } from 'node:crypto';
import { evaluate } from '../../../policy/index.js';
import { LkError } from '../../../errors.js';
import { json } from '../../json.js';
import { canonical, sha256Hex, type Signature } from '../approval.js';
import type { StepHandler } from '../types.js';
import { bundleOf } from './common.js';
import { evaluateRun } from '../quality.js';
import { qaReviewerOf } from '../lifecycle.js';

export const gate: StepHandler = async (ctx, services) => {
  const { run } = ctx;
  const tool = 'approval.request';
  let a = services.readApproval(run.id);
  if (!a) {
    // the record's QA reviewer, or the one a signed reassignment named since the run started
    const reviewer = qaReviewerOf(services.runRecord(run.id) ?? run) ?? '';
    if (!reviewer) return { status: 'HELD', detail: 'The batch record names no QA reviewer: release cannot be requested; the run is held for a person.' };
    const bundle = bundleOf(services);
    const release = evaluate({ kind: 'release', agent: 'agent.orchestrator', setpoint: '', value: 0, product: run.product, tooling: run.tooling }, bundle, { now: ctx.now, batchState: 'running', reviewer });
    if (release.outcome !== 'needs_qa') throw new LkError('LK_INTERNAL', `the policy engine answered ${release.outcome} for a batch release; only needs_qa is possible (R3)`);
    // the truth of the batch first: every specification judged on the run's data, the counts reconciled; a
    // failed specification or a mismatch is an exception the reviewer must close before a release
    const quality = evaluateRun(ctx, services);
    ctx.event('qc', `specifications: ${quality.specTable.verdict} (${quality.specTable.counts.PASS} pass, ${quality.specTable.counts.FAIL} fail, ${quality.specTable.counts.NOT_EVALUATED} not evaluated); counts ${quality.reconciliation.ok ? 'reconcile' : 'do NOT reconcile'}`, { specTableSha256: quality.specTable.sha256, verdict: quality.specTable.verdict, counts: quality.specTable.counts });
    // what QA signs: the run, the batch record's hash, every step's outcome, the release evidence, the
    // specification table (by hash) and the exceptions raised so far
    const steps = services.steps(run.id).filter((s) => Number(s.seq) < 9).map((s) => ({ seq: s.seq, name: s.name, status: s.status, detail: s.detail }));
    const exceptions = services.exceptionsOfRun(run.id).map((e) => ({ id: e.id, kind: e.kind, severity: e.severity, step: e.step, title: e.title }));
    const record = canonical(json({
      format: 1, kind: 'batch_release', run: run.id, tenant: run.tenant, batch: run.batch, line: run.line, product: run.product, tooling: run.tooling,
      batchRecordSha256: run.recordSha, steps, evidence: ctx.data['evidence'] ?? null, candidate: ctx.data['candidate'] ?? null, policy: { decision: release.id, outcome: release.outcome, reasons: release.reasons, bundle: release.bundleVersion },
      quality: { verdict: quality.specTable.verdict, specTableSha256: quality.specTable.sha256, counts: quality.specTable.counts, reconciled: quality.reconciliation.ok }, exceptions,
    }));
    const id = `apr_${randomBytes(8).toString('hex')}`;
    const hash = sha256Hex(record);
    ctx.line('call', tool, ctx.step.agent, { args: { approval: id, kind: 'batch_release', batch: run.batch, reviewer, recordHash: hash, policy: release.outcome } });
    // the approval row, the run's quality data, the step and the run into APPROVAL: one transaction of the engine's
    services.requestApproval(ctx, { id, reviewer, record, recordHash: hash, quality });
    ctx.event('approval', `batch_release requested from ${reviewer} (record ${hash.slice(0, 12)}…)`, { approval: id, recordHash: hash, policy: release.reasons });
    a = services.readApproval(run.id)!;
  }
  while (a.status === 'pending') {
    await services.waitWake(run.id, ctx.signal, 1000);
    ctx.check();
    a = services.readApproval(run.id)!;
  }
  const sig = a.signature as unknown as Signature;
  const manifest = `${sig.name} (${sig.user}, ${sig.role}) at ${sig.timestamp}: ${sig.meaning}`;
  ctx.event('approval', `${a.status} by ${manifest}`, { approval: a.id, signature: sig as unknown as Record<string, unknown> }, { agent: 'agent.orchestrator' });
  if (a.status === 'approved') {
    ctx.line('ok', tool, ctx.step.agent, { summary: `approved by ${sig.name} (${sig.user}), ${sig.timestamp}; identity and timestamp logged`, result: { approval: a.id, decision: 'approve', user: sig.user, timestamp: sig.timestamp, keyId: sig.keyId } });
    services.approvalApproved(run.id, sig.user);
    return { status: 'SUCCEEDED', detail: `Batch release approved and signed by ${manifest}.`, data: { approval: a.id } };
  }
  ctx.line('ok', tool, ctx.step.agent, { summary: `rejected by ${sig.name} (${sig.user}), ${sig.timestamp}; identity and timestamp logged`, result: { approval: a.id, decision: 'reject', user: sig.user, timestamp: sig.timestamp } });
  return {
    status: 'REJECTED',
    detail: `Batch release rejected and signed by ${manifest}.`,
    data: { approval: a.id, rejected: true },
    // the genealogy and the (rejection) package are written all the same, by the release step (step 10 then SKIPPED)
    after: () => services.releaseAfterRejection(ctx),
  };
};
