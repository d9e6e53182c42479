/**
 * What a recorded batch looks like to the twin: the historian's in-process
 * samples and the QC lab's results of one batch, the input of the fit
 * (fit.ts) and of the golden twin dataset. A real site's batches come from
 * its historian and LIMS; the simulated plant's from the simulator's batch
 * generator (connectors/sim/ground/batches.ts).
 *
 * Pure: types and constants only.
 */
import type { PressSetpoints } from './process.js';
import type { SetpointVector } from './setpoints.js';

export interface PressObservation extends PressSetpoints {
  /** Means of the in-process checks of the segment. */
  weightMg: number;
  weightRsdPct: number;
  thicknessMm: number;
  hardnessN: number;
  /** Capped tablets counted by inspection, % of the segment. */
  cappingPct: number;
  ejectionN: number;
}

export interface RecordedBatch {
  id: string;
  /** The recipe the batch ran (press setpoints of its first segment). */
  setpoints: SetpointVector;
  blend: { speedRpm: number; samples: { rev: number; rsdPct: number }[] };
  drying: { inletC: number; airflowM3h: number; samples: { min: number; lodPct: number }[] };
  press: PressObservation[];
  coating: { sprayRateGMin: number; inletAirC: number; airflowM3h: number; exhaustC: number; samples: { min: number; weightGainPct: number }[] };
  /** QC dissolution of the coated tablets, with the tensile strength measured on the cores. */
  dissolution: { tensileMpa: number; weightGainPct: number; timesMin: number[]; releasedPct: number[] };
}

/**
 * The stated precision of the line's measurement systems: standard deviations
 * of the instruments and lab methods, and the inspection sample behind the
 * capping count. The fit weights each residual by it, so every attribute
 * counts by its precision. The simulated instruments perform exactly to it.
 */
export const INSTRUMENT_PRECISION = Object.freeze({
  blendRsdRel: 0.04,
  blendRsdAbs: 0.08,
  lodPct: 0.12,
  weightMg: 0.6,
  weightRsdPct: 0.08,
  thicknessMm: 0.01,
  hardnessN: 1.5,
  /** Tablets inspected per press segment for the capping count. */
  cappingInspected: 20_000,
  ejectionN: 6,
  exhaustC: 0.25,
  weightGainPct: 0.03,
  dissolutionPct: 1.0,
});
