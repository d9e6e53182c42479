/**
 * `audit verify` on a database: recompute every chain, check every checkpoint
 * (database and log file) and name the first bad seq and the kind of damage.
 *
 * The walk is the hot path (prepared statement, raw rows, no per-row objects
 * beyond the hashed string). Only when something is wrong does a slower
 * diagnosis look around the first bad position to tell an edit from a
 * deletion, insertion or reorder. A rewritten suffix with recomputed hashes is
 * internally consistent; only a checkpoint shows it, and only to the
 * precision of the checkpoint interval: the reported seq is the first one after
 * the last checkpoint that still matches.
 */
import type { Database } from 'better-sqlite3';
import { LkError } from '../errors.js';
import { mapSqliteError } from '../store/sqlite-errors.js';
import BetterSqlite3 from 'better-sqlite3';
import { MIGRATIONS, runMigrations } from '../store/migrations.js';
import { missingTriggers } from '../store/triggers.js';
import { intactRecord, recordVerifiesAt } from './record.js';
import { asCheckpoint, checkpointLogFile, checkpointSignatureValid, readCheckpointLog, type SignedCheckpoint } from './checkpoints.js';
import { GENESIS_HASH } from './entry.js';
import { quickCheck } from './quick-check.js';
import { loadSitePublicKey, type PublicSiteKey } from './keys.js';

export type DamageKind =
  | 'edited' | 'deleted' | 'inserted' | 'reordered' | 'truncated' | 'rewritten'
  | 'signature_invalid' | 'checkpoint_missing' | 'checkpoint_log_corrupt' | 'malformed' | 'triggers_missing' | 'schema_altered';

export interface Damage {
  readonly kind: DamageKind;
  /** First bad seq of the chain; null when the damage is not at a position (a header, a log line). */
  readonly seq: number | null;
  readonly detail: string;
}

export interface ChainReport {
  readonly tenant: string;
  readonly ok: boolean;
  /** Entries verified from seq 1 (the whole chain when ok). */
  readonly count: number;
  /** Last verified entry (seq 0 / genesis for an empty chain). */
  readonly head: { readonly seq: number; readonly hash: string };
  /** Valid checkpoints that match the chain. */
  readonly checkpoints: number;
  /** Entries after the last matching checkpoint: a chain alone cannot prove they were not cut off. */
  readonly unanchored: number;
  readonly damage?: Damage;
}

export interface VerifyReport {
  readonly ok: boolean;
  readonly chains: ChainReport[];
  /** Damage not tied to one chain (the checkpoint log file, append-only triggers dropped from the schema). */
  readonly problems: Damage[];
  readonly keyId: string | null;
}

export interface VerifyOptions {
  /** Verify only this chain. */
  tenant?: string;
  /** The public key to check checkpoints with (default: the site key in `<dataDir>/keys`). */
  publicKey?: PublicSiteKey;
}

interface Source {
  readonly db: Database;
  readonly dataDir: string;
}

/**
 * Verify the audit chains and checkpoints of a store.
 * @throws LkError LK_AUDIT_CHECKPOINT_MISSING when the database has checkpoints and the log file is gone;
 *   LK_AUDIT_KEY when the key is missing or did not sign these checkpoints; LK_NOT_FOUND for an
 *   unknown `tenant`; LK_STORE_CORRUPT when SQLite finds the file damaged.
 */
export function verifyStore(src: Source, opts: VerifyOptions = {}): VerifyReport {
  try {
    return verifyInner(src, opts);
  } catch (err) {
    throw mapSqliteError(err);
  }
}

/**
 * The walk of one chain from seq 1: `head` is the last entry that verifies and links, `ph` its hash, `broken`
 * set when the walk stopped before the end (with the row at `head + 1`, undefined when there is none), `hashAt`
 * the hashes at (at least) the `wanted` positions up to `head`.
 */
export interface Walk {
  readonly head: number;
  readonly ph: string;
  readonly broken?: { readonly row: StoredRecord | undefined };
  readonly hashAt: ReadonlyMap<number, string>;
}

/** A row as verify reads it: the entry's record (the hashed bytes; migration 14) and its stored hash. */
export interface StoredRecord {
  readonly body: unknown;
  readonly hash: unknown;
}

/** How a verification gets the walk of a chain: the sequential walk here, or a parallel one (verify-parallel.ts). */
export type Walker = (db: Database, tenant: string, wanted: ReadonlySet<number>) => Walk;

/** What a caller did already (verify-parallel.ts): the quick_check, and the walks of intact chains. */
export interface Precomputed {
  /** The result of `PRAGMA quick_check(1)`. */
  readonly quickCheck?: string;
  readonly walker?: Walker;
}

