/**
 * The manifest of an archive (EU GMP Annex 11 §17) and the check of an archive folder.
 *
 *   MANIFEST.sha256  one line per file, `<sha256>  <path>` (the format of `sha256sum`, so `sha256sum -c` reads it
 *                    too), paths relative to the folder with `/`, sorted; every file but these two is listed
 *   MANIFEST.sig     the site's Ed25519 signature over the bytes of MANIFEST.sha256, with the key's id
 *
 * A checksum list alone proves nothing against someone who edits a file and its line; the signature does, for a
 * reader who holds the site's public key from elsewhere (`--key`). Without it the archive's own
 * `site-public-key.pem` is used: that shows the archive is whole, not who made it.
 *
 * tools/verify-audit-bundle.mjs (`--archive DIR`) makes the same checks without linekeeper, and must reach the same
 * verdict (tested): the files against the manifest, the manifest's signature, every audit bundle in the archive with
 * the key, and each release.json against the bundle beside it.
 */
import { createHash } from 'node:crypto';
import { closeSync, existsSync, lstatSync, openSync, readdirSync, readFileSync, readSync } from 'node:fs';
import { join } from 'node:path';
import { verifyBundleFile } from '../audit/bundle.js';
import { canonicalJson } from '../audit/entry.js';
import { parsePublicKey, signBytes, verifyBytes, type PublicSiteKey, type SiteKey } from '../audit/keys.js';
import { LkError } from '../errors.js';

export const ARCHIVE_FORMAT = 'linekeeper.archive';
export const MANIFEST_FILE = 'MANIFEST.sha256';
export const MANIFEST_SIG_FILE = 'MANIFEST.sig';
export const ARCHIVE_META_FILE = 'archive.json';
export const ARCHIVE_KEY_FILE = 'site-public-key.pem';
export const ARCHIVE_BUNDLE_FILE = 'audit-bundle.jsonl';
export const VERIFIER_FILE = 'verify-audit-bundle.mjs';
const SIG_FORMAT = 'linekeeper.archive-manifest-signature';

/** The paths an archive may hold: names that start with a letter, digit or `_` (so no `..`), nothing absolute. */
const SAFE_PATH = /^[A-Za-z0-9_][A-Za-z0-9._-]*(?:\/[A-Za-z0-9_][A-Za-z0-9._-]*)*$/;
const LINE = /^([0-9a-f]{64}) {2}(.+)$/;

export interface ManifestLine {
  readonly path: string;
  readonly sha256: string;
}

/** SHA-256 of a file, read in chunks (a bundle may be larger than a string can hold). */
export function sha256File(file: string): string {
  const h = createHash('sha256');
  const fd = openSync(file, 'r');
  try {
    const buf = Buffer.allocUnsafe(1 << 20);
    for (let n = readSync(fd, buf, 0, buf.length, null); n > 0; n = readSync(fd, buf, 0, buf.length, null)) h.update(buf.subarray(0, n));
  } finally {
    closeSync(fd);
  }
  return h.digest('hex');
}

/** The manifest's text: one `sha256sum` line per file, sorted by path. */
export function manifestText(lines: readonly ManifestLine[]): string {
  return [...lines].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0)).map((l) => `${l.sha256}  ${l.path}\n`).join('');
}

/** MANIFEST.sig's text: the signature of the manifest's bytes with the site key. */
export function manifestSignature(key: SiteKey, manifest: string): string {
  return `${canonicalJson({ format: SIG_FORMAT, version: 1, alg: 'Ed25519', key_id: key.keyId, sig: signBytes(key, manifest) })}\n`;
}

/** Every regular file under `dir` (paths relative, `/`-separated, sorted); anything else (a link, a device) too, marked. */
export function filesUnder(dir: string, base = ''): { path: string; regular: boolean }[] {
  const out: { path: string; regular: boolean }[] = [];
  for (const name of readdirSync(join(dir, base)).sort()) {
    const rel = base ? `${base}/${name}` : name;
    const st = lstatSync(join(dir, rel));
    if (st.isDirectory()) out.push(...filesUnder(dir, rel));
    else out.push({ path: rel, regular: st.isFile() });
  }
  return out;
}

