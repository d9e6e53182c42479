/**
 * The Part 11 signature of a batch-release decision: Ed25519 over the canonical record (identity, meaning,
 * decision, time, record hash). Any changed field, a changed signature, an added field or another key fails
 * verification. Keys are made in memory (no files).
 */
import { generateKeyPairSync } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { keyIdOf, type PublicSiteKey, type SiteKey } from '../../src/audit/keys.js';
import { canonical, sha256Hex, signRecord, verifySignature, type Signature, type SignedRecord } from '../../src/engine/run/approval.js';

function siteKey(): SiteKey {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  return { privateKey, publicKey, publicPem: publicKey.export({ type: 'spki', format: 'pem' }).toString(), keyId: keyIdOf(publicKey) };
}

const publicOf = (k: SiteKey): PublicSiteKey => ({ publicKey: k.publicKey, publicPem: k.publicPem, keyId: k.keyId });

const key = siteKey();
const other = siteKey();

const record: SignedRecord = {
  format: 1,
  approval: 'apr_0123456789abcdef',
  run: 'run_0123456789abcdef0123',
  tenant: 'acme-pharma',
  batch: 'B-1042',
  recordHash: sha256Hex('{"kind":"batch_release"}'),
  user: 'm.rossi',
  name: 'Maria Rossi',
  role: 'qa_reviewer',
  decision: 'approve',
  meaning: 'QA release of batch B-1042 for distribution',
  timestamp: '2026-11-23T08:15:30.123Z',
};

/** The same text with one character changed (a byte, for the ASCII fields here). */
function oneByte(s: string): string {
  const i = Math.floor(s.length / 2);
  return s.slice(0, i) + (s[i] === 'x' ? 'y' : 'x') + s.slice(i + 1);
}

describe('signRecord / verifySignature', () => {
  const sig = signRecord(key, record);

  it('[A11.14] [P11.70] signs the record as it is, with the key id of the site key, and verifies with the public key alone', () => {
    expect(sig).toMatchObject(record);
    expect(sig.keyId).toBe(key.keyId);
    expect(Buffer.from(sig.signature, 'base64')).toHaveLength(64);
    expect(verifySignature(publicOf(key), sig)).toBe(true);
  });

  it.each(Object.keys(record).filter((k) => typeof record[k as keyof SignedRecord] === 'string'))('[P11.70] a changed byte of %s no longer verifies', (field) => {
    const tampered = { ...sig, [field]: oneByte(sig[field as keyof Signature] as string) } as Signature;
    expect(tampered).not.toEqual(sig);
    expect(verifySignature(publicOf(key), tampered)).toBe(false);
  });

  it('[P11.70] a changed decision, format, signature or key id, or an added field, no longer verifies', () => {
    const pk = publicOf(key);
    expect(verifySignature(pk, { ...sig, decision: 'reject' })).toBe(false);
    expect(verifySignature(pk, { ...sig, format: 2 } as unknown as Signature)).toBe(false);
    const bytes = Buffer.from(sig.signature, 'base64');
    bytes[10] = bytes[10]! ^ 0x01;
    expect(verifySignature(pk, { ...sig, signature: bytes.toString('base64') })).toBe(false);
    expect(verifySignature(pk, { ...sig, keyId: other.keyId })).toBe(false);
    expect(verifySignature(pk, { ...sig, note: 'added after signing' } as Signature)).toBe(false);
    expect(verifySignature(pk, { ...sig, signature: 'not base64 at all!' })).toBe(false);
  });

  it('[P11.70] another site key does not verify it, even when the signature claims that key', () => {
    expect(verifySignature(publicOf(other), sig)).toBe(false);
    expect(verifySignature(publicOf(other), { ...sig, keyId: other.keyId })).toBe(false);
    // and a record signed by the other key is not this site's
    const foreign = signRecord(other, record);
    expect(verifySignature(publicOf(key), foreign)).toBe(false);
    expect(verifySignature(publicOf(other), foreign)).toBe(true);
  });

  it('covers the canonical record: field order does not matter, and signing is deterministic (Ed25519)', () => {
    const reordered = Object.fromEntries(Object.entries(record).reverse()) as unknown as SignedRecord;
    expect(signRecord(key, reordered).signature).toBe(sig.signature);
    expect(canonical({ b: 1, a: [2, { d: 3, c: 4 }] })).toBe('{"a":[2,{"c":4,"d":3}],"b":1}');
    expect(sha256Hex('')).toBe('e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855');
  });
});
