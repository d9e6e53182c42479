/**
 * The model registry: ONE source of truth, in the store (table `model`,
 * migration 5) — version, kind, SHA-256 of the artefact, lifecycle status,
 * pinned sites and card of every model version of every tenant. The policy
 * engine, the guarded writer, the CLI and the API all ask it; nothing keeps a
 * copy of a status.
 *
 * Artefacts (parameters, coefficients, weights) stay files,
 *
 *   <dataDir>/models/<tenant>/<id>/artefact.json
 *
 * written once at registration (temporary file, then rename) and checked
 * against the row's SHA-256 at EVERY load: an edited or swapped file is
 * LK_MODEL_CORRUPT, never used. Ids are `<analyte>-<family>-v<n>`, numbered
 * per tenant. A tenant's model is never loaded for another tenant (R9).
 *
 * Registration (always as `draft`) is audited on the tenant's chain in the
 * transaction of the row; status changes are change-control events
 * (change.ts).
 */
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Database, Statement } from 'better-sqlite3';
import { canonicalJson } from '../audit/entry.js';
import { LkError } from '../errors.js';
import type { Store } from '../store/store.js';
import type { ModelCard } from '../twin/card.js';
import { isModelStatus, type ModelStatus } from './lifecycle.js';

export { MODEL_STATUSES, type ModelStatus } from './lifecycle.js';
export type ModelKind = 'twin' | 'nir-pls' | 'vision-softmax';
export const MODEL_KINDS: readonly ModelKind[] = Object.freeze(['twin', 'nir-pls', 'vision-softmax']);

export const ID_RE = /^([a-z][a-z0-9]*)-([a-z][a-z0-9]*)-v([1-9][0-9]*)$/;
const SLUG_RE = /^[a-z][a-z0-9]*$/;
const TENANT_RE = /^[a-z][a-z0-9-]{0,63}$/;
const SITE_RE = /^[a-z][a-z0-9-]*$/;
/** A person's (or the site set-up's) user id: never an agent, never `system`. */
export const PERSON_RE = /^(?!agent\.|system$)[A-Za-z0-9][A-Za-z0-9._@-]{0,127}$/;

/** What the rest of linekeeper sees of a model version (`models list`, GET /models). */
export interface ModelSummary {
  readonly tenant: string;
  readonly id: string;
  readonly analyte: string;
  readonly family: string;
  readonly version: number;
  readonly kind: ModelKind;
  /** SHA-256 (hex) of artefact.json's bytes. */
  readonly sha256: string;
  readonly status: ModelStatus;
  readonly sites: readonly string[];
  readonly card: ModelCard;
  readonly createdAt: string;
  readonly createdBy: string;
  /** Time, person and change reference of the last status change (registration for a fresh draft). */
  readonly changedAt: string;
  readonly changedBy: string;
  readonly changeRef: string | null;
  /** Audit entry (tenant chain) of the last change of the row. */
  readonly auditSeq: number;
}

/** The status view the policy check needs (what `modelStatus` returns): a summary without its card and history. */
export type ModelStatusView = Pick<ModelSummary, 'tenant' | 'id' | 'analyte' | 'family' | 'version' | 'kind' | 'status' | 'sites' | 'sha256'>;

/** A model read from the registry with its artefact, hash-checked. */
export interface LoadedModel {
  readonly model: ModelSummary;
  readonly artefact: unknown;
}

interface Row {
  tenant: string;
  id: string;
  analyte: string;
  family: string;
  version: number;
  kind: ModelKind;
  sha256: string;
  status: ModelStatus;
  sites: string;
  card: string;
  created_at: string;
  created_by: string;
  changed_at: string;
  changed_by: string;
  change_ref: string | null;
  audit_seq: number;
}

const COLS = 'tenant, id, analyte, family, version, kind, sha256, status, sites, card, created_at, created_by, changed_at, changed_by, change_ref, audit_seq';
const statements = new WeakMap<Database, Map<string, Statement>>();

/** A prepared statement, once per connection (the writer asks the registry at every decision). */
export function stmt(db: Database, sql: string): Statement {
  let m = statements.get(db);
  if (!m) statements.set(db, (m = new Map()));
  let s = m.get(sql);
  if (!s) m.set(sql, (s = db.prepare(sql)));
  return s;
}

