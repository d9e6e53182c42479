/**
 * The audit trail: append-only, one hash chain per tenant plus the `site`
 * chain, on the store's connection. There is no update and no delete here;
 * triggers refuse them in SQL too.
 *
 * `append` is synchronous and durable when it returns. Inside `store.tx` it
 * joins the caller's transaction, so the entry and the state change it records
 * commit together or not at all. Checkpoints are signed after the commit (never
 * inside a transaction that could still roll back and leave a signed statement
 * about entries that do not exist).
 */
import type { Statement } from 'better-sqlite3';
import type { Store } from '../store/store.js';
import { LkError } from '../errors.js';
import { GENESIS_HASH, ENTRY_COLUMNS, entryToRow, parseEntryInput, rowToEntry, toHashed, type AuditEntry, type AuditEntryInput, type EntryRow } from './entry.js';
import { newRecord } from './body.js';
import { appendCheckpointLog, checkpointLogFile, signCheckpoint, type SignedCheckpoint } from './checkpoints.js';
import { ensureSiteKey, type SiteKey } from './keys.js';

export interface AuditOptions {
  /** Sign a checkpoint after this many new entries of a chain (config audit.checkpoint_every). */
  checkpointEvery: number;
  /** ... or when the oldest unsigned entry of a chain is this old (config audit.checkpoint_interval_s). */
  checkpointIntervalS: number;
}

/** Reference to an `intent` entry, handed to {@link AuditTrail.outcome} after the equipment write. */
export interface IntentRef {
  readonly tenant: string;
  readonly seq: number;
  readonly hash: string;
}

export interface ChainHead {
  readonly tenant: string;
  readonly seq: number;
  readonly hash: string;
}

type Host = Pick<Store, 'db' | 'clock' | 'logger' | 'dataDir' | 'readonly' | 'tx' | 'afterCommit' | 'inTx'>;
type Input = ReturnType<typeof parseEntryInput>;

const SELECT_COLS = ENTRY_COLUMNS.join(', ');

export class AuditTrail {
  readonly options: AuditOptions;
  private readonly key: SiteKey | undefined;
  private readonly st: Record<'head' | 'chain' | 'intentOf' | 'outcomeOf' | 'lastCp' | 'insertCp' | 'chains' | 'openIntents', Statement>;
  /** Per chain: seq and time of the last checkpoint (loaded lazily). */
  private readonly cpState = new Map<string, { seq: number; at: number }>();
  private readonly openedAt: number;
  /** Prepared at the first append: a store opened on an older schema (a migration test) only reads. */
  private insertSt: Statement | undefined;
  private readonly committed = new Set<(e: AuditEntry) => void>();
  private readonly cpListeners = new Set<(c: SignedCheckpoint) => void>();

  constructor(private readonly host: Host, opts: Partial<AuditOptions> = {}) {
    this.options = { checkpointEvery: opts.checkpointEvery ?? 1000, checkpointIntervalS: opts.checkpointIntervalS ?? 300 };
    if (!(this.options.checkpointEvery >= 1) || !(this.options.checkpointIntervalS > 0)) {
      throw new LkError('LK_VALIDATION', 'audit checkpoint policy must be positive');
    }
    const db = host.db;
    this.st = {
      head: db.prepare('SELECT seq, hash FROM audit_entry WHERE tenant = ? ORDER BY seq DESC LIMIT 1').raw(),
      chain: db.prepare('INSERT OR IGNORE INTO audit_chain (tenant, created_at) VALUES (?, ?)'),
      // what closing an intent checks of it: its kind and hash (the whole row is not needed)
      intentOf: db.prepare('SELECT kind, hash FROM audit_entry WHERE tenant = ? AND seq = ?').raw(),
      outcomeOf: db.prepare('SELECT seq FROM audit_entry WHERE tenant = ? AND intent = ? LIMIT 1').pluck(),
      lastCp: db.prepare('SELECT seq, ts FROM audit_checkpoint WHERE tenant = ? ORDER BY seq DESC LIMIT 1').raw(),
      // OR IGNORE: another process (a CLI export beside the daemon) may have signed this very head already.
      insertCp: db.prepare('INSERT OR IGNORE INTO audit_checkpoint (tenant, seq, head_hash, ts, key_id, sig) VALUES (?, ?, ?, ?, ?, ?)'),
      chains: db.prepare('SELECT tenant FROM audit_chain ORDER BY tenant').pluck(),
      openIntents: db.prepare(
        `SELECT ${SELECT_COLS} FROM audit_entry i WHERE tenant = ? AND kind = 'intent'
           AND NOT EXISTS (SELECT 1 FROM audit_entry o WHERE o.tenant = i.tenant AND o.intent = +i.seq) ORDER BY seq`,
      ).raw(),
    };
    this.openedAt = host.clock.now();
    if (!host.readonly) {
      this.key = ensureSiteKey(host.dataDir);
      const foreign = db.prepare('SELECT key_id FROM audit_checkpoint WHERE key_id <> ? LIMIT 1').pluck().get(this.key.keyId) as string | undefined;
      if (foreign !== undefined) {
        throw new LkError('LK_AUDIT_KEY', `the site key in ${host.dataDir}/keys is not the key that signed this database's checkpoints (${foreign.slice(0, 16)}…)`);
      }
    }
  }

