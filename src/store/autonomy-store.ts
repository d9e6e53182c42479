/**
 * Autonomy levels changed at run time, persisted per tenant (migrations 3
 * and 11). The bundle gives every tenant the same starting levels; a row of a
 * tenant overrides them for that tenant's runs only. Rows, per tenant:
 *   (agent, '*')        the agent on every setpoint
 *   (agent, setpoint)   the agent on one setpoint (overrides its general level there)
 *   ('*', setpoint)     the setpoint's ceiling for every agent
 * Effective level = min(agent level on the setpoint, setpoint ceiling).
 *
 * A change goes through the pure `changeAutonomy` (raise one level at a time,
 * by a named person with a permitted role and a change reference; lowering
 * always allowed), and its row and its `autonomy_change` audit entry (the
 * tenant's chain) commit in one transaction. The guarded writer reads the
 * levels of the proposal's tenant with one indexed SELECT per decision, so a
 * change made by another process (the CLI) is in force at the daemon's next
 * decision.
 *
 * Rows of tenant `*` are changes made before levels were per tenant (their
 * entries are on the site chain): they apply to every tenant that has no row
 * of its own for the same (agent, setpoint), so an upgrade changes no level in
 * force; a tenant's own change then overrides them for that tenant alone.
 */
import type { Database, Statement } from 'better-sqlite3';
import { canonicalJson, SITE_TENANT } from '../audit/entry.js';
import { signBytes } from '../audit/keys.js';
import { AUTONOMY_LEVELS, type AutonomyLevel } from '../domain/policy.js';
import { chooseMeaning, DEFAULT_SIGNATURE_MEANINGS, fillMeaning, manifestationMeaning, type ChosenMeaning } from '../domain/signature-meanings.js';
import { LkError } from '../errors.js';
import { type AutonomyEvent, type AutonomyState, type PolicyBundle, changeAutonomy } from '../policy/index.js';
import type { Store } from './store.js';

export const ANY = '*';

export interface AutonomyRow {
  /** The tenant whose row it is, or `*` for a change from before levels were per tenant (it applies to all). */
  readonly tenant: string;
  readonly agent: string;
  readonly setpoint: string;
  readonly level: AutonomyLevel;
  readonly changedBy: string;
  readonly role: string | null;
  readonly changeRef: string | null;
  readonly reason: string | null;
  readonly changedAt: string;
  readonly bundle: string;
  readonly auditSeq: number;
}

export interface AutonomyRequest {
  /** The tenant whose levels change: the tenant of the path (or of the run, for the model watchdog's drop). */
  readonly tenant: string;
  /** `agent.<role>`; omit to change the ceiling of `setpoint` for every agent. */
  readonly agent?: string;
  /** A setpoint of the bundle; omit to change the agent on every setpoint. */
  readonly setpoint?: string;
  readonly to: AutonomyLevel;
  readonly by: { readonly person: string; readonly role: string };
  readonly changeRef?: string;
  readonly reason?: string;
  /**
   * Set by callers that authenticate the person (the REST API): a raise is then refused unless `signer` is
   * given — the person re-authenticated — checked inside the transaction, so a concurrent change cannot turn an
   * unsigned lowering into an unsigned raise.
   */
  readonly requireSignatureToRaise?: boolean;
  /**
   * The re-authenticated person's printed name: the raise's audit entry carries an Ed25519 signature manifestation,
   * its meaning exactly the words of the site's list the surface took and showed (refused with LK_CONFLICT when the
   * raise as it stands in the transaction would fill that entry otherwise), else linekeeper's built-in one.
   */
  readonly signer?: { readonly name: string; readonly meaning?: ChosenMeaning };
}

const LOOKUP = new WeakMap<Database, Statement>();

function lookup(db: Database): Statement {
  let st = LOOKUP.get(db);
  if (!st) {
    // the tenant's rows first (ORDER BY tenant = '*'), so a pre-tenancy row only fills what the tenant has not set
    st = db.prepare(`SELECT agent, setpoint, level FROM autonomy_level WHERE tenant IN (?, '*') AND ((agent = ? AND setpoint IN (?, '*')) OR (agent = '*' AND setpoint = ?)) ORDER BY tenant = '*'`).raw();
    LOOKUP.set(db, st);
  }
  return st;
}

/**
 * The agent's level on `setpoint` and the setpoint's ceiling for `tenant`'s runs, as persisted (bundle levels
 * where no row exists): the shape `PolicyContext.autonomy` takes. One SELECT on the primary key.
 */
