/**
 * The ways out of every state a run can stop in, taken by named people: resume a HELD or INTERRUPTED run (a
 * process engineer or QA reviewer, with a reason), abort a run that is not final (signed: the password is checked
 * again), reassign the QA reviewer of a run (signed, by a role of the bundle's `approvers.reassign`). The routes
 * parse, guard, re-authenticate and call the engine, which audits each act in the transaction of the change and
 * enforces the roles again; the API audits what only it sees (an act refused to the person who tried). A signed
 * act's meaning is one of the site's signature meanings (routes-signatures.ts), checked before the password.
 */
import { TERMINAL_RUN, type RunStatus } from '../domain/run.js';
import { MEANING_VALUES } from '../domain/signature-meanings.js';
import { reassignRoles, steeringRoles } from '../engine/run/lifecycle.js';
import { LkError } from '../errors.js';
import { userOf } from './auth.js';
import { BASE, type Api, type ApiContext } from './context.js';
import type { AuthUser } from './identity.js';
import { PROBLEM_RESPONSES } from './problem.js';
import { meaningOf } from './routes-signatures.js';
import { AbortBody, AbortView, ReassignBody, ReassignView, ResumeBody, RunParams, RunView } from './schemas.js';

const security = [{ bearer: [] }];
const problems = PROBLEM_RESPONSES;

/** Run `fn`; an act the engine refuses to this person (their role) is audited on the tenant's chain, then thrown. */
async function refusedAudited<T>(ctx: ApiContext, tenant: string, run: string, user: AuthUser, action: string, fn: () => Promise<T> | T): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    if (LkError.is(err, 'LK_APPROVAL_FORBIDDEN')) {
      ctx.daemon.store.audit.append({ tenant, actor: user.id, kind: 'approval', action: `${action}_refused`, subject: { run, reviewer: user.id }, args: { run, role: user.role }, reason: (err as Error).message });
    }
    throw err;
  }
}

export function registerLifecycleRoutes(app: Api, ctx: ApiContext): void {
  const { engine } = ctx.daemon;

  app.post(`${BASE}/runs/:id/resume`, {
    onRequest: ctx.guard(['process_engineer', 'qa_reviewer'], 'resume runs'),
    schema: {
      tags: ['runs'],
      summary: 'Resume a HELD or INTERRUPTED run: the step that stopped runs again from its start (a new attempt, fresh readings and policy decisions; no write is replayed). By a process engineer or QA reviewer, with a reason; listed for QA as a MANUAL_ACTION exception',
      security, params: RunParams, body: ResumeBody, response: { 200: RunView, ...problems },
    },
  }, async (req) => {
    const user = userOf(req);
    const { tenant, id } = req.params;
    return await refusedAudited(ctx, tenant, id, user, 'run.resume', () => engine.resume(tenant, id, { user: user.id, name: user.name, role: user.role }, req.body.reason));
  });

  app.post(`${BASE}/runs/:id/abort`, {
    onRequest: ctx.guard(['process_engineer', 'qa_reviewer'], 'abort runs'),
    schema: {
      tags: ['runs'],
      summary: 'Abort a run that is not final (PENDING, RUNNING, APPROVAL, HELD, INTERRUPTED), signed (password checked again, 21 CFR 11.200): the step under way stops, every PLC is commanded to its last known-good recipe (each verified by read-back), a pending approval is withdrawn, the run ends ABORTED with its genealogy and a package that says "not a release"; the line is free',
      security, params: RunParams, body: AbortBody, response: { 200: AbortView, ...problems },
    },
  }, async (req) => {
    const user = userOf(req);
    const { tenant, id } = req.params;
    // refusals that need no password first: no such run (R1), a final one
    const run = engine.get(tenant, id);
    if (TERMINAL_RUN.has(run.status as RunStatus)) throw new LkError('LK_RUN_STATE', `run ${id} is ${run.status} already; only a run that is not final is aborted`, { status: run.status, run: id });
    // who may abort is checked before the password is asked for
    const roles = steeringRoles(ctx.daemon.policy.bundle);
    if (!roles.includes(user.role)) await refusedAudited(ctx, tenant, id, user, 'run.abort', () => { throw new LkError('LK_APPROVAL_FORBIDDEN', `a run is aborted by ${roles.join(', ')}, not a ${user.role}`, { role: user.role }); });
    const meaning = meaningOf(ctx, 'run_abort', req.body.meaning, MEANING_VALUES.run_abort({ id, batch: run.batch }));
    await ctx.identity.reauthenticateSigner(user, req.body.password, { tenant, run: id, act: 'abort' });
    const r = await refusedAudited(ctx, tenant, id, user, 'run.abort', () => engine.abort(tenant, id, { signer: { user: user.id, name: user.name, role: user.role }, reason: req.body.reason, meaning }));
    return { run: r.run, reverted: r.reverted, approvalWithdrawn: r.approvalWithdrawn, signature: r.signature };
  });

  app.post(`${BASE}/runs/:id/reassign`, {
    onRequest: ctx.guard(['qa_reviewer', 'admin'], 'reassign reviewers'),
    schema: {
      tags: ['runs'],
      summary: 'Reassign the QA reviewer of a run that is not final, signed (password checked again) by a role of the policy bundle\'s approvers.reassign (default qa_reviewer, admin): the new reviewer must be an active user holding a QA role for the tenant; a pending approval gate then waits for them',
      security, params: RunParams, body: ReassignBody, response: { 200: ReassignView, ...problems },
    },
  }, async (req) => {
    const user = userOf(req);
    const { tenant, id } = req.params;
    const run = engine.get(tenant, id);
    const roles = reassignRoles(ctx.daemon.policy.bundle);
    if (!roles.includes(user.role)) await refusedAudited(ctx, tenant, id, user, 'run.reassign', () => { throw new LkError('LK_APPROVAL_FORBIDDEN', `the QA reviewer of a run is reassigned by ${roles.join(', ')}, not a ${user.role}`, { role: user.role }); });
    const meaning = meaningOf(ctx, 'run_reassign', req.body.meaning, MEANING_VALUES.run_reassign({ id, batch: run.batch }, req.body.to));
    // reassigning names who signs; it signs no record, so an administrator may do it (separation of duties holds)
    await ctx.identity.reauthenticateSigner(user, req.body.password, { tenant, run: id, act: 'reassign' }, { administrative: true });
    const r = await refusedAudited(ctx, tenant, id, user, 'run.reassign', () => engine.reassign(tenant, id, { signer: { user: user.id, name: user.name, role: user.role }, to: req.body.to, reason: req.body.reason, meaning }));
    return { run: r.run, from: r.from, to: r.to, approval: r.approval, signature: r.signature };
  });
}
