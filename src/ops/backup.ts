/**
 * Online backups, restore, and WAL upkeep of the linekeeper database.
 *
 * A backup is a folder laid out like a data directory, so the same verification reads both:
 *   linekeeper.db             SQLite online backup (better-sqlite3 `backup()`: pages copied while the daemon
 *                             writes; the copy is one consistent snapshot)
 *   audit-checkpoints.log     the signed checkpoint log, copied BEFORE the database: every checkpoint in the
 *                             copied log then covers entries the snapshot holds (a log line beyond the snapshot
 *                             would read as truncation)
 *   keys/site-ed25519.pub.pem the public site key (never the private key: that is escrowed separately)
 *   manifest.json             when, which software and schema, chain heads, key id, sha256 of the files
 * Every backup is verified (chains and checkpoints, with the public key in it) before it counts; a restore
 * verifies again before anything in the data directory is touched.
 *
 * The WAL timer: with long-lived readers (a CLI export, a backup) SQLite's automatic checkpoint cannot reset
 * the WAL, which then grows without bound. A PASSIVE checkpoint every interval copies what it can without
 * waiting; once the file passes a size, TRUNCATE resets it — tried without a busy wait, so a reader that still
 * holds it costs one skipped turn, never a blocked event loop.
 */
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { basename, join, resolve } from 'node:path';
import Database from 'better-sqlite3';
import { checkpointLogFile } from '../audit/checkpoints.js';
import { keyFiles, loadSitePublicKey } from '../audit/keys.js';
import { recordSiteEvent } from '../audit/site-events.js';
import { verifyStore, type VerifyReport } from '../audit/verify.js';
import { LkError } from '../errors.js';
import type { Logger } from '../log.js';
import { DB_FILE, openStore, type Store } from '../store/store.js';
import { VERSION } from '../version.js';
import { sha256File } from './archive-manifest.js';

export const MANIFEST = 'manifest.json';
const NAME = /^linekeeper-\d{8}T\d{6}Z$/;

export interface BackupManifest {
  readonly format: 'linekeeper.backup';
  readonly version: 1;
  readonly created_at: string;
  readonly software: string;
  readonly schema_version: number;
  readonly key_id: string;
  readonly chains: Readonly<Record<string, { seq: number; hash: string }>>;
  readonly sha256: Readonly<Record<string, string>>;
}

export interface BackupResult {
  readonly dir: string;
  readonly manifest: BackupManifest;
  /** Seconds spent verifying the copy. */
  readonly verifySeconds: number;
}

function stamp(ms: number): string {
  return new Date(ms).toISOString().replace(/[-:]/g, '').replace(/\.\d{3}Z$/, 'Z');
}

/** The chain heads of a verified report, by tenant. */
function heads(r: VerifyReport): Record<string, { seq: number; hash: string }> {
  return Object.fromEntries(r.chains.map((c) => [c.tenant, { seq: c.head.seq, hash: c.head.hash }]));
}

/**
 * Verify the folder `dir` laid out as a data directory (a backup, or a data directory).
 * @returns the report and how long it took.
 * @throws LkError LK_AUDIT_BROKEN when a chain or checkpoint does not verify; whatever verifyStore and
 *   openStore throw for a missing, damaged or foreign database, a missing log or key.
 */
export function verifyFolder(dir: string): { report: VerifyReport; seconds: number; schemaVersion: number } {
  const t0 = performance.now();
  const store = openStore({ dataDir: dir, readonly: true });
  try {
    const report = verifyStore(store);
    const seconds = (performance.now() - t0) / 1000;
    if (!report.ok) {
      const bad = [...report.chains.filter((c) => !c.ok).map((c) => `${c.tenant}: ${c.damage?.kind} at seq ${c.damage?.seq}`), ...report.problems.map((p) => p.detail)];
      throw new LkError('LK_AUDIT_BROKEN', `${dir}: the audit trail does not verify (${bad.join('; ')})`, { dir, damage: bad });
    }
    return { report, seconds, schemaVersion: store.schemaVersion };
  } finally {
    store.close();
  }
}

/**
 * Take an online backup of `store` into a new folder under `backupDir` and verify it.
 * @throws LkError LK_AUDIT_BROKEN when the copy does not verify (the folder is removed); LK_CONFLICT when the
 *   folder for this second exists already; file system errors as they come.
 */
