/**
 * The one place where time and randomness enter linekeeper.
 *
 * Pure modules (policy, arbitration, twin, agents) never call `Date.now()` or
 * `Math.random()`: they take a {@link Clock} reading (a number of epoch
 * milliseconds) and an {@link Rng} made from a recorded seed, so any batch
 * replays to the same decisions. Only `main`-level code creates a system clock.
 */
import prand from 'pure-rand';

export interface Clock {
  /** Epoch milliseconds. */
  now(): number;
  /**
   * Wait `ms` of this clock's time. Resolves (never rejects) when the time has passed or `signal` aborts. A clock
   * without it waits in wall time ({@link sleep}); a {@link ManualClock} waits until it is advanced, so the core's
   * waits (a step's poll, the approval gate, the model watch, heartbeats, PLC scans) run on virtual time.
   */
  sleep?(ms: number, signal?: AbortSignal): Promise<void>;
}

/** Wait `ms` of wall time; resolves early when `signal` aborts. `unref`: the wait does not keep the process alive. */
function wallSleep(ms: number, signal?: AbortSignal, unref = false): Promise<void> {
  if (signal?.aborted) return Promise.resolve();
  return new Promise<void>((resolve) => {
    const done = (): void => {
      clearTimeout(t);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const t = setTimeout(done, Math.max(0, ms));
    if (unref) t.unref();
    signal?.addEventListener('abort', done, { once: true });
  });
}

export const systemClock: Clock = { now: () => Date.now(), sleep: (ms, signal) => wallSleep(ms, signal) };

/** Wait `ms` of `clock`'s time (wall time for a clock that cannot wait); resolves early when `signal` aborts. */
export function sleep(clock: Clock, ms: number, signal?: AbortSignal): Promise<void> {
  return clock.sleep ? clock.sleep(ms, signal) : wallSleep(ms, signal);
}

/**
 * Call `fn` every `ms` of `clock`'s time until the returned stop is called (the first call after one period). A
 * call that throws is reported to `onError` and the schedule goes on; a call's promise is awaited before the next
 * period starts, so calls never overlap. A background schedule: on the wall clock it does not keep the process alive.
 */
export function every(clock: Clock, ms: number, fn: () => unknown, onError: (err: unknown) => void = () => undefined): () => void {
  const stop = new AbortController();
  const wait = (): Promise<void> => (clock.sleep && clock !== systemClock ? clock.sleep(ms, stop.signal) : wallSleep(ms, stop.signal, true));
  void (async () => {
    while (!stop.signal.aborted) {
      await wait();
      if (stop.signal.aborted) return;
      try {
        await fn();
      } catch (err) {
        onError(err);
      }
    }
  })();
  return () => stop.abort();
}

interface Timer {
  readonly due: number;
  readonly seq: number;
  /** Its time has come: resolve the sleep. */
  readonly fire: () => void;
  /** Its signal aborted: resolve the sleep early. */
  readonly abort: () => void;
}

/**
 * A clock that only moves when told to: for tests, replay and the core simulator. Its {@link sleep} waits on
 * virtual time: {@link advance} fires the timers it passes (their continuations run as microtasks), and
 * {@link run} steps from timer to timer, letting each one's continuation settle before the next fires, so a whole
 * daemon core on this clock runs in a deterministic order at the speed of its CPU work.
 */
export class ManualClock implements Clock {
  private timers: Timer[] = [];
  private seq = 0;
  /**
   * The timers of each signal not yet fired, behind one abort listener per signal: a schedule ({@link every}) sleeps
   * with the same signal every period, and adding and removing a listener at every sleep was most of what a sleep
   * cost.
   */
  private readonly bySignal = new WeakMap<AbortSignal, Set<Timer>>();
  constructor(private t: number = Date.UTC(2026, 0, 1)) {}
  now(): number {
    return this.t;
  }
  set(t: number): void {
    this.t = t;
    this.fireDue();
  }
  advance(ms: number): number {
    this.t += ms;
    this.fireDue();
    return this.t;
  }
  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    if (signal?.aborted) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const waiting = signal ? this.waitingOn(signal) : undefined;
      const timer: Timer = {
        due: this.t + Math.max(0, ms),
        seq: this.seq++,
        fire: () => {
          waiting?.delete(timer);
          resolve();
        },
        abort: resolve,
      };
      this.timers.push(timer);
      waiting?.add(timer);
    });
  }
  /** The set of `signal`'s pending timers; on abort they leave the queue and their sleeps resolve. */
  private waitingOn(signal: AbortSignal): Set<Timer> {
    let waiting = this.bySignal.get(signal);
    if (!waiting) {
      const mine = (waiting = new Set<Timer>());
      this.bySignal.set(signal, mine);
      signal.addEventListener('abort', () => {
        this.timers = this.timers.filter((x) => !mine.has(x));
        for (const x of mine) x.abort();
        mine.clear();
      }, { once: true });
    }
    return waiting;
  }
  /** Timers waiting, and the time of the next one (undefined when none waits). */
  pending(): { readonly count: number; readonly next: number | undefined } {
    const next = this.next();
    return { count: this.timers.length, next: next?.due };
  }
  /**
   * Advance to `until` timer by timer: each due timer fires at its own time, then `settle` runs (by default: until
   * the microtask queue and one macrotask turn are drained) before the next. Timers set while running fire too when
   * they fall due before `until`. @returns how many timers fired.
   */
  async run(until: number, settle: () => Promise<void> = settleTurn): Promise<number> {
    let fired = 0;
    for (;;) {
      const i = this.nextIndex();
      const x = this.timers[i];
      if (!x || x.due > until) break;
      this.timers.splice(i, 1);
      if (x.due > this.t) this.t = x.due;
      x.fire();
      fired++;
      await settle();
    }
    if (until > this.t) this.t = until;
    return fired;
  }
  private next(): Timer | undefined {
    return this.timers[this.nextIndex()];
  }
  /** Index of the timer due first (the earliest set among those due at once); -1 when none waits. */
  private nextIndex(): number {
    let best = -1;
    for (let i = 0; i < this.timers.length; i++) {
      const x = this.timers[i]!;
      const b = this.timers[best];
      if (!b || x.due < b.due || (x.due === b.due && x.seq < b.seq)) best = i;
    }
    return best;
  }
  private fireDue(): void {
    const due = this.timers.filter((x) => x.due <= this.t).sort((a, b) => a.due - b.due || a.seq - b.seq);
    if (due.length === 0) return;
    this.timers = this.timers.filter((x) => x.due > this.t);
    for (const x of due) x.fire();
  }
}

