/**
 * Runs, their event stream and genealogy, and the approvals waiting for a person. The routes parse, guard, call
 * the engine and map its errors: the engine audits every run and step change and every signature in the
 * transaction of the change; the API audits what only it sees (a signature refused to the person who tried).
 */
import type { FastifyReply } from 'fastify';
import { z } from 'zod';
import { within } from '../clock.js';
import { LkError } from '../errors.js';
import { releaseRefusal, type RunQuality } from '../engine/run/quality.js';
import { releaseDetail, writeDetail } from './approval-detail.js';
import { decideRelease, decideWrite } from './approvals.js';
import { bearer, READERS, userOf } from './auth.js';
import { BASE, type Api, type ApiContext } from './context.js';
import { PROBLEM_RESPONSES } from './problem.js';
import {
  ApprovalList, ApprovalParams, DecisionBody, GenealogyView, ListQuery, RunPage, RunParams, RunView, SignatureView, StartRunBody, StreamHeaders, StreamQuery, TenantParams, ToolCallLine, WriteDecisionView,
} from './schemas.js';

const security = [{ bearer: [] }];
const problems = PROBLEM_RESPONSES;

function encodeCursor(run: RunView): string {
  return Buffer.from(`${Date.parse(run.createdAt)}.${run.id}`).toString('base64url');
}

function decodeCursor(cursor: string): { createdAt: number; id: string } {
  const m = /^(\d{1,15})\.(run_[0-9a-z]{1,64})$/.exec(Buffer.from(cursor, 'base64url').toString('utf8'));
  if (!m) throw new LkError('LK_VALIDATION', 'cursor is not a cursor of this list', { issues: [{ path: 'querystring.cursor', message: 'not a cursor of this list' }] });
  return { createdAt: Number(m[1]), id: m[2]! };
}

const iso = (ms: number): string => new Date(ms).toISOString();

/**
 * What the route's response serializer does to a view — encode (validate, keep only the schema's fields) through
 * the RunView schema — as the engine's view cache runs it: once per state change of the run, not per request.
 * The engine's view is of the contract's type (src/contract/runs.ts), so no cast joins the two.
 */
const encodeRunView = (v: RunView): RunView => z.encode(RunView, v);
const JSON_UTF8 = 'application/json; charset=utf-8';

/** How long GET /approvals waits for the equipment's current values of pending moves before showing them as not read. */
const CURRENT_READ_DEADLINE_MS = 1_000;

