/**
 * The daemon's side of policy change control: load the bundle, find the
 * signature of exactly its version on the site chain (`policy.signed`, made by
 * `linekeeper policy apply`), verify it, compare the version with the last one
 * accepted on this node, and record what happened on the site chain — in the
 * same transaction as the acceptance row. A bundle that is missing, invalid,
 * unsigned or changed without a new change reference is not used: at a start
 * the daemon runs without one and every write is denied (fail closed); at a
 * reload the bundle in force stays.
 */
import type { LoadedConfig } from '../config/load.js';
import { LkError } from '../errors.js';
import type { Logger } from '../log.js';
import { readPolicyBundle } from '../config/policy-bundle.js';
import { checkChangeControl, type AcceptedBundle, type ChangeControlEvent, type PolicyBundle } from '../policy/index.js';
import { checkPolicySignature, type PolicySignature, type PolicySignaturePayload } from '../policy/signature.js';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { loadSitePublicKey, verifyBytes, type PublicSiteKey } from '../audit/keys.js';
import { DB_FILE, openStore } from '../store/store.js';
import { UserStore } from '../store/user-store.js';
import type { Store } from '../store/store.js';
import { SITE_TENANT } from '../audit/entry.js';

export interface PolicyGateResult {
  /** The bundle in force, or null: then every write is denied. */
  readonly bundle: PolicyBundle | null;
  readonly event?: ChangeControlEvent;
  readonly error?: LkError;
}

/** The newest accepted bundle version on this node, or null before the first. */
export function lastAcceptedBundle(store: Store): AcceptedBundle | null {
  const row = store.db.prepare('SELECT version, change_ref AS changeRef FROM policy_acceptance ORDER BY id DESC LIMIT 1').get() as AcceptedBundle | undefined;
  return row ?? null;
}

/** Every accepted bundle version with its change reference, oldest first (change references are never reused). */
export function acceptedBundles(store: Store): AcceptedBundle[] {
  return store.db.prepare('SELECT version, change_ref AS changeRef FROM policy_acceptance ORDER BY id').all() as AcceptedBundle[];
}

/** The newest `policy.signed` entry of the site chain for exactly `version`, as its signature record; null when none. */
export function findPolicySignature(store: Pick<Store, 'db'>, version: string): (PolicySignature & { readonly seq: number }) | null {
  const row = store.db
    .prepare("SELECT seq, args, signature FROM audit_entry WHERE tenant = ? AND action = 'policy.signed' AND new_value = ? ORDER BY seq DESC LIMIT 1")
    .get(SITE_TENANT, JSON.stringify(version)) as { seq: number; args: string | null; signature: string | null } | undefined;
  if (!row?.args) return null;
  const args = JSON.parse(row.args) as { payload?: PolicySignaturePayload };
  const sig = row.signature ? (JSON.parse(row.signature) as { value?: string }) : {};
  if (!args.payload || typeof sig.value !== 'string') return null;
  return { seq: row.seq, payload: args.payload, signature: sig.value };
}

/**
 * The verified signature of `bundle` on this node (see {@link checkPolicySignature}), against the last accepted
 * version and, on a reload, the roles of the bundle in force.
 * @throws LkError LK_POLICY_UNSIGNED, LK_POLICY_SIGNATURE_INVALID, LK_POLICY_SIGNER
 */
export function verifyPolicySignature(store: Pick<Store, 'db'>, key: PublicSiteKey, site: string, bundle: PolicyBundle, inForce: PolicyBundle | null): { record: PolicySignature & { seq: number }; payload: PolicySignaturePayload } {
  const last = store.db.prepare('SELECT version FROM policy_acceptance ORDER BY id DESC LIMIT 1').pluck().get() as string | undefined;
  const record = findPolicySignature(store, bundle.version);
  const row = record ? new UserStore(store.db).get(record.payload.signer?.id ?? '') : null;
  const payload = checkPolicySignature({
    site, version: bundle.version, lastAccepted: last ?? null, record,
    verify: (bytes, sig) => verifyBytes(key, bytes, sig), keyId: key.keyId,
    signer: row ? { id: row.id, role: row.role, active: !row.disabled && row.lockedAt === null } : null,
    inForceRoles: inForce ? inForce.content.approvers.change : null,
  });
  return { record: record!, payload };
}

export interface OpenPolicyOptions {
  /** The bundle in force in this process (a reload): its `approvers.change` must allow the signer too. */
  readonly inForce?: PolicyBundle | null;
}

/**
 * Load the policy bundle of `loaded`, require a signature of exactly its version (the site key, a known
 * signer of an allowed role, made against the version in force), apply change control with the signed
 * change reference and signer, and audit the outcome on the site chain — in the same transaction as the
 * acceptance row. Never throws for a bad or unsigned bundle (that is a recorded, fail-closed outcome);
 * throws only when the audit trail itself cannot be written, because a daemon that cannot audit must not run.
 */
