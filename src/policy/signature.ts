/**
 * The signature of a policy bundle change (pure: the caller passes the verify function of the site's public
 * key and what the user store says of the signer). A bundle takes effect only when a named approver signed
 * exactly its version (the SHA-256 of its canonical content) under a change reference: the signed payload
 * binds the version, the version it replaces, the change reference, the signer (user id, name, role), the
 * roles that could sign (the `approvers.change` of the bundle in force at signing), the meaning and the time.
 * Anything that edits the bundle after signing changes its version, so no signature covers it any more.
 */
import canonicalize from 'canonicalize';
import { LkError } from '../errors.js';

export const POLICY_SIGNATURE_FORMAT = 'linekeeper-policy-signature/1';

/**
 * What a signer declares by signing (21 CFR 11.50: the meaning of the signature) when the site's list of signature
 * meanings words it no otherwise: linekeeper's built-in entry `policy-approval` (src/domain/signature-meanings.ts).
 */
export const POLICY_SIGNATURE_MEANING = 'approved: this policy bundle version may take effect on the line';
export const POLICY_SIGNATURE_MEANING_ID = 'policy-approval';

/** The change reference the embedded default's first bundle is signed under at first start. */
export const DEMO_SETUP_CHANGE = 'DEMO-SETUP';

export interface PolicySigner {
  readonly id: string;
  readonly name: string;
  readonly role: string;
}

export interface PolicySignaturePayload {
  readonly format: typeof POLICY_SIGNATURE_FORMAT;
  readonly site: string;
  readonly bundle_version: string;
  /** The version in force when it was signed (null: no bundle had ever been accepted). */
  readonly previous_version: string | null;
  readonly change_ref: string;
  readonly signer: PolicySigner;
  /** `approvers.change` of the bundle in force at signing (of the new bundle when none was). */
  readonly allowed_roles: readonly string[];
  /** The meaning signed: an entry of the site's signature meanings for policy_change, filled for this change. */
  readonly meaning: string;
  /** Its id (absent on signatures made before meanings were a controlled list). */
  readonly meaning_id?: string;
  /** `password`: the signer typed their password again; `demo_setup`: signed automatically at the embedded default's first start. */
  readonly method: 'password' | 'demo_setup';
  readonly signed_at: string;
  /** Hex SHA-256 of the site public key that signs. */
  readonly key_id: string;
}

export interface PolicySignature {
  readonly payload: PolicySignaturePayload;
  /** Base64 Ed25519 signature of {@link signatureBytes}(payload). */
  readonly signature: string;
}

/** The exact bytes signed: RFC 8785 canonical JSON of the payload. */
export function signatureBytes(p: PolicySignaturePayload): string {
  return canonicalize(p) ?? '';
}

/** Build the payload (sorted roles, so the same decision always gives the same bytes); the built-in meaning unless one is given. */
export function policySignaturePayload(o: Omit<PolicySignaturePayload, 'format' | 'meaning' | 'meaning_id' | 'allowed_roles'> & { allowed_roles: readonly string[]; meaning?: { readonly id: string; readonly text: string } }): PolicySignaturePayload {
  const m = o.meaning ?? { id: POLICY_SIGNATURE_MEANING_ID, text: POLICY_SIGNATURE_MEANING };
  return {
    format: POLICY_SIGNATURE_FORMAT, site: o.site, bundle_version: o.bundle_version, previous_version: o.previous_version, change_ref: o.change_ref,
    signer: { id: o.signer.id, name: o.signer.name, role: o.signer.role }, allowed_roles: [...o.allowed_roles].sort(), meaning: m.text, meaning_id: m.id,
    method: o.method, signed_at: o.signed_at, key_id: o.key_id,
  };
}

/** What the user store says of the signer now (null: no such user). */
export interface SignerRecord {
  readonly id: string;
  readonly role: string;
  readonly active: boolean;
}