export function checkTenant(tenant: string): void {
  if (typeof tenant !== 'string' || !TENANT_RE.test(tenant)) throw new LkError('LK_VALIDATION', `tenant id "${String(tenant)}" is not valid`, { tenant });
}

export function checkId(id: string): RegExpExecArray {
  const m = typeof id === 'string' ? ID_RE.exec(id) : null;
  if (!m) throw new LkError('LK_VALIDATION', `model id "${String(id)}" is not of the shape <analyte>-<family>-v<n>`, { id });
  return m;
}

function checkPerson(by: string, what = 'by'): void {
  if (typeof by !== 'string' || !PERSON_RE.test(by)) throw new LkError('LK_VALIDATION', `${what} "${String(by)}" is not a person's user id (an agent id or system cannot change models)`, { by });
}

/** The folder of all artefacts. */
export function modelsDir(dataDir: string): string {
  return join(dataDir, 'models');
}

/** Where a model's artefact lives (tenant and id are checked first: they become path segments). */
export function artefactFile(dataDir: string, tenant: string, id: string): string {
  checkTenant(tenant);
  checkId(id);
  return join(modelsDir(dataDir), tenant, id, 'artefact.json');
}

function sha256(bytes: Buffer | string): string {
  return createHash('sha256').update(bytes).digest('hex');
}

export function toSummary(r: Row): ModelSummary {
  return {
    tenant: r.tenant,
    id: r.id,
    analyte: r.analyte,
    family: r.family,
    version: r.version,
    kind: r.kind,
    sha256: r.sha256,
    status: r.status,
    sites: JSON.parse(r.sites) as string[],
    card: JSON.parse(r.card) as ModelCard,
    createdAt: r.created_at,
    createdBy: r.created_by,
    changedAt: r.changed_at,
    changedBy: r.changed_by,
    changeRef: r.change_ref,
    auditSeq: r.audit_seq,
  };
}

/** The row of a tenant's model, or undefined. */
export function modelRow(db: Database, tenant: string, id: string): Row | undefined {
  return stmt(db, `SELECT ${COLS} FROM model WHERE tenant = ? AND id = ?`).get(tenant, id) as Row | undefined;
}

/** True when a tenant other than `tenant` has a model of this id (for LK_MODEL_TENANT instead of LK_MODEL_MISSING). */
export function heldByAnotherTenant(db: Database, tenant: string, id: string): boolean {
  return stmt(db, 'SELECT 1 FROM model WHERE id = ? AND tenant <> ? LIMIT 1').get(id, tenant) !== undefined;
}

export interface RegisterInput {
  tenant: string;
  analyte: string;
  family: string;
  kind: ModelKind;
  artefact: unknown;
  card: ModelCard;
  /** Sites the model is pinned to. */
  sites: readonly string[];
  /** The person registering it. */
  by: string;
  /** Why (shown in the audit entry); default `registered`. */
  reason?: string;
}

/**
 * Register a new model version as `draft`: the next `v<n>` of `<analyte>-<family>` for the tenant, its artefact
 * written under the data directory, the row and its `model_change model.register` entry in one transaction.
 * @throws LkError LK_VALIDATION for a bad tenant, slug, kind, site or person, or a card of another tenant or model.
 */
