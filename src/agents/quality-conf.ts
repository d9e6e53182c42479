/**
 * agent.quality_conf — confidence that the batch meets USP <905> content
 * uniformity, from the press's weight variation.
 *
 * The expected stage-1 acceptance value combines the blend's RSD (the fitted
 * RSD∞, or the blend agent's measured figure) with the measured weight RSD
 * and the weight's offset from target ({@link contentUniformity}); the
 * weight-variation AV of the readings themselves ({@link acceptanceValue},
 * content ∝ weight) is kept in the trace as a cross-check.
 *
 * When the weight RSD is near its limit (≥ {@link NEAR_LIMIT_FRACTION} of
 * it) or the expected AV is near L1 = 15, it proposes HOLDING
 * press.TurretSpeed at its current value — a move to the current value with
 * attribute `content_uniformity` — so that a takt request to speed up (weight
 * scatter grows with turret speed) loses arbitration (rule 1).
 */
import { contentUniformity, weightRsdPct } from '../twin/predict.js';
import { acceptanceValue } from '../twin/process.js';
import type { ProcessParams } from '../twin/params.js';
import { checkNow, checkReadings, finite, fmt, mean, plain, positive, sampleSd } from './support.js';
import type { AgentOutput, CandidateConsidered, Proposal, Reading, Trace } from './types.js';

export const AGENT = 'agent.quality_conf';
export const NEAR_LIMIT_FRACTION = 0.8;
/** USP <905> L1. */
export const AV_L1 = 15;
/** Stage 1 tests ten units; fewer weights do not support a judgement. */
export const MIN_WEIGHTS = 10;

export interface QualityConfInput {
  now: number;
  /** press.TabletWeight, mg. */
  weights: Reading[];
  /** Current press.TurretSpeed, {rev}/min. */
  turretSpeed: number;
  targets: { weightMg: number; weightRsdMaxPct: number };
  /** The fitted twin's parameters (blend RSD∞, weight RSD per rpm). */
  params: ProcessParams;
  /** Measured blend RSD at the blend end point, %; the fitted RSD∞ when absent. */
  blendRsdPct?: number;
}

export interface QualityConfVerdict {
  /** Expected USP <905> stage-1 AV; null with fewer than {@link MIN_WEIGHTS} weights. */
  av: number | null;
  weightRsdPct: number | null;
  holdSpeed: boolean;
}

/**
 * Judge content-uniformity confidence and, near a limit, ask to hold the turret speed.
 * @throws LkError(LK_VALIDATION) for a bad `now`; LkError(LK_VALUE_INVALID) for non-finite numbers or a non-positive target.
 */
export function decide(input: QualityConfInput): AgentOutput<QualityConfVerdict> {
  const now = checkNow(input.now);
  // a tablet weighing nothing is a broken reading, and the RSD divides by the mean
  const weights = checkReadings('weights', input.weights).map((r, i) => positive(`weights[${i}].value`, r.value));
  const speed = finite('turretSpeed', input.turretSpeed);
  const targetW = positive('targets.weightMg', input.targets?.weightMg);
  const rsdMax = positive('targets.weightRsdMaxPct', input.targets.weightRsdMaxPct);
  finite('params.uniformity.weightRsd0', input.params?.uniformity?.weightRsd0);
  finite('params.uniformity.weightRsdPerRpm', input.params.uniformity.weightRsdPerRpm);
  const blendRsd = input.blendRsdPct === undefined ? finite('params.blend.rsdInf', input.params?.blend?.rsdInf) : finite('blendRsdPct', input.blendRsdPct);

  const inputs: Record<string, unknown> = { now, weights: weights.length, turretSpeed: speed, targets: { weightMg: targetW, weightRsdMaxPct: rsdMax }, blendRsdPct: blendRsd, blendRsdSource: input.blendRsdPct === undefined ? 'fitted RSD∞' : 'measured' };
  if (weights.length < MIN_WEIGHTS) {
    const verdict: QualityConfVerdict = { av: null, weightRsdPct: weights.length > 1 ? (100 * sampleSd(weights)) / mean(weights) : null, holdSpeed: false };
    return plain({ proposals: [], verdict, trace: { inputs, candidates: [], why: `${weights.length} weights, under the ${MIN_WEIGHTS} of a USP <905> stage 1: no judgement yet` } });
  }
  const wMean = mean(weights);
  const wRsd = (100 * sampleSd(weights)) / wMean;
  const cu = contentUniformity(blendRsd, wRsd, wMean, targetW);
  const byWeight = acceptanceValue(weights.map((w) => (100 * w) / targetW));
  const modelRsd = weightRsdPct(input.params, speed);
  const rsdNear = wRsd >= NEAR_LIMIT_FRACTION * rsdMax;
  const avNear = cu.av >= NEAR_LIMIT_FRACTION * AV_L1;
  const holdSpeed = rsdNear || avNear;
  const verdict: QualityConfVerdict = { av: cu.av, weightRsdPct: wRsd, holdSpeed };
  const prediction = { av: cu.av, contentMeanPct: cu.mean, contentRsdPct: cu.rsd, weightVariationAv: byWeight.av, modelWeightRsdPct: modelRsd };
  Object.assign(inputs, { weightMeanMg: wMean, weightRsdPct: wRsd });
  const state =
    `weight ${fmt(wMean, 1)} mg, RSD ${fmt(wRsd)} % (limit ${fmt(rsdMax, 1)} %); expected stage-1 AV ${fmt(cu.av)} ` +
    `(blend RSD ${fmt(blendRsd)} %, content ${fmt(cu.mean, 1)} %, L1 ${AV_L1}); weight-variation AV ${fmt(byWeight.av)}`;
  if (!holdSpeed) {
    return plain({ proposals: [], verdict, trace: { inputs, prediction, candidates: [], why: `${state}: comfortably inside the limits, no request` } });
  }
  const reasons = [
    ...(rsdNear ? [`weight RSD ${fmt(wRsd)} % is ${wRsd > rsdMax ? 'over' : 'near'} its ${fmt(rsdMax, 1)} % limit`] : []),
    ...(avNear ? [`expected AV ${fmt(cu.av)} is ${cu.av > AV_L1 ? 'over' : 'near'} L1 = ${AV_L1}`] : []),
  ];
  const move = { setpoint: 'press.TurretSpeed', value: speed, unit: '{rev}/min' };
  const justification =
    `Hold press.TurretSpeed at ${fmt(speed, 1)} rpm: ${reasons.join(' and ')}. Weight scatter grows with turret speed ` +
    `(the fitted twin: ${fmt(modelRsd)} % at this speed), so a faster press would put content uniformity at risk.`;
  const candidates: CandidateConsidered[] = [{ moves: [move], predicted: { weightRsdPct: wRsd, av: cu.av }, score: cu.av / AV_L1, chosen: true, why: 'hold the turret speed where the weight RSD was measured' }];
  const trace: Trace = { inputs, prediction, candidates, why: justification };
  const proposal: Proposal = { agent: AGENT, attribute: 'content_uniformity', moves: [move], justification, predicted: prediction, trace };
  return plain({ proposals: [proposal], verdict, trace });
}