export async function backupStore(store: Pick<Store, 'db' | 'dataDir' | 'clock'>, backupDir: string): Promise<BackupResult> {
  const now = store.clock.now();
  const dir = join(resolve(backupDir), `linekeeper-${stamp(now)}`);
  if (existsSync(dir)) throw new LkError('LK_CONFLICT', `${dir} exists already`, { dir });
  const partial = `${dir}.partial`;
  rmSync(partial, { recursive: true, force: true });
  mkdirSync(join(partial, 'keys'), { recursive: true, mode: 0o700 });
  try {
    const log = checkpointLogFile(store.dataDir);
    if (existsSync(log)) copyFileSync(log, checkpointLogFile(partial));
    copyFileSync(keyFiles(store.dataDir).publicFile, keyFiles(partial).publicFile);
    await store.db.backup(join(partial, DB_FILE));
    const v = verifyFolder(partial);
    const files = [DB_FILE, basename(checkpointLogFile(partial)), 'keys/site-ed25519.pub.pem'].filter((f) => existsSync(join(partial, f)));
    const manifest: BackupManifest = {
      format: 'linekeeper.backup', version: 1, created_at: new Date(now).toISOString(), software: VERSION, schema_version: v.schemaVersion,
      key_id: loadSitePublicKey(partial).keyId, chains: heads(v.report), sha256: Object.fromEntries(files.map((f) => [f, sha256File(join(partial, f))])),
    };
    writeFileSync(join(partial, MANIFEST), `${JSON.stringify(manifest, null, 2)}\n`);
    renameSync(partial, dir);
    return { dir, manifest, verifySeconds: v.seconds };
  } catch (err) {
    rmSync(partial, { recursive: true, force: true });
    throw err;
  }
}

/** Delete all but the newest `keep` backup folders in `backupDir` (only folders named like ours). @returns the deleted paths. */
export function pruneBackups(backupDir: string, keep: number): string[] {
  if (!existsSync(backupDir)) return [];
  const ours = readdirSync(backupDir).filter((n) => NAME.test(n)).sort();
  const gone = ours.slice(0, Math.max(0, ours.length - keep)).map((n) => join(backupDir, n));
  for (const d of gone) rmSync(d, { recursive: true, force: true });
  return gone;
}

export interface RestoreResult {
  readonly dataDir: string;
  readonly manifest: BackupManifest;
  /** Where the database that was replaced was moved (null when there was none). */
  readonly replacedTo: string | null;
  /** Whether the restore could be recorded on the site chain (needs the private site key in the data directory). */
  readonly audited: boolean;
}

/**
 * Restore a backup folder into `dataDir`: verify it (files against the manifest, chains, checkpoints), refuse a
 * backup signed by another key than the data directory's, move the current database aside (never delete it),
 * copy, verify in place, then record the restore on the site chain.
 * `osUser` is who ran it on the machine (recorded; restore is an operating-system act, not a linekeeper sign-in).
 * @throws LkError LK_AUDIT_BROKEN (the backup does not verify or a file differs from its manifest),
 *   LK_AUDIT_KEY (another site's key), LK_CONFLICT (a database exists and `force` is not given),
 *   LK_NOT_FOUND (no backup there).
 */
export function restoreBackup(backup: string, dataDir: string, o: { force?: boolean; osUser?: string; reason?: string; logger?: Logger } = {}): RestoreResult {
  const src = resolve(backup);
  const mf = join(src, MANIFEST);
  if (!existsSync(mf) || !existsSync(join(src, DB_FILE))) throw new LkError('LK_NOT_FOUND', `${src} is not a linekeeper backup (no ${MANIFEST} or ${DB_FILE})`, { dir: src });
  const manifest = JSON.parse(readFileSync(mf, 'utf8')) as BackupManifest;
  for (const [f, sum] of Object.entries(manifest.sha256)) {
    if (!existsSync(join(src, f)) || sha256File(join(src, f)) !== sum) throw new LkError('LK_AUDIT_BROKEN', `${src}/${f} differs from the backup's manifest`, { file: f });
  }
  verifyFolder(src);
  const target = resolve(dataDir);
  const keys = keyFiles(target);
  if (existsSync(keys.publicFile) || existsSync(keys.privateFile)) {
    const here = loadSitePublicKey(target).keyId;
    if (here !== manifest.key_id) throw new LkError('LK_AUDIT_KEY', `the backup was signed by key ${manifest.key_id.slice(0, 16)}…, this data directory holds key ${here.slice(0, 16)}…`);
  }
  const db = join(target, DB_FILE);
  let replacedTo: string | null = null;
  if (existsSync(db)) {
    if (!o.force) throw new LkError('LK_CONFLICT', `${db} exists: stop the daemon and restore with --force (the current files are moved aside, not deleted)`, { file: db });
    replacedTo = join(target, `replaced-${stamp(Date.now())}`);
    mkdirSync(replacedTo, { recursive: true, mode: 0o700 });
    for (const f of [DB_FILE, `${DB_FILE}-wal`, `${DB_FILE}-shm`, basename(checkpointLogFile(target))]) {
      if (existsSync(join(target, f))) renameSync(join(target, f), join(replacedTo, f));
    }
  }
  mkdirSync(keys.dir, { recursive: true, mode: 0o700 });
  copyFileSync(join(src, DB_FILE), db);
  const log = checkpointLogFile(src);
  if (existsSync(log)) copyFileSync(log, checkpointLogFile(target));
  if (!existsSync(keys.publicFile)) copyFileSync(keyFiles(src).publicFile, keys.publicFile);
  verifyFolder(target);
  let audited = false;
  if (existsSync(keys.privateFile)) {
    const store = openStore({ dataDir: target, ...(o.logger ? { logger: o.logger } : {}) });
    try {
      recordSiteEvent(store.audit, {
        kind: 'system', action: 'site.restore',
        detail: { backup: src, ...(o.osUser ? { os_user: o.osUser } : {}), created_at: manifest.created_at, chains: manifest.chains, ...(replacedTo ? { replaced_to: replacedTo } : {}) },
        ...(o.reason ? { reason: o.reason } : {}),
      });
      audited = true;
    } finally {
      store.close();
    }
  }
  return { dataDir: target, manifest, replacedTo, audited };
}