export function registerModel(store: Store, dataDir: string, input: RegisterInput): ModelSummary {
  checkTenant(input.tenant);
  checkPerson(input.by);
  if (!SLUG_RE.test(input.analyte) || !SLUG_RE.test(input.family)) throw new LkError('LK_VALIDATION', 'analyte and family must be lower-case letters and digits');
  if (!MODEL_KINDS.includes(input.kind)) throw new LkError('LK_VALIDATION', `unknown model kind "${String(input.kind)}"`);
  if (input.card?.tenant !== input.tenant) throw new LkError('LK_VALIDATION', 'the model card names another tenant', { tenant: input.tenant, cardTenant: input.card?.tenant });
  if (input.card.analyte !== input.analyte || input.card.family !== input.family) throw new LkError('LK_VALIDATION', `the model card is of ${input.card.analyte}-${input.card.family}, not ${input.analyte}-${input.family}`);
  const sites = [...new Set(input.sites)].sort();
  if (sites.some((s) => typeof s !== 'string' || !SITE_RE.test(s))) throw new LkError('LK_VALIDATION', 'site ids must be lower-case letters, digits and dashes', { sites });
  const text = `${JSON.stringify(input.artefact)}\n`;
  const hash = sha256(text);
  const card = canonicalJson(input.card);
  return store.tx(({ db, audit }) => {
    const version = 1 + ((stmt(db, 'SELECT MAX(version) AS v FROM model WHERE tenant = ? AND analyte = ? AND family = ?').get(input.tenant, input.analyte, input.family) as { v: number | null }).v ?? 0);
    const id = `${input.analyte}-${input.family}-v${version}`;
    const file = artefactFile(dataDir, input.tenant, id);
    mkdirSync(join(file, '..'), { recursive: true });
    // a leftover of a registration that rolled back may sit here: the row is the truth, the file is replaced
    const tmp = `${file}.tmp-${process.pid}`;
    writeFileSync(tmp, text);
    renameSync(tmp, file);
    const at = new Date(store.clock.now()).toISOString();
    const e = audit.append({
      tenant: input.tenant,
      actor: input.by,
      kind: 'model_change',
      action: 'model.register',
      args: { id, analyte: input.analyte, family: input.family, version, kind: input.kind, sha256: hash, sites, card_sha256: sha256(card) },
      new: 'draft',
      reason: input.reason ?? 'registered',
    });
    stmt(db, `INSERT INTO model (${COLS}) VALUES (?, ?, ?, ?, ?, ?, ?, 'draft', ?, ?, ?, ?, ?, ?, NULL, ?)`).run(
      input.tenant, id, input.analyte, input.family, version, input.kind, hash, JSON.stringify(sites), card, at, input.by, at, input.by, e.seq,
    );
    return toSummary(modelRow(db, input.tenant, id)!);
  });
}

/**
 * The registry's status of one of the tenant's models, or null when the tenant has none of that id (R9: another
 * tenant's model of the same id is not this tenant's). Cheap: one indexed SELECT, no file access.
 * @throws LkError LK_VALIDATION for a malformed tenant or id.
 */
export function modelStatus(store: Pick<Store, 'db'>, tenant: string, id: string): ModelStatusView | null {
  checkTenant(tenant);
  checkId(id);
  const r = modelRow(store.db, tenant, id);
  return r ? { tenant: r.tenant, id: r.id, analyte: r.analyte, family: r.family, version: r.version, kind: r.kind, status: r.status, sites: JSON.parse(r.sites) as string[], sha256: r.sha256 } : null;
}

/**
 * Models, newest version first within each analyte-family. With a tenant, only that tenant's (R9); without, all
 * (site administration). @throws LkError LK_VALIDATION for a malformed tenant id.
 */
export function listModels(store: Pick<Store, 'db'>, tenant?: string): ModelSummary[] {
  if (tenant !== undefined) checkTenant(tenant);
  const order = 'ORDER BY tenant, analyte, family, version DESC';
  const rows = (tenant === undefined ? stmt(store.db, `SELECT ${COLS} FROM model ${order}`).all() : stmt(store.db, `SELECT ${COLS} FROM model WHERE tenant = ? ${order}`).all(tenant)) as Row[];
  return rows.map(toSummary);
}

export interface LoadOptions {
  /** The site it is to be used at: the model must be pinned to it. */
  readonly site?: string;
  /** Statuses accepted (default: validated only). */
  readonly statuses?: readonly ModelStatus[];
}

/**
 * Load one of the tenant's models with its artefact, the artefact's SHA-256 checked against the registry.
 * @throws LkError LK_MODEL_TENANT (the id is another tenant's only), LK_MODEL_MISSING (no such model, or its
 *   artefact file is gone), LK_MODEL_NOT_VALIDATED (status not accepted, e.g. draft, shadow or retired),
 *   LK_MODEL_NOT_PINNED (not pinned to `site`), LK_MODEL_CORRUPT (artefact does not match its hash, or is not JSON).
 */
