/**
 * The Part 11 electronic signature of a batch-release decision (21 CFR 11.50, 11.70): the signer's identity,
 * the meaning of the signature, the decision and the time, bound to the SHA-256 of the exact record being
 * signed, and signed with the site's Ed25519 key once the surface has re-authenticated the signer. The
 * signature covers the RFC 8785 canonical JSON of {@link SignedRecord}, so anyone with the site's public key
 * can verify it offline, and a changed record, identity, meaning or time no longer verifies.
 */
import { createHash } from 'node:crypto';
import canonicalize from 'canonicalize';
import { signBytes, verifyBytes, type PublicSiteKey, type SiteKey } from '../../audit/keys.js';

export interface Signer {
  /** User id of the named reviewer. */
  readonly user: string;
  /** Printed name (the manifestation shows it). */
  readonly name: string;
  readonly role: string;
}

export interface SignedRecord {
  readonly format: 1;
  readonly approval: string;
  readonly run: string;
  readonly tenant: string;
  readonly batch: string;
  /** SHA-256 (hex) of the canonical record of what is approved (the release record). */
  readonly recordHash: string;
  readonly user: string;
  readonly name: string;
  readonly role: string;
  readonly decision: 'approve' | 'reject';
  /** What the signature means, in words, e.g. "QA release of batch B-1042": an entry of the site's list, filled for the record. */
  readonly meaning: string;
  /** The id of that entry of the site's signature meanings (absent on records signed before meanings were a list). */
  readonly meaningId?: string;
  /** What the signer added beside the meaning, in their own words. */
  readonly comment?: string;
  /** ISO 8601 UTC with milliseconds. */
  readonly timestamp: string;
  /**
   * What the reviewer had before them when they signed a batch release: the run's exceptions (all, and those
   * closed), and the SHA-256 of the specification table. Part of what the signature covers.
   */
  readonly reviewed?: { exceptions: string[]; exceptionsClosed: string[]; specTableSha256: string | null };
}

export interface Signature extends SignedRecord {
  /** Base64 Ed25519 signature of the canonical SignedRecord. */
  readonly signature: string;
  /** SHA-256 of the site public key (SPKI DER) that signed. */
  readonly keyId: string;
}

export function sha256Hex(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('hex');
}

/** RFC 8785 canonical JSON text. */
export function canonical(v: unknown): string {
  const s = canonicalize(v);
  if (s === undefined) throw new TypeError('value cannot be canonicalised');
  return s;
}

/** A person's signed act on a run (lifecycle.ts): the same record, with the act as its decision. */
export type ActSignedRecord = Omit<SignedRecord, 'decision' | 'reviewed'> & { readonly decision: 'abort' | 'reassign' };
export type ActSignature = ActSignedRecord & Pick<Signature, 'signature' | 'keyId'>;

export function signRecord(key: SiteKey, rec: SignedRecord): Signature;
export function signRecord(key: SiteKey, rec: ActSignedRecord): ActSignature;
export function signRecord(key: SiteKey, rec: SignedRecord | ActSignedRecord): Signature | ActSignature {
  return { ...rec, signature: signBytes(key, canonical(rec)), keyId: key.keyId };
}

/** True when `sig` is a valid signature of its record by `key`. */
export function verifySignature(key: PublicSiteKey, sig: Signature | ActSignature): boolean {
  const { signature, keyId, ...rec } = sig;
  if (keyId !== key.keyId) return false;
  return verifyBytes(key, canonical(rec), signature);
}