export function autonomyLevels(db: Database, tenant: string, bundle: PolicyBundle, agent: string, setpoint: string): { agent: AutonomyLevel; setpoint: AutonomyLevel } {
  let pair: AutonomyLevel | undefined;
  let general: AutonomyLevel | undefined;
  let ceiling: AutonomyLevel | undefined;
  for (const [a, s, l] of lookup(db).all(tenant, agent, setpoint, setpoint) as [string, string, AutonomyLevel][]) {
    if (a === ANY) ceiling ??= l;
    else if (s === ANY) general ??= l;
    else pair ??= l;
  }
  const c = bundle.content;
  return {
    agent: pair ?? general ?? (Object.hasOwn(c.agents, agent) ? c.agents[agent]!.autonomy : 'L0'),
    setpoint: ceiling ?? (Object.hasOwn(c.setpoints, setpoint) ? c.setpoints[setpoint]!.autonomy : 'L0'),
  };
}

/**
 * The persisted rows in force for `tenant` (what `policy autonomy show` lists beside the bundle's levels): its own,
 * and the pre-tenancy rows (`*`) it has not overridden. Never another tenant's.
 */
export function autonomyRows(db: Database, tenant: string): AutonomyRow[] {
  const has = db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'autonomy_level'").get();
  if (!has) return [];
  return db
    .prepare(
      `SELECT tenant, agent, setpoint, level, changed_by AS changedBy, role, change_ref AS changeRef, reason, changed_at AS changedAt, bundle, audit_seq AS auditSeq
       FROM autonomy_level r
       WHERE tenant = ? OR (tenant = '*' AND NOT EXISTS (SELECT 1 FROM autonomy_level o WHERE o.tenant = ? AND o.agent = r.agent AND o.setpoint = r.setpoint))
       ORDER BY agent, setpoint`,
    )
    .all(tenant, tenant) as AutonomyRow[];
}

/** What a raise's signature meaning fills: the target (`agent.x on press.MainForce`), the levels and the change reference. */
export function autonomyMeaningValues(o: { agent?: string; setpoint?: string; from: string; to: string; changeRef: string | null | undefined }): Record<string, string | undefined> {
  const target = [o.agent === undefined || o.agent === ANY ? null : o.agent, o.setpoint === undefined || o.setpoint === ANY ? null : o.setpoint].filter(Boolean).join(' on ');
  return { target, from: o.from, to: o.to, change: o.changeRef ?? undefined };
}

/**
 * Change one autonomy level of `req.tenant` durably: the row and its `autonomy_change` entry (the tenant's chain,
 * actor = the person) commit together; an unchanged level writes nothing. Other tenants' levels do not move.
 * @throws LkError LK_AUTONOMY_CHANGE when the change is not permitted (raise by more than one level, without a
 *   change reference, by a role the bundle does not permit, unknown agent id, setpoint or level) — nothing is
 *   written then; LK_VALIDATION when neither agent nor setpoint is given or `by.person` is not a person's user id
 *   (an agent id cannot change autonomy; `system` may only lower to L0, the model watchdog's fail-safe);
 *   LK_CONFLICT when the raise as it stands in the transaction would fill `signer.meaning`'s entry with other words.
 */
