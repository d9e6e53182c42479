/**
 * The model registry: fitted and trained models as files under the data
 * directory, one folder per tenant and model version,
 *
 *   <dataDir>/models/<tenant>/<id>/manifest.json   id, version, SHA-256 of the artefact, card, status, sites
 *   <dataDir>/models/<tenant>/<id>/artefact.json   the parameters / coefficients / weights
 *
 * with ids of the shape `<analyte-or-attribute>-<family>-v<n>`. Loading checks
 * the tenant (R9: another tenant's model is never used), the artefact hash, the
 * validation status and the site pin; each failure is a typed LkError that the
 * run engine's watchdog treats as "model lost". Writes go to a temporary file
 * and are renamed into place, so a crash never leaves half a manifest.
 */
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import { LkError } from '../errors.js';
import type { ModelCard } from '../twin/card.js';

export const MODEL_STATUSES = ['draft', 'validated', 'retired'] as const;
export type ModelStatus = (typeof MODEL_STATUSES)[number];
export type ModelKind = 'twin' | 'nir-pls' | 'vision-softmax';

const ID_RE = /^([a-z][a-z0-9]*)-([a-z][a-z0-9]*)-v([1-9][0-9]*)$/;
const SLUG_RE = /^[a-z][a-z0-9]*$/;
const TENANT_RE = /^[a-z][a-z0-9-]*$/;

export interface ModelManifest {
  id: string;
  analyte: string;
  family: string;
  version: number;
  kind: ModelKind;
  tenant: string;
  /** SHA-256 (hex) of artefact.json's bytes. */
  sha256: string;
  status: ModelStatus;
  /** Site ids the model is pinned to; it may only be loaded at these sites. */
  sites: string[];
  card: ModelCard;
  /** ISO 8601 time of registration (from the caller's clock). */
  createdAt: string;
  statusHistory: { status: ModelStatus; at: string; by: string; reason: string }[];
}

const ManifestSchema = z.object({
  id: z.string().regex(ID_RE),
  analyte: z.string(),
  family: z.string(),
  version: z.number().int().positive(),
  kind: z.enum(['twin', 'nir-pls', 'vision-softmax']),
  tenant: z.string().regex(TENANT_RE),
  sha256: z.string().regex(/^[0-9a-f]{64}$/),
  status: z.enum(MODEL_STATUSES),
  sites: z.array(z.string()),
  card: z.record(z.string(), z.unknown()),
  createdAt: z.string(),
  statusHistory: z.array(z.object({ status: z.enum(MODEL_STATUSES), at: z.string(), by: z.string(), reason: z.string() })),
});

/** The folder of all models. */
export function modelsDir(dataDir: string): string {
  return join(dataDir, 'models');
}

function checkTenant(tenant: string): void {
  if (typeof tenant !== 'string' || !TENANT_RE.test(tenant)) throw new LkError('LK_VALIDATION', `tenant id "${String(tenant)}" is not valid`, { tenant });
}

function checkId(id: string): RegExpExecArray {
  const m = typeof id === 'string' ? ID_RE.exec(id) : null;
  if (!m) throw new LkError('LK_VALIDATION', `model id "${String(id)}" is not of the shape <analyte>-<family>-v<n>`, { id });
  return m;
}

function writeAtomic(file: string, text: string): void {
  const tmp = `${file}.tmp-${process.pid}`;
  writeFileSync(tmp, text);
  renameSync(tmp, file);
}

function sha256(bytes: Buffer | string): string {
  return createHash('sha256').update(bytes).digest('hex');
}

function readManifest(dir: string, id: string): ModelManifest {
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(join(dir, 'manifest.json'), 'utf8'));
  } catch (err) {
    throw new LkError('LK_MODEL_CORRUPT', `model ${id}: manifest is unreadable`, { id }, { cause: err });
  }
  const parsed = ManifestSchema.safeParse(raw);
  if (!parsed.success || parsed.data.id !== id) throw new LkError('LK_MODEL_CORRUPT', `model ${id}: manifest is invalid`, { id });
  return parsed.data as unknown as ModelManifest;
}

export interface RegisterInput {
  tenant: string;
  analyte: string;
  family: string;
  kind: ModelKind;
  artefact: unknown;
  card: ModelCard;
  sites?: string[];
  status?: ModelStatus;
  /** Epoch ms from the caller's clock. */
  at: number;
  by: string;
}

