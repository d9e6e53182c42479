/**
 * HTTPS for the REST API (`api.tls: { cert, key }`, PEM files relative to the configuration file): whatever leaves
 * the loopback interface — passwords at sign-in and signing, bearer tokens, batch records — is encrypted. The
 * files are checked before the API listens (readable, a certificate in its validity period, a key that belongs
 * to it), and by `doctor`, which also fails a bind beyond loopback without TLS. Node's own X509Certificate.
 */
import { createPrivateKey, X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { LkError } from '../errors.js';

export interface TlsMaterial {
  readonly cert: Buffer;
  readonly key: Buffer;
  readonly subject: string;
  /** Epoch ms. */
  readonly validFrom: number;
  readonly validTo: number;
}

/** Whether `host` binds to the loopback interface only. */
export function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '::1' || host === '[::1]' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host);
}

/**
 * Read and check the API's certificate and key at `now`.
 * @param baseDir the configuration file's folder (relative paths are relative to it)
 * @throws LkError LK_CONFIG_INVALID naming the file and what is wrong: unreadable, not a PEM certificate or key,
 *   outside its validity period, or a key that is not the certificate's.
 */
export function loadTls(files: { cert: string; key: string }, baseDir: string, now: number): TlsMaterial {
  const read = (what: 'cert' | 'key'): Buffer => {
    const file = resolve(baseDir, files[what]);
    try {
      return readFileSync(file);
    } catch (err) {
      throw new LkError('LK_CONFIG_INVALID', `api.tls.${what} ${file} cannot be read: ${(err as Error).message}`, { file }, { cause: err });
    }
  };
  const cert = read('cert');
  const key = read('key');
  let x509: X509Certificate;
  try {
    x509 = new X509Certificate(cert);
  } catch (err) {
    throw new LkError('LK_CONFIG_INVALID', `api.tls.cert ${resolve(baseDir, files.cert)} is not a PEM certificate: ${(err as Error).message}`, {}, { cause: err });
  }
  let matches: boolean;
  try {
    matches = x509.checkPrivateKey(createPrivateKey(key));
  } catch (err) {
    throw new LkError('LK_CONFIG_INVALID', `api.tls.key ${resolve(baseDir, files.key)} is not a PEM private key: ${(err as Error).message}`, {}, { cause: err });
  }
  if (!matches) throw new LkError('LK_CONFIG_INVALID', `api.tls.key ${resolve(baseDir, files.key)} is not the key of the certificate ${x509.subject.replace(/\n/g, ', ')}`);
  const validFrom = Date.parse(x509.validFrom);
  const validTo = Date.parse(x509.validTo);
  if (now < validFrom || now > validTo) {
    throw new LkError('LK_CONFIG_INVALID', `api.tls.cert is valid from ${new Date(validFrom).toISOString()} to ${new Date(validTo).toISOString()}, not now`, { validFrom: new Date(validFrom).toISOString(), validTo: new Date(validTo).toISOString() });
  }
  return { cert, key, subject: x509.subject.replace(/\n/g, ', '), validFrom, validTo };
}
