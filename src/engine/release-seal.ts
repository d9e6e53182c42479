/**
 * Sealing a release package (release-package.ts says what a package is): export and re-verify the bundle, write
 * release.json and release.pdf, fsync and rename into place. What the package's worker thread runs
 * (release-worker.ts), on an input already validated on the caller's thread: nothing here loads the input's schema.
 */
import { hash } from 'node:crypto';
import { chmodSync, existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, renameSync, rmSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { fsyncPath, writeNewFile } from '../files.js';
import { exportBundle, verifyBundleFile } from '../audit/bundle.js';
import type { SignedCheckpoint } from '../audit/checkpoints.js';
import { readSiteKey } from '../audit/keys.js';
import { canonicalJson } from '../audit/entry.js';
import { EVERY_ENTRY } from '../audit/select.js';
import type { VerifyReport } from '../audit/verify.js';
import { LkError } from '../errors.js';
import type { Store } from '../store/store.js';
import { renderReleasePdf, type ReleasePdfOptions } from './release-pdf.js';
import { abortStatement, RELEASE_FILES, RELEASE_FORMAT, type ReleaseInput, type ReleasePackage, type ReleaseRecord } from './release-types.js';

export interface ReleasePackageOptions {
  /** PDF options (tests read the text back from uncompressed streams). */
  pdf?: ReleasePdfOptions;
}

const sha256 = (b: Buffer | string): string => hash('sha256', b);

/**
 * Nothing is signed or sealed on a chain that does not verify.
 * @throws LkError LK_AUDIT_BROKEN naming the first damage.
 */
export function assertVerified(report: VerifyReport, tenant: string): void {
  const chain = report.chains.find((c) => c.tenant === tenant);
  if (!report.ok || !chain?.ok) {
    const d = chain?.damage ?? report.problems[0];
    throw new LkError('LK_AUDIT_BROKEN', `audit chain "${tenant}" does not verify (${d?.kind ?? 'unknown'} at seq ${d?.seq ?? '-'}): no release package is sealed on it`, { tenant, damage: d });
  }
}

/**
 * Seal a package on a verified chain whose head was just checkpointed: export and re-verify the bundle, write
 * release.json and release.pdf, fsync and rename into place. Reads the store only, so it runs as well on a
 * read-only connection in a worker thread (the bundle then ends at the newest checkpoint already signed).
 * @throws LkError LK_AUDIT_BROKEN when the bundle does not verify; LK_CONFLICT when the target is taken meanwhile.
 */
export function sealReleasePackage(store: Store, target: string, input: ReleaseInput, opts: ReleasePackageOptions = {}): ReleasePackage {
  const tenant = input.tenant;
  mkdirSync(dirname(target), { recursive: true });
  const staging = mkdtempSync(join(dirname(target), `.${basename(target)}.staging-`));
  try {
    const bundleFile = join(staging, RELEASE_FILES.bundle);
    exportBundle(store, tenant, EVERY_ENTRY, bundleFile);
    fsyncPath(bundleFile);
    const { head, checkpoint, entries, sha256: bundleSha256 } = anchorOf(store, tenant, bundleFile);

    const record: ReleaseRecord = {
      ...(input.abort ? { aborted: { released: false as const, statement: abortStatement(input) } } : {}),
      format: RELEASE_FORMAT, version: 1, input,
      audit: { head, checkpoint, bundle: { file: RELEASE_FILES.bundle, sha256: bundleSha256, entries, key_id: checkpoint.key_id } },
    };
    const json = Buffer.from(canonicalJson(record), 'utf8');
    writeNewFile(join(staging, RELEASE_FILES.json), json, 0o444);
    const pdf = renderReleasePdf(record, sha256(json), opts.pdf);
    writeNewFile(join(staging, RELEASE_FILES.pdf), pdf, 0o444);
    chmodSync(bundleFile, 0o444);
    chmodSync(staging, 0o755);
    fsyncPath(staging);

    try {
      renameSync(staging, target);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ENOTEMPTY' || code === 'EEXIST' || code === 'ENOTDIR' || code === 'EISDIR') {
        throw new LkError('LK_CONFLICT', `${shortDir(target)}: a release package (or other content) is already there; it is never overwritten`, { dir: shortDir(target) }, { cause: err });
      }
      throw err;
    }
    fsyncPath(dirname(target));
    return {
      dir: target,
      jsonFile: join(target, RELEASE_FILES.json),
      pdfFile: join(target, RELEASE_FILES.pdf),
      bundleFile: join(target, RELEASE_FILES.bundle),
      sha256: { json: sha256(json), pdf: sha256(pdf), bundle: bundleSha256 },
      auditHead: head,
      checkpoint,
    };
  } finally {
    // After a successful rename the staging path no longer exists; otherwise nothing half-written stays.
    rmSync(staging, { recursive: true, force: true });
  }
}

/** LK_CONFLICT unless `target` is absent or an empty folder (checked first, so a conflict changes nothing). */
export function refuseExisting(target: string): void {
  if (!existsSync(target)) return;
  const st = lstatSync(target);
  if (!st.isDirectory() || readdirSync(target).length > 0) {
    throw new LkError('LK_CONFLICT', `${shortDir(target)}: a release package (or other content) is already there; it is never overwritten`, { dir: shortDir(target) });
  }
}

/**
 * The head, the signed checkpoint and the entry count that the exported bundle proves, verified with
 * the site key. The bundle ends on a checkpoint by construction; checking it here is what lets
 * release.json say "this head, this checkpoint, this bundle" as one statement.
 */
function anchorOf(store: Store, tenant: string, bundleFile: string): { head: { seq: number; hash: string }; checkpoint: SignedCheckpoint; entries: number; sha256: string } {
  const key = store.readonly ? readSiteKey(store.dataDir) : store.audit.siteKey();
  // read line by line: a million-entry trail's bundle is longer than the longest string there can be
  const { report: r, sha256: bundleSha256, checkpoints } = verifyBundleFile(bundleFile, { publicKey: key });
  if (!r.ok || r.head === null || r.tenant !== tenant) {
    throw new LkError('LK_AUDIT_BROKEN', `the exported audit bundle of "${tenant}" does not verify (${r.damage?.kind ?? 'no head'})`, { tenant, damage: r.damage });
  }
  const head = r.head;
  // the bundle's checkpoints that are validly signed for the tenant: the one of its head
  const checkpoint = checkpoints.findLast((c) => c.seq === head.seq && c.head_hash === head.hash);
  if (!checkpoint) throw new LkError('LK_AUDIT_BROKEN', `the exported audit bundle of "${tenant}" has no signed checkpoint of its head #${head.seq}`, { tenant });
  // The store's head may only have moved on (another process appending), never back.
  if (store.audit.head(tenant).seq < head.seq) throw new LkError('LK_AUDIT_BROKEN', `audit chain "${tenant}" is shorter than its exported bundle`, { tenant });
  return { head: { seq: head.seq, hash: head.hash }, checkpoint, entries: r.entries, sha256: bundleSha256 };
}

/** `<tenant>/<run>` of a package folder: what an error names (it reaches the run's step detail, never a server path). */
function shortDir(target: string): string {
  return `${basename(dirname(target))}/${basename(target)}`;
}
