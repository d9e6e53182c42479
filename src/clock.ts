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
}

export const systemClock: Clock = { now: () => Date.now() };

/** A clock that only moves when told to: for tests and replay. */
export class ManualClock implements Clock {
  constructor(private t: number = Date.UTC(2026, 0, 1)) {}
  now(): number {
    return this.t;
  }
  set(t: number): void {
    this.t = t;
  }
  advance(ms: number): number {
    this.t += ms;
    return this.t;
  }
}

/** A clock that runs `scale` times faster than wall time from `origin` (simulator time-scale). */
export function scaledClock(scale: number, base: Clock = systemClock, origin = base.now()): Clock {
  if (!(scale > 0) || !Number.isFinite(scale)) throw new RangeError(`time scale must be a positive finite number, got ${scale}`);
  return { now: () => origin + (base.now() - origin) * scale };
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
}

export function createRng(seed: number): Rng {
  const gen = prand.xoroshiro128plus(seed | 0);
  let spare: number | undefined;
  const next = (): number => {
    // 53 random bits → a double in [0, 1)
    const hi = prand.unsafeUniformIntDistribution(0, (1 << 26) - 1, gen);
    const lo = prand.unsafeUniformIntDistribution(0, (1 << 27) - 1, gen);
    return (hi * 2 ** 27 + lo) / 2 ** 53;
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
  };
  return rng;
}