export function openPolicy(store: Store, loaded: LoadedConfig, log: Logger, opts: OpenPolicyOptions = {}): PolicyGateResult {
  const last = lastAcceptedBundle(store);
  try {
    const bundle = readPolicyBundle(loaded.policyDir, loaded.config);
    const { record, payload: signed } = verifyPolicySignature(store, store.audit.siteKey(), loaded.config.site.id, bundle, opts.inForce ?? null);
    const ev = checkChangeControl(bundle, last, acceptedBundles(store), { change_ref: signed.change_ref, approver: { name: signed.signer.id, role: signed.signer.role } });
    store.tx(({ db, audit }) => {
      if (ev.kind !== 'unchanged') {
        db.prepare('INSERT INTO policy_acceptance (version, change_ref, approver, role, reason, accepted_at) VALUES (?, ?, ?, ?, ?, ?)').run(
          ev.version, ev.changeRef, ev.approver.name, ev.approver.role, ev.reason, new Date(store.clock.now()).toISOString(),
        );
      }
      audit.append({
        tenant: SITE_TENANT,
        actor: ev.kind === 'unchanged' ? 'system' : signed.signer.id,
        kind: ev.kind === 'unchanged' ? 'system' : 'config_change',
        action: ev.kind === 'unchanged' ? 'policy.loaded' : 'policy.accepted',
        args: {
          change_ref: ev.changeRef, approver: { name: ev.approver.name, role: ev.approver.role }, date: ev.date, dir: loaded.policyDir, kind: ev.kind,
          signature: { seq: record!.seq, signer: signed.signer.id, name: signed.signer.name, role: signed.signer.role, method: signed.method, signed_at: signed.signed_at, key_id: signed.key_id },
        },
        reason: ev.reason,
        ...(ev.previousVersion !== null && ev.kind === 'changed' ? { old: ev.previousVersion } : {}),
        new: ev.version,
      });
    });
    log.info({ version: bundle.version, changeRef: ev.changeRef, kind: ev.kind, signer: signed.signer.id }, 'policy bundle in force');
    return { bundle, event: ev };
  } catch (err) {
    if (!LkError.is(err) || !(REFUSALS as readonly string[]).includes(err.code)) throw err;
    store.tx(({ audit }) =>
      audit.append({
        tenant: SITE_TENANT,
        actor: 'system',
        kind: 'config_change',
        action: 'policy.refused',
        args: { code: err.code, dir: loaded.policyDir, ...(last ? { in_force_before: last.version } : {}), ...(opts.inForce ? { in_force: opts.inForce.version } : {}), ...(err.detail ? { detail: jsonDetail(err.detail) } : {}) },
        reason: err.message,
      }),
    );
    log.error({ code: err.code, err: err.message }, opts.inForce ? 'policy bundle refused: the bundle in force is kept' : 'policy bundle refused: every write is denied until a signed bundle is accepted');
    return { bundle: null, error: err };
  }
}

/** The codes of a refused bundle (recorded, fail closed); anything else is a fault of the daemon. */
export const REFUSALS = ['LK_POLICY_BUNDLE', 'LK_POLICY_CHANGE_CONTROL', 'LK_POLICY_CHANGE_REF_REUSED', 'LK_POLICY_UNSIGNED', 'LK_POLICY_SIGNATURE_INVALID', 'LK_POLICY_SIGNER'] as const;

/** The error's detail as JSON for the trail (strings, numbers, booleans; the rest dropped). */
function jsonDetail(d: Readonly<Record<string, unknown>>): Record<string, string | number | boolean> {
  const out: Record<string, string | number | boolean> = {};
  for (const [k, v] of Object.entries(d)) if (typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean') out[k] = v;
  return out;
}

/**
 * The signature status of the bundle in `loaded.policyDir` for `doctor` and `config check`, read-only: `ok` when
 * a valid signature covers its version, `warn` before the first start (no store yet: the embedded default signs
 * its own at first start, any other bundle needs `policy apply`), `fail` when the daemon would refuse it.
 */
export function policySignatureStatus(loaded: LoadedConfig, bundle: PolicyBundle): { status: 'ok' | 'warn' | 'fail'; text: string; code?: string } {
  if (!existsSync(join(loaded.dataDir, DB_FILE))) return { status: 'warn', text: `not signed yet (no data in ${loaded.dataDir}): sign it with \`linekeeper policy apply\` (the embedded default signs its own at first start)` };
  try {
    const store = openStore({ dataDir: loaded.dataDir, readonly: true });
    try {
      const { payload: p, record } = verifyPolicySignature(store, loadSitePublicKey(loaded.dataDir), loaded.config.site.id, bundle, null);
      const how = p.method === 'demo_setup' ? 'automatically at demo set-up by' : 'by';
      return { status: 'ok', text: `signed ${how} ${p.signer.id} (${p.signer.role}) under ${p.change_ref} at ${p.signed_at} (site audit seq ${record.seq})` };
    } finally {
      store.close();
    }
  } catch (err) {
    return { status: 'fail', text: LkError.is(err) ? `${err.message} [${err.code}]` : String(err), code: LkError.is(err) ? err.code : 'LK_POLICY_SIGNATURE_INVALID' };
  }
}
