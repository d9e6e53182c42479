/**
 * The tenant's models, approved design spaces, twin rehearsals, operator attendance, the line's state and the
 * audit trail. Read-only except attendance (the engine's attended operator, audited when it changes) and the
 * rehearsal (a tool call of a person, audited with its arguments and a summary of its result, R10).
 */
import { byRole, roleMapOf } from '../domain/roles.js';
import type { Sample } from '../../connectors/types.js';
import { queryAudit } from '../audit/query.js';
import { SITE_WEIGHT_TOLERANCE_PCT } from '../engine/run/limits.js';
import { LkError } from '../errors.js';
import { twinModelOf } from '../models/artefacts.js';
import { listModels, loadValidated } from '../models/registry.js';
import { isAttended } from '../policy/attendance.js';
import { lineLimits } from '../quality/line-limits.js';
import { twinDesignSpace } from '../twin/design-space.js';
import { rehearseEncoded } from '../engine/rehearsal.js';
import { EVERYONE, READERS, userOf } from './auth.js';
import { BASE, type Api, type ApiContext } from './context.js';
import { PROBLEM_RESPONSES } from './problem.js';
import { AttendanceBody, AttendanceView, AuditPageView, AuditQuery, DesignSpaceQuery, DesignSpaceView, LineView, ModelList, SimulateBody, SimulationView, TenantParams } from './schemas.js';

const security = [{ bearer: [] }];
const problems = PROBLEM_RESPONSES;
const iso = (ms: number): string => new Date(ms).toISOString();

/** A live value as the line view shows it: scalars as they are, arrays and bytes by size; the role its tag plays. */
function shown(s: Sample, role?: string): { value: unknown; unit: string; quality: string; at: string; role?: string } {
  const v = s.value;
  const value = v instanceof Uint8Array ? `<${v.byteLength} bytes>` : Array.isArray(v) ? `[${v.length} values]` : v;
  return { value, unit: s.unit, quality: s.quality, at: iso(s.receivedAt), ...(role !== undefined ? { role } : {}) };
}

/**
 * When a live value stops being live: 10 s, or longer where the site's connections update more slowly — twice the
 * longest OPC UA max_data_age_ms (its subscription watchdog has re-created a silent subscription by then; OPC UA
 * reports a value on change, so an unchanged one is not re-stamped every period) or three Modbus polls. Three of the
 * daemon's 1 s measurement periods alone would call a steady OPC UA value stale.
 */
export function staleAfterMs(connections: readonly { readonly max_data_age_ms?: number; readonly poll_ms?: number }[]): number {
  return Math.max(10_000, ...connections.map((c) => Math.max(2 * (c.max_data_age_ms ?? 0), 3 * (c.poll_ms ?? 0))));
}