/**
 * Register a new model version: the next `v<n>` of `<analyte>-<family>` for the
 * tenant. Throws LK_VALIDATION for bad ids or a card of another tenant.
 */
export function registerModel(dataDir: string, input: RegisterInput): ModelManifest {
  checkTenant(input.tenant);
  if (!SLUG_RE.test(input.analyte) || !SLUG_RE.test(input.family)) throw new LkError('LK_VALIDATION', 'analyte and family must be lower-case letters and digits');
  if (input.card.tenant !== input.tenant) throw new LkError('LK_VALIDATION', 'the model card names another tenant', { tenant: input.tenant, cardTenant: input.card.tenant });
  if (!Number.isFinite(input.at)) throw new LkError('LK_VALUE_INVALID', 'registration time must be finite epoch milliseconds');
  const tenantDir = join(modelsDir(dataDir), input.tenant);
  mkdirSync(tenantDir, { recursive: true });
  const prefix = `${input.analyte}-${input.family}-v`;
  const version = 1 + Math.max(0, ...readdirSync(tenantDir).filter((d) => d.startsWith(prefix)).map((d) => Number(d.slice(prefix.length)) || 0));
  const id = `${prefix}${version}`;
  const dir = join(tenantDir, id);
  mkdirSync(dir);
  const text = `${JSON.stringify(input.artefact)}\n`;
  const status = input.status ?? 'draft';
  const at = new Date(input.at).toISOString();
  const manifest: ModelManifest = {
    id,
    analyte: input.analyte,
    family: input.family,
    version,
    kind: input.kind,
    tenant: input.tenant,
    sha256: sha256(text),
    status,
    sites: [...new Set(input.sites ?? [])].sort(),
    card: input.card,
    createdAt: at,
    statusHistory: [{ status, at, by: input.by, reason: 'registered' }],
  };
  writeAtomic(join(dir, 'artefact.json'), text);
  writeAtomic(join(dir, 'manifest.json'), `${JSON.stringify(manifest, null, 2)}\n`);
  return manifest;
}

/** Summary row of `GET /models` and `linekeeper models list`. */
export interface ModelSummary {
  id: string;
  tenant: string;
  analyte: string;
  family: string;
  version: number;
  kind: ModelKind;
  status: ModelStatus;
  sites: string[];
  sha256: string;
  createdAt: string;
  card: ModelCard;
}

/**
 * List models, newest version first within each analyte-family. With a tenant,
 * only that tenant's models (R9); without, all (site administration). Missing
 * folders give an empty list; unreadable manifests are listed as nothing and
 * surface when loaded. Throws LK_VALIDATION for a malformed tenant id.
 */
export function listModels(dataDir: string, tenant?: string): ModelSummary[] {
  if (tenant !== undefined) checkTenant(tenant);
  const root = modelsDir(dataDir);
  if (!existsSync(root)) return [];
  const tenants = tenant !== undefined ? [tenant] : readdirSync(root).filter((t) => TENANT_RE.test(t));
  const out: ModelSummary[] = [];
  for (const t of tenants.sort()) {
    const tdir = join(root, t);
    if (!existsSync(tdir)) continue;
    for (const id of readdirSync(tdir).filter((d) => ID_RE.test(d))) {
      let m: ModelManifest;
      try {
        m = readManifest(join(tdir, id), id);
      } catch {
        continue;
      }
      if (m.tenant !== t) continue;
      out.push({ id: m.id, tenant: m.tenant, analyte: m.analyte, family: m.family, version: m.version, kind: m.kind, status: m.status, sites: m.sites, sha256: m.sha256, createdAt: m.createdAt, card: m.card });
    }
  }
  return out.sort((a, b) => a.tenant.localeCompare(b.tenant) || a.analyte.localeCompare(b.analyte) || a.family.localeCompare(b.family) || b.version - a.version);
}

export interface LoadedModel {
  manifest: ModelManifest;
  artefact: unknown;
}

/**
 * Load a model for use by `tenant` at `site`. Throws
 * LK_MODEL_TENANT (it exists, but for another tenant), LK_MODEL_MISSING,
 * LK_MODEL_CORRUPT (hash mismatch or unreadable), LK_MODEL_NOT_VALIDATED
 * (draft or retired; `allowDraft` admits drafts for rehearsal-only use),
 * LK_MODEL_NOT_PINNED (not pinned to the site).
 */