export function registerRunRoutes(app: Api, ctx: ApiContext): void {
  const { engine } = ctx.daemon;

  app.post(`${BASE}/runs`, {
    onRequest: ctx.guard(['operator', 'process_engineer'], 'start a run'),
    schema: { tags: ['runs'], summary: 'Start a run from a free-text request and the batch record in the MES', security, params: TenantParams, body: StartRunBody, response: { 201: RunView, ...problems } },
  }, async (req, reply) => {
    const user = userOf(req);
    const run = engine.start({ tenant: req.params.tenant, request: req.body.request, ...(req.body.autonomy ? { autonomy: req.body.autonomy } : {}), by: user.id });
    return reply.code(201).header('location', `/v1/tenants/${run.tenant}/runs/${run.id}`).send(run);
  });

  app.get(`${BASE}/runs`, {
    onRequest: ctx.guard(READERS, 'list runs'),
    schema: { tags: ['runs'], summary: 'The tenant\'s runs, newest first, a page at a time', security, params: TenantParams, querystring: ListQuery, response: { 200: RunPage, ...problems } },
  }, async (req) => {
    const { limit, cursor } = req.query;
    const rows = engine.list(req.params.tenant, limit + 1, cursor === undefined ? undefined : decodeCursor(cursor));
    const items = rows.slice(0, limit);
    const last = items[items.length - 1];
    return rows.length > limit && last ? { items, next: encodeCursor(rows[limit - 1]!) } : { items };
  });

  app.get(`${BASE}/runs/:id`, {
    onRequest: ctx.guard(READERS, 'read runs'),
    // the response schema stays the contract (OpenAPI) and is applied, through encodeRunView, when the view is built
    schema: { tags: ['runs'], summary: 'A run: ordered steps, the approval gate, the genealogy pointer', security, params: RunParams, response: { 200: RunView, ...problems } },
  }, (req, reply) => {
    // the body is already JSON (a string with a JSON content type: fastify's serializer leaves it as it is)
    void (reply as unknown as FastifyReply).type(JSON_UTF8).send(engine.viewJson(req.params.tenant, req.params.id, encodeRunView));
  });

  app.get(`${BASE}/runs/:id/stream`, {
    // a HEAD would hold an event stream open with no body to read
    exposeHeadRoute: false,
    onRequest: ctx.guard(READERS, 'follow runs'),
    schema: {
      tags: ['runs'],
      summary: 'Server-sent events: one event per tool-call log line (id = line id, event = call|ok|error, data = the line), then `end`',
      description: 'Resume with the Last-Event-ID header (or ?after=): exactly the lines after it, then live. Keep-alive comments; at most a few streams per user (429).',
      security, params: RunParams, querystring: StreamQuery, headers: StreamHeaders,
      response: { 200: { description: 'text/event-stream', content: { 'text/event-stream': { schema: ToolCallLine } } }, ...problems },
    },
  }, async (req, reply) => {
    const header = req.headers['last-event-id'];
    const from = typeof header === 'string' ? header : req.query.after;
    // the stream ends at its next check once the session does (sign-out, account disabled, token not renewed)
    const alive = await ctx.identity.watch(bearer(req.headers.authorization));
    ctx.streams.start(reply, req.params.tenant, req.params.id, userOf(req).id, from === undefined ? 0 : Number(from), alive);
    return reply;
  });

  app.get(`${BASE}/runs/:id/genealogy`, {
    onRequest: ctx.guard(READERS, 'read genealogies'),
    schema: { tags: ['runs'], summary: 'The batch genealogy: time-aligned states, actions, approvals, QC results, losing arbitration requests', security, params: RunParams, response: { 200: GenealogyView, ...problems } },
  }, async (req) => {
    const run = engine.get(req.params.tenant, req.params.id);
    const events = engine.runs.events(run.id);
    const losing = events
      .filter((e) => e.kind === 'arbitration')
      .flatMap((e) => ((e.data as { declined?: { agent: string; setpoint: string; score: number; reason: string }[] } | null)?.declined ?? []).map((d) => ({ at: iso(e.at), agent: d.agent, setpoint: d.setpoint, score: d.score, reason: d.reason })));
    return {
      run: run.id, batch: run.batch, status: run.status,
      events: events.map((e) => ({ id: e.id, at: iso(e.at), kind: e.kind, step: e.step, agent: e.agent, tag: e.tag, summary: e.summary, data: e.data })),
      losingRequests: losing, release: run.release,
    };
  });

  app.get(`${BASE}/approvals`, {
    onRequest: ctx.guard(['process_engineer', 'qa_reviewer', 'auditor'], 'see approvals'),
    schema: { tags: ['approvals'], summary: 'What waits for a person: batch releases at the gate and setpoint writes waiting for QA or the assigned reviewer',
      description: 'A setpoint write\'s `detail.table` gives each move now → proposed in the setpoint\'s unit against the approved design-space limits and maximum step of the bundle in force, `detail.serves` what the move serves as the agent reasoned it and `detail.predicted` the twin\'s prediction it gave; a batch release\'s `detail` restates its disposition (the specification table\'s verdict and counts, every exception and who closed it).',
      security, params: TenantParams, response: { 200: ApprovalList, ...problems } },
  }, async (req) => {
    const tenant = req.params.tenant;
    const releases = engine.pendingApprovals(tenant).map((a) => {
      const run = engine.runs.runById(a.run);
      // what the specification table allows before anyone opens the dialog (a FAIL leaves only a rejection), and the
      // disposition the dialog restates: the table's verdict and counts, the exceptions and who closed each
      const quality = run?.data['quality'] as RunQuality | undefined;
      const detail = releaseDetail(quality, releaseRefusal(quality, run?.batch ?? ''), engine.exceptionsOf(tenant, a.run));
      return { id: a.id, kind: 'batch_release' as const, run: a.run, batch: run?.batch ?? null, needs: 'qa', reviewer: a.reviewer, requestedAt: iso(a.requestedAt), recordHash: a.recordHash, detail };
    });
    const pending = ctx.daemon.writer.pending().filter((w) => w.proposal.tenant === tenant);
    // what the equipment holds now, read as the writer reads it — only while the line is idle or runs this tenant's
    // batch (R9), as GET /line shows values
    const active = engine.runs.activeOnLine(ctx.daemon.loaded.config.line.id);
    const visible = active === null || active.tenant === tenant;
    const setpoints = [...new Set(pending.flatMap((w) => w.proposal.moves.map((m) => m.setpoint)))];
    // bounded: a slow or reconnecting device makes the column "not read", never the list late
    const now = visible && setpoints.length ? await within(ctx.daemon.writer.current(setpoints), CURRENT_READ_DEADLINE_MS, new Map<string, number | null>()) : new Map<string, number | null>();
    const at = ctx.clock.now();
    const bundle = ctx.daemon.policy.bundle;
    const writes = pending.map((w) => ({
      id: w.id, kind: 'setpoint_write' as const, run: w.proposal.run ?? null, batch: w.proposal.batch, needs: w.needs,
      reviewer: w.needs === 'reviewer' ? (engine.batches(tenant, w.proposal.batch)?.reviewer ?? null) : null,
      requestedAt: iso(w.since), recordHash: w.vectorHash,
      detail: writeDetail(w, bundle, now, at),
    }));
    return { items: [...releases, ...writes] };
  });

  app.post(`${BASE}/approvals/:id`, {
    onRequest: ctx.guard(['process_engineer', 'qa_reviewer'], 'decide approvals'),
    schema: {
      tags: ['approvals'],
      summary: 'Sign a decision (21 CFR 11.50/11.70/11.200): a batch release by its named QA reviewer, or a pending setpoint write — needs_qa by a QA reviewer, an L2 review by the batch\'s assigned reviewer or QA — never by whoever started the run; the signer is the signed-in user, re-authenticated with the password',
      description: 'The id is an approval id from GET /approvals: `apr_…` (batch release: answers the signature) or `pw_…` (setpoint write: answers the signature and what the guarded writer did, re-evaluating the vector at call time). A setpoint write needs `recordHash`, the vector hash the reviewer saw.',
      security, params: ApprovalParams, body: DecisionBody, response: { 200: z.union([SignatureView, WriteDecisionView]), ...problems },
    },
  }, async (req) => {
    const user = userOf(req);
    const { tenant, id } = req.params;
    const write = ctx.daemon.writer.pending().find((w) => w.id === id && w.proposal.tenant === tenant);
    if (write) return decideWrite(ctx, user, tenant, write, req.body);
    // a move withdrawn (superseded, its step or run ended) is refused before any password is asked: nothing is signed
    const withdrawn = id.startsWith('pw_') ? ctx.daemon.writer.withdrawn(tenant, id) : null;
    if (withdrawn !== null) throw new LkError('LK_MOVE_WITHDRAWN', `move ${id} was withdrawn (${withdrawn}): it can no longer be signed`, { approval: id, reason: withdrawn });
    return decideRelease(ctx, user, tenant, id, req.body);
  });
}
