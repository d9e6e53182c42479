/**
 * What the review console needs beyond the run routes: the audit trail's export and its verify status, the
 * release package's files, autonomy per agent and setpoint with its history, and a model's lifecycle change.
 * Raising autonomy and changing a model's status are signed acts: the signed-in person re-enters the password
 * (21 CFR 11.200) and the change is audited under their identity; lowering autonomy is one act of anyone who
 * works the line (taking autonomy away must never be harder than granting it).
 */
import { createReadStream, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { isAbsolute, join, relative, resolve } from 'node:path';
import type { FastifyReply } from 'fastify';
import { z } from 'zod';
import { CSV_COLUMNS, csvRow } from '../audit/export-csv.js';
import { exportPdf } from '../audit/export-pdf.js';
import { AuditFilter, bundleLines, iterateAudit, parseFilter, queryAudit, SITE_TENANT, verifyStore } from '../audit/index.js';
import { AUTONOMY_LEVELS, levelRank, type AutonomyLevel } from '../domain/policy.js';
import { ANY, autonomyRows, setAutonomy } from '../engine/autonomy-store.js';
import { LkError } from '../errors.js';
import { changeStatus } from '../models/change.js';
import { modelRow } from '../models/registry.js';
import type { PolicyBundle } from '../policy/index.js';
import { READERS, userOf } from './auth.js';
import { BASE, type Api, type ApiContext } from './context.js';
import { Problem } from './problem.js';
import { RunParams, TenantParams } from './schemas.js';

const security = [{ bearer: [] }];
const problems = { '4xx': Problem, '5xx': Problem };
const password = z.string().min(1).max(1024).describe('the signed-in person\'s password, checked again (21 CFR 11.200)');

// the filter of GET /audit, validated at the boundary the same way (a bad field is named as querystring.<field>)
const ExportQuery = AuditFilter.extend({
  format: z.enum(['jsonl', 'csv', 'pdf']).describe('jsonl: the signed bundle that verifies offline; csv: one row per entry; pdf: the readable report'),
});
const VerifyView = z.object({
  tenant: z.string(), ok: z.boolean(), count: z.number().int(), head: z.object({ seq: z.number().int(), hash: z.string() }),
  checkpoints: z.number().int(), unanchored: z.number().int(), damage: z.object({ kind: z.string(), seq: z.number().nullable(), detail: z.string() }).nullable(), keyId: z.string().nullable(),
});
const ReleaseQuery = z.strictObject({ file: z.enum(['json', 'pdf', 'bundle']).default('json').describe('release.json, release.pdf or the audit bundle') });
const Level = z.enum(AUTONOMY_LEVELS);
const AutonomyView = z.object({
  bundleVersion: z.string(),
  raiseRoles: z.record(z.string(), z.array(z.string())),
  agents: z.array(z.object({ agent: z.string(), level: Level, bundleLevel: Level })),
  setpoints: z.array(z.object({ setpoint: z.string(), level: Level, bundleLevel: Level })),
  overrides: z.array(z.object({ agent: z.string(), setpoint: z.string(), level: Level, changedBy: z.string(), role: z.string().nullable(), changeRef: z.string().nullable(), reason: z.string().nullable(), changedAt: z.string() })),
  history: z.array(z.object({ seq: z.number().int(), ts: z.string(), actor: z.string(), action: z.string(), subject: z.unknown(), from: z.unknown(), to: z.unknown(), changeRef: z.string().nullable(), reason: z.string().nullable(), role: z.string().nullable() })),
});
const AutonomyBody = z.strictObject({
  agent: z.string().regex(/^agent\.[a-z][a-z0-9_]*$/).optional(),
  setpoint: z.string().regex(/^[a-z][a-z0-9_]*\.[A-Za-z][A-Za-z0-9_]*$/).optional(),
  to: Level,
  changeRef: z.string().min(3).max(100).optional().describe('change-control reference; required to raise'),
  reason: z.string().min(1).max(500).optional(),
  password: password.optional().describe('required to raise: the raise is signed by the signed-in person'),
});
const AutonomyChangeView = z.object({ type: z.string(), from: Level, to: Level, by: z.object({ person: z.string(), role: z.string() }).nullable(), changeRef: z.string().nullable(), reason: z.string().nullable(), at: z.string(), auditSeq: z.number().int().nullable(), signed: z.object({ name: z.string(), user: z.string(), meaning: z.string(), at: z.string() }).nullable() });
// any id-like string: an unknown one (or another tenant's) is 404 from the registry, as every object of the API
const ModelParams = TenantParams.extend({ id: z.string().regex(/^[A-Za-z0-9_.:-]{1,100}$/, 'a model id is <analyte>-<family>-v<n>') });
const ModelStatusBody = z.strictObject({ to: z.enum(['shadow', 'validated', 'retired']), changeRef: z.string().min(3).max(100), reason: z.string().min(1).max(500), password });
const ModelChangeView = z.object({ id: z.string(), from: z.string(), to: z.string(), auditSeq: z.number().int(), signature: z.record(z.string(), z.unknown()) });

function bundleOf(ctx: ApiContext): PolicyBundle {
  const b = ctx.daemon.policy.bundle;
  if (!b) throw new LkError('LK_POLICY_BUNDLE', 'no policy bundle is in force');
  return b;
}

/** The level an autonomy change starts from (as the store reads it: row, else the bundle's). */
function levelNow(ctx: ApiContext, bundle: PolicyBundle, agent: string, setpoint: string): AutonomyLevel {
  const rows = autonomyRows(ctx.daemon.store.db);
  const row = (a: string, s: string): AutonomyLevel | undefined => rows.find((r) => r.agent === a && r.setpoint === s)?.level;
  const c = bundle.content;
  if (agent === ANY) return row(ANY, setpoint) ?? (Object.hasOwn(c.setpoints, setpoint) ? c.setpoints[setpoint]!.autonomy : 'L0');
  const general = row(agent, ANY) ?? (Object.hasOwn(c.agents, agent) ? c.agents[agent]!.autonomy : 'L0');
  return setpoint === ANY ? general : (row(agent, setpoint) ?? general);
}

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

  app.get(`${BASE}/autonomy`, {
    onRequest: ctx.guard(READERS, 'see autonomy levels'),
    schema: { tags: ['autonomy'], summary: 'Autonomy per agent and per setpoint (the site\'s), the changes in force and their history (who, when, why, change reference)', security, params: TenantParams, response: { 200: AutonomyView, ...problems } },
  }, async () => {
    const bundle = bundleOf(ctx);
    const c = bundle.content;
    const rows = autonomyRows(d.store.db);
    const history = queryAudit(d.store.db, SITE_TENANT, { kind: 'autonomy_change' }, { limit: 1000 }).entries.reverse().slice(0, 200).map((e) => {
      const args = (e.args ?? {}) as { role?: string; change_ref?: string };
      return { seq: e.seq, ts: e.ts, actor: e.actor, action: e.action, subject: e.subject ?? null, from: e.old ?? null, to: e.new ?? null, changeRef: args.change_ref ?? null, reason: e.reason ?? null, role: args.role ?? null };
    });
    return {
      bundleVersion: bundle.version,
      raiseRoles: Object.fromEntries(Object.entries(c.raiseRoles).map(([k, v]) => [k, [...v]])),
      agents: Object.entries(c.agents).map(([agent, a]) => ({ agent, level: levelNow(ctx, bundle, agent, ANY), bundleLevel: a.autonomy })),
      setpoints: Object.entries(c.setpoints).map(([setpoint, s]) => ({ setpoint, level: levelNow(ctx, bundle, ANY, setpoint), bundleLevel: s.autonomy })),
      overrides: rows.map((r) => ({ agent: r.agent, setpoint: r.setpoint, level: r.level, changedBy: r.changedBy, role: r.role, changeRef: r.changeRef, reason: r.reason, changedAt: r.changedAt })),
      history,
    };
  });

  app.put(`${BASE}/autonomy`, {
    onRequest: ctx.guard(['operator', 'process_engineer', 'qa_reviewer'], 'change autonomy'),
    schema: {
      tags: ['autonomy'], summary: 'Lower (one act) or raise (one level, a permitted role, a change reference and the password: a signed act) an agent, a setpoint, or an agent on one setpoint',
      security, params: TenantParams, body: AutonomyBody, response: { 200: AutonomyChangeView, ...problems },
    },
  }, async (req) => {
    const user = userOf(req);
    const bundle = bundleOf(ctx);
    const { agent, setpoint, to, changeRef, reason } = req.body;
    if (agent === undefined && setpoint === undefined) throw new LkError('LK_VALIDATION', 'an autonomy change names an agent, a setpoint, or both', { issues: [{ path: 'body.agent', message: 'agent or setpoint required' }] });
    // everything that can be refused is refused before a password is asked for: a wrong one counts toward the
    // account's lock-out, so a request that could never succeed must not cost an attempt
    if (agent !== undefined && !Object.hasOwn(bundle.content.agents, agent)) throw new LkError('LK_NOT_FOUND', `no agent ${agent} on this site`, { agent });
    if (setpoint !== undefined && !Object.hasOwn(bundle.content.setpoints, setpoint)) throw new LkError('LK_NOT_FOUND', `no setpoint ${setpoint} on this site`, { setpoint });
    const from = levelNow(ctx, bundle, agent ?? ANY, setpoint ?? ANY);
    const raising = levelRank(to) > levelRank(from);
    let signed: { name: string; user: string; meaning: string; at: string } | null = null;
    if (raising) {
      // the role is checked before the password is asked for (as at signing), so a refusal costs no attempt
      const roles = (bundle.content.raiseRoles as Record<string, readonly string[]>)[to] ?? [];
      if (!roles.includes(user.role)) throw new LkError('LK_AUTONOMY_CHANGE', `role "${user.role}" may not raise to ${to} (permitted: ${roles.join(', ')})`, { role: user.role, to });
      if (changeRef === undefined) throw new LkError('LK_VALIDATION', 'raising autonomy needs a change reference', { issues: [{ path: 'body.changeRef', message: 'required to raise' }] });
      if (levelRank(to) - levelRank(from) > 1) throw new LkError('LK_AUTONOMY_CHANGE', `graduate one level at a time from ${from}, not to ${to}`, { from, to });
      if (req.body.password === undefined) throw new LkError('LK_VALIDATION', 'raising autonomy is signed: re-enter your password', { issues: [{ path: 'body.password', message: 'required to raise' }] });
      await ctx.identity.reauthenticate(user.id, req.body.password, { tenant: req.params.tenant, autonomy: `${agent ?? '*'}@${setpoint ?? '*'}` });
      signed = { name: user.name, user: user.id, meaning: `raise ${agent ?? 'every agent'}${setpoint ? ` on ${setpoint}` : ''} from ${from} to ${to}`, at: new Date(ctx.clock.now()).toISOString() };
    }
    const ev = setAutonomy(d.store, bundle, {
      ...(agent !== undefined ? { agent } : {}), ...(setpoint !== undefined ? { setpoint } : {}), to, by: { person: user.id, role: user.role },
      ...(changeRef !== undefined ? { changeRef } : {}), ...(reason !== undefined ? { reason } : {}),
    });
    return { type: ev.type, from: ev.from, to: ev.to, by: ev.by, changeRef: ev.changeRef, reason: ev.reason, at: new Date(ev.at).toISOString(), auditSeq: ev.auditSeq, signed };
  });

  app.post(`${BASE}/models/:id/status`, {
    onRequest: ctx.guard(['qa_reviewer'], 'change a model\'s status'),
    schema: {
      tags: ['models'], summary: 'Promote (draft → shadow → validated, gated by the golden datasets) or retire a model under change control: signed by the signed-in person, re-authenticated with the password',
      security, params: ModelParams, body: ModelStatusBody, response: { 200: ModelChangeView, ...problems },
    },
  }, async (req) => {
    const user = userOf(req);
    // the tenant's model or nothing, before anything else is checked (R1: another tenant's model is a made-up id)
    if (!modelRow(d.store.db, req.params.tenant, req.params.id)) throw new LkError('LK_NOT_FOUND', `no model ${req.params.id}`, { model: req.params.id });
    const bundle = bundleOf(ctx);
    const approvers = bundle.content.approvers.change;
    if (!approvers.includes(user.role)) throw new LkError('LK_MODEL_CHANGE', `a ${user.role} may not change a model's status (permitted: ${approvers.join(', ')})`, { role: user.role });
    await ctx.identity.reauthenticate(user.id, req.body.password, { tenant: req.params.tenant, model: req.params.id });
    const ch = changeStatus(d.store, d.loaded.dataDir, { tenant: req.params.tenant, id: req.params.id, to: req.body.to, by: user.id, role: user.role, name: user.name, changeRef: req.body.changeRef, reason: req.body.reason }, { approvers });
    return { id: ch.model.id, from: ch.from, to: ch.to, auditSeq: ch.auditSeq, signature: ch.signature as unknown as Record<string, unknown> };
  });
}
