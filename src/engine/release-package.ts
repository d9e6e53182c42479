/**
 * The release package, written by the last step of a run
 * (`release.genealogy`, tool `audit.write_release_package`): one folder with
 *
 *   audit-bundle.jsonl  the tenant's audit bundle up to the package's head (verifies offline
 *                       with tools/verify-audit-bundle.mjs and the site public key)
 *   release.json        RFC 8785 canonical JSON: the release input, the audit head, its signed
 *                       checkpoint and the bundle's SHA-256
 *   release.pdf         the readable batch release report, carrying release.json's SHA-256
 *
 * The chain of digests runs one way: bundle -> release.json -> release.pdf, and the caller
 * records the three digests in the audit trail (the tool result), which the next checkpoint signs.
 *
 * The folder appears whole or not at all: everything is written and fsync'd in a staging folder
 * beside it, verified, then renamed into place. rename(2) never replaces a non-empty folder, so a
 * package is never overwritten, even by two writers racing.
 */
import { hash } from 'node:crypto';
import { chmodSync, existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, renameSync, rmSync } from 'node:fs';
import { fsyncPath, writeNewFile } from '../files.js';
import { basename, dirname, join, resolve } from 'node:path';
import { exportBundle, verifyBundleFile } from '../audit/bundle.js';
import type { SignedCheckpoint } from '../audit/checkpoints.js';
import { readSiteKey } from '../audit/keys.js';
import { canonicalJson } from '../audit/entry.js';
import { verifyStore, type VerifyReport } from '../audit/verify.js';
import { LkError } from '../errors.js';
import type { Store } from '../store/store.js';
import { renderReleasePdf, type ReleasePdfOptions } from './release-pdf.js';
import { abortStatement, parseReleaseInput, RELEASE_FILES, RELEASE_FORMAT, type ReleaseInput, type ReleasePackage, type ReleaseRecord } from './release-types.js';

export interface ReleasePackageOptions {
  /** PDF options (tests read the text back from uncompressed streams). */
  pdf?: ReleasePdfOptions;
}

const sha256 = (b: Buffer | string): string => hash('sha256', b);

/**
 * Write the release package of a run into the folder `dir` (created; its parent too).
 *
 * Before anything is sealed, the tenant's chain is verified (database and checkpoint log) and the
 * exported bundle is verified again with the site key; the package's head is the bundle's, so the
 * head, the checkpoint and the bundle always agree. Synchronous, on the caller's thread: tools and tests;
 * the daemon uses {@link writeReleasePackageOffLoop} (release-offload.ts), which seals in a worker thread. Not
 * inside `store.tx` (a checkpoint is signed after a commit).
 *
 * @throws LkError LK_CONFLICT when `dir` exists and is not an empty folder (nothing is changed);
 *   LK_VALIDATION for a bad input; LK_NOT_FOUND when the tenant has no audit chain;
 *   LK_AUDIT_BROKEN when the tenant's chain or the exported bundle does not verify (no package is
 *   written); LK_AUDIT_KEY / LK_AUDIT_CHECKPOINT_MISSING from verification; LK_INTERNAL inside a
 *   transaction or on a read-only store.
 */
export function writeReleasePackage(store: Store, dir: string, releaseInput: ReleaseInput, opts: ReleasePackageOptions = {}): ReleasePackage {
  const { target, input } = prepareReleasePackage(store, dir, releaseInput);
  assertVerified(verifyStore(store, { tenant: input.tenant }), input.tenant);
  // A fresh signed checkpoint at the current head (none when the head is already signed).
  store.audit.checkpoint(input.tenant);
  return sealReleasePackage(store, target, input, opts);
}

/**
 * The checks made on the caller's thread before anything else: the input, the target (refused when taken), the
 * tenant's chain, no open transaction. Writes nothing.
 * @throws LkError LK_CONFLICT, LK_VALIDATION, LK_NOT_FOUND, LK_INTERNAL as {@link writeReleasePackage}.
 */
export function prepareReleasePackage(store: Store, dir: string, releaseInput: ReleaseInput): { target: string; input: ReleaseInput } {
  const input = parseReleaseInput(releaseInput);
  const target = resolve(dir);
  refuseExisting(target);
  const tenant = input.tenant;
  if (!store.audit.chains().includes(tenant)) throw new LkError('LK_NOT_FOUND', `no audit chain "${tenant}"`, { tenant });
  if (store.inTx()) throw new LkError('LK_INTERNAL', 'writeReleasePackage inside a transaction: its checkpoint could sign entries that then roll back');
  return { target, input };
}

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
    exportBundle(store, tenant, {}, bundleFile);
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
function refuseExisting(target: string): void {
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
