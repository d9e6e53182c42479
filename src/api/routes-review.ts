/**
 * What the review console needs beyond the run routes: the audit trail's export and its verify status, the
 * release package's files (autonomy is routes-autonomy.ts, a model's lifecycle routes-models.ts).
 *
 * An export is a copy of the records leaving the system and a verify is a check of their integrity, so each is
 * itself recorded on the tenant's chain (`audit_access`, `audit.export` / `audit.verify`): who (and role), the
 * format, the filter, how many entries, the last seq covered and the SHA-256 of the bytes handed out. The entry is
 * appended after the content is computed — an export never contains its own record — and before it is sent: an
 * export whose record cannot be written is not sent (fail-safe). Plain reads (GET /audit, the console's search)
 * are not recorded on the chain: they change nothing, and a record per page would bury the trail in its own reads.
 */
import { createHash } from 'node:crypto';
import { createReadStream, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FastifyReply } from 'fastify';
import { z } from 'zod';
import { CSV_COLUMNS, csvRow } from '../audit/export-csv.js';
import { exportPdf } from '../audit/export-pdf.js';
import { AuditFilter, bundleLines, iterateAudit, parseFilter, queryAudit, querySitePeople, SITE_TENANT, verifyStore } from '../audit/index.js';
import { json } from '../engine/json.js';
import { LkError } from '../errors.js';
import { READERS, userOf } from './auth.js';
import type { AuthUser } from './identity.js';
import { BASE, type Api, type ApiContext } from './context.js';
import { PROBLEM_RESPONSES } from './problem.js';
import { AuditPageView, AuditQuery, RunParams, TenantParams } from './schemas.js';

const security = [{ bearer: [] }];
const problems = PROBLEM_RESPONSES;

// the filter of GET /audit, validated at the boundary the same way (a bad field is named as querystring.<field>)
const ExportQuery = AuditFilter.extend({
  format: z.enum(['jsonl', 'csv', 'pdf']).describe('jsonl: the signed bundle that verifies offline; csv: one row per entry; pdf: the readable report'),
});
const VerifyView = z.object({
  tenant: z.string(), ok: z.boolean(), count: z.number().int(), head: z.object({ seq: z.number().int(), hash: z.string() }),
  checkpoints: z.number().int(), unanchored: z.number().int(), damage: z.object({ kind: z.string(), seq: z.number().nullable(), detail: z.string() }).nullable(), keyId: z.string().nullable(),
});
// the files handed out, documented by their media types (the body of a text format is its text; a PDF is bytes)
const Text = (what: string) => z.string().describe(what);
const Pdf = z.string().meta({ contentMediaType: 'application/pdf' }).describe('a PDF document (bytes)');
const ExportFile = {
  description: 'The export, as an attachment (content-disposition names the file), in the format asked for',
  content: {
    'application/x-ndjson': { schema: Text('format=jsonl: the signed bundle, one JSON object a line (header, entries, checkpoints), that `linekeeper audit verify --bundle` checks offline') },
    'text/csv': { schema: Text('format=csv: one row per entry, RFC 4180, with a header row') },
    'application/pdf': { schema: Pdf },
  },
};
const ReleaseFile = {
  description: 'The file of the release package asked for, as an attachment',
  content: {
    'application/json': { schema: z.record(z.string(), z.unknown()).describe('file=json: release.json, the signed release record of the run') },
    'application/pdf': { schema: Pdf },
    'application/x-ndjson': { schema: Text('file=bundle: the run\'s audit bundle, one JSON object a line, that verifies offline') },
  },
};
const ReleaseQuery = z.strictObject({ file: z.enum(['json', 'pdf', 'bundle']).default('json').describe('release.json, release.pdf or the audit bundle') });