/** Internal: {@link verifyStore} with work done elsewhere; SQLite errors are not mapped. */
export function verifyInner(src: Source, opts: VerifyOptions, pre: Precomputed = {}): VerifyReport {
  const { db } = src;
  // Structural damage (a scribbled page) must be an error, not whatever rows happen to read back.
  const check = pre.quickCheck ?? quickCheck(db);
  if (check !== 'ok') throw new LkError('LK_STORE_CORRUPT', `database file is damaged: ${String(check)}`);
  const dbCps = (db.prepare('SELECT tenant, seq, head_hash, ts, key_id, sig FROM audit_checkpoint ORDER BY tenant, seq').all() as Record<string, unknown>[])
    .filter((r) => opts.tenant === undefined || r.tenant === opts.tenant);
  const log = readCheckpointLog(checkpointLogFile(src.dataDir));
  if (!log.exists && dbCps.length > 0) {
    throw new LkError('LK_AUDIT_CHECKPOINT_MISSING', `${checkpointLogFile(src.dataDir)} is missing but the database holds ${dbCps.length} checkpoints`);
  }
  const logCps = log.checkpoints.filter((c) => opts.tenant === undefined || c.tenant === opts.tenant);
  const logKeys = new Set(log.checkpoints.map(cpKey));
  // One statement per checkpoint: a row that is also in the log counts once.
  const dbKeys = new Set(dbCps.map((r) => `${String(r.tenant)}|${String(r.seq)}|${String(r.head_hash)}|${String(r.sig)}`));
  const all = [
    ...dbCps.map((r) => ({ c: asCheckpoint({ v: 1, ...r }), inDb: true, raw: r })),
    ...logCps.filter((c) => !dbKeys.has(cpKey(c))).map((c) => ({ c, inDb: false, raw: c as unknown as Record<string, unknown> })),
  ];

  let key: PublicSiteKey | null = null;
  if (all.length > 0) {
    key = opts.publicKey ?? loadSitePublicKey(src.dataDir);
    const k = key.keyId;
    if (!all.some((x) => x.c?.key_id === k)) {
      throw new LkError('LK_AUDIT_KEY', `the public key ${k.slice(0, 16)}… did not sign any of these checkpoints`, { keyId: k });
    }
  }

  const tenants = new Set<string>();
  if (opts.tenant !== undefined) tenants.add(opts.tenant);
  else {
    for (const t of db.prepare('SELECT tenant FROM audit_chain UNION SELECT DISTINCT tenant FROM audit_entry').pluck().all() as unknown[]) tenants.add(String(t));
    for (const x of all) if (x.c) tenants.add(x.c.tenant);
  }
  if (opts.tenant !== undefined && all.length === 0) {
    const known = db.prepare('SELECT 1 FROM audit_chain WHERE tenant = ? UNION SELECT 1 FROM audit_entry WHERE tenant = ?').get(opts.tenant, opts.tenant);
    if (!known) throw new LkError('LK_NOT_FOUND', `no audit chain "${opts.tenant}"`, { tenant: opts.tenant });
  }

  const chains = [...tenants].sort().map((tenant) => {
    const mine = all.filter((x) => (x.c ? x.c.tenant : x.raw.tenant) === tenant);
    const missing = mine.filter((x) => x.inDb && x.c && !logKeys.has(cpKey(x.c))).map((x) => x.c!.seq);
    return verifyChain(db, tenant, mine.map((x) => ({ c: x.c, seq: x.raw.seq })), key, missing, pre.walker ?? walkChain);
  });
  const problems: Damage[] = log.badLines.map((line) => ({ kind: 'checkpoint_log_corrupt', seq: null, detail: `checkpoint log line ${line} is not a checkpoint` }));
  const version = (db.prepare('SELECT MAX(version) FROM schema_migration').pluck().get() as number | null) ?? 0;
  const dropped = missingTriggers(db, MIGRATIONS.slice(0, version));
  if (dropped.length > 0) {
    problems.push({ kind: 'triggers_missing', seq: null, detail: `append-only triggers are missing: ${dropped.join(', ')} (rows of those tables could have been changed without a trace)` });
  }
  const altered = alteredTrailSchema(db, version);
  if (altered.length > 0) {
    problems.push({ kind: 'schema_altered', seq: null, detail: `the audit trail's table or indexes differ from the schema linekeeper made: ${altered.join(', ')} (a column generated from the records could show what no record holds)` });
  }
  return { ok: problems.length === 0 && chains.every((c) => c.ok), chains, problems, keyId: key?.keyId ?? null };
}

