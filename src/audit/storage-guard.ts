/**
 * What the daemon does when its disk fills up (docs/fail-safe.md).
 *
 * A daemon that cannot audit must not supervise. Events of the edge node that
 * cannot be written (a PLC watchdog revert, a connection lost) are held in
 * memory, in order, with the time they happened, and written again every
 * `retryMs`. Past a bound — `holdMax` entries, or an outage longer than
 * `failClosedAfterMs` — the daemon fails closed: `onFailClosed` stops the
 * heartbeats, so each PLC's watchdog takes its line to the last known-good
 * recipe. Equipment writes are refused all along, because their intent entry
 * cannot be written (LK_STORE_FULL). When space returns, one transaction
 * writes a `storage.outage` entry (span, what was held and when it happened,
 * anything that did not fit in memory counted by action) followed by the held
 * entries themselves, and `onRecovered` resumes the heartbeats; a PLC that
 * reverted stays LOST until a person re-arms it. Nothing is dropped silently:
 * past the hard cap (10 × holdMax) an entry is logged as an error and counted
 * in the outage entry.
 *
 * Free space is watched too (`fs.statfs`): below the warning threshold a
 * `storage.low` site event and a log warning, once per crossing.
 */
import { statfsSync } from 'node:fs';
import type { Clock } from '../clock.js';
import { LkError } from '../errors.js';
import type { Logger } from '../log.js';
import type { Store } from '../store/store.js';
import { SITE_TENANT, type AuditEntryInput, type Json } from './entry.js';

export interface StorageGuardOptions {
  /** Entries held in memory before failing closed (default 256). */
  holdMax?: number;
  /** Outage length before failing closed even with few entries held (default 30 s). */
  failClosedAfterMs?: number;
  /** Retry period of the held entries and of the free-space check (default 2 s). */
  retryMs?: number;
  /** Warn when free space falls below this many bytes (default 256 MiB) ... */
  warnFreeBytes?: number;
  /** ... or below this fraction of the file system (default 0.05). */
  warnFreeRatio?: number;
  /** Free-space probe (a test seam; default fs.statfsSync). */
  statfs?: (dir: string) => { bavail: number; bsize: number; blocks: number };
}

export interface StorageHooks {
  /** Past the bound: stop supervising (the daemon stops the heartbeats). */
  onFailClosed(reason: string): void;
  /** The held entries are written again: supervision may resume. */
  onRecovered(): void;
}

export interface OutageState {
  readonly since: number;
  readonly held: number;
  readonly dropped: number;
  readonly failedClosed: boolean;
}

export interface SpaceReport {
  readonly freeBytes: number;
  readonly totalBytes: number;
  readonly low: boolean;
}

interface Held {
  readonly input: AuditEntryInput;
  readonly at: number;
}

/** A write failure that is the disk, not the entry: SQLite's SQLITE_FULL (mapped by the store) or ENOSPC. */
export function isStorageFull(err: unknown): boolean {
  if (LkError.is(err, 'LK_STORE_FULL')) return true;
  const code = (err as { code?: unknown })?.code;
  return code === 'ENOSPC' || code === 'EDQUOT' || code === 'SQLITE_FULL';
}

