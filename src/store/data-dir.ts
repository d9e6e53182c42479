/**
 * The data directory as the daemon takes hold of it: it must be writable, not
 * writable by others, and held by one daemon only.
 *
 * The lock is an open SQLite transaction on `linekeeper.lock`, not a pid file
 * alone. Node has no flock(); SQLite's unix VFS takes a real POSIX advisory
 * lock (fcntl) on the file for `BEGIN IMMEDIATE` and keeps it while the
 * transaction is open. The kernel drops that lock when the process dies, even
 * by SIGKILL, so a crashed daemon never leaves a stale lock behind — which an
 * O_EXCL pid file plus a liveness check would (and a reused pid would fool
 * that check). SQLite also refuses a second connection of the same process,
 * so two daemons in one test process exclude each other too. The holder's pid
 * is written to `linekeeper.pid` beside it, only to name the holder in the
 * error; the lock itself is the transaction.
 */
import { accessSync, constants, existsSync, mkdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { LkError } from '../errors.js';

export const LOCK_FILE = 'linekeeper.lock';
export const PID_FILE = 'linekeeper.pid';

export interface DataLock {
  readonly dataDir: string;
  /** Release the lock (clean stop). Idempotent. */
  release(): void;
}

/** What `linekeeper.pid` says about the holder (it may be stale: only the lock decides). */
export interface LockHolder {
  readonly pid: number;
  readonly host?: string;
  readonly since?: string;
}

/**
 * Refuse a data directory the daemon could not audit in, or that others could forge evidence in.
 * Creates the directory (0700) when it is missing.
 * @throws LkError LK_DATA_NOT_WRITABLE when it (or the database in it) is not writable — a read-only copy is
 *   for `audit verify | query | export`; LK_DATA_INSECURE when others may write to it (chmod o-w);
 *   LK_STORE_FULL when it cannot even be created for lack of space; LK_DATA_DIR_NOT_A_DIRECTORY for a file.
 */
export function prepareDataDir(dataDir: string): void {
  try {
    mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  } catch (err) {
    throw fsError(err, dataDir);
  }
  const st = statSync(dataDir);
  if (!st.isDirectory()) throw new LkError('LK_DATA_DIR_NOT_A_DIRECTORY', `data directory ${dataDir}: is not a directory`, { dir: dataDir });
  if ((st.mode & 0o002) !== 0) {
    throw new LkError('LK_DATA_INSECURE', `${dataDir} is writable by others (mode ${(st.mode & 0o7777).toString(8)}): anyone could replace the audit trail or the key; chmod o-w it`, { dataDir, mode: st.mode & 0o7777 });
  }
  for (const p of [dataDir, join(dataDir, 'linekeeper.db')]) {
    if (p !== dataDir && !existsSync(p)) continue;
    try {
      accessSync(p, constants.W_OK);
    } catch (err) {
      throw new LkError('LK_DATA_NOT_WRITABLE', `${p} is not writable (${(err as NodeJS.ErrnoException).code ?? 'EACCES'}): serve needs a writable data directory; a write-protected copy can be verified, queried and exported with linekeeper audit`, { path: p }, { cause: err });
    }
  }
}

/** ENOSPC / EDQUOT are a full disk (LK_STORE_FULL); EACCES / EROFS / EPERM a directory that is not writable. */
export function fsError(err: unknown, path: string): unknown {
  const code = (err as NodeJS.ErrnoException)?.code;
  if (code === 'ENOSPC' || code === 'EDQUOT') return new LkError('LK_STORE_FULL', `${path}: no space left on the device`, { path }, { cause: err });
  if (code === 'EACCES' || code === 'EROFS' || code === 'EPERM') return new LkError('LK_DATA_NOT_WRITABLE', `${path}: not writable (${code})`, { path }, { cause: err });
  return err;
}

/**
 * Take the exclusive lock of `dataDir` for this process, until {@link DataLock.release} or its death.
 * @throws LkError LK_DATA_LOCKED naming the holder's pid when another process (or another daemon in this
 *   process) holds it; LK_STORE_FULL / LK_DATA_NOT_WRITABLE when the lock file cannot be created.
 */
export function lockDataDir(dataDir: string): DataLock {
  const file = join(dataDir, LOCK_FILE);
  let db: Database.Database;
  try {
    db = new Database(file, { timeout: 0 });
  } catch (err) {
    throw fsError(sqliteFs(err), file);
  }
  try {
    db.exec('BEGIN IMMEDIATE');
  } catch (err) {
    db.close();
    const code = (err as { code?: unknown }).code;
    if (code === 'SQLITE_BUSY' || code === 'SQLITE_LOCKED') {
      const holder = readHolder(dataDir);
      const who = holder ? `process ${holder.pid}${holder.host ? ` on ${holder.host}` : ''}${holder.since ? ` (since ${holder.since})` : ''}` : 'another process (its pid is not recorded yet)';
      throw new LkError('LK_DATA_LOCKED', `${dataDir} is in use by linekeeper ${who}: one daemon per data directory`, { dataDir, ...(holder ? { pid: holder.pid } : {}) });
    }
    throw fsError(sqliteFs(err), file);
  }
  const pidFile = join(dataDir, PID_FILE);
  try {
    const tmp = `${pidFile}.${process.pid}.tmp`;
    writeFileSync(tmp, `${JSON.stringify({ pid: process.pid, host: hostname(), since: new Date().toISOString() })}\n`, { mode: 0o644 });
    renameSync(tmp, pidFile);
  } catch (err) {
    db.close();
    throw fsError(err, pidFile);
  }
  let released = false;
  return {
    dataDir,
    release: () => {
      if (released) return;
      released = true;
      try {
        if (readHolder(dataDir)?.pid === process.pid) rmSync(pidFile, { force: true });
      } catch {
        // the pid file only names the holder; the lock goes with the connection below
      }
      db.close();
    },
  };
}

/** The holder named in `linekeeper.pid`, or undefined when there is none or it is unreadable. */
export function readHolder(dataDir: string): LockHolder | undefined {
  try {
    const o = JSON.parse(readFileSync(join(dataDir, PID_FILE), 'utf8')) as Record<string, unknown>;
    if (typeof o.pid !== 'number' || !Number.isSafeInteger(o.pid)) return undefined;
    return { pid: o.pid, ...(typeof o.host === 'string' ? { host: o.host } : {}), ...(typeof o.since === 'string' ? { since: o.since } : {}) };
  } catch {
    return undefined;
  }
}

/** SQLite's own codes for a full disk or a read-only file, as the Node codes {@link fsError} knows. */
function sqliteFs(err: unknown): unknown {
  const code = (err as { code?: unknown })?.code;
  if (code === 'SQLITE_FULL') return Object.assign(new Error('disk full', { cause: err }), { code: 'ENOSPC' });
  if (code === 'SQLITE_READONLY' || code === 'SQLITE_CANTOPEN') return Object.assign(new Error('read-only', { cause: err }), { code: 'EROFS' });
  return err;
}