/**
 * `p`, or `otherwise` once `ms` of wall time have passed (the timer does not hold the process open). The timer is
 * cleared as soon as either is known: one left running would hold whatever `p`'s reactions reach until it fires.
 */
export function within<T>(p: Promise<T>, ms: number, otherwise: T): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<T>((resolve) => {
    timer = setTimeout(() => resolve(otherwise), ms);
    timer.unref();
  });
  return Promise.race([p, late]).finally(() => clearTimeout(timer));
}

/** Let every promise continuation queued now run (microtasks, then one macrotask turn). */
export function settleTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/**
 * Let `hops` rounds of promise continuations run without leaving the microtask queue: enough for a timer's
 * continuation that awaits only in-memory work (the core simulator's connectors) to reach its next wait, and, unlike
 * {@link settleTurn}, no event-loop turn per timer. Deterministic: the same code takes the same hops. Each hop is
 * a reaction on one settled promise rather than an `await` in a loop: the same turns of the microtask queue, about
 * a third of the garbage (a test's line paced at 50 times the wall clock settles some 2,000 timers a second).
 */
export function settleMicrotasks(hops = 64): Promise<void> {
  if (hops <= 0) return SETTLED;
  return new Promise((resolve) => {
    let left = hops;
    const hop = (): void => {
      if (--left <= 0) resolve();
      else void SETTLED.then(hop);
    };
    void SETTLED.then(hop);
  });
}
const SETTLED = Promise.resolve();

