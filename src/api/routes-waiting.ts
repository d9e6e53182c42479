/**
 * What waits for a person, counted for the console's strip in the navigation (every page, every reading role,
 * polled): setpoint moves waiting for a signature (`pw_…`), arbitration deadlocks, open exceptions of the
 * tenant's runs, and batch releases at the gate (`apr_…`). One request instead of one per source and per run.
 * Each count comes with how many the caller may decide ("yours", by the rules the deciding routes apply:
 * approvals.ts, routes-arbitration.ts, routes-exceptions.ts), the runs concerned and since when the oldest
 * waits — counts only: an operator, who may not read approvals, learns that something waits and for whom, not
 * what is signed.
 */
import { z } from 'zod';
import type { AuthUser } from './identity.js';
import { READERS, userOf } from './auth.js';
import { BASE, type Api, type ApiContext } from './context.js';
import { PROBLEM_RESPONSES } from './problem.js';
import { ESCALATION_DECIDERS } from './routes-arbitration.js';
import { TenantParams } from './schemas.js';

const Count = z.object({
  count: z.number().int().describe('how many wait'),
  yours: z.number().int().describe('how many of them the caller may decide'),
  runs: z.array(z.string()).describe('the runs they concern, oldest first'),
  since: z.string().nullable().describe('ISO 8601 UTC: since when the oldest waits (null: none waits)'),
});

export const WaitingView = z.object({
  moves: Count.extend({
    needs: z.object({ qa: z.number().int(), reviewer: z.number().int() }).describe('whom they wait for: a QA reviewer, or the batch\'s assigned reviewer (or QA)'),
  }).describe('setpoint writes (pw_…) the guarded writer holds for a signature'),
  escalations: Count.describe('arbitration deadlocks waiting for a process engineer or QA reviewer'),
  exceptions: Count.extend({
    blocking: z.number().int().describe('critical and major ones: closed by QA, and they block the release'),
  }).describe('open exceptions of the tenant\'s runs'),
  gates: Count.describe('batch releases (apr_…) waiting for the batch\'s named QA reviewer'),
});
export type WaitingView = z.output<typeof WaitingView>;

interface Item { readonly run: string | null; readonly at: number; readonly yours: boolean }

const iso = (ms: number): string => new Date(ms).toISOString();

function count(items: readonly Item[]): z.output<typeof Count> {
  const sorted = [...items].sort((a, b) => a.at - b.at);
  return {
    count: sorted.length, yours: sorted.filter((i) => i.yours).length,
    runs: [...new Set(sorted.flatMap((i) => (i.run ? [i.run] : [])))],
    since: sorted[0] ? iso(sorted[0].at) : null,
  };
}

/** The tenant's waiting items, counted for `user`. */
export function waitingFor(ctx: ApiContext, tenant: string, user: AuthUser): WaitingView {
  const { engine, writer } = ctx.daemon;
  const approvers = ctx.daemon.policy.bundle?.content.approvers ?? { qa: ['qa_reviewer'], reviewer: ['process_engineer'] };
  const qa = approvers.qa.includes(user.role);
  const reviewer = approvers.reviewer.includes(user.role);
  const starter = (run: string | null | undefined): boolean => !!run && engine.runs.runById(run)?.startedBy === user.id;

  const writes = writer.pending().filter((w) => w.proposal.tenant === tenant);
  const moves = writes.map((w): Item => {
    const mine = w.needs === 'qa' ? qa : qa || (reviewer && engine.batches(tenant, w.proposal.batch)?.reviewer === user.id);
    return { run: w.proposal.run ?? null, at: w.since, yours: mine && !starter(w.proposal.run) };
  });
  const deciders: readonly string[] = ESCALATION_DECIDERS;
  const escalations = writer.escalations().filter((x) => x.tenant === tenant).map(({ escalation: e }): Item => ({
    run: [...e.requests, ...(e.outranked ?? [])].map((r) => /^(run_[0-9a-f]{20}):/.exec(r.id)?.[1]).find((r) => r !== undefined) ?? null,
    at: e.since, yours: deciders.includes(user.role),
  }));
  const open = engine.exceptions.openOf(tenant);
  const exceptions = open.map((e): Item => ({ run: e.run, at: e.raisedAt, yours: qa || (e.severity === 'minor' && reviewer) }));
  const gates = engine.pendingApprovals(tenant).map((a): Item => ({ run: a.run, at: a.requestedAt, yours: qa && a.reviewer === user.id && !starter(a.run) }));
  return {
    moves: { ...count(moves), needs: { qa: writes.filter((w) => w.needs === 'qa').length, reviewer: writes.filter((w) => w.needs !== 'qa').length } },
    escalations: count(escalations),
    exceptions: { ...count(exceptions), blocking: open.filter((e) => e.severity !== 'minor').length },
    gates: count(gates),
  };
}

export function registerWaitingRoutes(app: Api, ctx: ApiContext): void {
  app.get(`${BASE}/waiting`, {
    // counts, not contents: every reading role (an operator learns what waits and for whom); the items themselves
    // stay behind their own routes' guards (GET /approvals is not an operator's)
    onRequest: ctx.guard(READERS, 'see what waits for a person'),
    schema: {
      tags: ['approvals'],
      summary: 'What waits for a person, counted: setpoint moves waiting for a signature, arbitration deadlocks, open exceptions of the tenant\'s runs and batch releases at the gate — each with how many the caller may decide, the runs concerned and since when',
      security: [{ bearer: [] }], params: TenantParams, response: { 200: WaitingView, ...PROBLEM_RESPONSES },
    },
  }, async (req) => waitingFor(ctx, req.params.tenant, userOf(req)));
}
