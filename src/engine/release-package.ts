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
import { resolve } from 'node:path';
import { verifyStore } from '../audit/verify.js';
import { LkError } from '../errors.js';
import type { Store } from '../store/store.js';
import { parseReleaseInput } from './release-input.js';
import { assertVerified, refuseExisting, sealReleasePackage, type ReleasePackageOptions } from './release-seal.js';
import type { ReleaseInput, ReleasePackage } from './release-types.js';

export { assertVerified, sealReleasePackage, type ReleasePackageOptions } from './release-seal.js';

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