export function setAutonomy(store: Store, bundle: PolicyBundle, req: AutonomyRequest): AutonomyEvent & { readonly auditSeq: number | null } {
  const agent = req.agent ?? ANY;
  const setpoint = req.setpoint ?? ANY;
  if (agent === ANY && setpoint === ANY) throw new LkError('LK_VALIDATION', 'an autonomy change names an agent, a setpoint, or both');
  const tenant = tenantOf(req);
  // a person, never an agent or the system: an agent must not be able to graduate itself. The one exception is
  // the fail-safe: the system may drop an agent to L0 (shadow) when its model is lost (R8); it can never raise.
  const failSafe = req.by?.person === 'system' && req.to === 'L0';
  if (!failSafe && (typeof req.by?.person !== 'string' || !/^(?!agent\.|system$)[A-Za-z0-9][A-Za-z0-9._@-]{0,127}$/.test(req.by.person))) throw new LkError('LK_VALIDATION', `"${String(req.by?.person)}" is not a person's user id`);
  if (!(AUTONOMY_LEVELS as readonly string[]).includes(req.to)) throw new LkError('LK_AUTONOMY_CHANGE', `unknown autonomy level "${String(req.to)}" (L0–L3 only: there is no unattended level)`);
  if (setpoint !== ANY && !Object.hasOwn(bundle.content.setpoints, setpoint)) throw new LkError('LK_AUTONOMY_CHANGE', `"${setpoint}" is not a setpoint of this site`);
  return store.tx(({ db, audit }) => {
    // read inside the IMMEDIATE transaction: two concurrent raises cannot both start from the same level
    const now = store.clock.now();
    const from = currentLevel(db, tenant, bundle, agent, setpoint);
    const state: AutonomyState = agent === ANY ? { bundleVersion: bundle.version, agents: {}, setpoints: { [setpoint]: from } } : { bundleVersion: bundle.version, agents: { [agent]: from }, setpoints: {} };
    const target = agent === ANY ? { setpoint } : { agent };
    const { event } = changeAutonomy(state, { target, to: req.to, by: req.by, at: now, ...(req.changeRef !== undefined ? { changeRef: req.changeRef } : {}), ...(req.reason !== undefined ? { reason: req.reason } : {}) }, bundle);
    if (event.type === 'autonomy_unchanged') return { ...event, auditSeq: null };
    const raised = event.type === 'autonomy_raised';
    if (raised && req.requireSignatureToRaise && !req.signer) throw new LkError('LK_REAUTH_REQUIRED', `raising ${agent === ANY ? setpoint : agent} ${event.from} → ${event.to} is signed: re-authenticate`, { from: event.from, to: event.to });
    let signature: { user: string; name: string; meaning: string; time: string; value: string } | undefined;
    if (raised && req.signer) {
      const time = new Date(now).toISOString();
      const values = autonomyMeaningValues({ agent, setpoint, from: event.from, to: event.to, changeRef: event.changeRef });
      const chosen = req.signer.meaning;
      // the words signed are the words chosen and checked before the password, never refilled: if the raise as it
      // stands now fills the entry otherwise, it is not the raise the person chose them for
      const refilled = chosen ? fillMeaning(chosen.template, values) : null;
      if (chosen && refilled !== chosen.text) throw new LkError('LK_CONFLICT', `the raise changed since its meaning was chosen: "${chosen.text}" would now read "${refilled ?? '(no words: a value is missing)'}"; nothing was signed or changed`, { meaning: chosen.text, now: refilled });
      const m = chosen ?? chooseMeaning(DEFAULT_SIGNATURE_MEANINGS, 'autonomy_raise', undefined, values);
      const meaning = manifestationMeaning(m.text);
      const record = { format: 1, kind: 'autonomy_change', tenant, agent, setpoint, from: event.from, to: event.to, user: req.by.person, name: req.signer.name, role: req.by.role, changeRef: event.changeRef, reason: event.reason, bundle: bundle.version, meaning, meaningId: m.id, timestamp: time };
      signature = { user: req.by.person, name: req.signer.name.slice(0, 200), meaning, time, value: signBytes(store.audit.siteKey(), canonicalJson(record)) };
    }
    const entry = audit.append({
      tenant,
      actor: req.by.person,
      kind: 'autonomy_change',
      action: event.type === 'autonomy_raised' ? 'autonomy.raise' : 'autonomy.lower',
      subject: { ...(agent !== ANY ? { agent } : {}), ...(setpoint !== ANY ? { setpoint } : {}) },
      args: { role: req.by.role, ...(event.changeRef ? { change_ref: event.changeRef } : {}), scope: agent === ANY ? 'setpoint' : setpoint === ANY ? 'agent' : 'agent_setpoint', bundle: bundle.version },
      old: event.from,
      new: event.to,
      ...(event.reason ? { reason: event.reason } : {}),
      ...(signature ? { signature } : {}),
    });
    db.prepare(
      `INSERT INTO autonomy_level (tenant, agent, setpoint, level, changed_by, role, change_ref, reason, changed_at, bundle, audit_seq)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (tenant, agent, setpoint) DO UPDATE SET level = excluded.level, changed_by = excluded.changed_by, role = excluded.role,
         change_ref = excluded.change_ref, reason = excluded.reason, changed_at = excluded.changed_at, bundle = excluded.bundle, audit_seq = excluded.audit_seq`,
    ).run(tenant, agent, setpoint, event.to, req.by.person, req.by.role, event.changeRef, event.reason, entry.ts, bundle.version, entry.seq);
    return { ...event, target: { ...(agent !== ANY ? { agent } : {}), ...(setpoint !== ANY ? { setpoint } : {}) } as AutonomyEvent['target'], auditSeq: entry.seq };
  });
}

/**
 * What {@link setAutonomy} would do now, without writing: the REST API asks before it asks for a password
 * (who may change what is checked first, as for a signature).
 * @throws as {@link setAutonomy}.
 */
