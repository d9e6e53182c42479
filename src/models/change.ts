/**
 * Status changes of a model version as GxP change-control events.
 *
 * A change is made by a named person, in a role the policy bundle permits
 * (`approvers.change`), under a change reference and with a reason; the
 * lifecycle (lifecycle.ts) must allow it, and a promotion must pass the
 * golden-dataset gate (golden.ts). Then the row change and its audit entry
 * (kind `model_change`, action `model.promote` / `model.retire`, on the
 * model's tenant chain) commit in ONE `store.tx`. The entry carries a Part 11
 * signature manifestation — user, printed name, meaning, time — whose value
 * is an Ed25519 signature by the site key over the RFC 8785 canonical JSON of
 * the record in the entry's `args` (which names the model's SHA-256 and holds
 * the evaluation), so {@link verifyModelChange} can check it from the entry
 * alone. A refused change writes nothing.
 *
 * The caller vouches for `by` and `role`: the daemon's route
 * (`src/api/routes-models.ts`) passes the signed-in person, re-authenticated
 * at the moment of signing, and the CLI has no other path; the daemon's own
 * first-start set-up (`demo.ts`) signs as `site-setup`.
 */
import { canonicalJson, type AuditEntry, type AuditSignature, type Json } from '../audit/entry.js';
import { signBytes, verifyBytes, type PublicSiteKey } from '../audit/keys.js';
import { chooseMeaning, DEFAULT_SIGNATURE_MEANINGS, MEANING_VALUES } from '../domain/signature-meanings.js';
import { LkError } from '../errors.js';
import type { Store } from '../store/store.js';
import { defaultGoldenDir } from './golden-data.js';
import { requireGolden, type GoldenEvaluation } from './golden.js';
import { nextStatuses, transition, type ModelStatus } from './lifecycle.js';
import { checkId, checkTenant, heldByAnotherTenant, modelRow, PERSON_RE, readArtefact, stmt, toSummary, type ModelSummary } from './registry.js';

const CHANGE_REF_RE = /^[A-Z][A-Z0-9]*-[A-Za-z0-9-]+$/;

export interface StatusChange {
  readonly tenant: string;
  /** Model id, e.g. `process-twin-v2`. */
  readonly id: string;
  readonly to: ModelStatus;
  /** The person's user id (never an agent or `system`). */
  readonly by: string;
  /** Their role; must be one of the bundle's `approvers.change`. */
  readonly role: string;
  /** Printed name for the signature manifestation (default: `by`). */
  readonly name?: string;
  /** Change-control reference, e.g. `CC-2026-0214` (`DEMO-SETUP` for the demo site). */
  readonly changeRef: string;
  readonly reason: string;
  /** The meaning signed, from the site's list for this step (default: linekeeper's built-in one); the reason goes beside it. */
  readonly meaning?: { readonly id: string; readonly text: string };
}

export interface ChangeOptions {
  /** Roles permitted to approve a change (the policy bundle's `approvers.change`). */
  readonly approvers: readonly string[];
  /** Folder of the golden datasets (default: config/golden of this installation). */
  readonly goldenDir?: string;
}

/** The signed record: exactly the `args` of the audit entry. */
export interface ModelChangeRecord {
  readonly v: 1;
  readonly tenant: string;
  readonly id: string;
  readonly analyte: string;
  readonly family: string;
  readonly version: number;
  readonly kind: string;
  /** SHA-256 of the artefact: the signature binds to the exact model. */
  readonly sha256: string;
  readonly from: ModelStatus;
  readonly to: ModelStatus;
  readonly sites: readonly string[];
  readonly change_ref: string;
  readonly reason: string;
  readonly by: string;
  readonly role: string;
  readonly name: string;
  readonly meaning: string;
  /** The id of the meaning in the site's signature meanings (absent on changes signed before meanings were a list). */
  readonly meaning_id?: string;
  readonly time: string;
  readonly evaluation: GoldenEvaluation | null;
}

export interface ModelChange {
  readonly model: ModelSummary;
  readonly from: ModelStatus;
  readonly to: ModelStatus;
  /** The `model_change` entry on the tenant's chain. */
  readonly auditSeq: number;
  readonly evaluation: GoldenEvaluation | null;
  readonly signature: AuditSignature;
}

/**
 * Change a model's status under change control (see the module header).
 * @throws LkError LK_VALIDATION (malformed tenant, id, status or person), LK_MODEL_CHANGE (role not permitted by
 *   the bundle, no change reference or reason), LK_MODEL_MISSING / LK_MODEL_TENANT (no such model for the tenant),
 *   LK_MODEL_TRANSITION (the lifecycle has no such change, e.g. out of `retired`), LK_MODEL_CORRUPT (a promotion
 *   whose artefact no longer matches its hash), LK_MODEL_GATE_FAILED (the golden evaluation failed; `detail`
 *   holds it), LK_CONFLICT (the row changed while the evaluation ran). Nothing is written when it throws.
 */