/**
 * A clock that runs `scale` times faster than `base` from `origin` (simulator time-scale). Its sleep waits the
 * matching base time: `ms` of scaled time is `ms / scale` of the base clock's.
 */
export function scaledClock(scale: number, base: Clock = systemClock, origin = base.now()): Clock {
  if (!(scale > 0) || !Number.isFinite(scale)) throw new RangeError(`time scale must be a positive finite number, got ${scale}`);
  return { now: () => origin + (base.now() - origin) * scale, sleep: (ms, signal) => sleep(base, ms / scale, signal) };
}

/**
 * A seeded pseudo-random generator (xoroshiro128+ from pure-rand).
 * Deterministic for a given seed across platforms and Node versions.
 */
export interface Rng {
  /** Uniform in [0, 1). */
  next(): number;
  /** Uniform in [lo, hi). */
  uniform(lo: number, hi: number): number;
  /** Standard normal (Box–Muller), scaled. */
  normal(mean?: number, sd?: number): number;
  /** Integer in [lo, hi] inclusive. */
  int(lo: number, hi: number): number;
  /** An independent stream derived from this one (for sub-components). */
  fork(): Rng;
  /** A copy of this stream where it stands: the copy draws what this one would draw next; neither moves the other. */
  clone(): Rng;
  /**
   * Move on as `n` calls of {@link normal} would, without computing the values they would return (a half-pair left
   * over is computed, as normal() keeps it for its next call): for a draw whose values are wanted later, from a
   * {@link clone} taken before.
   */
  skipNormals(n: number): void;
}

export function createRng(seed: number): Rng {
  return rngOn(prand.xoroshiro128plus(seed | 0), undefined);
}

function rngOn(gen: ReturnType<typeof prand.xoroshiro128plus>, pending: number | undefined): Rng {
  let spare = pending;
  const next = (): number => {
    // 53 random bits → a double in [0, 1): the low 26 bits of one output and the low 27 of the next. This is what
    // pure-rand's unsafeUniformIntDistribution(0, 2^k − 1) gives for k ≤ 32 (its range divides 2^32, so it never
    // redraws, and (x + 2^31) mod 2^k = x mod 2^k), without its general path on every draw: the simulator draws
    // hundreds per NIR spectrum. test/unit/clock.unit.spec.ts holds the two to the same stream.
    const hi = gen.unsafeNext() & 0x3ffffff;
    const lo = gen.unsafeNext() & 0x7ffffff;
    return (hi * 134_217_728 + lo) / 9_007_199_254_740_992;
  };
  const rng: Rng = {
    next,
    uniform: (lo, hi) => lo + (hi - lo) * next(),
    normal(mean = 0, sd = 1) {
      if (spare !== undefined) {
        const s = spare;
        spare = undefined;
        return mean + sd * s;
      }
      let u = 0;
      while (u === 0) u = next();
      const v = next();
      const r = Math.sqrt(-2 * Math.log(u));
      spare = r * Math.sin(2 * Math.PI * v);
      return mean + sd * r * Math.cos(2 * Math.PI * v);
    },
    int: (lo, hi) => prand.unsafeUniformIntDistribution(lo, hi, gen),
    fork: () => createRng(prand.unsafeUniformIntDistribution(-0x80000000, 0x7fffffff, gen)),
    clone: () => rngOn(gen.clone(), spare),
    skipNormals(n) {
      for (let i = 0; i < n; i++) {
        if (spare !== undefined) {
          spare = undefined;
          continue;
        }
        let u = 0;
        while (u === 0) u = next();
        const v = next();
        // the pair's second value is kept for the next call: computed only when no skipped call takes it
        if (i === n - 1) spare = Math.sqrt(-2 * Math.log(u)) * Math.sin(2 * Math.PI * v);
        else i++;
      }
    },
  };
  return rng;
}
