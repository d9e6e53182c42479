/**
 * Arbitration deadlocks a person resolves: GET the tenant's pending escalations (both sides: agents, targets,
 * rank, since) and POST a decision with a reason. The decision goes through the guarded writer's own `resolve`
 * (audited `arbitration.resolve` with who and why, in the same transaction as the new ownership): the chosen
 * request owns the setpoint by the arbitration rules, the others are declined (HUMAN_DECISION). Nothing is
 * written to the equipment here — the winner's agent proposes again and its move passes the whole guard.
 * An escalation's id is its setpoint (one deadlock per setpoint at a time); another tenant's is 404 (R1).
 */
import type { z } from 'zod';
import type { ArbitrationRequest, Escalation } from '../arbitration/index.js';
import type { RequestedValue } from '../domain/policy.js';
import { LkError } from '../errors.js';
import { READERS, userOf } from './auth.js';
import { BASE, type Api, type ApiContext } from './context.js';
import { PROBLEM_RESPONSES } from './problem.js';
import { EscalationDecisionBody, EscalationDecisionView, EscalationList, EscalationParams, TenantParams, type EscalationView } from './schemas.js';

const security = [{ bearer: [] }];
const problems = PROBLEM_RESPONSES;

/** The roles that may decide a deadlock (the bundle's reviewer and QA roles decide again inside the writer). */
export const ESCALATION_DECIDERS = ['process_engineer', 'qa_reviewer'] as const;

/** A requested value as a person reads it: `13 kN`. */
export function targetText(v: RequestedValue): string {
  return typeof v === 'object' ? `${v.value} ${v.unit}` : String(v);
}

const iso = (ms: number): string => new Date(ms).toISOString();
const side = (r: ArbitrationRequest) => ({ requestId: r.id, agent: r.agent, target: targetText(r.value), attribute: r.attribute, justification: r.justification, at: iso(r.at) });

/** The runs of the requests: the run engine's request ids start with the run id. */
function runsOf(e: Escalation): string[] {
  return [...new Set([...e.requests, ...(e.outranked ?? [])].flatMap((r) => /^(run_[0-9a-f]{20}):/.exec(r.id)?.[1] ?? []))];
}

function view(e: Escalation): z.output<typeof EscalationView> {
  return {
    id: e.setpoint, setpoint: e.setpoint, reason: e.reason, score: e.score, rank: e.score >= 2 ? 'quality' : 'throughput', since: iso(e.since),
    sides: e.requests.map(side), outranked: (e.outranked ?? []).map(side), runs: runsOf(e), holds: true,
  };
}

export function registerArbitrationRoutes(app: Api, ctx: ApiContext): void {
  const { writer } = ctx.daemon;
  const mine = (tenant: string): Escalation[] => writer.escalations().filter((x) => x.tenant === tenant).map((x) => x.escalation);

  app.get(`${BASE}/arbitration/escalations`, {
    onRequest: ctx.guard(READERS, 'read arbitration escalations'),
    schema: {
      tags: ['arbitration'], summary: 'Pending arbitration deadlocks of the tenant (equal rank, different targets): both sides with agent, target, attribute and rank, and since when — waiting for a person',
      security, params: TenantParams, response: { 200: EscalationList, ...problems },
    },
  }, async (req) => ({ items: mine(req.params.tenant).map(view) }));

  app.post(`${BASE}/arbitration/escalations/:id`, {
    onRequest: ctx.guard([...ESCALATION_DECIDERS], 'decide an arbitration deadlock'),
    schema: {
      tags: ['arbitration'], summary: 'Decide a deadlock as the signed-in person, with a reason (audited): the chosen request owns the setpoint, the others are declined. Nothing is written to the equipment: the winner\'s agent proposes again through the guarded writer',
      security, params: EscalationParams, body: EscalationDecisionBody, response: { 200: EscalationDecisionView, ...problems },
    },
  }, async (req) => {
    const user = userOf(req);
    const { tenant, id } = req.params;
    const esc = mine(tenant).find((e) => e.setpoint === id);
    if (!esc) throw new LkError('LK_NOT_FOUND', `no escalation ${id}`, { escalation: id });
    const reason = req.body.reason.trim();
    if (reason.length === 0) throw new LkError('LK_VALIDATION', 'a decision needs a reason', { issues: [{ path: 'body.reason', message: 'required' }] });
    if (!esc.requests.some((r) => r.id === req.body.choose)) {
      throw new LkError('LK_VALIDATION', `"${req.body.choose}" is not a side of this deadlock`, { issues: [{ path: 'body.choose', message: `one of ${esc.requests.map((r) => r.id).join(', ')}` }] });
    }
    const r = await writer.resolve(tenant, id, { requestId: req.body.choose, by: { person: user.id, role: user.role }, reason });
    const w = r.winners[0]!;
    return {
      setpoint: id, decidedBy: user.id, role: user.role, reason,
      winner: side(w.request),
      declined: r.declined.map((d) => ({ ...side(d.request), reason: d.reason })),
    };
  });
}