export function loadModel(store: Pick<Store, 'db'>, dataDir: string, tenant: string, id: string, opts: LoadOptions = {}): LoadedModel {
  checkTenant(tenant);
  checkId(id);
  const r = modelRow(store.db, tenant, id);
  if (!r) {
    if (heldByAnotherTenant(store.db, tenant, id)) throw new LkError('LK_MODEL_TENANT', `model ${id} is not available to tenant ${tenant}`, { id, tenant });
    throw new LkError('LK_MODEL_MISSING', `model ${id} is missing`, { id, tenant });
  }
  const model = toSummary(r);
  const statuses = opts.statuses ?? ['validated'];
  if (!statuses.includes(model.status)) throw new LkError('LK_MODEL_NOT_VALIDATED', `model ${id} is ${model.status}, not ${statuses.join(' or ')}`, { id, status: model.status });
  if (opts.site !== undefined && !model.sites.includes(opts.site)) throw new LkError('LK_MODEL_NOT_PINNED', `model ${id} is not pinned to site ${opts.site}`, { id, site: opts.site, sites: model.sites });
  return { model, artefact: readArtefact(dataDir, model) };
}

/** The artefact of a registry row, checked against its SHA-256. @throws LkError LK_MODEL_MISSING, LK_MODEL_CORRUPT. */
export function readArtefact(dataDir: string, model: Pick<ModelSummary, 'tenant' | 'id' | 'sha256'>): unknown {
  let bytes: Buffer;
  try {
    bytes = readFileSync(artefactFile(dataDir, model.tenant, model.id));
  } catch (err) {
    throw new LkError('LK_MODEL_MISSING', `model ${model.id}: artefact is missing`, { id: model.id }, { cause: err });
  }
  if (sha256(bytes) !== model.sha256) throw new LkError('LK_MODEL_CORRUPT', `model ${model.id}: artefact does not match its SHA-256`, { id: model.id, expected: model.sha256 });
  try {
    return JSON.parse(bytes.toString('utf8')) as unknown;
  } catch (err) {
    throw new LkError('LK_MODEL_CORRUPT', `model ${model.id}: artefact is not JSON`, { id: model.id }, { cause: err });
  }
}

/**
 * The newest validated version of `<analyte>-<family>` of the tenant pinned to `site`, loaded and hash-checked.
 * @throws LkError LK_MODEL_MISSING (the tenant has no model of that family), LK_MODEL_NOT_VALIDATED (it has
 *   some, none validated), LK_MODEL_NOT_PINNED (validated ones exist, none pinned to the site), LK_MODEL_CORRUPT
 *   or LK_MODEL_MISSING from the artefact (never falls back to an older version: a damaged model is a lost model).
 */
export function loadValidated(store: Pick<Store, 'db'>, dataDir: string, tenant: string, site: string, analyte: string, family: string): LoadedModel {
  checkTenant(tenant);
  const rows = stmt(store.db, `SELECT ${COLS} FROM model WHERE tenant = ? AND analyte = ? AND family = ? ORDER BY version DESC`).all(tenant, analyte, family) as Row[];
  const what = `${analyte}-${family}`;
  if (rows.length === 0) throw new LkError('LK_MODEL_MISSING', `tenant ${tenant} has no ${what} model`, { tenant, analyte, family });
  const validated = rows.filter((r) => r.status === 'validated');
  if (validated.length === 0) throw new LkError('LK_MODEL_NOT_VALIDATED', `tenant ${tenant} has no validated ${what} model (${rows.map((r) => `${r.id} ${r.status}`).join(', ')})`, { tenant, analyte, family });
  const pinned = validated.find((r) => (JSON.parse(r.sites) as string[]).includes(site));
  if (!pinned) throw new LkError('LK_MODEL_NOT_PINNED', `no validated ${what} model of tenant ${tenant} is pinned to site ${site}`, { tenant, analyte, family, site });
  const model = toSummary(pinned);
  return { model, artefact: readArtefact(dataDir, model) };
}

/** Parse a status argument (CLI, API). @throws LkError LK_VALIDATION for an unknown status. */
export function parseStatus(s: string): ModelStatus {
  if (!isModelStatus(s)) throw new LkError('LK_VALIDATION', `unknown model status "${s}" (draft, shadow, validated, retired)`);
  return s;
}
