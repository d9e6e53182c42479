/**
 * Lock-out per account AND source (21 CFR 11.300(d)), in the store so that a running daemon and the offline CLI
 * see one state and an administrator can clear it from either. Failed passwords for account A from source S (a
 * client address; `local` for the offline CLI) delay only the pair (A, S): after `afterFailures` failures the pair
 * waits `delayMs`, and each further failure doubles the wait up to `maxDelayMs` — a delay, not a lock an
 * administrator must lift, and one a stranger cannot put on a named reviewer working from another place. Failures
 * of one account across all sources past `accountAlertFailures` raise an alert (the caller audits it; the metric
 * counts the entry). A success from (A, S) clears the pair. Time comes from the caller (the injected clock).
 */
import type { Database, Statement } from 'better-sqlite3';
import type { TxContext } from '../store/store.js';

export interface LockoutOptions {
  /** Failures from one source before that source waits (`api.max_failed_attempts`). */
  readonly afterFailures: number;
  /** The first wait; each further failure doubles it. */
  readonly delayMs: number;
  /** The longest wait. */
  readonly maxDelayMs: number;
  /** Failures of one account, all sources together, that raise an alert (audit + metric). */
  readonly accountAlertFailures: number;
}

export const DEFAULT_LOCKOUT: LockoutOptions = { afterFailures: 5, delayMs: 60_000, maxDelayMs: 3_600_000, accountAlertFailures: 20 };

export interface LockoutRow {
  readonly user: string;
  readonly source: string;
  readonly failures: number;
  /** Epoch ms until which the pair is refused (0: not delayed). */
  readonly blockedUntil: number;
  readonly lastAt: number;
}

/** What one more failure did. */
export interface FailureOutcome {
  readonly failures: number;
  /** Set when this failure started (or lengthened) a wait of the pair. */
  readonly blockedUntil: number | null;
  /** All sources together reached the alert threshold with this failure. */
  readonly alert: boolean;
  readonly accountFailures: number;
}

export class Lockouts {
  private readonly st: Record<'get' | 'upsert' | 'clearOne' | 'clearUser' | 'ofUser' | 'sum', Statement>;

  constructor(db: Database, readonly o: LockoutOptions = DEFAULT_LOCKOUT) {
    this.st = {
      get: db.prepare('SELECT user, source, failures, blocked_until AS blockedUntil, last_at AS lastAt FROM auth_lockout WHERE user = ? AND source = ?'),
      upsert: db.prepare(`INSERT INTO auth_lockout (user, source, failures, blocked_until, last_at) VALUES (@user, @source, @failures, @blockedUntil, @lastAt)
        ON CONFLICT (user, source) DO UPDATE SET failures = excluded.failures, blocked_until = excluded.blocked_until, last_at = excluded.last_at`),
      clearOne: db.prepare('DELETE FROM auth_lockout WHERE user = ? AND source = ?'),
      clearUser: db.prepare('DELETE FROM auth_lockout WHERE user = ?'),
      ofUser: db.prepare('SELECT user, source, failures, blocked_until AS blockedUntil, last_at AS lastAt FROM auth_lockout WHERE user = ? ORDER BY source'),
      sum: db.prepare('SELECT COALESCE(SUM(failures), 0) FROM auth_lockout WHERE user = ?').pluck(),
    };
  }

  /** Ms the pair must still wait at `now` (0: it may try). */
  waitMs(user: string, source: string, now: number): number {
    const r = this.st.get.get(user, source) as LockoutRow | undefined;
    return r ? Math.max(0, r.blockedUntil - now) : 0;
  }

  /** Count a failed password of the pair, in the caller's transaction. */
  fail(t: TxContext, user: string, source: string, now: number): FailureOutcome {
    void t;
    const r = this.st.get.get(user, source) as LockoutRow | undefined;
    const failures = (r?.failures ?? 0) + 1;
    const over = failures - this.o.afterFailures;
    const blockedUntil = over >= 0 ? now + Math.min(this.o.maxDelayMs, this.o.delayMs * 2 ** Math.min(over, 30)) : null;
    this.st.upsert.run({ user, source, failures, blockedUntil: blockedUntil ?? r?.blockedUntil ?? 0, lastAt: now });
    const accountFailures = this.st.sum.get(user) as number;
    return { failures, blockedUntil, alert: accountFailures === this.o.accountAlertFailures, accountFailures };
  }

  /** A success of the pair: its count starts again. */
  succeed(t: TxContext, user: string, source: string): void {
    void t;
    this.st.clearOne.run(user, source);
  }

  /** Clear every pair of the account (an administrator's act). @returns the rows cleared. */
  clear(t: TxContext, user: string): LockoutRow[] {
    void t;
    const rows = this.of(user);
    this.st.clearUser.run(user);
    return rows;
  }

  of(user: string): LockoutRow[] {
    return this.st.ofUser.all(user) as LockoutRow[];
  }
}
