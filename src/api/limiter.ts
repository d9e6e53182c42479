/**
 * Sign-in throttling: failed sign-ins counted per key (a source address, an account) in a fixed window that
 * starts at the first attempt. Past the limit the key is refused until its window ends — before the password
 * is checked, so a flood costs no scrypt work. Attempts still in flight (their password being hashed) count
 * toward the limit as if they had failed: 120 parallel guesses from one address used to pass the check
 * together, before the first had failed, and ran 120 hashes (issue 20). This slows guessing; the account
 * lock-out (identity.ts) stops it.
 * Bounded memory: past `maxKeys` the oldest key is forgotten (an attacker rotating addresses gains nothing the
 * per-account limit and the lock-out do not take back). Time comes from the injected clock.
 */
import type { Clock } from '../clock.js';

export interface LimiterOptions {
  readonly max: number;
  readonly windowMs: number;
  /** Keys remembered at most (default 10,000). */
  readonly maxKeys?: number;
}

interface Window {
  failures: number;
  /** Attempts begun and not yet settled. */
  pending: number;
  resetAt: number;
  /** Whether the refusal of this window was audited already (one entry per window, not per request). */
  told: boolean;
}

export class FailureLimiter {
  private readonly keys = new Map<string, Window>();
  private readonly maxKeys: number;

  constructor(private readonly clock: Clock, private readonly o: LimiterOptions) {
    this.maxKeys = o.maxKeys ?? 10_000;
  }

  get size(): number {
    return this.keys.size;
  }

  /**
   * Whether `key` is refused now.
   * @returns null when it may try, else the ms until it may, and whether this is the window's first refusal.
   */
  blocked(key: string): { retryAfterMs: number; first: boolean } | null {
    const w = this.live(key);
    if (!w || w.failures + w.pending < this.o.max) return null;
    const first = !w.told;
    w.told = true;
    return { retryAfterMs: w.resetAt - this.clock.now(), first };
  }

  /** Count a failure of `key`. */
  fail(key: string): void {
    this.window(key).failures++;
  }

  /**
   * Count an attempt of `key` in flight until it settles: call the result once with whether it failed (a
   * failure is then counted as by {@link fail}; a success leaves nothing behind). Check {@link blocked} first,
   * in the same synchronous turn, so that no other attempt passes in between.
   */
  begin(key: string): (failed: boolean) => void {
    const w = this.window(key);
    w.pending++;
    let settled = false;
    return (failed) => {
      if (settled) return;
      settled = true;
      w.pending = Math.max(0, w.pending - 1);
      if (failed) this.fail(key);
      else if (this.keys.get(key) === w && w.failures === 0 && w.pending === 0) this.keys.delete(key);
    };
  }

  /** Forget `key` (a successful sign-in of the account). */
  clear(key: string): void {
    this.keys.delete(key);
  }

  private window(key: string): Window {
    let w = this.live(key);
    if (!w) {
      if (this.keys.size >= this.maxKeys) this.keys.delete(this.keys.keys().next().value!);
      w = { failures: 0, pending: 0, resetAt: this.clock.now() + this.o.windowMs, told: false };
      this.keys.set(key, w);
    }
    return w;
  }

  private live(key: string): Window | undefined {
    const w = this.keys.get(key);
    if (w && w.resetAt <= this.clock.now()) {
      this.keys.delete(key);
      return undefined;
    }
    return w;
  }
}