export function previewAutonomy(store: Store, bundle: PolicyBundle, req: AutonomyRequest): AutonomyEvent {
  const agent = req.agent ?? ANY;
  const setpoint = req.setpoint ?? ANY;
  if (agent === ANY && setpoint === ANY) throw new LkError('LK_VALIDATION', 'an autonomy change names an agent, a setpoint, or both');
  if (setpoint !== ANY && !Object.hasOwn(bundle.content.setpoints, setpoint)) throw new LkError('LK_AUTONOMY_CHANGE', `"${setpoint}" is not a setpoint of this site`);
  const from = currentLevel(store.db, tenantOf(req), bundle, agent, setpoint);
  const state: AutonomyState = agent === ANY ? { bundleVersion: bundle.version, agents: {}, setpoints: { [setpoint]: from } } : { bundleVersion: bundle.version, agents: { [agent]: from }, setpoints: {} };
  const target = agent === ANY ? { setpoint } : { agent };
  return changeAutonomy(state, { target, to: req.to, by: req.by, at: store.clock.now(), ...(req.changeRef !== undefined ? { changeRef: req.changeRef } : {}), ...(req.reason !== undefined ? { reason: req.reason } : {}) }, bundle).event;
}

/** A tenant id (never `*`, the pre-tenancy rows, nor the site chain): a change belongs to one tenant. */
function tenantOf(req: AutonomyRequest): string {
  const t = req.tenant;
  if (typeof t !== 'string' || !/^[a-z][a-z0-9-]{0,63}$/.test(t) || t === SITE_TENANT) throw new LkError('LK_VALIDATION', `"${String(t)}" is not a tenant id: an autonomy change is a tenant's`);
  return t;
}

/** The level a change of (agent, setpoint) of `tenant` starts from: its row, else what applies there without it. */
function currentLevel(db: Database, tenant: string, bundle: PolicyBundle, agent: string, setpoint: string): AutonomyLevel {
  const row = (a: string, s: string): AutonomyLevel | undefined =>
    db.prepare("SELECT level FROM autonomy_level WHERE tenant IN (?, '*') AND agent = ? AND setpoint = ? ORDER BY tenant = '*' LIMIT 1").pluck().get(tenant, a, s) as AutonomyLevel | undefined;
  const c = bundle.content;
  if (agent === ANY) return row(ANY, setpoint) ?? (Object.hasOwn(c.setpoints, setpoint) ? c.setpoints[setpoint]!.autonomy : 'L0');
  const general = row(agent, ANY) ?? (Object.hasOwn(c.agents, agent) ? c.agents[agent]!.autonomy : 'L0');
  return setpoint === ANY ? general : (row(agent, setpoint) ?? general);
}

/** A level and where it comes from: the bundle, or a persisted change (who, role, reference, when). */
export interface AutonomyMeta {
  readonly level: string;
  readonly source: 'bundle' | 'changed';
  /** The bundle's own level (absent for a row the bundle does not name). */
  readonly bundleLevel?: string;
  readonly by?: string;
  readonly role?: string | null;
  readonly changeRef?: string | null;
  readonly reason?: string | null;
  readonly at?: string;
  readonly auditSeq?: number;
}

/** The levels in force: the bundle's, overridden by a tenant's rows ({@link autonomyRows}; what `policy autonomy show` and GET /autonomy print). */
export function autonomyView(bundle: PolicyBundle, rows: readonly AutonomyRow[]): {
  bundleVersion: string;
  agents: Record<string, AutonomyMeta>;
  agentSetpoints: (AutonomyMeta & { agent: string; setpoint: string })[];
  setpoints: Record<string, AutonomyMeta>;
} {
  const meta = (r: AutonomyRow): AutonomyMeta => ({ level: r.level, source: 'changed', by: r.changedBy, role: r.role, changeRef: r.changeRef, reason: r.reason, at: r.changedAt, auditSeq: r.auditSeq });
  const agents: Record<string, AutonomyMeta> = {};
  for (const [id, a] of Object.entries(bundle.content.agents)) agents[id] = { level: a.autonomy, source: 'bundle', bundleLevel: a.autonomy };
  const setpoints: Record<string, AutonomyMeta> = {};
  for (const [id, sp] of Object.entries(bundle.content.setpoints)) setpoints[id] = { level: sp.autonomy, source: 'bundle', bundleLevel: sp.autonomy };
  const agentSetpoints: (AutonomyMeta & { agent: string; setpoint: string })[] = [];
  for (const r of rows) {
    if (r.agent === ANY) setpoints[r.setpoint] = { ...meta(r), ...(setpoints[r.setpoint] ? { bundleLevel: setpoints[r.setpoint]!.bundleLevel } : {}) };
    else if (r.setpoint === ANY) agents[r.agent] = { ...meta(r), ...(agents[r.agent] ? { bundleLevel: agents[r.agent]!.bundleLevel } : {}) };
    else agentSetpoints.push({ agent: r.agent, setpoint: r.setpoint, ...meta(r) });
  }
  return { bundleVersion: bundle.version, agents, agentSetpoints, setpoints };
}
