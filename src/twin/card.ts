/**
 * The model card every fitted or trained model carries into the registry:
 * what it is for, what it learnt from (whose data), how well it does, and
 * the input ranges inside which its predictions may be used.
 */
import type { Range } from './setpoints.js';

export interface ResidualStats {
  /** Number of observations. */
  n: number;
  rmse: number;
  /** Mean residual (observed − predicted): a bias check. */
  mean: number;
  maxAbs: number;
}

/** A pass criterion of the golden-dataset gate: the metric must be at most `max` and/or at least `min`. */
export interface AcceptanceCriterion {
  max?: number;
  min?: number;
}

/** A run-time acceptance of one attribute (the shape src/quality/fidelity.ts judges). */
export interface FidelityCriterion {
  maxAbsResidual?: number;
  maxRelResidualPct?: number;
}

export interface ModelCard {
  /** `<analyte-or-attribute>` and `<family>` of the model id `<analyte>-<family>-v<n>`. */
  analyte: string;
  family: string;
  intendedUse: string;
  /** The tenant whose data trained the model; it is never used for another tenant (R9). */
  tenant: string;
  trainingData: {
    summary: string;
    /** Batch or sample ids used. */
    ids: string[];
    samples: number;
    /** Seed of the generator when the data came from the simulator. */
    seed?: number;
  };
  /** Headline figures, e.g. `rmse.cappingPct`, `rmsep`, `latentVariables`, `recall.chipped`. */
  metrics: Record<string, number>;
  residuals?: Record<string, ResidualStats>;
  /**
   * Pass criteria of the golden-dataset evaluation that gates every promotion (metric → bound), e.g.
   * `rmsep.cappingPct: { max: 0.5 }`, `rmsep: { max: 2 }` (% LC), `recall.min: { min: 0.9 }`. Written when the
   * model is fitted, before it is evaluated; a card without them cannot be promoted.
   */
  acceptance?: Record<string, AcceptanceCriterion>;
  /**
   * Run-time acceptance of the model against the plant (R8, "loss of the model"): per attribute the twin
   * predicts and the line measures (`tabletWeightMg`, `hardnessN`, `thicknessMm`, `cappingPct`), the largest
   * residual (mean measured at the setpoints in force − prediction at those setpoints) under which the model
   * may still steer. Beyond it the model counts as lost for the run. Absolute in the attribute's unit and/or
   * relative in % of the prediction; both, when given, must hold.
   */
  fidelity?: Record<string, FidelityCriterion>;
  /** Inputs the model was fitted over; outside them a prediction is flagged, never extrapolated silently. */
  validRanges: Record<string, Range>;
  limitations: string[];
}

/** Residual statistics of paired observations and predictions. */
export function residualStats(observed: readonly number[], predicted: readonly number[]): ResidualStats {
  let ss = 0;
  let sum = 0;
  let maxAbs = 0;
  const n = Math.min(observed.length, predicted.length);
  for (let i = 0; i < n; i++) {
    const r = observed[i]! - predicted[i]!;
    ss += r * r;
    sum += r;
    if (Math.abs(r) > maxAbs) maxAbs = Math.abs(r);
  }
  return { n, rmse: n > 0 ? Math.sqrt(ss / n) : Number.NaN, mean: n > 0 ? sum / n : Number.NaN, maxAbs };
}
