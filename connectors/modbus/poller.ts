/**
 * Polling groups: Modbus has no subscriptions, so a subscription is a loop
 * that reads its tags every `intervalMs` and reports what changed.
 *
 * The connector runs one group per unit id, so a muted unit's timeouts delay
 * only its own group: the other units keep their polling rate.
 */
import { performance } from 'node:perf_hooks';
import type { Sample } from '../types.js';

/**
 * The samples worth reporting, given the last reported sample per tag: the
 * first one, any change of quality or status, and value changes larger than
 * the absolute deadband (any change when the deadband is 0 or absent). Updates
 * `last` with what it returns, so a slow drift is reported once it has
 * accumulated past the deadband, like an OPC UA absolute DataChangeFilter.
 */
export function filterChanges(last: Map<string, Sample>, samples: readonly Sample[], deadband: number | undefined): Sample[] {
  const out: Sample[] = [];
  for (const s of samples) {
    const prev = last.get(s.tag);
    let report = !prev || prev.quality !== s.quality || prev.status !== s.status;
    if (!report && prev) {
      if (typeof s.value === 'number' && typeof prev.value === 'number' && deadband !== undefined && deadband > 0) {
        report = Math.abs(s.value - prev.value) > deadband;
      } else {
        report = s.value !== prev.value;
      }
    }
    if (report) {
      last.set(s.tag, s);
      out.push(s);
    }
  }
  return out;
}

export interface PollGroupOptions {
  readonly tags: readonly string[];
  readonly intervalMs: number;
  readonly deadband: number | undefined;
  /** Reads the group's tags; must not throw (bad values are bad-quality samples). */
  readonly read: (tags: readonly string[]) => Promise<Sample[]>;
  readonly emit: (samples: Sample[]) => void;
  /** A cycle running longer than this is abandoned and a new one started. */
  readonly stallMs: number;
  readonly onStall: (ageMs: number) => void;
  readonly onError: (e: unknown) => void;
  /**
   * Monotonic milliseconds for the fixed rate and the stall age; `performance.now` unless a test
   * drives the group on fake timers (then it passes the fake clock's reading).
   */
  readonly now?: () => number;
}

export class PollGroup {
  private readonly last = new Map<string, Sample>();
  private timer: NodeJS.Timeout | undefined;
  private watchdog: NodeJS.Timeout | undefined;
  private generation = 0;
  private cycleStartedAt: number | undefined;
  private stopped = false;
  /** Completed cycles (for tests and health). */
  cycles = 0;

  private readonly now: () => number;

  constructor(private readonly o: PollGroupOptions) {
    this.now = o.now ?? (() => performance.now());
  }

  start(): void {
    this.stopped = false;
    void this.cycle(this.generation);
    this.watchdog = setInterval(() => this.checkStall(), Math.max(this.o.intervalMs, 250));
  }

  stop(): void {
    this.stopped = true;
    this.generation++;
    clearTimeout(this.timer);
    clearInterval(this.watchdog);
  }

  private async cycle(gen: number): Promise<void> {
    if (this.stopped || gen !== this.generation) return;
    const t0 = this.now();
    this.cycleStartedAt = t0;
    let samples: Sample[];
    try {
      samples = await this.o.read(this.o.tags);
    } catch (e) {
      this.o.onError(e);
      samples = [];
    }
    // A stalled cycle that finally returns must not report over its replacement.
    if (this.stopped || gen !== this.generation) return;
    this.cycleStartedAt = undefined;
    this.cycles++;
    const changed = filterChanges(this.last, samples, this.o.deadband);
    if (changed.length > 0) {
      try {
        this.o.emit(changed);
      } catch (e) {
        this.o.onError(e);
      }
    }
    // Fixed rate, not fixed delay: the next cycle starts one interval after this one started.
    const delay = Math.max(0, t0 + this.o.intervalMs - this.now());
    this.timer = setTimeout(() => void this.cycle(gen), delay);
  }

  private checkStall(): void {
    if (this.stopped || this.cycleStartedAt === undefined) return;
    const age = this.now() - this.cycleStartedAt;
    if (age <= this.o.stallMs) return;
    this.generation++;
    clearTimeout(this.timer);
    this.o.onStall(age);
    void this.cycle(this.generation);
  }
}
