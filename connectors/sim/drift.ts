/**
 * Slow drift of the plant away from its own true parameters: granulate bulk
 * density wanders from lot to lot and hour to hour, so tablet weight drifts
 * at a fixed fill depth and a weight-control agent has something to correct.
 * An Ornstein–Uhlenbeck process in log-space (mean-reverting to the true
 * value), stepped exactly for any dt, in process time.
 */
import type { Rng } from '../../src/clock.js';
import type { TrueParameters } from './truth.js';

export interface DriftState {
  /** log of the factor on the true bulk density. */
  logBulkDensity: number;
}

/** Stationary standard deviation (log-space ≈ relative) and correlation time of each drift. */
export const DRIFT = Object.freeze({ bulkDensity: { sd: 0.015, tauMs: 30 * 60_000 } });

export function initialDrift(): DriftState {
  return { logBulkDensity: 0 };
}

/** Advance the drift by dtMs of process time (exact OU transition, so large steps are as right as small ones). */
export function stepDrift(d: DriftState, dtMs: number, rng: Rng): void {
  const { sd, tauMs } = DRIFT.bulkDensity;
  const a = Math.exp(-dtMs / tauMs);
  d.logBulkDensity = d.logBulkDensity * a + sd * Math.sqrt(1 - a * a) * rng.normal();
}

/** The parameters the plant runs on right now: the true ones with the drift applied. */
export function applyDrift(truth: TrueParameters, d: DriftState): TrueParameters {
  if (d.logBulkDensity === 0) return truth;
  return { ...truth, press: { ...truth.press, bulkDensity: truth.press.bulkDensity * Math.exp(d.logBulkDensity) } };
}
