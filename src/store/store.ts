/**
 * The linekeeper database: one SQLite file (better-sqlite3, WAL) in the data
 * directory, with forward-only migrations and the audit trail built in.
 *
 * Every state change and the audit entry that records it commit in ONE
 * transaction: `store.tx((t) => { t.db.prepare(...).run(...); t.audit.append(...) })`.
 * The whole database runs at synchronous=FULL, so when `tx` (or
 * `audit.append`) returns, the commit is on disk (R2/R12, Part 11 §11.10(e)).
 */
import { accessSync, constants, copyFileSync, existsSync, mkdirSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import Database from 'better-sqlite3';
import { systemClock, type Clock } from '../clock.js';
import { LkError } from '../errors.js';
import { silentLogger, type Logger } from '../log.js';
import { AuditTrail, type AuditOptions } from '../audit/trail.js';
import { SITE_TENANT } from '../audit/entry.js';
import { MIGRATIONS, runMigrations, type Migration } from './migrations.js';
import { missingTriggers, restoreTriggers } from './triggers.js';
import { mapSqliteError } from './sqlite-errors.js';

export { mapSqliteError };

/** PRAGMA application_id of a linekeeper database ("LKS1"): a foreign SQLite file is refused, not migrated. */
export const APPLICATION_ID = 0x4c4b5331;
export const DB_FILE = 'linekeeper.db';

export interface StoreOptions {
  /** Absolute or relative data directory; created when missing (unless read-only). */
  dataDir: string;
  clock?: Clock;
  logger?: Logger;
  /** Open for verification/query only: no migrations, no key creation, no writes. */
  readonly?: boolean;
  /** Checkpoint policy (from config `audit`). */
  audit?: Partial<AuditOptions>;
  /** For tests of the migration mechanism only. */
  migrations?: readonly Migration[];
}

/** What a `store.tx` callback receives: the connection and the audit trail, both inside the transaction. */
export interface TxContext {
  readonly db: Database.Database;
  readonly audit: AuditTrail;
}

export interface Store {
  readonly db: Database.Database;
  readonly dataDir: string;
  readonly file: string;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly readonly: boolean;
  readonly audit: AuditTrail;
  /** Schema version after migrations. */
  readonly schemaVersion: number;
  /**
   * Append-only triggers the schema should have and the file lacks (read-only stores: reported by
   * `audit verify`; a writable open re-creates them and records that on the site chain, so this is empty).
   */
  readonly missingTriggers: readonly string[];
  /**
   * Run `fn` in one IMMEDIATE transaction (nested calls become savepoints) and
   * commit durably. `fn` must be synchronous. After the outermost commit, the
   * hooks registered with {@link afterCommit} run (audit checkpoints, notifications).
   * @throws whatever `fn` throws (everything is rolled back); LkError LK_AUDIT_IMMUTABLE when
   *   something tries to change an audit row; LK_STORE_CORRUPT when SQLite finds the file damaged.
   */
  tx<T>(fn: (t: TxContext) => T): T;
  /**
   * Run `fn` once the current outermost transaction has committed (dropped on rollback); immediately
   * outside one. Hooks with the same `key` in one transaction run once (the last one registered).
   */
  afterCommit(fn: () => void, key?: string): void;
  /** True inside `tx`. */
  inTx(): boolean;
  /**
   * Call `listener` whenever a transaction fails because the disk is full (LK_STORE_FULL), whoever ran it: the
   * daemon's storage guard learns of the outage from an engine write too, not only from its own events.
   * Returns the function that unsubscribes.
   */
  onFull?(listener: () => void): () => void;
  /** Clean stop: final audit checkpoints (when writable), then close the file. Idempotent. */
  close(): void;
}

/**
 * Open (or create) the database in `dataDir`, migrate it, and attach the audit trail.
 * @throws LkError LK_STORE_CORRUPT for a damaged file or a SQLite file of another application;
 *   LK_NOT_FOUND when read-only and there is no database; LK_STORE_MIGRATION when a migration fails
 *   or the file is newer than this software; LK_AUDIT_KEY when the site key is unusable or does
 *   not match the checkpoints already signed.
 */
export function openStore(opts: StoreOptions): Store {
  const dataDir = resolve(opts.dataDir);
  const file = join(dataDir, DB_FILE);
  const ro = opts.readonly === true;
  const clock = opts.clock ?? systemClock;
  const logger = opts.logger ?? silentLogger;
  if (ro && !existsSync(file)) throw new LkError('LK_NOT_FOUND', `no linekeeper database in ${dataDir}`, { dataDir });
  if (!ro) mkdirSync(dataDir, { recursive: true });
  if (existsSync(file) && !statSync(file).isFile()) throw new LkError('LK_STORE_CORRUPT', `${file} is not a file`);

  // A write-protected copy (an auditor's, a read-only mount): SQLite cannot read a WAL database where it may not
  // create the -shm index, and this build has no URI filenames for immutable=1; read a private snapshot instead.
  const snapshot = ro && !writable(dataDir) ? snapshotOf(file) : undefined;
  const cleanup = (): void => {
    if (snapshot) rmSync(snapshot.dir, { recursive: true, force: true });
  };
  let db: Database.Database;
  try {
    db = new Database(snapshot?.file ?? file, ro ? { readonly: true, fileMustExist: true } : {});
  } catch (err) {
    cleanup();
    throw mapOpenError(err, file);
  }
  try {
    checkIdentity(db, file, ro);
    if (!ro) {
      db.pragma('journal_mode = WAL');
      db.pragma(`application_id = ${APPLICATION_ID}`);
    }
    db.pragma('synchronous = FULL');
    db.pragma('busy_timeout = 5000');
    db.pragma('foreign_keys = ON');
    const nowIso = (): string => new Date(clock.now()).toISOString();
    const migrations = opts.migrations ?? MIGRATIONS;
    const schemaVersion = ro ? readonlyVersion(db, migrations) : runMigrations(db, nowIso, migrations);
    const restored = ro ? [] : restoreTriggers(db, migrations);
    const missing = ro ? missingTriggers(db, migrations.slice(0, schemaVersion)) : [];
    const store = new SqliteStore(db, dataDir, file, clock, logger, ro, schemaVersion, missing, opts.audit ?? {}, cleanup);
    if (restored.length > 0) {
      // whoever dropped them could change rows the hash chains do not cover while they were gone: say so on the trail
      logger.warn({ triggers: restored }, 'append-only triggers were missing and have been re-created');
      store.audit.append({
        tenant: SITE_TENANT, actor: 'system', kind: 'system', action: 'audit.triggers_restored', args: { triggers: restored },
        reason: 'append-only triggers were missing from the database and were re-created from the schema; rows changed while they were gone are found only by audit verify',
      });
    }
    return store;
  } catch (err) {
    db.close();
    cleanup();
    throw mapOpenError(err, file);
  }
}

function writable(dir: string): boolean {
  try {
    accessSync(dir, constants.W_OK);
    return true;
  } catch {
    return false;
  }
}

/** Copy the database (and a WAL left beside it) to a private temporary directory, to read it there. */
function snapshotOf(file: string): { dir: string; file: string } {
  const dir = mkdtempSync(join(tmpdir(), 'linekeeper-ro-'));
  const copy = join(dir, DB_FILE);
  try {
    copyFileSync(file, copy);
    if (existsSync(`${file}-wal`)) copyFileSync(`${file}-wal`, `${copy}-wal`);
  } catch (err) {
    rmSync(dir, { recursive: true, force: true });
    throw new LkError('LK_NOT_FOUND', `${file}: cannot be read (${(err as NodeJS.ErrnoException).code ?? 'error'})`, undefined, { cause: err });
  }
  return { dir, file: copy };
}

function mapOpenError(err: unknown, file: string): unknown {
  const mapped = mapSqliteError(err);
  if (LkError.is(mapped)) return mapped;
  const code = (err as { code?: unknown })?.code;
  if (typeof code === 'string' && code.startsWith('SQLITE_READONLY')) return new LkError('LK_DATA_NOT_WRITABLE', `${file}: not writable (${code})`, undefined, { cause: err });
  if (code === 'SQLITE_CANTOPEN') return new LkError('LK_STORE_CORRUPT', `${file}: cannot be opened`, undefined, { cause: err });
  return err;
}

/** A new file is ours to initialise; an existing one must carry our application id (or be empty). */
function checkIdentity(db: Database.Database, file: string, ro: boolean): void {
  const appId = db.pragma('application_id', { simple: true }) as number;
  if (appId === APPLICATION_ID) return;
  const objects = (db.prepare('SELECT COUNT(*) AS n FROM sqlite_master').get() as { n: number }).n;
  if (appId === 0 && objects === 0 && !ro) return;
  throw new LkError('LK_STORE_CORRUPT', `${file} is not a linekeeper database (application_id ${appId}, ${objects} schema objects)`, { applicationId: appId });
}

/** The schema version from which `audit_entry` holds each entry's record (migration 14). */
const AUDIT_RECORD_VERSION = 14;

function readonlyVersion(db: Database.Database, migrations: readonly Migration[]): number {
  const has = db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_migration'").get();
  if (!has) throw new LkError('LK_STORE_CORRUPT', 'database has no schema version');
  const v = (db.prepare('SELECT MAX(version) AS v FROM schema_migration').get() as { v: number | null }).v ?? 0;
  if (v > migrations.length) throw new LkError('LK_STORE_MIGRATION', `database schema version ${v} is newer than this linekeeper (${migrations.length})`);
  if (v < 1) throw new LkError('LK_STORE_CORRUPT', 'database has no audit tables');
  // version 14 changed how audit entries are stored: reading an older trail with this code would fail on every query
  if (v < AUDIT_RECORD_VERSION && migrations.length >= AUDIT_RECORD_VERSION) {
    throw new LkError('LK_STORE_MIGRATION', `database schema version ${v} is older than this linekeeper's (${migrations.length}); a read-only open does not upgrade it: back it up, then start linekeeper once on it (the upgrade runs at a writable open)`, { have: v, known: migrations.length });
  }
  return v;
}

class SqliteStore implements Store {
  readonly audit: AuditTrail;
  private depth = 0;
  private hooks = new Map<string | symbol, () => void>();
  private readonly fullListeners = new Set<() => void>();
  private closed = false;
  private readonly runTx: Database.Transaction<(fn: (t: TxContext) => unknown, t: TxContext) => unknown>;
  private readonly ctx: TxContext;

  constructor(
    readonly db: Database.Database,
    readonly dataDir: string,
    readonly file: string,
    readonly clock: Clock,
    readonly logger: Logger,
    readonly readonly: boolean,
    readonly schemaVersion: number,
    readonly missingTriggers: readonly string[],
    auditOptions: Partial<AuditOptions>,
    private readonly cleanup: () => void = () => undefined,
  ) {
    this.runTx = db.transaction((fn: (t: TxContext) => unknown, t: TxContext) => fn(t));
    this.audit = new AuditTrail(this, auditOptions);
    this.ctx = { db, audit: this.audit };
  }

  tx<T>(fn: (t: TxContext) => T): T {
    if (this.closed) throw new LkError('LK_INTERNAL', 'store is closed');
    if (this.readonly) throw new LkError('LK_INTERNAL', 'store is open read-only');
    if (this.depth === 0 && this.db.inTransaction) {
      // A transaction opened behind store.tx's back would skip the after-commit checkpoints.
      throw new LkError('LK_INTERNAL', 'store.tx inside a transaction not opened by store.tx');
    }
    const outer = this.depth === 0;
    this.depth++;
    let result: T;
    try {
      result = this.runTx.immediate(fn as (t: TxContext) => unknown, this.ctx) as T;
    } catch (err) {
      if (outer) this.hooks.clear();
      const mapped = mapSqliteError(err);
      if (outer && LkError.is(mapped, 'LK_STORE_FULL')) {
        for (const f of this.fullListeners) {
          try {
            f();
          } catch (e) {
            this.logger.error({ err: e }, 'storage-full listener failed');
          }
        }
      }
      throw mapped;
    } finally {
      this.depth--;
    }
    if (outer) this.runHooks();
    return result;
  }

  onFull(listener: () => void): () => void {
    this.fullListeners.add(listener);
    return () => this.fullListeners.delete(listener);
  }

  afterCommit(fn: () => void, key?: string): void {
    if (this.depth > 0) this.hooks.set(key ?? Symbol('hook'), fn);
    else fn();
  }

  inTx(): boolean {
    return this.depth > 0;
  }

  private runHooks(): void {
    const hooks = [...this.hooks.values()];
    this.hooks.clear();
    for (const h of hooks) {
      try {
        h();
      } catch (err) {
        // The transaction has committed; a failing hook must not make the caller believe it did not.
        this.logger.error({ err }, 'after-commit hook failed');
      }
    }
  }

  close(): void {
    if (this.closed) return;
    try {
      if (!this.readonly) this.audit.close();
    } finally {
      this.closed = true;
      this.db.close();
      this.cleanup();
    }
  }
}
