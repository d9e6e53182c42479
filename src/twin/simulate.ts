/**
 * Rehearsal (`twin.simulate`): draw candidate setpoint vectors inside the
 * design space, predict each with the fitted twin, discard those the model
 * may not speak for (outside its valid ranges — flagged, never extrapolated)
 * and those whose predicted capping risk is over the site threshold, and rank
 * the rest, quality first (rule 1: content uniformity, potency, dissolution
 * and defects outrank takt). Deterministic for a seed and a model version.
 */
import { createRng } from '../clock.js';
import { LkError } from '../errors.js';
import { compileTwin, DEFAULT_CONTEXT, type BatchContext, type Horizon, type PredictedAttributes, type Predictor } from './predict.js';
import { checkDesignSpace, latinHypercube, outOfRange, SETPOINT_IDS, SETPOINTS, type DesignSpaceRanges, type Range, type SetpointId, type SetpointVector } from './setpoints.js';
import type { ProcessParams } from './params.js';

/** A twin the rehearsal can run: fitted parameters, the model's identity and its valid ranges. */
export interface TwinModel {
  id: string;
  version: number;
  params: ProcessParams;
  validRanges: Partial<Record<SetpointId, Range>>;
}

export interface SimulateRequest {
  candidates: number;
  /** "full batch", or a compression window: minutes as a number, or "30 min", "2 h", "90 s". */
  horizon: string | number;
  seed: number;
  designSpace: DesignSpaceRanges;
  /** Site threshold of predicted capping, % (default 1.5). */
  cappingThresholdPct?: number;
  context?: BatchContext;
}

export type DiscardCode = 'capping_risk' | 'outside_valid_range' | 'not_finite';

export interface DiscardReason {
  code: DiscardCode;
  message: string;
  detail: Record<string, unknown>;
}

export type SetpointsWithUnits = Record<SetpointId, { value: number; unit: string }>;

export interface RankedCandidate {
  rank: number;
  /** Position in the generated sequence (stable across runs with the same seed). */
  index: number;
  setpoints: SetpointsWithUnits;
  predicted: PredictedAttributes;
  /** Lower is better: quality + takt terms (see {@link scoreOf}). */
  score: number;
  qualityScore: number;
}

export interface DiscardedCandidate {
  index: number;
  setpoints: SetpointsWithUnits;
  predicted: PredictedAttributes | null;
  reasons: DiscardReason[];
}

export interface SimulationResult {
  model: { id: string; version: number };
  seed: number;
  horizon: Horizon;
  cappingThresholdPct: number;
  requested: number;
  ranked: RankedCandidate[];
  discarded: DiscardedCandidate[];
}

export const DEFAULT_CAPPING_THRESHOLD_PCT = 1.5;
export const MAX_CANDIDATES = 100_000;

/** Parse a horizon: "full batch" or a duration. Throws LK_VALIDATION on anything else. */
export function parseHorizon(h: string | number): Horizon {
  if (typeof h === 'number') {
    if (!Number.isFinite(h) || h <= 0) throw new LkError('LK_VALIDATION', 'horizon must be "full batch" or a positive duration', { horizon: h });
    return { kind: 'duration', minutes: h };
  }
  const s = h.trim().toLowerCase();
  if (s === 'full batch' || s === 'full_batch' || s === 'full-batch') return { kind: 'full_batch' };
  const m = /^(\d+(?:\.\d+)?)\s*(s|sec|min|m|h)$/.exec(s);
  if (!m) throw new LkError('LK_VALIDATION', `horizon must be "full batch" or a duration such as "30 min", got "${h}"`, { horizon: h });
  const x = Number(m[1]);
  const minutes = m[2] === 's' || m[2] === 'sec' ? x / 60 : m[2] === 'h' ? x * 60 : x;
  if (!(minutes > 0)) throw new LkError('LK_VALIDATION', 'horizon must be a positive duration', { horizon: h });
  return { kind: 'duration', minutes };
}

/**
 * Score of a prediction, lower is better. Quality terms, each about 1 at the
 * edge of acceptability: AV / 15 (USP <905> L1), capping / threshold, Q30 under
 * 80 % and f2 under 50 (heavily), hardness outside 80–150 N, weight off target,
 * over-wetting and spray-drying risk. Takt weighs 0.1 per 8 h of batch time, so
 * it only separates candidates of near-equal quality.
 */
export function scoreOf(a: PredictedAttributes, cappingThresholdPct: number, targetWeightMg: number): { score: number; quality: number } {
  const hardness = a.hardnessN < 80 ? (80 - a.hardnessN) / 10 : a.hardnessN > 150 ? (a.hardnessN - 150) / 10 : 0;
  const quality =
    a.contentUniformityAv / 15 +
    a.cappingRiskPct / cappingThresholdPct +
    Math.max(0, 80 - a.dissolutionQ30Pct) / 5 +
    Math.max(0, 50 - a.dissolutionF2) / 10 +
    (100 - Math.min(100, a.dissolutionF2)) / 200 +
    hardness +
    (Math.abs(a.tabletWeightMg - targetWeightMg) / targetWeightMg) * 50 +
    a.overwetRisk +
    a.sprayDryRisk;
  const takt = a.horizonTablets > 0 ? (0.1 * a.taktMin) / 480 / (a.horizonTablets / 300_000) : Number.POSITIVE_INFINITY;
  return { score: quality + takt, quality };
}