export type ArchiveProblemKind = 'missing' | 'modified' | 'unlisted' | 'malformed' | 'signature_invalid' | 'bundle_damaged' | 'release_mismatch';

export interface ArchiveProblem {
  /** The file concerned, relative to the archive folder. */
  readonly file: string;
  readonly kind: ArchiveProblemKind;
  readonly detail: string;
}

export interface ArchiveReport {
  readonly ok: boolean;
  /** What archive.json says the archive is (null when it cannot be read). */
  readonly archive: { readonly tenant: string; readonly scope: unknown } | null;
  /** Files the manifest lists. */
  readonly files: number;
  readonly keyId: string;
  /** Every problem found, by file then kind; empty when ok. */
  readonly problems: ArchiveProblem[];
}

const order = (a: ArchiveProblem, b: ArchiveProblem): number => (a.file < b.file ? -1 : a.file > b.file ? 1 : a.kind < b.kind ? -1 : a.kind > b.kind ? 1 : 0);

/**
 * Check the archive in folder `dir`: every file against MANIFEST.sha256 (none missing, changed or added), the
 * manifest's signature, every audit bundle (`*.jsonl`) with the key, and each release.json against its bundle.
 * The key is `publicKey` (the site's, held apart from the archive) or else the archive's own site-public-key.pem.
 * @throws LkError LK_FILE_NOT_FOUND when `dir` is no folder or holds no MANIFEST.sha256 (not an archive);
 *   LK_AUDIT_KEY when the archive's key cannot be read, or the archive was signed by another key than `publicKey`.
 */
export function verifyArchive(dir: string, o: { publicKey?: PublicSiteKey } = {}): ArchiveReport {
  if (!existsSync(dir) || !lstatSync(dir).isDirectory()) throw new LkError('LK_FILE_NOT_FOUND', `${dir}: no such folder`, { path: dir });
  const manifestPath = join(dir, MANIFEST_FILE);
  if (!existsSync(manifestPath)) throw new LkError('LK_FILE_NOT_FOUND', `${dir} is not a linekeeper archive (no ${MANIFEST_FILE})`, { path: dir });
  const problems: ArchiveProblem[] = [];
  const manifest = readFileSync(manifestPath, 'utf8');
  const listed = new Map<string, string>();
  manifest.split('\n').forEach((l, i, all) => {
    if (l === '' && i === all.length - 1) return;
    const m = LINE.exec(l);
    if (!m || !SAFE_PATH.test(m[2]!) || listed.has(m[2]!) || m[2] === MANIFEST_FILE || m[2] === MANIFEST_SIG_FILE) problems.push({ file: MANIFEST_FILE, kind: 'malformed', detail: `line ${i + 1} is not "<sha256>  <path>" of a file of the archive` });
    else listed.set(m[2]!, m[1]!);
  });

  const key = o.publicKey ?? archiveKey(dir);
  checkSignature(dir, manifest, key, o.publicKey !== undefined, problems);

  const onDisk = new Map(filesUnder(dir).map((f) => [f.path, f.regular]));
  for (const [path, sum] of listed) {
    if (onDisk.get(path) !== true) problems.push({ file: path, kind: 'missing', detail: 'listed in MANIFEST.sha256 but not in the archive' });
    else if (sha256File(join(dir, path)) !== sum) problems.push({ file: path, kind: 'modified', detail: 'its SHA-256 differs from MANIFEST.sha256' });
  }
  for (const path of onDisk.keys()) {
    if (path !== MANIFEST_FILE && path !== MANIFEST_SIG_FILE && !listed.has(path)) problems.push({ file: path, kind: 'unlisted', detail: 'in the archive but not in MANIFEST.sha256' });
  }
  for (const path of listed.keys()) {
    if (onDisk.get(path) !== true) continue;
    if (path.endsWith('.jsonl')) checkBundle(dir, path, key, problems);
    if (path === 'release.json' || path.endsWith('/release.json')) checkRelease(dir, path, problems);
  }
  problems.sort(order);
  return { ok: problems.length === 0, archive: archiveMeta(dir), files: listed.size, keyId: key.keyId, problems };
}