  /**
   * Call `fn` with every entry once its transaction has committed (never for a rolled-back one): metrics count
   * what the trail holds, not what was attempted. A throwing listener is logged, never undoes the commit.
   * @returns the function that removes the listener.
   */
  onCommitted(fn: (e: AuditEntry) => void): () => void {
    this.committed.add(fn);
    return () => this.committed.delete(fn);
  }

  /** The site key (writable stores only). */
  siteKey(): SiteKey {
    if (!this.key) throw new LkError('LK_INTERNAL', 'store is open read-only: no signing key');
    return this.key;
  }

  /**
   * Append one entry; durable when it returns. Joins the caller's `store.tx` when inside one.
   * @throws LkError LK_VALIDATION for a bad entry (nothing written).
   */
  append(input: AuditEntryInput): AuditEntry {
    const parsed = parseEntryInput(input);
    return this.host.tx(() => this.write(parsed));
  }

  /**
   * Group commit: many entries (any chains) in one transaction; all or none.
   * @throws LkError LK_VALIDATION when any entry is bad (nothing written).
   */
  appendBatch(inputs: readonly AuditEntryInput[]): AuditEntry[] {
    const parsed = inputs.map((x, i) => {
      try {
        return parseEntryInput(x);
      } catch (err) {
        if (LkError.is(err)) throw new LkError(err.code, `entry ${i}: ${err.message}`, { index: i, ...err.detail });
        throw err;
      }
    });
    return this.host.tx(() => {
      // One head lookup per chain per batch, not per entry.
      const heads = new Map<string, ChainHead>();
      return parsed.map((p) => {
        const e = this.write(p, undefined, heads.get(p.tenant));
        heads.set(p.tenant, e);
        return e;
      });
    });
  }

  /**
   * First half of a two-phase equipment write: record what is about to be written, before writing.
   * A crash before {@link outcome} leaves an open intent that {@link openIntents} shows.
   */
  intent(input: Omit<AuditEntryInput, 'kind'>): IntentRef {
    const e = this.append({ ...input, kind: 'intent' });
    return { tenant: e.tenant, seq: e.seq, hash: e.hash };
  }

  /**
   * Second half: what happened (result, read-back, old → new). Tenant comes from the intent.
   * @throws LkError LK_NOT_FOUND when `ref` names no intent entry; LK_CONFLICT when it already has an outcome.
   */
  outcome(ref: IntentRef, input: Omit<AuditEntryInput, 'kind' | 'tenant'>): AuditEntry {
    const parsed = parseEntryInput({ ...input, tenant: ref.tenant, kind: 'outcome' });
    return this.host.tx(() => {
      const row = this.st.intentOf.get(ref.tenant, ref.seq) as [string, string] | undefined;
      if (!row || row[0] !== 'intent' || row[1] !== ref.hash) {
        throw new LkError('LK_NOT_FOUND', `no intent entry ${ref.tenant}#${ref.seq}`, { tenant: ref.tenant, seq: ref.seq });
      }
      const done = this.st.outcomeOf.get(ref.tenant, ref.seq) as number | undefined;
      if (done !== undefined) throw new LkError('LK_CONFLICT', `intent ${ref.tenant}#${ref.seq} already has its outcome (#${done})`, { outcome: done });
      return this.write(parsed, ref.seq);
    });
  }

  /** Intents without an outcome: equipment writes whose result is unknown (a crash between the two). */
  openIntents(tenant: string): AuditEntry[] {
    return (this.st.openIntents.all(tenant) as EntryRow[]).map((r) => rowToEntry(tenant, r));
  }

  /** Head of a chain (seq 0 and the genesis hash when it is empty). */
  head(tenant: string): ChainHead {
    const r = this.st.head.get(tenant) as [number, string] | undefined;
    return { tenant, seq: r?.[0] ?? 0, hash: r?.[1] ?? GENESIS_HASH };
  }

  /** Every chain that has ever had an entry. */
  chains(): string[] {
    return this.st.chains.all() as string[];
  }

