/**
 * A budget for repeated identical site events (pure: time comes in as epoch ms).
 *
 * A flapping connection (a peer that accepts and closes at once) produces the same connector events over and
 * over; each is a synced audit entry, about 1.2 million a day. The first event of a kind in a window is
 * recorded as it is; the identical ones after it in the same window are only counted, and when the window
 * ends the count is recorded as one entry (`<action>` repeated n times between first and last). Nothing is
 * dropped without a trace: the trail shows every event or the count of the ones it stands for.
 */

export interface SuppressedRun {
  /** The key of the event (what makes two events identical). */
  readonly key: string;
  /** Events counted but not recorded one by one. */
  readonly count: number;
  /** Epoch ms of the first and last counted event. */
  readonly first: number;
  readonly last: number;
  /** The payload of the last counted event, for the summary entry. */
  readonly sample: unknown;
}

interface Window {
  start: number;
  count: number;
  first: number;
  last: number;
  sample: unknown;
}

export class EventBudget {
  private readonly windows = new Map<string, Window>();

  /** @param windowMs how long after a recorded event identical ones are only counted (default 60 s). */
  constructor(private readonly windowMs = 60_000) {}

  /**
   * Offer one event. Returns true when it is to be recorded now; false when it was counted into the window
   * of an identical event recorded less than `windowMs` ago. Call {@link due} first, so a closed window's
   * count is recorded before the event that reopens it.
   */
  offer(key: string, now: number, sample?: unknown): boolean {
    const w = this.windows.get(key);
    if (w && now - w.start < this.windowMs) {
      if (w.count === 0) w.first = now;
      w.count++;
      w.last = now;
      w.sample = sample;
      return false;
    }
    this.windows.set(key, { start: now, count: 0, first: now, last: now, sample });
    return true;
  }

  /** Windows that have ended: their counts (when any) are returned once and the windows forgotten. */
  due(now: number): SuppressedRun[] {
    const out: SuppressedRun[] = [];
    for (const [key, w] of this.windows) {
      if (now - w.start < this.windowMs) continue;
      this.windows.delete(key);
      if (w.count > 0) out.push({ key, count: w.count, first: w.first, last: w.last, sample: w.sample });
    }
    return out;
  }

  /** Every pending count, whether or not its window has ended (at stop: nothing counted is left unrecorded). */
  drain(): SuppressedRun[] {
    const out: SuppressedRun[] = [];
    for (const [key, w] of this.windows) if (w.count > 0) out.push({ key, count: w.count, first: w.first, last: w.last, sample: w.sample });
    this.windows.clear();
    return out;
  }
}