export interface SignatureCheck {
  readonly site: string;
  /** The version being loaded. */
  readonly version: string;
  /** The last accepted version on this node (null before the first). */
  readonly lastAccepted: string | null;
  /** The signature found for this version, or null. */
  readonly record: PolicySignature | null;
  /** Ed25519 verification with the site public key. */
  readonly verify: (bytes: string, signature: string) => boolean;
  readonly keyId: string;
  readonly signer: SignerRecord | null;
  /** `approvers.change` of the bundle in force in this process (a reload), or null (a start). */
  readonly inForceRoles: readonly string[] | null;
}

/**
 * Check the signature of a bundle version. A version already accepted here needs a valid signature by a
 * known user (a signer who later left does not unsign it); a new version needs one made against the
 * version in force, by an active user who still holds the signed role, a role allowed to sign.
 * @returns the signed payload (its change reference and signer are what is recorded)
 * @throws LkError LK_POLICY_UNSIGNED (no signature for this version), LK_POLICY_SIGNATURE_INVALID (does not
 *   verify, another key, other content, another site, signed against another version in force),
 *   LK_POLICY_SIGNER (unknown signer, disabled or of a role that may not sign).
 */
export function checkPolicySignature(c: SignatureCheck): PolicySignaturePayload {
  const v12 = c.version.slice(0, 12);
  const r = c.record;
  if (!r) {
    throw new LkError('LK_POLICY_UNSIGNED', `policy bundle ${v12}… is not signed: a bundle takes effect only once an approver signs it (linekeeper policy apply <dir> --change <ref>)`, { version: c.version });
  }
  const p = r.payload;
  const invalid = (why: string): never => {
    throw new LkError('LK_POLICY_SIGNATURE_INVALID', `the signature of policy bundle ${v12}… ${why}`, { version: c.version, changeRef: String(p.change_ref) });
  };
  if (p.format !== POLICY_SIGNATURE_FORMAT) invalid(`has an unknown format "${String(p.format)}"`);
  if (p.key_id !== c.keyId) invalid(`was made with another key (${String(p.key_id).slice(0, 12)}…), not this site's (${c.keyId.slice(0, 12)}…)`);
  if (!c.verify(signatureBytes(p), r.signature)) invalid('does not verify with the site public key');
  if (p.bundle_version !== c.version) invalid(`covers other content (${String(p.bundle_version).slice(0, 12)}…)`);
  if (p.site !== c.site) invalid(`is for site "${p.site}", not "${c.site}"`);
  const accepted = c.lastAccepted === c.version;
  if (!accepted && p.previous_version !== c.lastAccepted) {
    invalid(`was made as a change from ${p.previous_version ? `${p.previous_version.slice(0, 12)}…` : 'no bundle'}, but ${c.lastAccepted ? `${c.lastAccepted.slice(0, 12)}…` : 'no bundle'} is in force: sign again against the bundle in force`);
  }
  const s = c.signer;
  if (!s) throw new LkError('LK_POLICY_SIGNER', `policy bundle ${v12}… is signed by "${p.signer.id}", who is not a user of this site`, { version: c.version, signer: p.signer.id });
  if (!p.allowed_roles.includes(p.signer.role)) {
    throw new LkError('LK_POLICY_SIGNER', `policy bundle ${v12}… is signed by ${p.signer.id} as ${p.signer.role}, a role that may not approve a policy change (${p.allowed_roles.join(', ')})`, { version: c.version, signer: p.signer.id });
  }
  if (accepted) return p;
  if (!s.active) throw new LkError('LK_POLICY_SIGNER', `policy bundle ${v12}… is signed by ${s.id}, whose account is disabled or locked`, { version: c.version, signer: s.id });
  if (s.role !== p.signer.role) throw new LkError('LK_POLICY_SIGNER', `policy bundle ${v12}… was signed by ${s.id} as ${p.signer.role}, but ${s.id} is ${s.role} now`, { version: c.version, signer: s.id });
  if (c.inForceRoles && !c.inForceRoles.includes(s.role)) {
    throw new LkError('LK_POLICY_SIGNER', `policy bundle ${v12}… is signed by ${s.id} (${s.role}), but the bundle in force lets only ${c.inForceRoles.join(', ')} approve a change`, { version: c.version, signer: s.id });
  }
  return p;
}
