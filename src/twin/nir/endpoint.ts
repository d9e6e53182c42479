/**
 * Blend end point from in-line NIR predictions: moving blocks of consecutive
 * predictions, the block RSD and its one-sided upper confidence bound from
 * the chi-square distribution of the sample variance,
 *   s_U = s·√((n − 1) / χ²_{α, n−1}),
 * and the end point at the first block that starts a run of `consecutive`
 * blocks whose bound is under the acceptance limit with the mean in range.
 * The chi-square quantile comes from jstat.
 */
import jStat from 'jstat';
import { LkError } from '../../errors.js';

export interface EndPointOptions {
  /** Predictions per block (5–10). */
  block?: number;
  /** Acceptance limit on the upper confidence bound of the block RSD, %. */
  limitRsdPct?: number;
  confidence?: number;
  /** Blocks in a row that must pass. */
  consecutive?: number;
  /** Block mean must lie in this range, % label claim. */
  meanRange?: [number, number];
}

export interface BlockStat {
  /** Index of the first prediction of the block. */
  start: number;
  mean: number;
  sd: number;
  rsdPct: number;
  uclRsdPct: number;
  pass: boolean;
}

export interface EndPoint {
  reached: boolean;
  /** Index of the prediction at which the end point is declared (last of the passing run), or null. */
  index: number | null;
  blocks: BlockStat[];
  limitRsdPct: number;
  confidence: number;
}

/**
 * Evaluate the blend end point on a sequence of NIR predictions (% label
 * claim). Throws LK_VALIDATION for a block under 3 or options out of range,
 * LK_VALUE_INVALID for a non-finite prediction.
 */
export function blendEndPoint(predictions: readonly number[], opts: EndPointOptions = {}): EndPoint {
  const n = opts.block ?? 10;
  const limit = opts.limitRsdPct ?? 5;
  const conf = opts.confidence ?? 0.95;
  const consecutive = opts.consecutive ?? 3;
  const [lo, hi] = opts.meanRange ?? [90, 110];
  if (!Number.isInteger(n) || n < 3) throw new LkError('LK_VALIDATION', 'block must be an integer ≥ 3');
  if (!(conf > 0 && conf < 1)) throw new LkError('LK_VALIDATION', 'confidence must be in (0, 1)');
  if (!Number.isInteger(consecutive) || consecutive < 1) throw new LkError('LK_VALIDATION', 'consecutive must be a positive integer');
  if (!(limit > 0)) throw new LkError('LK_VALIDATION', 'limit must be positive');
  for (const p of predictions) if (!Number.isFinite(p)) throw new LkError('LK_VALUE_INVALID', 'NIR predictions must be finite numbers');
  const factor = Math.sqrt((n - 1) / jStat.chisquare.inv(1 - conf, n - 1));
  const blocks: BlockStat[] = [];
  let run = 0;
  let index: number | null = null;
  for (let start = 0; start + n <= predictions.length; start++) {
    let mean = 0;
    for (let i = start; i < start + n; i++) mean += predictions[i]!;
    mean /= n;
    let ss = 0;
    for (let i = start; i < start + n; i++) ss += (predictions[i]! - mean) ** 2;
    const sd = Math.sqrt(ss / (n - 1));
    const rsdPct = (100 * sd) / mean;
    const uclRsdPct = rsdPct * factor;
    const pass = uclRsdPct <= limit && mean >= lo && mean <= hi;
    blocks.push({ start, mean, sd, rsdPct, uclRsdPct, pass });
    run = pass ? run + 1 : 0;
    if (run >= consecutive && index === null) index = start + n - 1;
  }
  return { reached: index !== null, index, blocks, limitRsdPct: limit, confidence: conf };
}
