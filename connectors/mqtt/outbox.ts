/**
 * The store-and-forward outbox: Sparkplug messages that could not be sent while the broker was away, in the
 * daemon's SQLite store (table `mqtt_outbox`, migration 8), oldest first. A row leaves the outbox only when the
 * broker acknowledged it (PUBACK), or when the bound is exceeded: then the oldest rows are dropped, down to 90 %
 * of the bound so drops come in batches, and each batch is ONE audit entry on the site chain in the same
 * transaction (how many, how many bytes, which time span) — never a silent loss.
 */
import type { Statement } from 'better-sqlite3';
import { recordSiteEvent } from '../../src/audit/site-events.js';
import type { Store } from '../../src/store/store.js';
import type { SpMessage } from './sparkplug.js';

export interface OutboxBound {
  readonly maxMessages: number;
  readonly maxBytes: number;
}

export interface OutboxRow {
  readonly ord: number;
  readonly message: SpMessage;
}

export interface DropReport {
  readonly messages: number;
  readonly bytes: number;
  readonly fromOrd: number;
  readonly toOrd: number;
  readonly oldestQueuedAt: number;
  readonly newestQueuedAt: number;
}

export class Outbox {
  private readonly st: Record<'insert' | 'page' | 'del' | 'oldest' | 'dropUpTo' | 'stateGet' | 'stateSet', Statement>;
  private count: number;
  private bytes: number;
  private nextOrd: number;
  private droppedTotal = 0;

  constructor(private readonly store: Pick<Store, 'db' | 'tx' | 'clock' | 'audit'>, private readonly bound: OutboxBound) {
    const db = store.db;
    this.st = {
      insert: db.prepare('INSERT INTO mqtt_outbox (ord, topic, message, bytes, queued_at) VALUES (?, ?, ?, ?, ?)'),
      page: db.prepare('SELECT ord, message FROM mqtt_outbox WHERE ord > ? ORDER BY ord LIMIT ?'),
      del: db.prepare('DELETE FROM mqtt_outbox WHERE ord = ? RETURNING bytes').pluck(),
      oldest: db.prepare('SELECT ord, bytes, queued_at FROM mqtt_outbox WHERE ord > ? ORDER BY ord LIMIT 1024'),
      dropUpTo: db.prepare('DELETE FROM mqtt_outbox WHERE ord <= ?'),
      stateGet: db.prepare('SELECT value FROM mqtt_state WHERE key = ?').pluck(),
      stateSet: db.prepare('INSERT INTO mqtt_state (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value'),
    };
    const agg = db.prepare('SELECT COUNT(*) AS n, COALESCE(SUM(bytes), 0) AS b, COALESCE(MAX(ord), 0) AS m FROM mqtt_outbox').get() as { n: number; b: number; m: number };
    this.count = agg.n;
    this.bytes = agg.b;
    this.nextOrd = agg.m + 1;
  }

  /** Messages queued now. */
  get size(): number {
    return this.count;
  }

  /** Bytes queued now (the JSON form). */
  get sizeBytes(): number {
    return this.bytes;
  }

  /** Messages dropped by the bound since this outbox was opened. */
  get dropped(): number {
    return this.droppedTotal;
  }

  /** The next enqueue order number: live messages take one too, so one lost in flight goes back in its place. */
  takeOrd(): number {
    return this.nextOrd++;
  }

  /**
   * Queue `message` (durable when it returns). Drops the oldest rows first when the bound is exceeded.
   * @throws LkError from the store (LK_STORE_FULL on a full disk): the caller logs it; the message is lost.
   */
  append(message: SpMessage, ord = this.takeOrd()): DropReport | undefined {
    return this.appendMany([{ ord, message }]);
  }

