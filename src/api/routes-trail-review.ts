/**
 * The review of the audit trail (EU GMP Annex 11 §9), src/audit/review.ts: `GET /audit/review` shows a run's
 * (or a period's) trail GMP-relevant changes first with the routine traffic counted, `POST /audit/reviews`
 * records that a named reviewer reviewed it — a Part 11 signature (the password is checked again) in a
 * signed audit entry, its meaning one of the site's signature meanings and the reviewer's comment beside it — and `GET /audit/reviews` lists the reviews. A batch's release package states whether
 * its trail was reviewed (src/engine/run/steps/release.ts).
 */
import { z } from 'zod';
import { checkPeriodSize, isRunScope, parsePeriod, reviewsOf, reviewView, scopeEntries, signTrailReview, TRAIL_CATEGORIES, type TrailReviewRecord, type TrailScope } from '../audit/review.js';
import type { AuditEntry } from '../audit/entry.js';
import { manifestationMeaning, MEANING_VALUES } from '../domain/signature-meanings.js';
import { json } from '../engine/json.js';
import { LkError } from '../errors.js';
import { userOf } from './auth.js';
import { BASE, type Api, type ApiContext } from './context.js';
import { PROBLEM_RESPONSES } from './problem.js';
import { meaningOf } from './routes-signatures.js';
import { MeaningChoice, TenantParams } from './schemas.js';

const security = [{ bearer: [] }];
const problems = PROBLEM_RESPONSES;
const iso = z.iso.datetime({ offset: false });
const runId = z.string().regex(/^run_[A-Za-z0-9_-]{1,64}$/, 'run id must be run_<token>');

const ScopeQuery = z.strictObject({
  run: runId.optional().describe('the run whose trail is reviewed'),
  from: iso.optional().describe('start of a period (inclusive, UTC), with to'),
  to: iso.optional().describe('end of a period (exclusive, UTC), with from'),
});
const ReviewBody = ScopeQuery.extend({
  through: z.number().int().positive().optional().describe('the last entry the reviewer saw (the view\'s `last`): entries in scope after it are not part of this review'),
  digest: z.string().regex(/^[0-9a-f]{64}$/).optional().describe('the view\'s `digest`: when given, the review is signed only if the entries in scope (through `through`) are exactly the ones shown, else 409 LK_CONFLICT'),
  comment: z.string().trim().min(3).max(2000).describe('what the reviewer found, in words (required; "no findings" is a finding): signed beside the meaning'),
  meaning: MeaningChoice.optional().describe('one of the site\'s signature meanings for trail_review that fits the scope (GET /signature-meanings), by id or text; without it, the first that fits'),
  password: z.string().min(1).max(1024).describe('the reviewer\'s password, checked again: the review is an electronic signature (21 CFR 11.200)'),
});
const ListQuery = z.strictObject({ run: runId.optional() });

const Counts = z.object(Object.fromEntries(TRAIL_CATEGORIES.map((c) => [c, z.number().int()])) as Record<(typeof TRAIL_CATEGORIES)[number], z.ZodNumber>);
const Scope = z.union([z.object({ run: z.string() }), z.object({ from: z.string(), to: z.string() })]);
const ReviewRecordView = z.object({
  format: z.literal(1), kind: z.literal('audit_trail_review'), tenant: z.string(), scope: Scope, batch: z.string().optional(),
  entries: z.number().int(), first: z.number().int(), last: z.number().int(), digest: z.string(), counts: Counts,
  head: z.object({ seq: z.number().int(), hash: z.string() }), user: z.string(), name: z.string(), role: z.string(), meaning: z.string(),
  meaningId: z.string().optional().describe('the id of the site\'s signature meaning (absent on reviews signed before meanings were a controlled list)'), comment: z.string(), timestamp: z.string(),
});
export const ReviewView = z.object({
  seq: z.number().int().describe('the audit entry that records the review'), at: z.string(),
  record: ReviewRecordView, recordHash: z.string(), signature: z.string().describe('Ed25519 by the site key over the record\'s RFC 8785 canonical JSON, base64'), keyId: z.string(),
});
export const TrailView = z.object({
  tenant: z.string(), scope: Scope, batch: z.string().nullable(), entries: z.number().int(), first: z.number().int(), last: z.number().int(),
  digest: z.string().describe('SHA-256 over the hashes of every entry in scope, in chain order: what a review signs'),
  counts: Counts,
  shown: z.array(z.object({ category: z.enum(TRAIL_CATEGORIES), entry: z.record(z.string(), z.unknown()) })).describe('GMP-relevant entries first (signatures, setpoint writes, changes, reverts, exceptions), then the run\'s state and the accesses'),
  truncated: z.boolean(),
  routine: z.record(z.string(), z.number().int()).describe('routine entries (tool calls and results, allowed policy decisions, arbitration rounds) counted per action, not listed'),
  reviews: z.array(ReviewView).describe('the reviews of this scope already recorded, oldest first'),
});