export class StorageGuard {
  readonly options: Required<Omit<StorageGuardOptions, 'statfs'>>;
  private readonly held: Held[] = [];
  private readonly dropped = new Map<string, number>();
  private since: number | undefined;
  private failedClosed = false;
  private low = false;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly store: Pick<Store, 'audit' | 'dataDir' | 'onFull'>,
    private readonly clock: Clock,
    private readonly log: Logger,
    private readonly hooks: StorageHooks,
    private readonly opts: StorageGuardOptions = {},
  ) {
    this.options = {
      holdMax: opts.holdMax ?? 256, failClosedAfterMs: opts.failClosedAfterMs ?? 30_000, retryMs: opts.retryMs ?? 2000,
      warnFreeBytes: opts.warnFreeBytes ?? 256 * 1024 * 1024, warnFreeRatio: opts.warnFreeRatio ?? 0.05,
    };
    // a write of anyone (a run step, an equipment intent) that hits the full disk starts the outage too
    this.unsubscribe = store.onFull?.(() => this.outageStarted()) ?? (() => undefined);
  }

  private readonly unsubscribe: () => void;

  /** The disk is full (seen by any writer): from now on, until a retry succeeds, the trail is not being written. */
  private outageStarted(): void {
    if (this.since !== undefined) return;
    this.since = this.clock.now();
    this.log.error({ code: 'LK_STORE_FULL', dataDir: this.store.dataDir }, 'disk full: the audit trail cannot be written; events are held in memory and equipment writes are refused');
  }

  /**
   * Write `input` now, or hold it when the disk is full (then it is written with the outage entry later).
   * While entries are held, new ones queue behind them, so the trail keeps the order things happened in.
   * @throws whatever the append throws for any reason other than a full disk (a malformed entry).
   */
  record(input: AuditEntryInput): 'written' | 'held' {
    if (this.since === undefined) {
      try {
        this.store.audit.append(input);
        return 'written';
      } catch (err) {
        if (!isStorageFull(err)) throw err;
        this.outageStarted();
      }
    }
    this.hold(input);
    this.check();
    return 'held';
  }

  /** {@link record}, as the appender the site-event helpers take. */
  append(input: AuditEntryInput): 'written' | 'held' {
    return this.record(input);
  }

  /** The outage under way, or null when the trail is being written. */
  outage(): OutageState | null {
    if (this.since === undefined) return null;
    return { since: this.since, held: this.held.length, dropped: [...this.dropped.values()].reduce((a, b) => a + b, 0), failedClosed: this.failedClosed };
  }

  /** The entries held now, oldest first (logged at a stop that could not write them). */
  pending(): readonly { readonly input: AuditEntryInput; readonly at: number }[] {
    return [...this.held];
  }

  /**
   * Try to write the held entries (behind their `storage.outage` entry) in one transaction.
   * @returns true when nothing is held any more.
   */
  retry(): boolean {
    if (this.since === undefined) return true;
    const now = this.clock.now();
    const outage: AuditEntryInput = {
      tenant: SITE_TENANT, actor: 'system', kind: 'system', action: 'storage.outage',
      reason: 'the data directory was full: these events were held in memory and are written now, after the fact',
      args: {
        from: iso(this.since), to: iso(now), failed_closed: this.failedClosed,
        held: this.held.map((h): Json => ({ action: h.input.action, tenant: h.input.tenant, at: iso(h.at) })),
        ...(this.dropped.size > 0 ? { not_held: Object.fromEntries(this.dropped) } : {}),
      },
    };
    try {
      this.store.audit.appendBatch([outage, ...this.held.map((h) => h.input)]);
    } catch (err) {
      if (!isStorageFull(err)) throw err;
      this.check();
      return false;
    }
    const span = now - this.since;
    const wasClosed = this.failedClosed;
    this.log.warn({ heldWritten: this.held.length, outageMs: span, failedClosed: wasClosed }, 'disk space is back: held audit entries written');
    this.held.length = 0;
    this.dropped.clear();
    this.since = undefined;
    this.failedClosed = false;
    if (wasClosed) this.hooks.onRecovered();
    return true;
  }

  /**
   * Free space of the data directory; records `storage.low` (once per crossing) when it falls below
   * the warning threshold. Never throws (a probe failure is logged).
   */
  checkSpace(): SpaceReport | undefined {
    let s: { bavail: number; bsize: number; blocks: number };
    try {
      s = (this.opts.statfs ?? statfsSync)(this.store.dataDir);
    } catch (err) {
      this.log.warn({ err }, 'could not read the free space of the data directory');
      return undefined;
    }
    const freeBytes = Number(s.bavail) * Number(s.bsize);
    const totalBytes = Number(s.blocks) * Number(s.bsize);
    const low = freeBytes < this.options.warnFreeBytes || (totalBytes > 0 && freeBytes / totalBytes < this.options.warnFreeRatio);
    if (low && !this.low) {
      this.log.warn({ freeBytes, totalBytes, dataDir: this.store.dataDir }, 'disk space is low: linekeeper stops supervising when it can no longer write its audit trail');
      this.record({ tenant: SITE_TENANT, actor: 'system', kind: 'system', action: 'storage.low', args: { free_bytes: freeBytes, total_bytes: totalBytes, warn_below_bytes: this.options.warnFreeBytes, warn_below_ratio: this.options.warnFreeRatio } });
    }
    this.low = low;
    return { freeBytes, totalBytes, low };
  }

  /** Retry and watch space every `retryMs` (unref'd). */
  start(): void {
    if (this.timer) return;
    this.timer = setInterval(() => {
      try {
        this.retry();
        this.checkSpace();
      } catch (err) {
        this.log.error({ err }, 'storage guard failed');
      }
    }, this.options.retryMs);
    this.timer.unref();
  }

  /** Stop the timer and stop listening to the store. */
  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    this.unsubscribe();
  }

  private hold(input: AuditEntryInput): void {
    if (this.held.length < this.options.holdMax * 10) {
      this.held.push({ input, at: this.clock.now() });
      return;
    }
    this.dropped.set(input.action, (this.dropped.get(input.action) ?? 0) + 1);
    this.log.error({ code: 'LK_STORE_FULL', entry: input }, 'audit entry not held (memory bound reached): it is counted in the outage entry and logged here');
  }

  /** Fail closed past the bound (once per outage). */
  private check(): void {
    if (this.failedClosed || this.since === undefined) return;
    const tooMany = this.held.length >= this.options.holdMax;
    const tooLong = this.clock.now() - this.since >= this.options.failClosedAfterMs;
    if (!tooMany && !tooLong) return;
    this.failedClosed = true;
    const reason = tooMany ? `${this.held.length} audit entries held in memory (bound ${this.options.holdMax})` : `the audit trail could not be written for ${this.options.failClosedAfterMs} ms`;
    this.log.error({ code: 'LK_STORE_FULL', reason }, 'disk full: failing closed — heartbeats stop, the PLC watchdogs revert to their last known-good recipes');
    this.hooks.onFailClosed(reason);
  }
}

const iso = (ms: number): string => new Date(ms).toISOString();
