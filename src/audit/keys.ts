/**
 * The site's Ed25519 signing key: it signs audit checkpoints and export
 * bundles, so truncation or a rewritten suffix is caught even though an
 * administrator can recompute every hash. Created at first start; the private
 * key never leaves `<dataDir>/keys/` (file mode 0600, like ssh, refused when
 * others can read it); the public key is exported for auditors.
 */
import { createHash, createPrivateKey, createPublicKey, generateKeyPairSync, sign, verify, type KeyObject } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { LkError } from '../errors.js';

export interface PublicSiteKey {
  readonly publicKey: KeyObject;
  /** PEM (SPKI) text, as exported and embedded in bundles. */
  readonly publicPem: string;
  /** Hex SHA-256 of the DER (SPKI) public key: names the key in every checkpoint. */
  readonly keyId: string;
}

export interface SiteKey extends PublicSiteKey {
  readonly privateKey: KeyObject;
}

export function keyFiles(dataDir: string): { dir: string; privateFile: string; publicFile: string } {
  const dir = join(dataDir, 'keys');
  return { dir, privateFile: join(dir, 'site-ed25519.pem'), publicFile: join(dir, 'site-ed25519.pub.pem') };
}

/** Key id of a public key: hex SHA-256 of its DER SPKI bytes. */
export function keyIdOf(publicKey: KeyObject): string {
  return createHash('sha256').update(publicKey.export({ type: 'spki', format: 'der' })).digest('hex');
}

/**
 * Parse a PEM public key (Ed25519 only).
 * @throws LkError LK_AUDIT_KEY when the text is not an Ed25519 public key.
 */
export function parsePublicKey(pem: string, where = 'public key'): PublicSiteKey {
  let publicKey: KeyObject;
  try {
    publicKey = createPublicKey(pem);
  } catch (err) {
    throw new LkError('LK_AUDIT_KEY', `${where}: not a PEM public key`, undefined, { cause: err });
  }
  if (publicKey.asymmetricKeyType !== 'ed25519') throw new LkError('LK_AUDIT_KEY', `${where}: not an Ed25519 key (${publicKey.asymmetricKeyType ?? 'unknown'})`);
  const publicPem = publicKey.export({ type: 'spki', format: 'pem' }).toString();
  return { publicKey, publicPem, keyId: keyIdOf(publicKey) };
}

/**
 * The site key of `dataDir`, created (0600) when there is none yet.
 * @throws LkError LK_AUDIT_KEY when the private key file is unreadable, not Ed25519, readable by
 *   group/others, or when the public key file beside it belongs to another key.
 */
export function ensureSiteKey(dataDir: string): SiteKey {
  const { dir, privateFile, publicFile } = keyFiles(dataDir);
  if (!existsSync(privateFile)) {
    if (existsSync(publicFile)) {
      throw new LkError('LK_AUDIT_KEY', `${privateFile}: private key is missing but its public key exists; restore the key instead of making a new one`);
    }
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    const { privateKey } = generateKeyPairSync('ed25519');
    // 'wx': never overwrite a key another process just created
    writeFileSync(privateFile, privateKey.export({ type: 'pkcs8', format: 'pem' }), { mode: 0o600, flag: 'wx' });
    chmodSync(privateFile, 0o600); // the umask may have narrowed, never widened, but be exact
  }
  return readSiteKey(dataDir);
}

/**
 * The existing site key of `dataDir`, never creating anything (a write-protected copy may still carry it).
 * @throws LkError LK_AUDIT_KEY as {@link ensureSiteKey}, and when there is no private key.
 */
export function readSiteKey(dataDir: string): SiteKey {
  const { privateFile, publicFile } = keyFiles(dataDir);
  if (!existsSync(privateFile)) throw new LkError('LK_AUDIT_KEY', `${privateFile}: no site private key here to sign with`);
  const mode = statSync(privateFile).mode & 0o777;
  if ((mode & 0o077) !== 0) {
    throw new LkError('LK_AUDIT_KEY', `${privateFile}: private key is readable by others (mode ${mode.toString(8)}); chmod 600 it`);
  }
  let privateKey: KeyObject;
  try {
    privateKey = createPrivateKey(readFileSync(privateFile));
  } catch (err) {
    throw new LkError('LK_AUDIT_KEY', `${privateFile}: not a readable PEM private key`, undefined, { cause: err });
  }
  if (privateKey.asymmetricKeyType !== 'ed25519') throw new LkError('LK_AUDIT_KEY', `${privateFile}: not an Ed25519 key`);
  const pub = parsePublicKey(createPublicKey(privateKey).export({ type: 'spki', format: 'pem' }).toString());
  if (existsSync(publicFile)) {
    const stored = parsePublicKey(readFileSync(publicFile, 'utf8'), publicFile);
    if (stored.keyId !== pub.keyId) throw new LkError('LK_AUDIT_KEY', `${publicFile}: does not belong to the private key beside it`);
  } else {
    try {
      writeFileSync(publicFile, pub.publicPem, { mode: 0o644 });
    } catch {
      // a write-protected copy: the public key is derived from the private one each time
    }
  }
  return { ...pub, privateKey };
}

/**
 * The site's public key, for verification without the private key (read-only stores, auditors' copies).
 * @throws LkError LK_AUDIT_KEY when neither the public nor the private key file is there or readable.
 */
export function loadSitePublicKey(dataDir: string): PublicSiteKey {
  const { privateFile, publicFile } = keyFiles(dataDir);
  if (existsSync(publicFile)) return parsePublicKey(readFileSync(publicFile, 'utf8'), publicFile);
  if (existsSync(privateFile)) {
    try {
      return parsePublicKey(createPublicKey(readFileSync(privateFile)).export({ type: 'spki', format: 'pem' }).toString(), privateFile);
    } catch (err) {
      if (LkError.is(err)) throw err;
      throw new LkError('LK_AUDIT_KEY', `${privateFile}: not a readable key`, undefined, { cause: err });
    }
  }
  throw new LkError('LK_AUDIT_KEY', `no site key in ${keyFiles(dataDir).dir}`);
}

/** Ed25519 signature (base64) of `bytes`. */
export function signBytes(key: SiteKey, bytes: string): string {
  return sign(null, Buffer.from(bytes, 'utf8'), key.privateKey).toString('base64');
}

/** True when `sig` (base64) is a valid Ed25519 signature of `bytes` by `key`; never throws on garbage. */
export function verifyBytes(key: PublicSiteKey, bytes: string, sig: unknown): boolean {
  if (typeof sig !== 'string') return false;
  try {
    return verify(null, Buffer.from(bytes, 'utf8'), key.publicKey, Buffer.from(sig, 'base64'));
  } catch {
    return false;
  }
}