export function loadModel(dataDir: string, id: string, ctx: { tenant: string; site: string; allowDraft?: boolean }): LoadedModel {
  checkTenant(ctx.tenant);
  checkId(id);
  const root = modelsDir(dataDir);
  const dir = join(root, ctx.tenant, id);
  if (!existsSync(join(dir, 'manifest.json'))) {
    const elsewhere = existsSync(root) && readdirSync(root).some((t) => t !== ctx.tenant && existsSync(join(root, t, id, 'manifest.json')));
    if (elsewhere) throw new LkError('LK_MODEL_TENANT', `model ${id} is not available to tenant ${ctx.tenant}`, { id, tenant: ctx.tenant });
    throw new LkError('LK_MODEL_MISSING', `model ${id} is missing`, { id });
  }
  const manifest = readManifest(dir, id);
  if (manifest.tenant !== ctx.tenant) throw new LkError('LK_MODEL_TENANT', `model ${id} is not available to tenant ${ctx.tenant}`, { id, tenant: ctx.tenant });
  let bytes: Buffer;
  try {
    bytes = readFileSync(join(dir, 'artefact.json'));
  } catch (err) {
    throw new LkError('LK_MODEL_MISSING', `model ${id}: artefact is missing`, { id }, { cause: err });
  }
  if (sha256(bytes) !== manifest.sha256) throw new LkError('LK_MODEL_CORRUPT', `model ${id}: artefact does not match its SHA-256`, { id, expected: manifest.sha256 });
  if (manifest.status !== 'validated' && !(ctx.allowDraft && manifest.status === 'draft')) {
    throw new LkError('LK_MODEL_NOT_VALIDATED', `model ${id} is ${manifest.status}, not validated`, { id, status: manifest.status });
  }
  if (!manifest.sites.includes(ctx.site)) throw new LkError('LK_MODEL_NOT_PINNED', `model ${id} is not pinned to site ${ctx.site}`, { id, site: ctx.site, sites: manifest.sites });
  let artefact: unknown;
  try {
    artefact = JSON.parse(bytes.toString('utf8'));
  } catch (err) {
    throw new LkError('LK_MODEL_CORRUPT', `model ${id}: artefact is not JSON`, { id }, { cause: err });
  }
  return { manifest, artefact };
}

/**
 * The newest validated version of `<analyte>-<family>` for the tenant that is
 * pinned to the site, loaded and checked. Throws LK_MODEL_MISSING when there is none.
 */
export function loadLatest(dataDir: string, analyte: string, family: string, ctx: { tenant: string; site: string }): LoadedModel {
  const candidates = listModels(dataDir, ctx.tenant).filter((m) => m.analyte === analyte && m.family === family && m.status === 'validated' && m.sites.includes(ctx.site));
  const best = candidates[0];
  if (!best) throw new LkError('LK_MODEL_MISSING', `no validated ${analyte}-${family} model pinned to site ${ctx.site} for tenant ${ctx.tenant}`, { analyte, family, ...ctx });
  return loadModel(dataDir, best.id, ctx);
}

/**
 * Change a model's status (validate, retire) and/or its pinned sites; the
 * change is kept in the manifest's history. Throws like {@link loadModel} for
 * a missing or foreign model, and LK_CONFLICT for leaving `retired`.
 */
export function updateModel(
  dataDir: string,
  id: string,
  change: { tenant: string; status?: ModelStatus; sites?: string[]; at: number; by: string; reason: string },
): ModelManifest {
  checkTenant(change.tenant);
  checkId(id);
  const dir = join(modelsDir(dataDir), change.tenant, id);
  if (!existsSync(join(dir, 'manifest.json'))) throw new LkError('LK_MODEL_MISSING', `model ${id} is missing`, { id });
  const m = readManifest(dir, id);
  if (m.tenant !== change.tenant) throw new LkError('LK_MODEL_TENANT', `model ${id} is not available to tenant ${change.tenant}`, { id });
  if (m.status === 'retired' && change.status && change.status !== 'retired') throw new LkError('LK_CONFLICT', `model ${id} is retired; register a new version instead`, { id });
  const at = new Date(change.at).toISOString();
  const next: ModelManifest = {
    ...m,
    status: change.status ?? m.status,
    sites: change.sites ? [...new Set(change.sites)].sort() : m.sites,
    statusHistory: [...m.statusHistory, { status: change.status ?? m.status, at, by: change.by, reason: change.reason }],
  };
  writeAtomic(join(dir, 'manifest.json'), `${JSON.stringify(next, null, 2)}\n`);
  return next;
}