/** The table and indexes of `audit_entry` as the migrations up to `version` make them, by name (memoised). */
const expectedTrail = new Map<number, Map<string, string>>();
function trailSchema(db: Database): Map<string, string> {
  const rows = db.prepare("SELECT name, sql FROM sqlite_schema WHERE tbl_name = 'audit_entry' AND type IN ('table', 'index')").raw().all() as [string, string | null][];
  return new Map(rows.map(([n, q]) => [n, q ?? '']));
}

/**
 * Names of `audit_entry`'s table and indexes whose definition is not the one the migrations make (changed, added or
 * gone): since schema 14 every column but the chain position is generated from the record, so a generation
 * expression rewritten in the schema (`PRAGMA writable_schema`) would show what no record says while every hash
 * still verifies. The expected schema is made by running the same migrations on an empty database in memory.
 */
function alteredTrailSchema(db: Database, version: number): string[] {
  let want = expectedTrail.get(version);
  if (!want) {
    const mem = new BetterSqlite3(':memory:');
    try {
      runMigrations(mem, () => '', MIGRATIONS.slice(0, version));
      want = trailSchema(mem);
    } finally {
      mem.close();
    }
    expectedTrail.set(version, want);
  }
  const have = trailSchema(db);
  const names = new Set([...want.keys(), ...have.keys()]);
  return [...names].filter((n) => want.get(n) !== have.get(n)).sort();
}

/** The damage to report: lowest seq first, a position-less one (null) before any seq, earlier in the list on ties. */
export function firstDamage(list: readonly Damage[]): Damage | undefined {
  return list.reduce<Damage | undefined>((best, d) => (best === undefined || (d.seq ?? 0) < (best.seq ?? 0) ? d : best), undefined);
}

const cpKey = (c: SignedCheckpoint): string => `${c.tenant}|${c.seq}|${c.head_hash}|${c.sig}`;

/** Every row of one chain, whatever its seq (a seq below 1 or of another type is damage the walk must see), as `[seq, body, hash]`. */
const SELECT_CHAIN = 'SELECT seq, body, hash FROM audit_entry WHERE tenant = ? ORDER BY seq';

function verifyChain(db: Database, tenant: string, cps: { c: SignedCheckpoint | undefined; seq: unknown }[], key: PublicSiteKey | null, missingFromLog: number[], walker: Walker): ChainReport {
  const cpDamages: Damage[] = [];
  const valid: SignedCheckpoint[] = [];
  for (const { c, seq } of cps) {
    const at = typeof seq === 'number' ? seq : null;
    if (!c || !key || !checkpointSignatureValid(key, c)) cpDamages.push({ kind: 'signature_invalid', seq: at, detail: `checkpoint at seq ${String(seq)} has an invalid signature` });
    else valid.push(c);
  }
  for (const s of missingFromLog) cpDamages.push({ kind: 'checkpoint_missing', seq: s, detail: `checkpoint at seq ${s} is in the database but not in the checkpoint log` });
  const { head, ph, broken, hashAt } = walker(db, tenant, new Set(valid.map((c) => c.seq)));
  const damages: Damage[] = broken ? [diagnose(db, tenant, head + 1, ph, broken.row)] : [];

  let lastGood = 0;
  let matched = 0;
  let reported = false;
  const walkDamage = damages[0];
  for (const c of valid.sort((a, b) => a.seq - b.seq)) {
    const h = hashAt.get(c.seq);
    if (h !== undefined) {
      if (h === c.head_hash) {
        lastGood = Math.max(lastGood, c.seq);
        matched++;
      } else if (!reported) {
        reported = true;
        // The walk's diagnosis is exact; keep it when it lies in the range this checkpoint condemns.
        const within = walkDamage?.seq != null && walkDamage.seq > lastGood && walkDamage.seq <= c.seq;
        if (!within) damages.push({ kind: 'rewritten', seq: lastGood + 1, detail: `entries ${lastGood + 1}..${c.seq} differ from the signed checkpoint at seq ${c.seq}` });
      }
    } else if (!broken && c.seq > head && !reported) {
      reported = true;
      const moved = findOriginal(db, tenant, head + 1, ph);
      damages.push(moved
        ? { kind: 'edited', seq: head + 1, detail: `entry ${head + 1} was moved to ${moved.tenant === tenant ? '' : `chain ${moved.tenant} `}seq ${String(moved.seq)} (its position columns were changed)` }
        : { kind: 'truncated', seq: head + 1, detail: `chain ends at seq ${head} but a signed checkpoint covers seq ${c.seq}` });
    }
  }
  damages.push(...cpDamages);
  const first = firstDamage(damages);
  const report: ChainReport = { tenant, ok: first === undefined, count: head, head: { seq: head, hash: ph }, checkpoints: matched, unanchored: head - lastGood };
  return first ? { ...report, damage: first } : report;
}

