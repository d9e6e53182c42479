/**
 * What the review console needs beyond the run routes: the audit trail's export and its verify status, the
 * release package's files (autonomy is routes-autonomy.ts, a model's lifecycle routes-models.ts).
 */
import { createReadStream, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { isAbsolute, join, relative, resolve } from 'node:path';
import type { FastifyReply } from 'fastify';
import { z } from 'zod';
import { CSV_COLUMNS, csvRow } from '../audit/export-csv.js';
import { exportPdf } from '../audit/export-pdf.js';
import { AuditFilter, bundleLines, iterateAudit, parseFilter, queryAudit, SITE_TENANT, verifyStore } from '../audit/index.js';
import { LkError } from '../errors.js';
import { READERS, userOf } from './auth.js';
import { BASE, type Api, type ApiContext } from './context.js';
import { Problem } from './problem.js';
import { RunParams, TenantParams } from './schemas.js';

const security = [{ bearer: [] }];
const problems = { '4xx': Problem, '5xx': Problem };

// the filter of GET /audit, validated at the boundary the same way (a bad field is named as querystring.<field>)
const ExportQuery = AuditFilter.extend({
  format: z.enum(['jsonl', 'csv', 'pdf']).describe('jsonl: the signed bundle that verifies offline; csv: one row per entry; pdf: the readable report'),
});
const VerifyView = z.object({
  tenant: z.string(), ok: z.boolean(), count: z.number().int(), head: z.object({ seq: z.number().int(), hash: z.string() }),
  checkpoints: z.number().int(), unanchored: z.number().int(), damage: z.object({ kind: z.string(), seq: z.number().nullable(), detail: z.string() }).nullable(), keyId: z.string().nullable(),
});
const ReleaseQuery = z.strictObject({ file: z.enum(['json', 'pdf', 'bundle']).default('json').describe('release.json, release.pdf or the audit bundle') });

export function registerReviewRoutes(app: Api, ctx: ApiContext): void {
  const d = ctx.daemon;

  app.get(`${BASE}/audit/export`, {
    onRequest: ctx.guard(['auditor', 'qa_reviewer'], 'export the audit trail'),
    schema: { tags: ['audit'], summary: 'Export the tenant\'s audit trail (filtered as GET /audit): a JSONL bundle that verifies offline, CSV or a PDF report', security, params: TenantParams, querystring: ExportQuery, response: { ...problems } },
  }, async (req, res) => {
    const reply = res as unknown as FastifyReply;
    const { format, ...rest } = req.query;
    const tenant = req.params.tenant;
    const filter = parseFilter(rest);
    const stamp = new Date(ctx.clock.now()).toISOString().replace(/[:.]/g, '-');
    const name = `${tenant}-audit-${stamp}.${format}`;
    reply.header('content-disposition', `attachment; filename="${name}"`);
    if (format === 'pdf') {
      const dir = mkdtempSync(join(tmpdir(), 'lk-export-'));
      try {
        const file = join(dir, name);
        await exportPdf({ db: d.store.db, dataDir: d.loaded.dataDir }, tenant, filter, file, { now: ctx.clock.now(), siteName: d.loaded.config.site.id });
        return reply.type('application/pdf').send(readFileSync(file));
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    }
    if (format === 'csv') {
      let text = `${CSV_COLUMNS.join(',')}\r\n`;
      for (const e of iterateAudit(d.store.db, tenant, filter)) text += csvRow(e);
      return reply.type('text/csv; charset=utf-8').send(text);
    }
    return reply.type('application/x-ndjson; charset=utf-8').send(`${[...bundleLines(d.store, tenant, filter)].join('\n')}\n`);
  });

  app.get(`${BASE}/audit/verify`, {
    onRequest: ctx.guard(['auditor', 'qa_reviewer'], 'verify the audit trail'),
    schema: { tags: ['audit'], summary: 'Recompute the tenant\'s chain and checkpoints: whether it verifies, its head, the first damage', security, params: TenantParams, response: { 200: VerifyView, ...problems } },
  }, async (req) => {
    const tenant = req.params.tenant;
    if (!d.store.audit.chains().includes(tenant)) return { tenant, ok: true, count: 0, head: { seq: 0, hash: '' }, checkpoints: 0, unanchored: 0, damage: null, keyId: null };
    const r = verifyStore({ db: d.store.db, dataDir: d.loaded.dataDir }, { tenant });
    const c = r.chains.find((x) => x.tenant === tenant);
    const damage = c?.damage ?? r.problems[0] ?? null;
    return { tenant, ok: r.ok, count: c?.count ?? 0, head: c?.head ?? { seq: 0, hash: '' }, checkpoints: c?.checkpoints ?? 0, unanchored: c?.unanchored ?? 0, damage, keyId: r.keyId };
  });

  app.get(`${BASE}/runs/:id/release`, {
    onRequest: ctx.guard(READERS, 'download release packages'),
    schema: { tags: ['runs'], summary: 'A file of the run\'s release package: release.json, release.pdf or the audit bundle (JSONL)', security, params: RunParams, querystring: ReleaseQuery, response: { ...problems } },
  }, async (req, res) => {
    const reply = res as unknown as FastifyReply;
    const run = d.engine.get(req.params.tenant, req.params.id);
    if (!run.release) throw new LkError('LK_NOT_FOUND', `run ${run.id} has no release package yet`, { run: run.id });
    const root = resolve(d.loaded.dataDir);
    const path = resolve(root, run.release[req.query.file]);
    const rel = relative(root, path);
    if (rel.startsWith('..') || isAbsolute(rel) || !statSync(path, { throwIfNoEntry: false })?.isFile()) throw new LkError('LK_NOT_FOUND', `the release ${req.query.file} of ${run.id} is not on this node`, { run: run.id });
    const types = { json: 'application/json', pdf: 'application/pdf', bundle: 'application/x-ndjson' } as const;
    const names = { json: 'release.json', pdf: 'release.pdf', bundle: `${run.batch}-audit-bundle.jsonl` } as const;
    reply.header('content-disposition', `attachment; filename="${run.batch}-${names[req.query.file]}"`);
    return reply.type(types[req.query.file]).send(createReadStream(path));
  });
}