  /**
   * Queue a group of messages in ONE transaction (one durable commit for all of them): all or none. Each keeps
   * the `ord` it took when it was produced, so the group lands in its place. Drops the oldest rows first when the
   * bound is exceeded (once, after the group: the drop is audited in the same transaction).
   * @throws LkError from the store (LK_STORE_FULL on a full disk): nothing of the group is queued.
   */
  appendMany(group: readonly { readonly ord: number; readonly message: SpMessage }[]): DropReport | undefined {
    if (group.length === 0) return undefined;
    const rows = group.map((g) => {
      const json = JSON.stringify(g.message);
      return { ord: g.ord, topic: g.message.topic, json, size: Buffer.byteLength(json) };
    });
    const now = this.store.clock.now();
    const before = { count: this.count, bytes: this.bytes, dropped: this.droppedTotal };
    try {
      return this.store.tx(() => {
        for (const r of rows) {
          this.st.insert.run(r.ord, r.topic, r.json, r.size, now);
          this.count++;
          this.bytes += r.size;
        }
        return this.count > this.bound.maxMessages || this.bytes > this.bound.maxBytes ? this.drop() : undefined;
      });
    } catch (err) {
      // rolled back: the counters go back to what the table holds
      this.count = before.count;
      this.bytes = before.bytes;
      this.droppedTotal = before.dropped;
      throw err;
    }
  }

  /** Up to `limit` queued messages after `afterOrd`, oldest first. */
  page(afterOrd: number, limit: number): OutboxRow[] {
    return (this.st.page.all(afterOrd, limit) as { ord: number; message: string }[]).map((r) => ({ ord: r.ord, message: JSON.parse(r.message) as SpMessage }));
  }

  /** The broker acknowledged these: remove them (one transaction). */
  remove(ords: readonly number[]): void {
    if (ords.length === 0) return;
    this.store.tx(() => {
      for (const o of ords) {
        const bytes = this.st.del.get(o) as number | undefined;
        if (bytes === undefined) continue; // dropped by the bound meanwhile
        this.count--;
        this.bytes -= bytes;
      }
    });
  }

  /** A small integer kept across restarts (the publisher's bdSeq). */
  state(key: string): number | undefined {
    return this.st.stateGet.get(key) as number | undefined;
  }

  setState(key: string, value: number): void {
    this.store.tx(() => this.st.stateSet.run(key, value));
  }

  /** Inside the caller's transaction: drop the oldest rows down to 90 % of the bound and audit that once. */
  private drop(): DropReport {
    const targetN = Math.floor(this.bound.maxMessages * 0.9);
    const targetB = Math.floor(this.bound.maxBytes * 0.9);
    let n = 0;
    let b = 0;
    let last: { ord: number; queued_at: number } | undefined;
    let first: { ord: number; queued_at: number } | undefined;
    // read in pages: a byte bound can need many small rows
    const need = (): boolean => this.count - n > targetN || this.bytes - b > targetB;
    while (need()) {
      const rows = this.st.oldest.all(last?.ord ?? 0) as { ord: number; bytes: number; queued_at: number }[];
      if (rows.length === 0) break;
      for (const r of rows) {
        if (!need()) break;
        first ??= r;
        last = r;
        n++;
        b += r.bytes;
      }
    }
    if (!first || !last) return { messages: 0, bytes: 0, fromOrd: 0, toOrd: 0, oldestQueuedAt: 0, newestQueuedAt: 0 };
    this.st.dropUpTo.run(last.ord);
    this.count -= n;
    this.bytes -= b;
    this.droppedTotal += n;
    const report: DropReport = { messages: n, bytes: b, fromOrd: first.ord, toOrd: last.ord, oldestQueuedAt: first.queued_at, newestQueuedAt: last.queued_at };
    recordSiteEvent(this.store.audit, {
      kind: 'connector', action: 'connector.mqtt_outbox_dropped',
      detail: {
        connection: 'mqtt', dropped_messages: n, dropped_bytes: b, from_ord: first.ord, to_ord: last.ord,
        oldest_queued_at: new Date(first.queued_at).toISOString(), newest_queued_at: new Date(last.queued_at).toISOString(),
        max_messages: this.bound.maxMessages, max_bytes: this.bound.maxBytes,
      },
      reason: 'the MQTT broker was away longer than the outbox holds: the oldest queued messages were dropped',
    });
    return report;
  }
}