/** The entries of `it` up to seq `through` (all when undefined). */
function* upTo(it: Iterable<AuditEntry>, through: number | undefined): Generator<AuditEntry> {
  for (const e of it) {
    if (through !== undefined && e.seq > through) return;
    yield e;
  }
}

export function registerTrailReviewRoutes(app: Api, ctx: ApiContext): void {
  const d = ctx.daemon;
  /** The scope of a request, and the run's batch; an unknown run is LK_NOT_FOUND (of this tenant only: R1). */
  const scopeOf = (tenant: string, q: { run?: string | undefined; from?: string | undefined; to?: string | undefined }, where: 'querystring' | 'body'): { scope: TrailScope; batch?: string } => {
    if (q.run !== undefined) {
      if (q.from !== undefined || q.to !== undefined) throw new LkError('LK_VALIDATION', 'a review is of one run or of one period, not both', { issues: [{ path: `${where}.run`, message: 'run, or from and to' }] });
      return { scope: { run: q.run }, batch: d.engine.get(tenant, q.run).batch };
    }
    if (q.from === undefined || q.to === undefined) throw new LkError('LK_VALIDATION', 'name a run, or a period with from and to', { issues: [{ path: `${where}.${q.from === undefined ? 'from' : 'to'}`, message: 'required without run' }] });
    const period = parsePeriod(q.from, q.to, where);
    checkPeriodSize(d.store.db, tenant, period, { path: `${where}.to` });
    return { scope: period };
  };
  const qaRoles = (): readonly string[] => d.policy.bundle?.content.approvers.qa ?? ['qa_reviewer'];

  app.get(`${BASE}/audit/review`, {
    onRequest: ctx.guard(['auditor', 'qa_reviewer'], 'review the audit trail'),
    schema: {
      tags: ['audit'], summary: 'A run\'s or a period\'s audit trail as a reviewer reads it (Annex 11 §9): GMP-relevant changes first, routine traffic counted, the reviews already recorded',
      security, params: TenantParams, querystring: ScopeQuery, response: { 200: TrailView, ...problems },
    },
  }, async (req) => {
    const tenant = req.params.tenant;
    const { scope, batch } = scopeOf(tenant, req.query, 'querystring');
    const v = reviewView(tenant, scope, scopeEntries(d.store.db, tenant, scope));
    const reviews = reviewsOf(d.store.db, tenant, isRunScope(scope) ? scope.run : undefined)
      .filter((r) => isRunScope(scope) || (!isRunScope(r.record.scope) && r.record.scope.from === scope.from && r.record.scope.to === scope.to));
    return { ...v, batch: batch ?? null, shown: v.shown.map((s) => ({ category: s.category, entry: s.entry as unknown as Record<string, unknown> })), reviews: reviews as unknown as z.output<typeof ReviewView>[] };
  });

  app.get(`${BASE}/audit/reviews`, {
    onRequest: ctx.guard(['auditor', 'qa_reviewer'], 'read the audit trail'),
    schema: { tags: ['audit'], summary: 'The reviews of the tenant\'s audit trail recorded so far (of one run with ?run=), oldest first', security, params: TenantParams, querystring: ListQuery, response: { 200: z.object({ items: z.array(ReviewView) }), ...problems } },
  }, async (req) => {
    const tenant = req.params.tenant;
    if (req.query.run !== undefined) d.engine.get(tenant, req.query.run);
    return { items: reviewsOf(d.store.db, tenant, req.query.run) as unknown as z.output<typeof ReviewView>[] };
  });

  app.post(`${BASE}/audit/reviews`, {
    onRequest: ctx.guard(['process_engineer', 'qa_reviewer', 'auditor'], 'record audit-trail reviews'),
    schema: {
      tags: ['audit'],
      summary: 'Record that the signed-in reviewer reviewed a run\'s or a period\'s audit trail (Annex 11 §9), with a comment: a Part 11 signature (password checked again) by a role of the policy bundle\'s approvers.qa, over the scope, the entries in it (their digest), the chain head, the meaning and the time; recorded as a signed audit entry',
      security, params: TenantParams, body: ReviewBody, response: { 201: ReviewView, ...problems },
    },
  }, async (req, reply) => {
    const user = userOf(req);
    const tenant = req.params.tenant;
    const { comment, password, through, digest, meaning: chosen, ...q } = req.body;
    const { scope, batch } = scopeOf(tenant, q, 'body');
    const roles = qaRoles();
    if (!roles.includes(user.role)) {
      d.store.audit.append({ tenant, actor: user.id, kind: 'approval', action: 'audit.review_refused', subject: { reviewer: user.id, ...(isRunScope(scope) ? { run: scope.run } : {}) }, args: json({ scope, role: user.role }), reason: `an audit-trail review is signed by ${roles.join(', ')}, not a ${user.role}` });
      throw new LkError('LK_APPROVAL_FORBIDDEN', `an audit-trail review is signed by ${roles.join(', ')}, not a ${user.role}`, { role: user.role });
    }
    const meaning = meaningOf(ctx, 'trail_review', chosen, MEANING_VALUES.trail_review(scope, batch));
    await ctx.identity.reauthenticateSigner(user, password, { tenant, act: 'audit.review', ...(isRunScope(scope) ? { run: scope.run } : {}) });
    // what is signed is computed and appended in one transaction: no entry can fall between the view and the record
    const out = d.store.tx(({ audit }) => {
      const v = reviewView(tenant, scope, upTo(scopeEntries(d.store.db, tenant, scope), through), 0);
      if (digest !== undefined && v.digest !== digest) {
        throw new LkError('LK_CONFLICT', `the audit trail in scope is not the one reviewed (${v.entries} entries through #${v.last} now): read it again and sign what you read`, { digest: v.digest, entries: v.entries, last: v.last });
      }
      const head = audit.head(tenant);
      const record: TrailReviewRecord = {
        format: 1, kind: 'audit_trail_review', tenant, scope, ...(batch ? { batch } : {}), entries: v.entries, first: v.first, last: v.last, digest: v.digest, counts: v.counts,
        head: { seq: head.seq, hash: head.hash }, user: user.id, name: user.name, role: user.role, meaning: meaning.text, meaningId: meaning.id, comment, timestamp: new Date(ctx.clock.now()).toISOString(),
      };
      const signed = signTrailReview(audit.siteKey(), record);
      const e = audit.append({
        tenant, actor: user.id, kind: 'audit_review', action: 'audit.review',
        subject: { reviewer: user.id, ...(isRunScope(scope) ? { run: scope.run } : {}), ...(batch ? { batch } : {}) },
        args: json({ scope, comment, meaningId: meaning.id }), result: json(signed),
        signature: { user: user.id, name: user.name, meaning: manifestationMeaning(meaning.text), time: record.timestamp, value: signed.signature },
      });
      return { seq: e.seq, at: e.ts, ...signed };
    });
    void reply.code(201);
    return out as unknown as z.output<typeof ReviewView>;
  });
}