export function changeStatus(store: Store, dataDir: string, req: StatusChange, opts: ChangeOptions): ModelChange {
  checkTenant(req.tenant);
  checkId(req.id);
  if (typeof req.by !== 'string' || !PERSON_RE.test(req.by)) throw new LkError('LK_VALIDATION', `"${String(req.by)}" is not a person's user id (an agent id or system cannot change a model's status)`, { by: req.by });
  if (typeof req.role !== 'string' || !opts.approvers.includes(req.role)) {
    throw new LkError('LK_MODEL_CHANGE', `role "${String(req.role)}" may not approve a model change (bundle approvers.change: ${opts.approvers.join(', ') || 'none'})`, { role: req.role });
  }
  if (typeof req.changeRef !== 'string' || !CHANGE_REF_RE.test(req.changeRef)) throw new LkError('LK_MODEL_CHANGE', `a model change needs a change reference like CC-2026-0214, got "${String(req.changeRef)}"`);
  if (typeof req.reason !== 'string' || req.reason.trim().length === 0) throw new LkError('LK_MODEL_CHANGE', 'a model change needs a reason');
  const name = req.name ?? req.by;
  if (typeof name !== 'string' || name.trim().length === 0 || name.length > 200) throw new LkError('LK_VALIDATION', 'the printed name must be 1–200 characters');

  const before = current(store, req);
  const tr = transition(before.status, req.to);
  if (!tr) {
    const next = nextStatuses(before.status);
    throw new LkError('LK_MODEL_TRANSITION', `model ${req.id} is ${before.status}: it can go to ${next.length ? next.join(' or ') : 'nothing (retired is final)'}, not ${String(req.to)}`, { id: req.id, from: before.status, to: req.to });
  }
  // the evaluation reads files and runs the model: outside the write transaction, re-checked inside it
  const evaluation = tr.gated ? requireGolden({ model: before, artefact: readArtefact(dataDir, before) }, opts.goldenDir ?? defaultGoldenDir()) : null;

  const key = store.audit.siteKey();
  return store.tx(({ db, audit }) => {
    const row = modelRow(db, req.tenant, req.id);
    if (!row || row.status !== before.status || row.sha256 !== before.sha256 || row.audit_seq !== before.auditSeq) {
      throw new LkError('LK_CONFLICT', `model ${req.id} changed while it was being evaluated; try again`, { id: req.id });
    }
    const time = new Date(store.clock.now()).toISOString();
    const meaning = req.meaning ?? chooseMeaning(DEFAULT_SIGNATURE_MEANINGS, 'model_change', undefined, MEANING_VALUES.model_change({ model: req.id, from: before.status, to: req.to }), req.to);
    const record: ModelChangeRecord = {
      v: 1,
      tenant: before.tenant,
      id: before.id,
      analyte: before.analyte,
      family: before.family,
      version: before.version,
      kind: before.kind,
      sha256: before.sha256,
      from: before.status,
      to: req.to,
      sites: before.sites,
      change_ref: req.changeRef,
      reason: req.reason,
      by: req.by,
      role: req.role,
      name,
      meaning: meaning.text,
      meaning_id: meaning.id,
      time,
      evaluation,
    };
    const signature: AuditSignature = { user: req.by, name, meaning: meaning.text, time, value: signBytes(key, canonicalJson(record)) };
    const e = audit.append({
      tenant: req.tenant,
      actor: req.by,
      kind: 'model_change',
      action: tr.action,
      args: record as unknown as Json,
      old: before.status,
      new: req.to,
      reason: req.reason,
      signature,
    });
    stmt(db, 'UPDATE model SET status = ?, changed_at = ?, changed_by = ?, change_ref = ?, audit_seq = ? WHERE tenant = ? AND id = ?').run(req.to, time, req.by, req.changeRef, e.seq, req.tenant, req.id);
    return { model: toSummary(modelRow(db, req.tenant, req.id)!), from: before.status, to: req.to, auditSeq: e.seq, evaluation, signature };
  });
}

function current(store: Store, req: StatusChange): ModelSummary {
  const row = modelRow(store.db, req.tenant, req.id);
  if (!row) {
    if (heldByAnotherTenant(store.db, req.tenant, req.id)) throw new LkError('LK_MODEL_TENANT', `model ${req.id} is not available to tenant ${req.tenant}`, { id: req.id, tenant: req.tenant });
    throw new LkError('LK_MODEL_MISSING', `model ${req.id} is missing`, { id: req.id, tenant: req.tenant });
  }
  return toSummary(row);
}

/**
 * True when a `model_change` audit entry's signature is a valid Ed25519 signature by `key` over the canonical
 * JSON of its `args`, and the manifestation (user, name, meaning, time) is the one the record names. Never throws.
 */
export function verifyModelChange(entry: Pick<AuditEntry, 'args' | 'signature' | 'actor'>, key: PublicSiteKey): boolean {
  const sig = entry.signature;
  const rec = entry.args as Partial<ModelChangeRecord> | undefined;
  if (!sig?.value || !rec || typeof rec !== 'object') return false;
  if (rec.by !== sig.user || rec.name !== sig.name || rec.meaning !== sig.meaning || rec.time !== sig.time || entry.actor !== rec.by) return false;
  try {
    return verifyBytes(key, canonicalJson(rec), sig.value);
  } catch {
    return false;
  }
}
