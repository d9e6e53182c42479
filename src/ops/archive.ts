/**
 * Archiving (EU GMP Annex 11 §17, 21 CFR 11.10(c)): `linekeeper archive run|period` writes one folder that is
 * readable and verifiable for the whole retention period without linekeeper:
 *
 *   README.txt               what each file is, and the commands that verify it with plain Node
 *   archive.json             what was archived: tenant, run or period, runs, the bundle's head, retention, by whom
 *   audit-bundle.jsonl       the tenant's audit bundle of the run (or period), with its signed checkpoints
 *   site-public-key.pem      the site's Ed25519 public key (pin your own copy with --key: this one proves wholeness)
 *   verify-audit-bundle.mjs  the standalone verifier (Node's own modules only)
 *   runs/<run>/release/      the run's release package, byte for byte as the run wrote it (when it has one)
 *   runs/<run>/…             the run's record, specification table (JSON, CSV, text) and genealogy (the caller's)
 *   MANIFEST.sha256, MANIFEST.sig   every file's SHA-256, signed with the site key (archive-manifest.ts)
 *
 * Like a release package, the folder is written in a staging folder beside it, verified, made read-only and
 * renamed into place: it appears whole or not at all, and never replaces anything. A release package's digests are
 * taken from the copies in the staging folder — what the archive holds — and must equal those the tenant's chain
 * recorded when the run wrote the package (the `audit.write_release_package` result). The archive is then recorded
 * on the tenant's chain (`audit_access`, `audit.archive`, as a copy of records leaving the system: who, the
 * manifest's SHA-256, each run's release digests); a record that cannot be written removes the archive again. Once
 * the record is committed the archive is never removed (a checkpoint that fails after it is a warning): the
 * digests in that record are what `archive prune` later accepts as "archived" (retention.ts), so a record must
 * never outlive its archive.
 */