/** One WAL upkeep turn. @returns what SQLite reported and whether TRUNCATE was tried. */
export function walCheckpoint(db: Database.Database, walFile: string, maxBytes: number): { mode: 'PASSIVE' | 'TRUNCATE'; busy: number; log: number; checkpointed: number } {
  const size = existsSync(walFile) ? statSync(walFile).size : 0;
  if (size > maxBytes) {
    const before = db.pragma('busy_timeout', { simple: true }) as number;
    // no busy wait: a reader that holds the WAL costs one skipped turn, not a blocked event loop
    db.pragma('busy_timeout = 0');
    try {
      const [r] = db.pragma('wal_checkpoint(TRUNCATE)') as { busy: number; log: number; checkpointed: number }[];
      return { mode: 'TRUNCATE', ...r! };
    } finally {
      db.pragma(`busy_timeout = ${before}`);
    }
  }
  const [r] = db.pragma('wal_checkpoint(PASSIVE)') as { busy: number; log: number; checkpointed: number }[];
  return { mode: 'PASSIVE', ...r! };
}

/** Run {@link walCheckpoint} every `intervalMs` (unref'd). Failures are logged. @returns the stop function. */
export function startWalTimer(store: Pick<Store, 'db' | 'file' | 'logger'>, intervalMs: number, maxBytes: number): () => void {
  const t = setInterval(() => {
    try {
      const r = walCheckpoint(store.db, `${store.file}-wal`, maxBytes);
      if (r.busy) store.logger.debug({ wal: r }, 'WAL checkpoint could not finish (a reader holds it); next turn');
    } catch (err) {
      store.logger.error({ err }, 'WAL checkpoint failed');
    }
  }, intervalMs);
  t.unref();
  return () => clearInterval(t);
}

export interface BackupSchedule {
  /** Take a backup now (same as a scheduled one). */
  now(): Promise<BackupResult>;
  stop(): void;
}

/**
 * Back `store` up every `everyMs` into `dir`, keep the newest `keep`. One backup at a time; a failure is
 * logged and reported to `onDone`, never thrown into the timer.
 */
export function startBackupSchedule(o: {
  store: Pick<Store, 'db' | 'dataDir' | 'clock'>; dir: string; everyMs: number; keep: number; logger: Logger;
  onDone?: (ok: boolean, r?: BackupResult) => void;
}): BackupSchedule {
  let running: Promise<BackupResult> | undefined;
  const now = (): Promise<BackupResult> => {
    running ??= backupStore(o.store, o.dir)
      .then((r) => {
        const pruned = pruneBackups(o.dir, o.keep);
        o.logger.info({ backup: r.dir, chains: Object.keys(r.manifest.chains).length, verifySeconds: r.verifySeconds, pruned: pruned.length }, 'backup taken and verified');
        o.onDone?.(true, r);
        return r;
      }, (err: unknown) => {
        o.logger.error({ err, dir: o.dir }, 'backup failed');
        o.onDone?.(false);
        throw err;
      })
      .finally(() => {
        running = undefined;
      });
    return running;
  };
  const t = o.everyMs > 0 ? setInterval(() => void now().catch(() => undefined), o.everyMs) : undefined;
  t?.unref();
  return { now, stop: () => t && clearInterval(t) };
}