function withUnits(v: Readonly<SetpointVector>): SetpointsWithUnits {
  const out = {} as SetpointsWithUnits;
  for (const id of SETPOINT_IDS) out[id] = { value: v[id], unit: SETPOINTS[id].unit };
  return out;
}

function allFinite(a: PredictedAttributes): boolean {
  for (const v of Object.values(a)) if (typeof v === 'number' && !Number.isFinite(v)) return false;
  return true;
}

/**
 * Rehearse `req.candidates` candidates on `model`. Throws LK_VALIDATION for a
 * candidate count outside 1…100 000, a non-integer seed or a bad horizon, and
 * the design-space errors of {@link checkDesignSpace}. `opts.compile` replaces
 * the closed forms with another predictor of the same model (the benchmark's
 * ODE-integrated peer and the test oracle); everything else is unchanged.
 */
export function simulate(model: TwinModel, req: SimulateRequest, opts: { compile?: (params: ProcessParams, ctx: BatchContext) => Predictor } = {}): SimulationResult {
  const n = req.candidates;
  if (!Number.isInteger(n) || n < 1 || n > MAX_CANDIDATES) throw new LkError('LK_VALIDATION', `candidates must be an integer in 1…${MAX_CANDIDATES}`, { candidates: n });
  if (!Number.isSafeInteger(req.seed)) throw new LkError('LK_VALIDATION', 'seed must be an integer', { seed: req.seed });
  const threshold = req.cappingThresholdPct ?? DEFAULT_CAPPING_THRESHOLD_PCT;
  if (!Number.isFinite(threshold) || threshold <= 0 || threshold > 100) throw new LkError('LK_VALUE_INVALID', 'capping threshold must be in (0, 100] %', { threshold });
  const horizon = parseHorizon(req.horizon);
  const space = checkDesignSpace(req.designSpace);
  const ctx = req.context ?? DEFAULT_CONTEXT;
  const predict: Predictor = (opts.compile ?? compileTwin)(model.params, ctx);
  const vectors = latinHypercube(space, n, createRng(req.seed));
  const ranked: Omit<RankedCandidate, 'rank'>[] = [];
  const discarded: DiscardedCandidate[] = [];
  for (let index = 0; index < vectors.length; index++) {
    const v = vectors[index]!;
    const outside = outOfRange(v, model.validRanges);
    if (outside.length > 0) {
      discarded.push({
        index,
        setpoints: withUnits(v),
        predicted: null,
        reasons: outside.map((o) => ({
          code: 'outside_valid_range' as const,
          message: `${o.setpoint} ${round(o.value)} ${o.unit} is outside the model's valid range ${round(o.min)}–${round(o.max)} ${o.unit}; not extrapolated`,
          detail: o,
        })),
      });
      continue;
    }
    const a = predict(v, horizon);
    if (!allFinite(a)) {
      discarded.push({ index, setpoints: withUnits(v), predicted: a, reasons: [{ code: 'not_finite', message: 'the model gives a non-finite prediction here', detail: {} }] });
      continue;
    }
    if (a.cappingRiskPct > threshold) {
      discarded.push({
        index,
        setpoints: withUnits(v),
        predicted: a,
        reasons: [
          {
            code: 'capping_risk',
            message:
              `predicted capping ${a.cappingRiskPct.toFixed(2)} % is above the site threshold ${threshold} % ` +
              `(main force ${round(v['press.MainForce'])} kN, dwell ${a.dwellMs.toFixed(1)} ms, pre/main ${(v['press.PreForce'] / v['press.MainForce']).toFixed(2)})`,
            detail: { cappingRiskPct: a.cappingRiskPct, thresholdPct: threshold, mainForceKn: v['press.MainForce'], dwellMs: a.dwellMs, preMainRatio: v['press.PreForce'] / v['press.MainForce'] },
          },
        ],
      });
      continue;
    }
    const s = scoreOf(a, threshold, ctx.targetWeightMg);
    // a score that is not a number would make the ranking meaningless (NaN sorts anywhere)
    if (!Number.isFinite(s.score)) {
      discarded.push({ index, setpoints: withUnits(v), predicted: a, reasons: [{ code: 'not_finite', message: 'the model gives a non-finite score here (e.g. no tablets within the horizon)', detail: { score: s.score } }] });
      continue;
    }
    ranked.push({ index, setpoints: withUnits(v), predicted: a, score: s.score, qualityScore: s.quality });
  }
  ranked.sort((x, y) => x.score - y.score || x.index - y.index);
  return {
    model: { id: model.id, version: model.version },
    seed: req.seed,
    horizon,
    cappingThresholdPct: threshold,
    requested: n,
    ranked: ranked.map((c, i) => ({ rank: i + 1, ...c })),
    discarded,
  };
}

function round(x: number): number {
  return Math.round(x * 1000) / 1000;
}