import { chmodSync, copyFileSync, constants, existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, renameSync, rmSync, statSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { exportBundle, verifyBundleFile } from '../audit/bundle.js';
import { filterBounds, iterateAudit, parseFilter } from '../audit/query.js';
import { verifyStore } from '../audit/verify.js';
import { TERMINAL_RUN } from '../domain/run.js';
import { assertVerified } from '../engine/release-package.js';
import { RELEASE_FILES } from '../engine/release-types.js';
import { LkError } from '../errors.js';
import { fsyncPath, writeNewFile } from '../files.js';
import { RunStore, type RunRecord } from '../store/run-store.js';
import type { Store } from '../store/store.js';
import { INSTALL_ROOT, VERSION } from '../version.js';
import { ARCHIVE_BUNDLE_FILE, ARCHIVE_FORMAT, ARCHIVE_KEY_FILE, ARCHIVE_META_FILE, filesUnder, MANIFEST_FILE, MANIFEST_SIG_FILE, manifestSignature, manifestText, sha256File, VERIFIER_FILE, verifyArchive } from './archive-manifest.js';
import { archiveReadme } from './archive-readme.js';
import { retentionEnds } from './retention.js';
import { writeTarGz } from './tar.js';

/** A run or a period [from, to) of one tenant (a date alone is its whole UTC day, as in `audit query`). */
export type ArchiveScope = { readonly run: string } | { readonly from: string; readonly to: string };

/** A file of a run's folder besides its release package (`spec-table.json`, …), made by the caller. */
export interface ArchiveDocument {
  readonly path: string;
  readonly bytes: string | Buffer;
  /** One line for README.txt. */
  readonly what: string;
}

export interface ArchiveRequest {
  readonly tenant: string;
  readonly scope: ArchiveScope;
  /** The archive folder to create: absent, or an empty folder; its parent must exist. */
  readonly out: string;
  /** The site's retention period in whole years (configuration `retention.years`). */
  readonly retentionYears: number;
  /** Who ran the command on the machine (recorded; archiving is an operating-system act, like a backup). */
  readonly osUser: string;
  readonly site?: string;
  /** The run's documents besides its release package (the CLI's renderings of its record). */
  readonly documents?: (run: RunRecord) => readonly ArchiveDocument[];
  /** Also write `<out>.tar.gz`. */
  readonly tar?: boolean;
  /** The standalone verifier to ship (default: this installation's). */
  readonly verifier?: string;
}

/** A run as archive.json and the audit record name it. */
export interface ArchivedRun {
  readonly run: string;
  readonly batch: string;
  readonly status: string;
  readonly started_at: string;
  readonly ended_at: string;
  /** SHA-256 of the release package's files as archived; null when the run has none on this node. */
  readonly release: { readonly json: string; readonly pdf: string; readonly bundle: string } | null;
  readonly retain_until: string;
}

export interface ArchiveResult {
  readonly dir: string;
  readonly tarFile: string | null;
  readonly manifestSha256: string;
  readonly files: number;
  readonly bytes: number;
  readonly runs: readonly ArchivedRun[];
  readonly bundle: { readonly entries: number; readonly head: { readonly seq: number; readonly hash: string } | null };
  /** The seq of the `audit.archive` entry on the tenant's chain. */
  readonly auditSeq: number;
  /** What went wrong after the archive was recorded (it stays): a checkpoint that could not be signed now. */
  readonly warnings: readonly string[];
}

/** Most runs one archive holds (its audit record lists them all): archive a longer period in parts. */
export const MAX_ARCHIVE_RUNS = 500;

const iso = (ms: number): string => new Date(ms).toISOString();

/** tools/verify-audit-bundle.mjs of this installation (a source checkout, or the installed package beside dist/). */
export function standaloneVerifier(): string {
  const f = join(INSTALL_ROOT, 'tools', VERIFIER_FILE);
  if (existsSync(f)) return f;
  throw new LkError('LK_INTERNAL', `the standalone verifier (tools/${VERIFIER_FILE}) is missing from this installation`);
}

/**
 * Write the archive of `r.scope` into the new folder `r.out`, verify it, record it on the tenant's chain.
 * The tenant's chain is verified first and a checkpoint of its head signed (the bundle ends on it); on a writable
 * store only, since the archive is recorded.
 * @throws LkError LK_NOT_FOUND (no such run or chain), LK_RUN_STATE (a run in scope has not ended),
 *   LK_VALIDATION (a bad period; more than {@link MAX_ARCHIVE_RUNS} runs), LK_OUTPUT_INVALID (no parent folder),
 *   LK_CONFLICT (the folder or tar file is taken: nothing is written), LK_AUDIT_BROKEN (the chain or a bundle
 *   does not verify, or a release package has no digests on the chain or differs from them: nothing is written),
 *   LK_FILE_TOO_LARGE (a file too large for the tar file: nothing is written), LK_AUDIT_KEY from the site key.
 *   Nothing is thrown once the archive is recorded: what fails after that is in `warnings`.
 */
export async function writeArchive(store: Store, r: ArchiveRequest): Promise<ArchiveResult> {
  const target = resolve(r.out);
  const tarFile = r.tar ? `${target}.tar.gz` : null;
  if (!existsSync(dirname(target)) || !statSync(dirname(target)).isDirectory()) throw new LkError('LK_OUTPUT_INVALID', `archive folder ${r.out}: its parent folder does not exist`, { dir: r.out });
  refuseTaken(target, tarFile);
  if (!store.audit.chains().includes(r.tenant)) throw new LkError('LK_NOT_FOUND', `no audit chain "${r.tenant}"`, { tenant: r.tenant });
  const filter = parseFilter('run' in r.scope ? { run: r.scope.run } : { from: r.scope.from, to: r.scope.to });
  const runs = runsInScope(store, r.tenant, r.scope);
  const verifier = r.verifier ?? standaloneVerifier();
  assertVerified(verifyStore(store, { tenant: r.tenant }), r.tenant);
  const key = store.audit.siteKey();
  const now = store.clock.now();

  const staging = mkdtempSync(join(dirname(target), `.${basename(target)}.staging-`));
  let result: Omit<ArchiveResult, 'auditSeq' | 'tarFile' | 'warnings'>;
  try {
    const put = (rel: string, bytes: string | Buffer): void => {
      mkdirSync(dirname(join(staging, rel)), { recursive: true });
      writeNewFile(join(staging, rel), typeof bytes === 'string' ? Buffer.from(bytes, 'utf8') : bytes, 0o644);
    };
    const copy = (src: string, rel: string): void => {
      mkdirSync(dirname(join(staging, rel)), { recursive: true });
      copyFileSync(src, join(staging, rel), constants.COPYFILE_EXCL);
      fsyncPath(join(staging, rel));
    };
    exportBundle(store, r.tenant, filter, join(staging, ARCHIVE_BUNDLE_FILE));
    fsyncPath(join(staging, ARCHIVE_BUNDLE_FILE));
    const b = verifyBundleFile(join(staging, ARCHIVE_BUNDLE_FILE), { publicKey: key });
    if (!b.report.ok) throw new LkError('LK_AUDIT_BROKEN', `the exported audit bundle of "${r.tenant}" does not verify (${b.report.damage?.kind}): no archive is written`, { tenant: r.tenant });
    put(ARCHIVE_KEY_FILE, key.publicPem);
    copy(verifier, VERIFIER_FILE);

    const archived: ArchivedRun[] = [];
    const documents: { path: string; what: string }[] = [];
    for (const run of runs) {
      const release = releaseOf(store, run, (src, rel) => {
        copy(src, `runs/${run.id}/release/${rel}`);
        return join(staging, `runs/${run.id}/release/${rel}`);
      });
      for (const d of r.documents?.(run) ?? []) {
        put(`runs/${run.id}/${d.path}`, d.bytes);
        if (!documents.some((x) => x.path === d.path)) documents.push({ path: d.path, what: d.what });
      }
      archived.push({
        run: run.id, batch: run.batch, status: run.status, started_at: iso(run.createdAt), ended_at: iso(run.endedAt!),
        release: release?.sha256 ?? null, retain_until: iso(retentionEnds(run.endedAt!, r.retentionYears)),
      });
    }
    const periodEnd = 'run' in r.scope ? 0 : Date.parse(filterBounds(filter).to!);
    const until = Math.max(periodEnd, ...runs.map((x) => x.endedAt!));
    const meta = {
      format: ARCHIVE_FORMAT, version: 1, tenant: r.tenant, ...(r.site ? { site: r.site } : {}),
      // a period as the instants it means: from inclusive, to exclusive (a date alone was its whole UTC day)
      scope: 'run' in r.scope ? { run: r.scope.run } : filterBounds(filter),
      created_at: iso(now), created_by: { os_user: r.osUser }, software: `linekeeper ${VERSION}`, key_id: key.keyId,
      audit: { file: ARCHIVE_BUNDLE_FILE, filter, entries: b.report.entries, head: b.report.head, sha256: b.sha256 },
      runs: archived,
      retention: { years: r.retentionYears, until: iso(retentionEnds(until, r.retentionYears)), from: 'the end of each run, and the end of the period for its audit entries' },
    };
    put(ARCHIVE_META_FILE, `${JSON.stringify(meta, null, 2)}\n`);
    put('README.txt', archiveReadme({ tenant: r.tenant, scope: r.scope, runs: archived, documents, keyId: key.keyId, retentionYears: r.retentionYears, createdAt: iso(now) }));

    const files = filesUnder(staging).map((f) => f.path);
    const manifest = manifestText(files.map((path) => ({ path, sha256: sha256File(join(staging, path)) })));
    put(MANIFEST_FILE, manifest);
    put(MANIFEST_SIG_FILE, manifestSignature(key, manifest));
    const check = verifyArchive(staging, { publicKey: key });
    if (!check.ok) throw new LkError('LK_AUDIT_BROKEN', `the archive does not verify before it is sealed (${check.problems[0]!.file}: ${check.problems[0]!.kind}): nothing is written`, { problems: check.problems });
    const bytes = seal(staging);
    renameInto(staging, target);
    result = { dir: target, manifestSha256: sha256File(join(target, MANIFEST_FILE)), files: files.length, bytes, runs: archived, bundle: { entries: b.report.entries, head: b.report.head } };
  } finally {
    // after the rename the staging path no longer exists; otherwise nothing half-written stays
    rmSync(staging, { recursive: true, force: true });
  }
  fsyncPath(dirname(target));

  let tarWritten = false;
  let seq: number;
  try {
    if (tarFile) {
      await writeTarGz(target, tarFile, { mtime: now });
      tarWritten = true;
    }
    seq = store.audit.append({
      tenant: r.tenant, actor: 'system', kind: 'audit_access', action: 'audit.archive',
      ...('run' in r.scope ? { subject: { run: r.scope.run, batch: runs[0]!.batch } } : {}),
      args: { scope: { ...r.scope }, os_user: r.osUser, software: `linekeeper ${VERSION}` },
      result: {
        archive: basename(target), manifest_sha256: result.manifestSha256, files: result.files, bytes: result.bytes, ...(tarFile ? { tar: `${basename(tarFile)}`, tar_sha256: sha256File(tarFile) } : {}),
        bundle: { entries: result.bundle.entries, through: result.bundle.head?.seq ?? 0 },
        runs: result.runs.map((x) => ({ run: x.run, batch: x.batch, release: x.release ? { ...x.release } : null, retain_until: x.retain_until })),
        retention_years: r.retentionYears,
      },
    }).seq;
  } catch (err) {
    // an archive whose record cannot be written is not left behind (nor its tar file, which this call made)
    if (tarFile && tarWritten) rmSync(tarFile, { force: true });
    rmSync(target, { recursive: true, force: true });
    throw err;
  }
  // Recorded: from here on the archive stays whatever fails, since `archive prune` trusts the record's digests and
  // would drop the only copies of packages whose archive had been removed.
  const warnings: string[] = [];
  try {
    store.audit.checkpoint(r.tenant);
  } catch (err) {
    warnings.push(`the archive is recorded on ${r.tenant} #${seq} and stays, but no checkpoint could be signed now (${err instanceof Error ? err.message : String(err)}): the next checkpoint signs the record`);
  }
  return { ...result, tarFile, auditSeq: seq, warnings };
}

/** LK_CONFLICT when the folder exists and is not empty, or the tar file exists (checked first: a conflict changes nothing). */
function refuseTaken(target: string, tarFile: string | null): void {
  if (existsSync(target) && (!lstatSync(target).isDirectory() || readdirSync(target).length > 0)) {
    throw new LkError('LK_CONFLICT', `${basename(target)}: something is already there; an archive is never written over anything`, { dir: basename(target) });
  }
  if (tarFile && existsSync(tarFile)) throw new LkError('LK_CONFLICT', `${basename(tarFile)} exists already; it is never overwritten`, { file: basename(tarFile) });
}

/**
 * The tenant's runs in scope, oldest first: the run, or those started in the period. Every one must have ended
 * (an archive of a run under way would be incomplete, and its retention has not begun).
 */
function runsInScope(store: Store, tenant: string, scope: ArchiveScope): RunRecord[] {
  const rs = new RunStore(store.db);
  let runs: RunRecord[];
  if ('run' in scope) {
    const run = rs.run(tenant, scope.run);
    if (!run) throw new LkError('LK_NOT_FOUND', `no run ${scope.run} for tenant ${tenant}`, { run: scope.run });
    runs = [run];
  } else {
    const b = filterBounds(parseFilter({ from: scope.from, to: scope.to }));
    const from = Date.parse(b.from!);
    const to = Date.parse(b.to!);
    runs = [];
    let cursor: { createdAt: number; id: string } | undefined;
    for (;;) {
      const page = rs.runs(tenant, 200, cursor);
      runs.push(...page.filter((x) => x.createdAt >= from && x.createdAt < to));
      const last = page[page.length - 1];
      if (page.length < 200 || !last || last.createdAt < from) break;
      cursor = { createdAt: last.createdAt, id: last.id };
    }
    if (runs.length > MAX_ARCHIVE_RUNS) throw new LkError('LK_VALIDATION', `the period holds ${runs.length} runs, more than ${MAX_ARCHIVE_RUNS} in one archive: archive it in shorter periods`, { runs: runs.length });
    runs.reverse();
  }
  const open = runs.filter((x) => !TERMINAL_RUN.has(x.status) || x.endedAt === null);
  if (open.length > 0) throw new LkError('LK_RUN_STATE', `run ${open[0]!.id} is ${open[0]!.status}: a run is archived once it has ended${open.length > 1 ? ` (${open.length} runs in scope have not)` : ''}`, { runs: open.map((x) => x.id) });
  return runs;
}

type ReleaseDigests = { json: string; pdf: string; bundle: string };

/**
 * The run's release package on this node, copied by `copy` (which returns the copy's path) and checked: the digests
 * of the copies — what the archive holds and its record names — must be those the tenant's chain recorded when the
 * run wrote the package. Null when the run has no package here (never written, or dropped by `archive prune` after
 * it was archived).
 * @throws LkError LK_AUDIT_BROKEN when a file is missing, the chain recorded no digests for the package, or a copy
 *   differs from them (nothing is archived).
 */
function releaseOf(store: Store, run: RunRecord, copy: (src: string, rel: string) => string): { sha256: ReleaseDigests } | null {
  const dir = join(store.dataDir, 'releases', run.tenant, run.id);
  if (!existsSync(dir)) return null;
  const recorded = recordedRelease(store, run);
  const sha256: ReleaseDigests = { json: '', pdf: '', bundle: '' };
  for (const [k, f] of Object.entries(RELEASE_FILES) as [keyof typeof RELEASE_FILES, string][]) {
    if (!existsSync(join(dir, f))) throw new LkError('LK_AUDIT_BROKEN', `releases/${run.tenant}/${run.id}/${f} is missing from the run's release package`, { run: run.id, file: f });
    sha256[k] = sha256File(copy(join(dir, f), f));
    if (sha256[k] !== recorded[k]) throw new LkError('LK_AUDIT_BROKEN', `releases/${run.tenant}/${run.id}/${f} differs from the SHA-256 the run recorded when it wrote it: no archive is written`, { run: run.id, file: f });
  }
  return { sha256 };
}

const HEX64 = /^[0-9a-f]{64}$/;

/**
 * The digests of the run's release package as the tenant's chain recorded them when the run wrote it: the result of
 * its `audit.write_release_package` tool call (the last one that succeeded).
 * @throws LkError LK_AUDIT_BROKEN when the chain holds none (a package nobody recorded is not archived as a release).
 */
function recordedRelease(store: Store, run: RunRecord): ReleaseDigests {
  let found: ReleaseDigests | null = null;
  for (const e of iterateAudit(store.db, run.tenant, { run: run.id, kind: 'tool_result', action: 'audit.write_release_package' })) {
    const r = e.result as { ok?: unknown; detail?: { sha256?: Record<string, unknown> } } | undefined;
    const d = r?.ok === true ? r.detail?.sha256 : undefined;
    if (d && typeof d['json'] === 'string' && HEX64.test(d['json']) && typeof d['pdf'] === 'string' && HEX64.test(d['pdf']) && typeof d['bundle'] === 'string' && HEX64.test(d['bundle'])) {
      found = { json: d['json'], pdf: d['pdf'], bundle: d['bundle'] };
    }
  }
  if (!found) throw new LkError('LK_AUDIT_BROKEN', `releases/${run.tenant}/${run.id}: the tenant's chain recorded no SHA-256 of this release package (no audit.write_release_package result of run ${run.id}): it cannot be archived as the run's release; no archive is written`, { run: run.id });
  return found;
}

/** Every file read-only, every folder synced; returns the bytes of the files. */
function seal(dir: string): number {
  let bytes = 0;
  for (const f of filesUnder(dir)) {
    chmodSync(join(dir, f.path), 0o444);
    bytes += statSync(join(dir, f.path)).size;
  }
  const syncDirs = (d: string): void => {
    for (const n of readdirSync(d)) if (lstatSync(join(d, n)).isDirectory()) syncDirs(join(d, n));
    chmodSync(d, 0o755);
    fsyncPath(d);
  };
  syncDirs(dir);
  return bytes;
}

/** rename(2) never replaces a non-empty folder: two writers racing for one name cannot both win. */
function renameInto(staging: string, target: string): void {
  try {
    renameSync(staging, target);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOTEMPTY' || code === 'EEXIST' || code === 'ENOTDIR' || code === 'EISDIR') {
      throw new LkError('LK_CONFLICT', `${basename(target)}: something is already there; an archive is never written over anything`, { dir: basename(target) }, { cause: err });
    }
    throw err;
  }
}

