/**
 * Change control of the policy bundle: `linekeeper policy apply <dir> --change <ref>` compiles the new bundle,
 * shows what it changes against the bundle in force (limits, allow-lists, autonomy, severities), re-authenticates
 * the approver against the site's users, checks their role against `approvers.change` of the bundle IN FORCE,
 * signs the new version with the site key (Ed25519 over the canonical payload of src/policy/signature.ts),
 * records `policy.signed` on the site chain with the diff and the signature, then installs the files in the
 * folder in force. The daemon takes it at the next SIGHUP (or start) only if that signature verifies.
 *
 * The signature lives on the site chain, not in a file beside the bundle: the chain is append-only and
 * hash-chained, a signature is found by the exact version it covers, and the folder of the embedded default
 * may be read-only. An edit of the folder after signing changes the version, which then has no signature.
 */
import { cpSync, existsSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { SITE_TENANT } from '../audit/entry.js';
import { signBytes } from '../audit/keys.js';
import type { Identity } from '../api/identity.js';
import type { DemoUser } from '../api/demo-users.js';
import { defaultConfigFile, type LoadedConfig } from '../config/load.js';
import { readPolicyBundle } from '../config/policy-bundle.js';
import { acceptedBundles, findPolicySignature, lastAcceptedBundle } from '../engine/policy-gate.js';
import { LkError } from '../errors.js';
import { checkChangeControl, type PolicyBundle } from '../policy/index.js';
import { diffBundles, type BundleChange } from '../policy/diff.js';
import { BUNDLE_FILES } from '../policy/schema.js';
import { chooseMeaning, manifestationMeaning, meaningsInForce, type ChosenMeaning } from '../domain/signature-meanings.js';
import { DEMO_SETUP_CHANGE, policySignaturePayload, signatureBytes, type PolicySigner } from '../policy/signature.js';
import type { Store } from '../store/store.js';

export interface PolicyPreview {
  /** The bundle in force (null: none was ever accepted here). */
  readonly inForce: PolicyBundle | null;
  readonly next: PolicyBundle;
  readonly changes: BundleChange[];
  /** Roles that may sign this change: `approvers.change` of the bundle in force (of the new one when none is). */
  readonly allowedRoles: readonly string[];
}

/**
 * Compile the new bundle and compare it with the one in force.
 * @throws LkError LK_POLICY_BUNDLE (the new bundle is invalid), LK_VALIDATION (the new bundle is the folder in
 *   force, or is already in force and signed), LK_CONFLICT (the folder in force no longer holds the accepted version).
 */
export function previewPolicyChange(store: Store, loaded: LoadedConfig, dir: string): PolicyPreview {
  if (resolve(dir) === resolve(loaded.policyDir)) {
    throw new LkError('LK_VALIDATION', `${dir} is the policy folder in force: prepare the new bundle in another folder; policy apply installs it after signing`, { dir });
  }
  const next = readPolicyBundle(dir, loaded.config);
  const last = lastAcceptedBundle(store);
  let inForce: PolicyBundle | null = null;
  if (last) {
    inForce = readPolicyBundle(loaded.policyDir, loaded.config);
    if (inForce.version !== last.version) {
      throw new LkError('LK_CONFLICT', `${loaded.policyDir} no longer holds the bundle in force (${last.version.slice(0, 12)}…, change ${last.changeRef}) but ${inForce.version.slice(0, 12)}…: restore it from version control, then apply the new bundle from its own folder`, { inForce: last.version, found: inForce.version });
    }
    if (next.version === inForce.version && findPolicySignature(store, next.version)) {
      throw new LkError('LK_VALIDATION', `the bundle in ${dir} is the one in force (${next.version.slice(0, 12)}…) and is signed: nothing to apply`);
    }
  }
  return { inForce, next, changes: diffBundles(inForce?.content ?? null, next.content), allowedRoles: [...(inForce ?? next).content.approvers.change] };
}

export interface SignRequest {
  readonly bundle: PolicyBundle;
  readonly previous: string | null;
  readonly changeRef: string;
  readonly signer: PolicySigner;
  readonly allowedRoles: readonly string[];
  readonly method: 'password' | 'demo_setup';
  readonly changes: readonly BundleChange[];
  readonly reason: string;
  readonly from: string;
  /** The meaning signed (from the site's list; default: the built-in one). */
  readonly meaning?: ChosenMeaning;
}

/** Sign `bundle` with the site key and record `policy.signed` (diff, payload, signature) on the site chain; returns its seq. */
export function signPolicyBundle(store: Store, r: SignRequest): number {
  const key = store.audit.siteKey();
  const payload = policySignaturePayload({
    site: r.bundle.content.site, bundle_version: r.bundle.version, previous_version: r.previous, change_ref: r.changeRef, signer: r.signer,
    allowed_roles: r.allowedRoles, method: r.method, signed_at: new Date(store.clock.now()).toISOString(), key_id: key.keyId, ...(r.meaning ? { meaning: r.meaning } : {}),
  });
  const value = signBytes(key, signatureBytes(payload));
  const e = store.audit.append({
    tenant: SITE_TENANT, actor: r.signer.id, kind: 'config_change', action: 'policy.signed',
    args: { payload: JSON.parse(JSON.stringify(payload)), changes: r.changes.map((c) => ({ ...c })), from: r.from },
    reason: r.reason,
    ...(r.previous ? { old: r.previous } : {}), new: r.bundle.version,
    signature: { user: r.signer.id, name: r.signer.name, meaning: manifestationMeaning(payload.meaning), time: payload.signed_at, value },
  });
  return e.seq;
}

export interface PolicyApplyRequest {
  readonly store: Store;
  readonly identity: Pick<Identity, 'reauthenticate'>;
  readonly loaded: LoadedConfig;
  /** The folder of the new bundle. */
  readonly dir: string;
  readonly changeRef: string;
  readonly approver: string;
  readonly password: string;
  /** One of the site's signature meanings for policy_change (an id or its text); default: the first. */
  readonly meaning?: string;
}

/**
 * The meaning a policy change is signed with: an entry of the list in force (`loaded`'s `signatures.meanings`) for
 * policy_change, filled with the change reference and the new version.
 * @throws LkError LK_MEANING_NOT_ALLOWED
 */
export function policyChangeMeaning(loaded: LoadedConfig, chosen: string | undefined, changeRef: string, version: string): ChosenMeaning {
  return chooseMeaning(meaningsInForce(loaded.config.signatures?.meanings), 'policy_change', chosen, { change: changeRef, version });
}

/**
 * Sign and install a new policy bundle (see the module comment). Nothing is signed or installed on any error.
 * @throws LkError LK_VALIDATION (bad change reference; CHANGE.yaml names another change or approver; see
 *   {@link previewPolicyChange}), LK_MEANING_NOT_ALLOWED (before the password), LK_POLICY_BUNDLE, LK_CONFLICT, LK_POLICY_CHANGE_CONTROL / LK_POLICY_CHANGE_REF_REUSED,
 *   LK_REAUTH_FAILED / LK_ACCOUNT_LOCKED (the password), LK_FORBIDDEN (a role the bundle in force does not let approve).
 */
export async function applyPolicyChange(r: PolicyApplyRequest): Promise<{ seq: number; version: string; changes: BundleChange[] }> {
  if (!/^[A-Za-z0-9][A-Za-z0-9._/-]{1,63}$/.test(r.changeRef)) throw new LkError('LK_VALIDATION', 'a change reference (e.g. CC-2026-0301) is required');
  const p = previewPolicyChange(r.store, r.loaded, r.dir);
  const ch = p.next.change;
  const changeFile = join(r.dir, 'CHANGE.yaml');
  if (ch.change_ref !== r.changeRef) throw new LkError('LK_VALIDATION', `${changeFile}: change_ref is ${ch.change_ref} but --change is ${r.changeRef}: the change record and the signature name one change`, { file: changeFile });
  if (ch.approver.name !== r.approver) throw new LkError('LK_VALIDATION', `${changeFile}: approver.name is ${ch.approver.name} but ${r.approver} signs: the change record names the person who signs`, { file: changeFile });
  const last = lastAcceptedBundle(r.store);
  // refused before anyone types a password: a change reference already used for other content
  checkChangeControl(p.next, last, acceptedBundles(r.store), { change_ref: r.changeRef, approver: { name: r.approver, role: ch.approver.role } });
  const meaning = policyChangeMeaning(r.loaded, r.meaning, r.changeRef, p.next.version);
  const user = await r.identity.reauthenticate(r.approver, r.password, { purpose: 'policy.apply', change_ref: r.changeRef });
  if (!p.allowedRoles.includes(user.role)) {
    r.store.audit.append({ tenant: SITE_TENANT, actor: user.id, kind: 'config_change', action: 'policy.apply_refused', args: { change_ref: r.changeRef, role: user.role, allowed: [...p.allowedRoles] }, reason: 'role may not approve a policy change', new: p.next.version });
    throw new LkError('LK_FORBIDDEN', `${user.id} (${user.role}) may not approve a policy change: the bundle in force lets ${p.allowedRoles.join(', ')} approve`);
  }
  const seq = signPolicyBundle(r.store, {
    bundle: p.next, previous: last?.version ?? null, changeRef: r.changeRef, signer: { id: user.id, name: user.name, role: user.role },
    allowedRoles: p.allowedRoles, method: 'password', changes: p.changes, reason: ch.reason, from: resolve(r.dir), meaning,
  });
  installBundle(r.dir, r.loaded.policyDir);
  return { seq, version: p.next.version, changes: p.changes };
}

/** Copy the bundle files of `from` into the folder in force `to` (each replaced atomically; the previous folder kept as `<to>.prev`). */
export function installBundle(from: string, to: string): void {
  const prev = `${to}.prev`;
  rmSync(prev, { recursive: true, force: true });
  if (existsSync(to)) cpSync(to, prev, { recursive: true });
  for (const name of Object.keys(BUNDLE_FILES)) {
    const tmp = join(to, `.${name}.tmp-${process.pid}`);
    writeFileSync(tmp, readFileSync(join(from, name)), { mode: 0o644 });
    renameSync(tmp, join(to, name));
  }
}

/** The demo user who signs the embedded default's first bundle: the demo QA reviewer. */
const DEMO_SIGNERS = ['m.rossi', 'g.ferri'];

/**
 * The embedded default's first start: when no bundle was ever accepted here and the bundle in force is the
 * shipped default's content, create the demo identities and sign the bundle as the DEMO-SETUP change by the
 * demo QA reviewer — recorded as signed automatically at set-up, not by a person. Any other bundle is left
 * unsigned (and so refused until someone runs `policy apply`).
 * `createDemoUsers` is the API layer's (ensureDemoUsers), passed in by the daemon that wires both layers.
 * @returns the demo identities created (their one-time passwords are shown once by serve)
 */
export async function signEmbeddedDefault(store: Store, loaded: LoadedConfig, identity: Pick<Identity, 'users'>, createDemoUsers: () => Promise<DemoUser[]>): Promise<DemoUser[]> {
  if (lastAcceptedBundle(store)) return [];
  let bundle: PolicyBundle;
  let shipped: PolicyBundle;
  try {
    bundle = readPolicyBundle(loaded.policyDir, loaded.config);
    shipped = readPolicyBundle(join(dirname(defaultConfigFile()), 'policy'), loaded.config);
  } catch {
    return [];
  }
  if (shipped.version !== bundle.version || findPolicySignature(store, bundle.version)) return [];
  const made = await createDemoUsers();
  const roles = bundle.content.approvers.change;
  const signer = DEMO_SIGNERS.map((id) => identity.users.get(id)).find((u) => u && !u.disabled && u.lockedAt === null && roles.includes(u.role));
  if (!signer) return made;
  signPolicyBundle(store, {
    bundle, previous: null, changeRef: DEMO_SETUP_CHANGE, signer: { id: signer.id, name: signer.name, role: signer.role }, allowedRoles: roles, method: 'demo_setup',
    changes: diffBundles(null, bundle.content), from: resolve(loaded.policyDir),
    reason: `signed automatically at the first start of the embedded default (demo set-up, ${DEMO_SETUP_CHANGE}) by the demo user ${signer.id}: no person reviewed or signed this bundle`,
  });
  return made;
}