/** The sequential walk: expected position e, expected prev hash ph; stops at the first row that does not fit. */
export function walkChain(db: Database, tenant: string, wanted: ReadonlySet<number>): Walk {
  const hashAt = new Map<number, string>();
  let e = 1;
  let ph = GENESIS_HASH;
  for (const r of db.prepare(SELECT_CHAIN).raw().iterate(tenant) as IterableIterator<unknown[]>) {
    if (r[0] !== e) return { head: e - 1, ph, broken: { row: undefined }, hashAt };
    const at = intactRecord(r[1], r[2]);
    if (at === undefined || at.seq !== e || at.tenant !== tenant || at.prevHash !== ph) return { head: e - 1, ph, broken: { row: { body: r[1], hash: r[2] } }, hashAt };
    ph = r[2] as string;
    if (wanted.has(e)) hashAt.set(e, ph);
    e++;
  }
  return { head: e - 1, ph, hashAt };
}

/**
 * Name the damage at the first bad position `e` of `tenant`'s chain, where `ph` is the hash
 * of the intact entry e-1 and `R` the row at seq e (undefined when there is none).
 * "O" is the original entry e wherever it is now: a row that links to `ph` and hashes right as entry e.
 */
function diagnose(db: Database, tenant: string, e: number, ph: string, R: StoredRecord | undefined): Damage {
  const d = (kind: DamageKind, seq: number, detail: string): Damage => ({ kind, seq, detail });
  const O = findOriginal(db, tenant, e, ph);
  if (!R) {
    if (O) return d('edited', e, `entry ${e} was moved to ${O.tenant === tenant ? '' : `chain ${O.tenant} `}seq ${String(O.seq)} (its position columns were changed)`);
    return d('deleted', e, `entry ${e} is missing`);
  }
  if (O) {
    const p = O.seq as number;
    if (O.tenant !== tenant) return d('edited', e, `entry ${e} was moved to chain ${O.tenant}`);
    if (recordVerifiesAt(tenant, R.body, R.hash, p)) return d('reordered', e, `entries ${e} and ${p} were swapped`);
    if (p === e + 1) return d('inserted', e, `a foreign entry was inserted at seq ${e}; the original ${e} now sits at ${p}`);
    return d('reordered', e, `entry ${e} now sits at seq ${p}`);
  }
  const verifiesHere = recordVerifiesAt(tenant, R.body, R.hash, e);
  if (verifiesHere) return d('edited', e - 1, `entry ${e - 1} was replaced by one with a recomputed hash: entry ${e} no longer links to it`);
  if (statedPrevHash(R.body) === ph) return d('edited', e, `entry ${e} does not match its hash`);
  if (recordVerifiesAt(tenant, R.body, R.hash, e + 1)) return d('deleted', e, `entry ${e} is missing and later entries were renumbered`);
  if (e > 1 && recordVerifiesAt(tenant, R.body, R.hash, e - 1)) return d('inserted', e - 1, `a self-consistent foreign entry was inserted at seq ${e - 1}`);
  return d('edited', e, `entry ${e} does not match its hash`);
}

/** The prev_hash a record states, read as JSON whatever its form (an edited record need not be canonical). */
function statedPrevHash(body: unknown): unknown {
  try {
    return (JSON.parse(body as string) as { prev_hash?: unknown } | null)?.prev_hash;
  } catch {
    return undefined;
  }
}

/**
 * The original entry e of `tenant` wherever it sits now (another seq or chain): a record that links to `ph` and
 * hashes right as entry e. The records are searched by their text (the hash appears in them verbatim), not by the
 * generated prev_hash column: a record SQLite cannot read as JSON must not stop the diagnosis.
 */
function findOriginal(db: Database, tenant: string, e: number, ph: string): { tenant: string; seq: unknown } | undefined {
  const candidates = db.prepare('SELECT tenant, seq, body, hash FROM audit_entry WHERE instr(body, ?) > 0').raw().all(`"prev_hash":"${ph}"`) as unknown[][];
  return candidates
    .filter((c) => c[0] !== tenant || c[1] !== e)
    .map((c) => ({ tenant: c[0] as string, seq: c[1], at: intactRecord(c[2], c[3]) }))
    .find((c) => c.at !== undefined && c.at.tenant === tenant && c.at.seq === e && c.at.prevHash === ph);
}