function archiveKey(dir: string): PublicSiteKey {
  const file = join(dir, ARCHIVE_KEY_FILE);
  if (!existsSync(file)) throw new LkError('LK_AUDIT_KEY', `${ARCHIVE_KEY_FILE} is missing from the archive: give the site's public key with --key`);
  return parsePublicKey(readFileSync(file, 'utf8'), ARCHIVE_KEY_FILE);
}

function checkSignature(dir: string, manifest: string, key: PublicSiteKey, pinned: boolean, problems: ArchiveProblem[]): void {
  const file = join(dir, MANIFEST_SIG_FILE);
  if (!existsSync(file)) {
    problems.push({ file: MANIFEST_SIG_FILE, kind: 'missing', detail: 'the manifest carries no signature' });
    return;
  }
  let sig: { format?: unknown; key_id?: unknown; sig?: unknown } | undefined;
  try {
    const v = JSON.parse(readFileSync(file, 'utf8')) as unknown;
    sig = typeof v === 'object' && v !== null ? (v as typeof sig) : undefined;
  } catch {
    sig = undefined;
  }
  if (sig?.format !== SIG_FORMAT || typeof sig.key_id !== 'string') {
    problems.push({ file: MANIFEST_SIG_FILE, kind: 'malformed', detail: 'not a manifest signature' });
    return;
  }
  if (pinned && sig.key_id !== key.keyId) throw new LkError('LK_AUDIT_KEY', `the archive was signed by key ${sig.key_id.slice(0, 16)}…, not the pinned key ${key.keyId.slice(0, 16)}…`);
  if (sig.key_id !== key.keyId || !verifyBytes(key, manifest, sig.sig)) problems.push({ file: MANIFEST_FILE, kind: 'signature_invalid', detail: 'MANIFEST.sig is not a valid signature of the manifest by the site key' });
}

function checkBundle(dir: string, path: string, key: PublicSiteKey, problems: ArchiveProblem[]): void {
  try {
    const r = verifyBundleFile(join(dir, path), { publicKey: key }).report;
    if (!r.ok) problems.push({ file: path, kind: 'bundle_damaged', detail: `${r.damage!.kind} at seq ${r.damage!.seq ?? '-'}: ${r.damage!.detail}` });
  } catch (err) {
    if (!LkError.is(err)) throw err;
    problems.push({ file: path, kind: 'bundle_damaged', detail: err.message });
  }
}

/** A release package's release.json names the SHA-256 of the audit bundle beside it. */
function checkRelease(dir: string, path: string, problems: ArchiveProblem[]): void {
  const bundle = path.replace(/release\.json$/, ARCHIVE_BUNDLE_FILE);
  let named: unknown;
  try {
    named = (JSON.parse(readFileSync(join(dir, path), 'utf8')) as { audit?: { bundle?: { sha256?: unknown } } }).audit?.bundle?.sha256;
  } catch {
    named = undefined;
  }
  if (typeof named !== 'string') problems.push({ file: path, kind: 'malformed', detail: 'not a release.json naming its audit bundle' });
  else if (!existsSync(join(dir, bundle)) || sha256File(join(dir, bundle)) !== named) problems.push({ file: path, kind: 'release_mismatch', detail: `names an audit bundle of another SHA-256 than ${bundle}` });
}

function archiveMeta(dir: string): ArchiveReport['archive'] {
  try {
    const m = JSON.parse(readFileSync(join(dir, ARCHIVE_META_FILE), 'utf8')) as { format?: unknown; tenant?: unknown; scope?: unknown };
    return m.format === ARCHIVE_FORMAT && typeof m.tenant === 'string' ? { tenant: m.tenant, scope: m.scope ?? null } : null;
  } catch {
    return null;
  }
}
