/**
 * Review by exception: a run's exceptions (OOS, OOT, a PLC lost, a failed specification, …) with their
 * evidence, and their closure by a named person. GET lists a run's exceptions and its specification table;
 * POST closes one with a comment and an optional deviation/CAPA reference — by a QA reviewer for a critical or
 * major one (the closure is a Part 11 signature: the password is checked again), by QA or a process engineer
 * for a minor one; a signed closure's meaning is one of the site's signature meanings (routes-signatures.ts), the
 * comment beside it. The engine audits the closure in the transaction that closes it; the API audits what only
 * it sees (a closure refused to the person who tried). Another tenant's run or exception is 404 (R1).
 */
import { MEANING_VALUES } from '../domain/signature-meanings.js';
import type { ExceptionRecord } from '../store/exception-store.js';
import type { RunRecord } from '../store/run-store.js';
import { LkError } from '../errors.js';
import { READERS, userOf } from './auth.js';
import { BASE, type Api, type ApiContext } from './context.js';
import { PROBLEM_RESPONSES } from './problem.js';
import { meaningOf } from './routes-signatures.js';
import { CloseExceptionBody, CloseExceptionView, ExceptionList, ExceptionParams, ExceptionView, RunParams } from './schemas.js';

const security = [{ bearer: [] }];
const problems = PROBLEM_RESPONSES;
const iso = (ms: number): string => new Date(ms).toISOString();

export function exceptionView(e: ExceptionRecord): ExceptionView {
  return {
    id: e.id, run: e.run, batch: e.batch, kind: e.kind, severity: e.severity, blocking: e.status === 'open' && e.severity !== 'minor', status: e.status, step: e.step, title: e.title,
    evidence: e.evidence, raisedAt: iso(e.raisedAt), raisedBy: e.raisedBy, auditSeq: e.auditSeq,
    closure: e.closure ? { user: e.closure.user, name: e.closure.name, at: iso(e.closure.at), comment: e.closure.comment, deviation: e.closure.deviation, signed: e.closure.signature !== null } : null,
  };
}

/** A run's exceptions with their counts and its specification table, as GET /runs/{id}/exceptions answers (and `runs exceptions --offline` prints). */
export function exceptionList(run: RunRecord, items: readonly ExceptionRecord[]): ExceptionList {
  const open = items.filter((e) => e.status === 'open');
  return {
    run: run.id, batch: run.batch, counts: { total: items.length, open: open.length, blocking: open.filter((e) => e.severity !== 'minor').length },
    items: items.map(exceptionView), specTable: (run.data['quality'] as { specTable?: unknown } | undefined)?.specTable ?? null,
  };
}

export function registerExceptionRoutes(app: Api, ctx: ApiContext): void {
  const { engine } = ctx.daemon;

  app.get(`${BASE}/runs/:id/exceptions`, {
    onRequest: ctx.guard(READERS, 'read exceptions'),
    schema: { tags: ['runs'], summary: 'The run\'s exceptions (deviations) with their evidence and status, and its specification table', security, params: RunParams, response: { 200: ExceptionList, ...problems } },
  }, async (req) => {
    const items = engine.exceptionsOf(req.params.tenant, req.params.id);
    return exceptionList(engine.runs.runById(req.params.id)!, items);
  });

  app.post(`${BASE}/exceptions/:id/close`, {
    onRequest: ctx.guard(['process_engineer', 'qa_reviewer'], 'close exceptions'),
    schema: {
      tags: ['runs'],
      summary: 'Close an exception with a comment and an optional deviation/CAPA reference: a critical or major one by a QA reviewer, signed (password checked again, 21 CFR 11.200); a minor one by QA or a process engineer',
      security, params: ExceptionParams, body: CloseExceptionBody, response: { 200: CloseExceptionView, ...problems },
    },
  }, async (req) => {
    const user = userOf(req);
    const { tenant, id } = req.params;
    const e = engine.exceptions.get(tenant, id);
    if (!e) throw new LkError('LK_NOT_FOUND', `no exception ${id}`, { exception: id });
    if (e.status !== 'open') throw new LkError('LK_EXCEPTION_CLOSED', `exception ${id} was closed by ${e.closure?.user ?? '?'} already`, { exception: id });
    const approvers = ctx.daemon.policy.bundle?.content.approvers ?? { qa: ['qa_reviewer'], reviewer: ['process_engineer'] };
    const allowed = approvers.qa.includes(user.role) || (e.severity === 'minor' && approvers.reviewer.includes(user.role));
    if (!allowed) {
      const why = e.severity === 'minor' ? `a ${user.role} closes no exception` : `a ${e.severity} exception is closed by a QA reviewer, not a ${user.role}`;
      ctx.daemon.store.audit.append({ tenant, actor: user.id, kind: 'exception', action: 'exception.close_refused', subject: { run: e.run, batch: e.batch, reviewer: user.id }, args: { exception: id }, reason: why });
      throw new LkError('LK_APPROVAL_FORBIDDEN', why, { role: user.role, severity: e.severity });
    }
    // a signed closure's meaning is one of the site's list, checked before the password (a minor closure signs nothing)
    const meaning = e.severity === 'minor' ? undefined : meaningOf(ctx, 'exception_close', req.body.meaning, MEANING_VALUES.exception_close(e));
    // every closure re-authenticates: a critical or major one is signed, and a minor one is still a named decision
    await ctx.identity.reauthenticateSigner(user, req.body.password, { tenant, exception: id });
    const out = engine.closeException(tenant, id, { signer: { user: user.id, name: user.name, role: user.role }, comment: req.body.comment, deviation: req.body.deviation ?? null, ...(meaning ? { meaning } : {}) });
    return { exception: exceptionView(out.exception), signature: out.signature as unknown as Record<string, unknown> | null };
  });
}