  private write(p: Input, intent?: number, known?: ChainHead): AuditEntry {
    const head = known ?? this.head(p.tenant);
    const ts = new Date(this.host.clock.now()).toISOString();
    const hashed = toHashed(p, head.seq + 1, ts, head.hash, intent);
    const { body, hash } = newRecord(p.tenant, entryToRow(hashed));
    const entry: AuditEntry = { ...hashed, hash };
    if (head.seq === 0) this.st.chain.run(p.tenant, ts);
    // the record is its hashed bytes; every other column is generated from them (migration 14)
    this.insertSt ??= this.host.db.prepare('INSERT INTO audit_entry (tenant, seq, body, hash) VALUES (?, ?, ?, ?)');
    this.insertSt.run(p.tenant, hashed.seq, body, hash);
    const tenant = p.tenant;
    const seq = hashed.seq;
    // keyed per chain: the last entry of the transaction's chain registers last, so `seq` is the head this process
    // committed (no head query after every commit); checkpoint() itself reads the head it signs, and the timer's
    // checkpointDue() reads the true head, which covers entries another process (a CLI) appended meanwhile
    this.host.afterCommit(() => {
      if (this.due(tenant, seq)) this.checkpoint(tenant);
    }, `audit.checkpoint:${tenant}`);
    if (this.committed.size > 0) this.host.afterCommit(() => { for (const fn of this.committed) fn(entry); });
    return entry;
  }

  private cp(tenant: string): { seq: number; at: number } {
    let s = this.cpState.get(tenant);
    if (!s) {
      const r = this.st.lastCp.get(tenant) as [number, string] | undefined;
      s = r ? { seq: r[0], at: Date.parse(r[1]) } : { seq: 0, at: this.openedAt };
      this.cpState.set(tenant, s);
    }
    return s;
  }

  /** Whether `tenant`'s chain needs a checkpoint, its head being `headSeq` (read from the database when not given). */
  private due(tenant: string, headSeq?: number): boolean {
    const head = headSeq ?? this.head(tenant).seq;
    const s = this.cp(tenant);
    if (head <= s.seq) return false;
    return head - s.seq >= this.options.checkpointEvery || this.host.clock.now() - s.at >= this.options.checkpointIntervalS * 1000;
  }

  /**
   * Sign a checkpoint of `tenant`'s head now (log file first, fsync'd, then the database).
   * Returns undefined when the head is already checkpointed or the chain is empty.
   * @throws LkError LK_INTERNAL inside a transaction or on a read-only store.
   */
  checkpoint(tenant: string): SignedCheckpoint | undefined {
    if (this.host.inTx()) throw new LkError('LK_INTERNAL', 'checkpoint inside a transaction: it could sign entries that then roll back');
    const key = this.siteKey();
    const head = this.head(tenant);
    const s = this.cp(tenant);
    if (head.seq === 0 || head.seq <= s.seq) return undefined;
    const now = this.host.clock.now();
    const c = signCheckpoint(key, { tenant, seq: head.seq, head_hash: head.hash, ts: new Date(now).toISOString() });
    appendCheckpointLog(checkpointLogFile(this.host.dataDir), c);
    this.host.tx(() => this.st.insertCp.run(c.tenant, c.seq, c.head_hash, c.ts, c.key_id, c.sig));
    this.cpState.set(tenant, { seq: c.seq, at: now });
    for (const l of this.cpListeners) {
      try {
        l(c);
      } catch {
        // a listener's failure is its own (it logs); the checkpoint is signed and stored either way
      }
    }
    return c;
  }

  /**
   * Be told of every checkpoint signed from now on, once it is durable (log file and database): the MQTT
   * publisher sends it off the edge node. A listener that throws is ignored. Returns the function that unsubscribes.
   */
  onCheckpoint(listener: (c: SignedCheckpoint) => void): () => void {
    this.cpListeners.add(listener);
    return () => this.cpListeners.delete(listener);
  }

  /** Checkpoint every chain whose policy says so (call from a timer so idle chains are covered too). */
  checkpointDue(): SignedCheckpoint[] {
    return this.chains().filter((t) => this.due(t)).map((t) => this.checkpoint(t)).filter((c): c is SignedCheckpoint => c !== undefined);
  }

  /** Checkpoint every chain with unsigned entries (clean stop, export). */
  checkpointAll(): SignedCheckpoint[] {
    return this.chains().map((t) => this.checkpoint(t)).filter((c): c is SignedCheckpoint => c !== undefined);
  }

  /** Clean stop: every chain ends on a signed checkpoint. Called by `store.close()`. */
  close(): void {
    this.checkpointAll();
  }
}

/**
 * Run {@link AuditTrail.checkpointDue} every `intervalMs` (unref'd: it never keeps the process alive).
 * Returns the function that stops it. Failures are logged, never thrown into the timer.
 */
export function startCheckpointTimer(store: Pick<Store, 'audit' | 'logger'>, intervalMs = 5000): () => void {
  const t = setInterval(() => {
    try {
      store.audit.checkpointDue();
    } catch (err) {
      store.logger.error({ err }, 'audit checkpoint failed');
    }
  }, intervalMs);
  t.unref();
  return () => clearInterval(t);
}
