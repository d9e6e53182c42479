/**
 * The client PKI of linekeeper's OPC UA connections: `<dataDir>/pki`
 * (own/, trusted/certs/, rejected/, issuers/ in node-opcua's layout).
 *
 * Unknown server certificates are never accepted automatically: the first
 * connection to a server with an unknown certificate fails with
 * LK_CERT_UNTRUSTED and the certificate lands in rejected/, where an operator
 * inspects it (`linekeeper certs list`) and trusts it
 * (`linekeeper certs trust <thumbprint>`). The client's own certificate is
 * created here on first use, never in the home directory (node-opcua's
 * default).
 */
import { X509Certificate } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { OPCUACertificateManager } from 'node-opcua-certificate-manager';
import { LkError } from '../../src/errors.js';

/** The PKI folder of a data directory. */
export function pkiFolder(dataDir: string): string {
  return join(dataDir, 'pki');
}

function createManager(folder: string): OPCUACertificateManager {
  mkdirSync(folder, { recursive: true });
  return new OPCUACertificateManager({
    rootFolder: folder,
    automaticallyAcceptUnknownCertificate: false,
    keySize: 2048,
    // Watchers cost a libuv thread each and the daemon re-reads the folders before every
    // fresh connection attempt (reloadCertificates), which is when a `certs trust` matters.
    disableFileWatchers: true,
  });
}

interface Shared {
  cm: OPCUACertificateManager;
  users: number;
  ready: Promise<void>;
}
const shared = new Map<string, Shared>();

/**
 * One certificate manager per PKI folder and process, shared by all
 * connectors (node-opcua's store takes a file lock per folder; two managers
 * on one folder would contend for it). Call `release()` when done.
 */
export async function acquireClientPki(dataDir: string): Promise<{ cm: OPCUACertificateManager; release: () => Promise<void> }> {
  const folder = pkiFolder(dataDir);
  let s = shared.get(folder);
  if (!s) {
    const cm = createManager(folder);
    s = { cm, users: 0, ready: cm.initialize() };
    shared.set(folder, s);
  }
  s.users++;
  const entry = s;
  try {
    await entry.ready;
  } catch (err) {
    entry.users--;
    if (entry.users === 0) shared.delete(folder);
    throw err;
  }
  let released = false;
  return {
    cm: entry.cm,
    release: async () => {
      if (released) return;
      released = true;
      entry.users--;
      if (entry.users === 0 && shared.get(folder) === entry) {
        shared.delete(folder);
        // node-opcua counts one reference per client made with it; dispose drops ours last.
        entry.cm.referenceCounter = 0;
        await entry.cm.dispose();
      }
    },
  };
}

export interface CertificateInfo {
  readonly status: 'trusted' | 'rejected';
  /** SHA-1 of the DER certificate, lower-case hex: what OPC UA calls the thumbprint. */
  readonly thumbprint: string;
  readonly subject: string;
  readonly issuer: string;
  readonly validFrom: string;
  readonly validTo: string;
  /** True when the certificate is inside its validity window at the time of listing. */
  readonly valid: boolean;
  readonly file: string;
}

const CERT_FILE = /\.(pem|der|crt|cer)$/i;

function readFolder(folder: string, status: CertificateInfo['status'], now: number): CertificateInfo[] {
  if (!existsSync(folder)) return [];
  const out: CertificateInfo[] = [];
  for (const f of readdirSync(folder).sort()) {
    if (!CERT_FILE.test(f)) continue;
    const file = join(folder, f);
    try {
      const x = new X509Certificate(readFileSync(file));
      out.push({
        status,
        thumbprint: x.fingerprint.replace(/:/g, '').toLowerCase(),
        subject: x.subject.replace(/\n/g, ', '),
        issuer: x.issuer.replace(/\n/g, ', '),
        validFrom: new Date(x.validFrom).toISOString(),
        validTo: new Date(x.validTo).toISOString(),
        valid: now >= Date.parse(x.validFrom) && now <= Date.parse(x.validTo),
        file,
      });
    } catch {
      // Not a certificate (or damaged): listing must still show the rest.
    }
  }
  return out;
}

/** Trusted and rejected server certificates of the data directory's PKI. `now` decides `valid`. */
export function listCertificates(dataDir: string, now: number = Date.now()): CertificateInfo[] {
  const folder = pkiFolder(dataDir);
  return [...readFolder(join(folder, 'trusted', 'certs'), 'trusted', now), ...readFolder(join(folder, 'rejected'), 'rejected', now)];
}

/**
 * Find one certificate by thumbprint (full, or a prefix of at least 8 hex
 * digits; colons and case ignored). Throws LK_VALIDATION for a malformed or
 * ambiguous thumbprint, LK_NOT_FOUND when no certificate has it.
 */
export function findCertificate(dataDir: string, thumbprint: string): CertificateInfo {
  const want = thumbprint.replace(/:/g, '').toLowerCase();
  if (!/^[0-9a-f]{8,40}$/.test(want)) {
    throw new LkError('LK_VALIDATION', `thumbprint must be 8 to 40 hex digits, got "${thumbprint}"`, { thumbprint });
  }
  const hits = listCertificates(dataDir).filter((c) => c.thumbprint.startsWith(want));
  const distinct = new Set(hits.map((h) => h.thumbprint));
  if (distinct.size > 1) throw new LkError('LK_VALIDATION', `thumbprint prefix "${thumbprint}" matches ${distinct.size} certificates`, { thumbprint });
  const hit = hits.find((h) => h.status === 'rejected') ?? hits[0];
  if (!hit) throw new LkError('LK_NOT_FOUND', `no certificate with thumbprint ${thumbprint} in ${pkiFolder(dataDir)}`, { thumbprint });
  return hit;
}

async function move(dataDir: string, thumbprint: string, to: CertificateInfo['status']): Promise<CertificateInfo> {
  const cert = findCertificate(dataDir, thumbprint);
  const { cm, release } = await acquireClientPki(dataDir);
  try {
    const der = new X509Certificate(readFileSync(cert.file)).raw;
    if (to === 'trusted') await cm.trustCertificate(der);
    else await cm.rejectCertificate(der);
  } finally {
    await release();
  }
  const after = listCertificates(dataDir).find((c) => c.thumbprint === cert.thumbprint && c.status === to);
  if (!after) throw new LkError('LK_INTERNAL', `certificate ${cert.thumbprint} was not moved to ${to}`, { thumbprint: cert.thumbprint });
  return after;
}

/** Move a server certificate to trusted/ (from rejected/, usually). Throws as {@link findCertificate}. */
export function trustServerCertificate(dataDir: string, thumbprint: string): Promise<CertificateInfo> {
  return move(dataDir, thumbprint, 'trusted');
}

/** Move a server certificate to rejected/: connections to that server fail with LK_CERT_UNTRUSTED again. */
export function rejectServerCertificate(dataDir: string, thumbprint: string): Promise<CertificateInfo> {
  return move(dataDir, thumbprint, 'rejected');
}
