/**
 * The event-loop delay of the daemon. The PLC heartbeats are written on the main thread on purpose (a hung
 * daemon must lose them), so any task that holds the loop delays every heartbeat; past the PLC's watchdog
 * timeout the line reverts to its last known-good recipe. This is the measure of that promise: Node's
 * `monitorEventLoopDelay` histogram, read and reset once per window. A window whose worst delay passes the
 * bound is logged (with its figures) and counted; the figures are exported as metrics, reported by GET /readyz
 * and read by `linekeeper doctor` from a running daemon.
 */
import { monitorEventLoopDelay, type IntervalHistogram } from 'node:perf_hooks';
import type { Logger } from '../log.js';

export interface LoopDelayOptions {
  /** A window whose worst delay passes this is logged and counted (default 250 ms). */
  boundMs?: number;
  /** Length of a window (default 5000 ms). */
  windowMs?: number;
  /** Sampling resolution of the histogram (default 10 ms). */
  resolutionMs?: number;
  logger?: Logger;
}

/** What the last complete window saw, and since start. */
export interface LoopDelaySnapshot {
  /** 99th percentile of the last window, ms (0 before the first window ends). */
  readonly p99Ms: number;
  /** Worst delay of the last window, ms. */
  readonly maxMs: number;
  /** Worst delay of any window since start, ms. */
  readonly worstMs: number;
  /** Windows whose worst delay passed the bound since start. */
  readonly overBound: number;
  readonly boundMs: number;
  readonly windowMs: number;
}

export class LoopDelayMonitor {
  readonly boundMs: number;
  readonly windowMs: number;
  private readonly h: IntervalHistogram;
  private timer: NodeJS.Timeout | undefined;
  private last = { p99Ms: 0, maxMs: 0 };
  private worstMs = 0;
  private overBound = 0;
  private readonly listeners = new Set<(s: LoopDelaySnapshot) => void>();

  constructor(private readonly opts: LoopDelayOptions = {}) {
    this.boundMs = opts.boundMs ?? 250;
    this.windowMs = opts.windowMs ?? 5000;
    this.h = monitorEventLoopDelay({ resolution: Math.max(1, Math.round(opts.resolutionMs ?? 10)) });
  }

  start(): this {
    if (this.timer) return this;
    this.h.enable();
    this.timer = setInterval(() => this.endWindow(), this.windowMs);
    this.timer.unref();
    return this;
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    this.h.disable();
  }

  /** Called with the snapshot at the end of each window (tests, the bench). @returns the function that unsubscribes. */
  onWindow(fn: (s: LoopDelaySnapshot) => void): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  snapshot(): LoopDelaySnapshot {
    return { ...this.last, worstMs: this.worstMs, overBound: this.overBound, boundMs: this.boundMs, windowMs: this.windowMs };
  }

  /** End the current window: keep its figures, log when over the bound, start the next. */
  endWindow(): void {
    // the histogram holds nothing when the loop never ran a full resolution tick in the window
    const ms = (ns: number): number => (Number.isFinite(ns) ? Math.round(ns / 1e4) / 100 : 0);
    this.last = this.h.count > 0 ? { p99Ms: ms(this.h.percentile(99)), maxMs: ms(this.h.max) } : { p99Ms: 0, maxMs: 0 };
    this.h.reset();
    this.worstMs = Math.max(this.worstMs, this.last.maxMs);
    if (this.last.maxMs > this.boundMs) {
      this.overBound++;
      this.opts.logger?.warn({ maxMs: this.last.maxMs, p99Ms: this.last.p99Ms, boundMs: this.boundMs }, 'the event loop was held past its bound: PLC heartbeats were late by as much');
    }
    const s = this.snapshot();
    for (const fn of this.listeners) fn(s);
  }
}
