/**
 * POST /approvals/{id}: a person's signed decision on what waits for one — a batch release at the run's gate
 * (the batch's named QA reviewer, R3) or a setpoint write the guarded writer holds pending (R4/R6: `needs_qa`
 * only by a QA reviewer, an L2 review by the batch's assigned reviewer or by QA). Never by the person who
 * started the run the item belongs to. Who may decide is checked before the password is asked for; the signer
 * is the signed-in identity, re-authenticated with the password (21 CFR 11.200), never a field of the body. The
 * meaning is one of the site's signature meanings for the act and decision (an id or its text; a free-text comment
 * goes beside it), checked before the password too: a meaning not on the list signs, writes and audits nothing.
 *
 * A setpoint write is signed (Ed25519 over the record, bound to the exact vector hash the reviewer saw) and the
 * signature audited before the guarded writer acts on it: the writer then re-evaluates the vector at call time
 * and audits its own approve/reject and the write, so the trail reads signature → decision → write.
 */
import type { z } from 'zod';
import type { AuditSubject } from '../audit/index.js';
import { manifestationMeaning, MEANING_VALUES } from '../domain/signature-meanings.js';
import { signRecord } from '../engine/run/approval.js';
import type { PendingWrite } from '../engine/guarded-writer.js';
import { LkError } from '../errors.js';
import type { ApiContext } from './context.js';
import type { AuthUser } from './identity.js';
import { meaningOf } from './routes-signatures.js';
import type { DecisionBody, SignatureView, WriteDecisionView } from './schemas.js';

type Decision = z.output<typeof DecisionBody>;

/** Approver roles of the bundle in force (the site's defaults when none is: the writer then denies anyway). */
function approvers(ctx: ApiContext): { qa: readonly string[]; reviewer: readonly string[] } {
  return ctx.daemon.policy.bundle?.content.approvers ?? { qa: ['qa_reviewer'], reviewer: ['process_engineer'] };
}

/** Refuse a signature to this person: audited on the tenant's chain (only the API sees it), then thrown. */
function refuse(ctx: ApiContext, tenant: string, user: AuthUser, subject: AuditSubject, args: Record<string, string>, why: string, detail: Record<string, unknown>): never {
  ctx.daemon.store.audit.append({ tenant, actor: user.id, kind: 'approval', action: 'approval.refused', subject: { ...subject, reviewer: user.id }, args, reason: why });
  throw new LkError('LK_APPROVAL_FORBIDDEN', why, detail);
}

/**
 * Sign a batch release at a run's gate.
 * @throws LkError LK_NOT_FOUND (no such approval for the tenant), LK_APPROVAL_FORBIDDEN (audited: not a QA
 *   role, not the batch's named QA reviewer, the run's starter), LK_APPROVAL_STALE (a `recordHash` that is not
 *   the record's), LK_MEANING_NOT_ALLOWED (not a release meaning of the site's list for this decision),
 *   LK_REAUTH_FAILED, LK_PASSWORD_CHANGE_REQUIRED, LK_APPROVAL_DECIDED.
 */
export async function decideRelease(ctx: ApiContext, user: AuthUser, tenant: string, id: string, body: Decision): Promise<z.output<typeof SignatureView>> {
  const { engine } = ctx.daemon;
  const approval = engine.runs.approval(tenant, id);
  if (!approval) throw new LkError('LK_NOT_FOUND', `no approval ${id}`, { approval: id });
  const run = engine.runs.runById(approval.run);
  const subject: AuditSubject = { run: approval.run, ...(run ? { batch: run.batch } : {}), tool: 'approval.request' };
  const args = { approval: id, decision: body.decision };
  if (!approvers(ctx).qa.includes(user.role)) refuse(ctx, tenant, user, subject, args, `a batch release is signed by a QA reviewer, not a ${user.role}`, { role: user.role });
  if (body.recordHash !== undefined && body.recordHash !== approval.recordHash) throw new LkError('LK_APPROVAL_STALE', `the release record is ${approval.recordHash.slice(0, 12)}…, not ${body.recordHash.slice(0, 12)}…`, { approval: id });
  const meaning = meaningOf(ctx, 'release', body.meaning, MEANING_VALUES.release({ batch: run?.batch, run: approval.run, approval: id }), body.decision);
  const comment = body.comment?.trim() || undefined;
  await ctx.identity.reauthenticateSigner(user, body.password, { tenant, approval: id });
  try {
    return engine.decide(tenant, id, { signer: { user: user.id, name: user.name, role: user.role }, decision: body.decision, meaning: meaning.text, meaningId: meaning.id, ...(comment ? { comment } : {}) });
  } catch (err) {
    if (LkError.is(err, 'LK_APPROVAL_FORBIDDEN')) refuse(ctx, tenant, user, subject, args, (err as Error).message, { ...(err.detail ?? {}) });
    throw err;
  }
}