export function registerReviewRoutes(app: Api, ctx: ApiContext): void {
  const d = ctx.daemon;
  /** Record an export or a verify of `tenant`'s trail by `user`, after it was computed (see the file comment). */
  const recordAccess = (tenant: string, user: AuthUser, action: 'audit.export' | 'audit.verify', args: Record<string, unknown>, result: Record<string, unknown>): number =>
    d.store.tx(({ audit }) => audit.append({ tenant, actor: user.id, kind: 'audit_access', action, args: json({ role: user.role, ...args }), result: json(result) }).seq);
  const sha256 = (b: Buffer | string): string => createHash('sha256').update(b).digest('hex');

  app.get(`${BASE}/audit/export`, {
    onRequest: ctx.guard(['auditor', 'qa_reviewer'], 'export the audit trail'),
    schema: { tags: ['audit'], summary: 'Export the tenant\'s audit trail (filtered as GET /audit): a JSONL bundle that verifies offline, CSV or a PDF report', security, params: TenantParams, querystring: ExportQuery, response: { 200: ExportFile, ...problems } },
  }, async (req, res) => {
    const reply = res as unknown as FastifyReply;
    const user = userOf(req);
    const { format, ...rest } = req.query;
    const tenant = req.params.tenant;
    const filter = parseFilter(rest);
    const through = d.store.audit.head(tenant).seq;
    const record = (bytes: Buffer | string, entries: number): void => {
      recordAccess(tenant, user, 'audit.export', { format, filter }, { entries, through, bytes: Buffer.byteLength(bytes), sha256: sha256(bytes) });
    };
    const stamp = new Date(ctx.clock.now()).toISOString().replace(/[:.]/g, '-');
    const name = `${tenant}-audit-${stamp}.${format}`;
    reply.header('content-disposition', `attachment; filename="${name}"`);
    if (format === 'pdf') {
      const dir = mkdtempSync(join(tmpdir(), 'lk-export-'));
      try {
        const file = join(dir, name);
        const pdf = await exportPdf({ db: d.store.db, dataDir: d.loaded.dataDir }, tenant, filter, file, { now: ctx.clock.now(), siteName: d.loaded.config.site.id, timezone: d.loaded.config.site.timezone });
        const bytes = readFileSync(file);
        record(bytes, pdf.entries);
        return reply.type('application/pdf').send(bytes);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    }
    if (format === 'csv') {
      let text = `${CSV_COLUMNS.join(',')}\r\n`;
      let n = 0;
      for (const e of iterateAudit(d.store.db, tenant, filter, { toSeq: through })) {
        text += `${csvRow(e)}\r\n`; // one row per entry (RFC 4180 line ends), as the CLI writes it
        n++;
      }
      record(text, n);
      return reply.type('text/csv; charset=utf-8').send(text);
    }
    const lines = [...bundleLines(d.store, tenant, filter)];
    const header = JSON.parse(lines[0]!) as { selected?: [number, number][] };
    const text = `${lines.join('\n')}\n`;
    record(text, (header.selected ?? []).reduce((n, [a, b]) => n + b - a + 1, 0));
    return reply.type('application/x-ndjson; charset=utf-8').send(text);
  });

  app.get(`${BASE}/audit/verify`, {
    onRequest: ctx.guard(['auditor', 'qa_reviewer'], 'verify the audit trail'),
    schema: { tags: ['audit'], summary: 'Recompute the tenant\'s chain and checkpoints: whether it verifies, its head, the first damage', security, params: TenantParams, response: { 200: VerifyView, ...problems } },
  }, async (req) => {
    const tenant = req.params.tenant;
    const user = userOf(req);
    let view: z.output<typeof VerifyView>;
    if (!d.store.audit.chains().includes(tenant)) view = { tenant, ok: true, count: 0, head: { seq: 0, hash: '' }, checkpoints: 0, unanchored: 0, damage: null, keyId: null };
    else {
      const r = verifyStore({ db: d.store.db, dataDir: d.loaded.dataDir }, { tenant });
      const c = r.chains.find((x) => x.tenant === tenant);
      const damage = c?.damage ?? r.problems[0] ?? null;
      view = { tenant, ok: r.ok, count: c?.count ?? 0, head: c?.head ?? { seq: 0, hash: '' }, checkpoints: c?.checkpoints ?? 0, unanchored: c?.unanchored ?? 0, damage, keyId: r.keyId };
    }
    // what the person was shown, recorded after it was computed (the count and head are the chain's before this entry)
    recordAccess(tenant, user, 'audit.verify', {}, { ok: view.ok, count: view.count, head: view.head.seq, damage: view.damage ? { kind: view.damage.kind, seq: view.damage.seq } : null });
    return view;
  });

  app.get(`${BASE}/audit/people`, {
    onRequest: ctx.guard(['auditor', 'qa_reviewer'], 'read the audit trail'),
    schema: {
      tags: ['audit'],
      summary: 'What the tenant\'s people did and what happened to their accounts, from the site chain: sign-ins and failed attempts, re-authentications for a signature, sign-outs, password changes, locks, accounts created, enabled or disabled',
      description: 'Entries of the site chain (kind identity) about a local user of this tenant or a person the identity provider signed in for it; `actor` is the person (what they did, and what was done about their account — a failed attempt is made by `system` and names the account). Another tenant\'s people, the node\'s own events and attempts at an id that is nobody of this tenant are not shown. Same filters and paging as GET /audit; the entries verify on the site chain.',
      security, params: TenantParams, querystring: AuditQuery, response: { 200: AuditPageView, ...problems },
    },
  }, async (req) => {
    const { cursor, limit, ...filter } = req.query;
    const people = ctx.identity.users.all().filter((u) => u.tenants.includes(req.params.tenant)).map((u) => u.id);
    const page = querySitePeople(d.store.db, SITE_TENANT, req.params.tenant, people, filter, { limit, ...(cursor !== undefined ? { cursor } : {}) });
    return { items: page.entries as unknown as Record<string, unknown>[], ...(page.next ? { next: page.next } : {}) };
  });

  app.get(`${BASE}/runs/:id/release`, {
    onRequest: ctx.guard(READERS, 'download release packages'),
    schema: { tags: ['runs'], summary: 'A file of the run\'s release package: release.json, release.pdf or the audit bundle (JSONL)', security, params: RunParams, querystring: ReleaseQuery, response: { 200: ReleaseFile, ...problems } },
  }, async (req, res) => {
    const reply = res as unknown as FastifyReply;
    const run = d.engine.get(req.params.tenant, req.params.id);
    if (!run.release) throw new LkError('LK_NOT_FOUND', `run ${run.id} has no release package yet`, { run: run.id });
    const path = d.engine.releaseFile(req.params.tenant, run.id, req.query.file);
    if (path === null || !statSync(path, { throwIfNoEntry: false })?.isFile()) throw new LkError('LK_NOT_FOUND', `the release ${req.query.file} of ${run.id} is not on this node`, { run: run.id });
    const types = { json: 'application/json', pdf: 'application/pdf', bundle: 'application/x-ndjson' } as const;
    const names = { json: 'release.json', pdf: 'release.pdf', bundle: `${run.batch}-audit-bundle.jsonl` } as const;
    reply.header('content-disposition', `attachment; filename="${run.batch}-${names[req.query.file]}"`);
    return reply.type(types[req.query.file]).send(createReadStream(path));
  });
}