export function registerSiteRoutes(app: Api, ctx: ApiContext): void {
  const d = ctx.daemon;
  const { config } = d.loaded;

  app.get(`${BASE}/models`, {
    onRequest: ctx.guard(READERS, 'list models'),
    schema: { tags: ['models'], summary: 'The tenant\'s models and versions: card, validation status, pinned sites', security, params: TenantParams, response: { 200: ModelList, ...problems } },
  }, async (req) => ({
    items: listModels(d.store, req.params.tenant).map((m) => ({
      id: m.id, kind: m.kind, version: m.version, status: m.status, sites: [...m.sites], sha256: m.sha256, card: m.card, changedAt: m.changedAt, changedBy: m.changedBy, changeRef: m.changeRef,
    })),
  }));

  app.get(`${BASE}/design-space`, {
    onRequest: ctx.guard(READERS, 'read the design space'),
    schema: {
      tags: ['models'], summary: 'The approved design space of one of the tenant\'s product families × tooling families: unit-aware limits per setpoint (the SDKs\' DesignSpace.approved)',
      security, params: TenantParams, querystring: DesignSpaceQuery, response: { 200: DesignSpaceView, ...problems },
    },
  }, async (req) => {
    const { product, tooling } = req.query;
    const bundle = d.policy.bundle;
    if (!bundle) throw new LkError('LK_POLICY_BUNDLE', 'no policy bundle is in force: there is no approved design space');
    // another tenant's product is as absent as an unknown one (R1/R9: its formulation limits are its own)
    const mine = config.tenants.find((t) => t.id === req.params.tenant)?.products.includes(product) === true && config.products.find((p) => p.id === product)?.tooling.includes(tooling) === true;
    if (!mine) throw new LkError('LK_NOT_FOUND', `no approved design space for product "${product}" × tooling "${tooling}"`, { product, tooling });
    const ds = bundle.designSpace.approved(product, tooling);
    const setpoints = Object.fromEntries(Object.entries(ds.setpoints).map(([tag, l]) => [tag, { min: l.min, max: l.max, unit: l.unit, maxStep: l.maxStep, maxRatePerMin: l.maxRatePerMin }]));
    return { product: ds.product, tooling: ds.tooling, approvedBy: ds.approvedBy, bundleVersion: bundle.version, setpoints };
  });

  app.post(`${BASE}/twin/simulate`, {
    onRequest: ctx.guard(['process_engineer', 'qa_reviewer'], 'rehearse on the twin'),
    schema: {
      tags: ['twin'], summary: 'Rehearse candidate setpoint vectors inside the approved design space on the tenant\'s validated twin; ranked, with the discarded and why',
      security, params: TenantParams, body: SimulateBody, response: { 200: SimulationView, ...problems },
    },
  }, async (req, reply) => {
    const { tenant } = req.params;
    const bundle = d.policy.bundle;
    if (!bundle) throw new LkError('LK_POLICY_BUNDLE', 'no policy bundle is in force: there is no approved design space to draw candidates from');
    const product = config.tenants.find((t) => t.id === tenant)?.products[0];
    const tooling = config.products.find((p) => p.id === product)?.tooling[0];
    if (!product || !tooling) throw new LkError('LK_NOT_FOUND', `tenant ${tenant} has no product and tooling on this site`);
    const model = twinModelOf(loadValidated(d.store, d.loaded.dataDir, tenant, config.site.id, 'process', 'twin'));
    const designSpace = twinDesignSpace(byRole(bundle.designSpace.approved(product, tooling).setpoints, roleMapOf(config)), `${product} × ${tooling}`);
    const seed = req.body.seed ?? 1;
    // a large rehearsal runs on a worker thread, which also encodes its answer: the loop that feeds the PLC
    // heartbeats neither rehearses nor decodes and re-encodes 10,000 entries
    const { body, summary } = await rehearseEncoded(model, { candidates: req.body.candidates, horizon: req.body.horizon, seed, designSpace, cappingThresholdPct: bundle.content.cappingRiskThreshold * 100 });
    // the audit entry records the counts and the best candidate, not the whole list
    d.store.audit.append({
      tenant, actor: userOf(req).id, kind: 'tool_call', action: 'twin.simulate', subject: { tool: 'twin.simulate' },
      args: { candidates: req.body.candidates, horizon: req.body.horizon, seed, product, tooling },
      result: { model: `${summary.model.id}@${summary.model.version}`, ranked: summary.ranked, discarded: summary.discarded, ...(summary.best ? { best: summary.best } : {}) },
    });
    // the bytes as encoded (SimulationView documents them; the reply's type is that value's, hence the cast): a
    // Buffer with its content type is sent as it is, without the response schema's serialisation
    return reply.type('application/json; charset=utf-8').send(Buffer.from(body.buffer, body.byteOffset, body.byteLength) as never);
  });

  app.post(`${BASE}/attendance`, {
    onRequest: ctx.guard(['operator'], 'report attendance'),
    schema: {
      tags: ['line'], summary: 'A presence heartbeat of the signed-in operator (R5: L2/L3 moves need an attended operator); send it while attached',
      security, params: TenantParams, body: AttendanceBody, response: { 200: AttendanceView, ...problems },
    },
  }, async (req) => {
    const user = userOf(req);
    const windowMs = d.policy.bundle?.content.attendanceWindowMs ?? null;
    const before = d.engine.attended();
    const now = ctx.clock.now();
    const was = before !== null && before.operator === user.id && windowMs !== null && isAttended(before, now, windowMs);
    // audited when attendance changes hands or resumes (as heartbeats are), not at every beat
    if (!was) {
      d.store.audit.append({ tenant: req.params.tenant, actor: user.id, kind: 'state_change', action: 'attendance.present', old: before ? { operator: before.operator, lastPresenceAt: iso(before.lastPresenceAt) } : null, new: { operator: user.id } });
    }
    const att = d.engine.presence(user.id);
    return { operator: att.operator, lastPresenceAt: iso(att.lastPresenceAt), attended: windowMs === null ? false : isAttended(att, ctx.clock.now(), windowMs), windowMs };
  });

  // the line view's fixed parts: the site's configuration is loaded once
  const stale = staleAfterMs(config.connections);
  const roles = roleMapOf(config);
  const tagUnits = new Map<string, string>(config.equipment.flatMap((e) => e.tags.map((t) => [`${e.id}.${t.name}`, t.unit] as [string, string])));
  const roleOf = (tag: string): string | undefined => (roles.entries.get(roles.role(tag)) === tag ? roles.role(tag) : undefined);
  app.get(`${BASE}/line`, {
    onRequest: ctx.guard(EVERYONE, 'see the line'),
    schema: {
      tags: ['line'], summary: 'The line: equipment, connection state, PLC supervisor state and live values (values only while the line is idle or runs this tenant\'s batch, R9), and the site\'s time zone for people\'s times',
      security, params: TenantParams, response: { 200: LineView, ...problems },
    },
  }, async (req) => {
    const active = d.engine.runs.activeOnLine(config.line.id);
    const mine = active !== null && active.tenant === req.params.tenant;
    const showValues = active === null || mine;
    const health = new Map(d.connectors.map((c) => [c.health().id, c.health()]));
    const supervision = d.supervision();
    const phaseTag = config.line.phase?.tag ?? roles.tag('plc.BatchPhase');
    const phase = showValues ? d.live.get(phaseTag) : undefined;
    // the limits of this tenant's run only (R9: another tenant's batch record is not this tenant's to read)
    const limits = mine ? lineLimits({
      record: active.record, runLimits: active.limits, siteWeightTolerancePct: SITE_WEIGHT_TOLERANCE_PCT,
      cappingThresholdPct: d.policy.bundle ? d.policy.bundle.content.cappingRiskThreshold * 100 : undefined,
      tagOf: (role) => {
        const unit = roles.has(role) ? tagUnits.get(roles.tag(role)) : undefined;
        return unit === undefined ? undefined : { tag: roles.tag(role), unit };
      },
    }) : null;
    return {
      line: config.line.id, site: config.site.id, timezone: config.site.timezone, at: iso(ctx.clock.now()), staleAfterMs: stale, limits,
      busy: active !== null, activeRun: mine ? { id: active.id, status: active.status, batch: active.batch } : null,
      phase: phase ? { tag: phaseTag, value: shown(phase).value, quality: phase.quality, at: iso(phase.receivedAt) } : null,
      connections: [...health.values()].map((h) => ({ id: h.id, protocol: h.protocol, state: h.state, endpoint: h.endpoint })),
      equipment: config.equipment.map((e) => {
        const sv = supervision.get(e.id);
        const values: Record<string, ReturnType<typeof shown>> = {};
        for (const t of e.tags) {
          const s = d.live.get(`${e.id}.${t.name}`);
          if (s) values[s.tag] = shown(s, roleOf(s.tag));
        }
        return {
          id: e.id, name: e.name, type: e.type, connection: e.connection, connectionState: health.get(e.connection)?.state ?? 'unknown',
          supervisor: { state: sv?.state ?? null, activeRecipe: sv?.activeRecipe ?? null, revertCount: sv?.revertCount ?? null },
          supervision: e.supervision?.mode ?? 'supervised',
          values: showValues ? values : null,
        };
      }),
    };
  });

  app.get(`${BASE}/audit`, {
    onRequest: ctx.guard(['auditor', 'qa_reviewer'], 'read the audit trail'),
    schema: {
      tags: ['audit'], summary: 'The tenant\'s audit trail by batch, run, agent, tool, setpoint, reviewer, actor, kind, action and time (a date alone is that whole UTC day), in chain order, a page at a time',
      security, params: TenantParams, querystring: AuditQuery, response: { 200: AuditPageView, ...problems },
    },
  }, async (req) => {
    const { cursor, limit, ...filter } = req.query;
    const page = queryAudit(d.store.db, req.params.tenant, filter, { limit, ...(cursor !== undefined ? { cursor } : {}) });
    return { items: page.entries as unknown as Record<string, unknown>[], ...(page.next ? { next: page.next } : {}) };
  });
}