/**
 * Approve or reject a pending setpoint write of the guarded writer.
 * @throws LkError LK_APPROVAL_FORBIDDEN (audited: a role that approves nothing, `needs_qa` by anyone but QA, an
 *   L2 review by someone other than the batch's assigned reviewer or QA, the run's starter), LK_VALIDATION (no
 *   `recordHash`), LK_APPROVAL_STALE (it is not the pending vector's, or the bundle in force computes another),
 *   LK_MEANING_NOT_ALLOWED (not a move meaning of the site's list for this decision), LK_REAUTH_FAILED, LK_PASSWORD_CHANGE_REQUIRED, LK_MOVE_WITHDRAWN (superseded, or its step or run ended, meanwhile),
 *   LK_NOT_FOUND (decided meanwhile).
 */
export async function decideWrite(ctx: ApiContext, user: AuthUser, tenant: string, w: PendingWrite, body: Decision): Promise<z.output<typeof WriteDecisionView>> {
  const { engine, writer, store } = ctx.daemon;
  const p = w.proposal;
  const run = p.run ? engine.runs.run(tenant, p.run) : null;
  const subject: AuditSubject = { ...(p.run ? { run: p.run } : {}), batch: p.batch, agent: p.agent, ...(p.moves[0] ? { setpoint: p.moves[0].setpoint } : {}) };
  const args = { approval: w.id, decision: body.decision, needs: w.needs };
  const roles = approvers(ctx);
  const kind = roles.qa.includes(user.role) ? 'qa' : roles.reviewer.includes(user.role) ? 'reviewer' : null;
  if (kind === null) refuse(ctx, tenant, user, subject, args, `a ${user.role} decides no setpoint write`, { role: user.role });
  if (w.needs === 'qa' && kind !== 'qa') refuse(ctx, tenant, user, subject, args, `this write waits for a QA reviewer (outside the design space or a validated parameter), not a ${user.role}`, { needs: w.needs, role: user.role });
  if (kind === 'reviewer') {
    const assigned = engine.batches(tenant, p.batch)?.reviewer ?? null;
    if (assigned !== user.id) refuse(ctx, tenant, user, subject, args, `batch ${p.batch} names ${assigned ?? 'no one'} as its reviewer`, { reviewer: assigned, user: user.id });
  }
  if (run && run.startedBy === user.id) refuse(ctx, tenant, user, subject, args, `${user.id} started run ${run.id} and cannot also decide its writes`, { user: user.id, run: run.id });
  if (body.recordHash === undefined) {
    throw new LkError('LK_VALIDATION', 'a setpoint write is decided on the exact vector: give its recordHash as GET /approvals shows it', { issues: [{ path: 'body.recordHash', message: 'required for a setpoint write' }] });
  }
  if (body.recordHash !== w.vectorHash) throw new LkError('LK_APPROVAL_STALE', `the pending vector is ${w.vectorHash.slice(0, 12)}…, not ${body.recordHash.slice(0, 12)}…`, { approval: w.id });
  const meaning = meaningOf(ctx, 'move', body.meaning, MEANING_VALUES.move({ batch: p.batch, run: p.run, approval: w.id }), body.decision);
  const comment = body.comment?.trim() || undefined;
  await ctx.identity.reauthenticateSigner(user, body.password, { tenant, approval: w.id });
  // withdrawn while the password was checked (its step ended, a newer proposal): nothing is signed
  if (!writer.pending().some((x) => x.id === w.id)) {
    const why = writer.withdrawn(tenant, w.id);
    throw why === null ? new LkError('LK_NOT_FOUND', `no pending write ${w.id}`, { approval: w.id }) : new LkError('LK_MOVE_WITHDRAWN', `move ${w.id} was withdrawn (${why}): it can no longer be signed`, { approval: w.id, reason: why });
  }

  const signature = signRecord(store.audit.siteKey(), {
    format: 1, approval: w.id, run: p.run ?? '', tenant, batch: p.batch, recordHash: w.vectorHash, user: user.id, name: user.name, role: user.role,
    decision: body.decision, meaning: meaning.text, meaningId: meaning.id, ...(comment ? { comment } : {}), timestamp: new Date(ctx.clock.now()).toISOString(),
  });
  store.audit.append({
    tenant, actor: user.id, kind: 'approval', action: 'setpoint.sign', subject: { ...subject, reviewer: user.id },
    args: { approval: w.id, vectorHash: w.vectorHash, decision: body.decision, kind, needs: w.needs, keyId: signature.keyId, meaningId: meaning.id, ...(comment ? { comment } : {}) },
    signature: { user: user.id, name: user.name, meaning: manifestationMeaning(meaning.text, body.decision), time: signature.timestamp, value: signature.signature },
  });
  const out = body.decision === 'approve'
    ? await writer.approve(w.id, { by: user.id, role: user.role, kind, vectorHash: body.recordHash })
    : await writer.reject(w.id, { person: user.id, role: user.role }, comment ? `${meaning.text}: ${comment}` : meaning.text);
  const reasons = [...new Set(out.decisions.flatMap((d) => d.reasons))];
  return {
    kind: 'setpoint_write', signature,
    outcome: {
      status: out.status, proposal: out.proposalId, vectorHash: out.vectorHash, reasons, ...(out.error ? { error: out.error } : {}),
      ...(out.results?.length ? { readBack: out.results.map((r) => ({ tag: r.tag, written: r.written, readBack: r.readBack, verified: r.verified })) } : {}),
    },
  };
}
