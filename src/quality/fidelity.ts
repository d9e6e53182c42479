/**
 * Model fidelity: the twin's prediction for the setpoints in force against the
 * plant's measurements of the same attributes. A residual beyond the model
 * card's acceptance means the model can no longer be trusted to steer (it
 * counts as lost, R8) and becomes a model-fidelity exception.
 *
 * An attribute nobody measured is listed with n 0 and not judged (ok stays
 * true for it). A non-finite prediction or measurement is not judged either
 * way silently: it makes the attribute not ok, with the reason.
 *
 * Pure: no I/O, no clock, no randomness.
 */
import { mean } from './stats.js';

export interface FidelityAcceptance {
  maxAbsResidual?: number;
  maxRelResidualPct?: number;
}

export interface FidelityInput {
  predicted: Record<string, number>;
  measured: Record<string, readonly number[]>;
  acceptance: Record<string, FidelityAcceptance>;
}

export interface FidelityResidual {
  attribute: string;
  predicted: number;
  /** Mean of the measurements; null without any. */
  measuredMean: number | null;
  n: number;
  /** measuredMean − predicted; null without measurements. */
  residual: number | null;
  /** 100 · residual / |predicted|; null without measurements or with a zero prediction. */
  relPct: number | null;
  /** The acceptance applied; null when the card sets none for the attribute. */
  limit: FidelityAcceptance | null;
  ok: boolean;
  reason: string;
}

export interface Fidelity {
  ok: boolean;
  residuals: FidelityResidual[];
}

const own = <T>(r: Record<string, T>, k: string): T | undefined => (Object.hasOwn(r, k) ? r[k] : undefined);
const f = (x: number): string => String(Number(x.toPrecision(4)));

/** Judge every predicted attribute (in the order of `predicted`) against its measurements and acceptance. */
export function fidelity(input: FidelityInput): Fidelity {
  const residuals = Object.entries(input.predicted).map(([attribute, predicted]): FidelityResidual => {
    const values = own(input.measured, attribute) ?? [];
    const limit = own(input.acceptance, attribute) ?? null;
    const n = values.length;
    const base = { attribute, predicted, n, limit };
    if (n === 0) return { ...base, measuredMean: null, residual: null, relPct: null, ok: true, reason: 'no measurements: not judged' };
    const bad = values.filter((v) => !Number.isFinite(v));
    if (bad.length > 0 || !Number.isFinite(predicted)) {
      const why = !Number.isFinite(predicted) ? `prediction ${predicted} is non-finite` : `${bad.length} non-finite measurement(s) (${[...new Set(bad.map(String))].join(', ')})`;
      return { ...base, measuredMean: null, residual: null, relPct: null, ok: false, reason: why };
    }
    const measuredMean = mean(values);
    const residual = measuredMean - predicted;
    const relPct = predicted === 0 ? null : (100 * residual) / Math.abs(predicted);
    const over: string[] = [];
    if (limit?.maxAbsResidual !== undefined && !(Math.abs(residual) <= limit.maxAbsResidual)) over.push(`|residual| ${f(Math.abs(residual))} > ${f(limit.maxAbsResidual)}`);
    if (limit?.maxRelResidualPct !== undefined && !(relPct !== null && Math.abs(relPct) <= limit.maxRelResidualPct)) {
      over.push(relPct === null ? 'relative residual undefined (prediction 0)' : `|residual| ${f(Math.abs(relPct))} % > ${f(limit.maxRelResidualPct)} %`);
    }
    const summary = `measured ${f(measuredMean)} (n ${n}) vs predicted ${f(predicted)}: residual ${f(residual)}`;
    const reason = over.length > 0 ? `${summary}; ${over.join('; ')}` : limit ? `${summary}, within the acceptance` : `${summary}; no acceptance on the card: not judged`;
    return { ...base, measuredMean, residual, relPct, ok: over.length === 0, reason };
  });
  return { ok: residuals.every((r) => r.ok), residuals };
}
