/**
 * agent.blend_dispense — blend to the in-line NIR end point.
 *
 * The end point is the first run of `consecutive` moving blocks (stride one
 * scan) of `block` NIR blend-concentration predictions whose UPPER chi-square
 * confidence bound of the block RSD, s·√((n − 1)/χ²_{1−conf, n−1}), is inside
 * the acceptance limit with the block mean inside 90–110 % of target
 * ({@link blendEndPoint}, jStat.chisquare.inv). When the blender has stopped
 * at its target revolutions without an end point, and the RSD (not the mean)
 * is what fails, it proposes 50 more revolutions; a mean off target is a
 * dispensing or potency problem that more blending cannot fix, so it is left
 * to a person.
 */
import { LkError } from '../errors.js';
import { blendEndPoint } from '../twin/nir/endpoint.js';
import { blendRsdPct, type BlendParams } from '../twin/process.js';
import { checkLimit, checkModel, checkNow, finite, fmt, plain, positive, roundTo } from './support.js';
import type { AgentOutput, CandidateConsidered, DesignLimit, ModelRef, Proposal, Trace } from './types.js';

export const AGENT = 'agent.blend_dispense';
/** Revolutions added per proposal (the design space's max_step for blender.TargetRevolutions bounds it further). */
export const REVOLUTION_STEP = 50;
/** The blender counts as stopped at its target within half a revolution (counter resolution). */
const AT_TARGET_REV = 0.5;

export interface BlendScan {
  seq: number;
  /** nir.BlendConcentration prediction, % of target. */
  concentrationPct: number;
  at: number;
}

export interface BlendLimits {
  /** Acceptance limit on the upper confidence bound of the block RSD, %. */
  rsdMaxPct: number;
  meanMinPct: number;
  meanMaxPct: number;
  /** Predictions per block (≥ 3; 5–10 usual). */
  block: number;
  /** Passing blocks in a row for the end point. */
  consecutive: number;
  /** One-sided confidence of the RSD bound, e.g. 0.95. */
  confidence: number;
}

export interface BlendDispenseInput {
  now: number;
  /** NIR BlendConcentration predictions, in scan order (strictly increasing `seq`). */
  scans: BlendScan[];
  /** blender.Revolutions now, and the blender.TargetRevolutions setpoint, {rev}. */
  revolutions: number;
  targetRevolutions: number;
  limits: BlendLimits;
  /** Approved limit of blender.TargetRevolutions; when given, a raise stays inside it and within its max step. */
  targetRevolutionsLimit?: DesignLimit;
  /** Fitted blend-uniformity parameters and their model: when given, the proposal carries the predicted RSD. */
  blendModel?: { model: ModelRef; params: BlendParams };
}

export interface BlendBlock {
  /** `seq` of the first and last scan of the block. */
  from: number;
  to: number;
  meanPct: number;
  rsdPct: number;
  uclRsdPct: number;
  ok: boolean;
}

export interface BlendDispenseVerdict {
  endpoint: boolean;
  /** `seq` of the scan at which the end point was declared (last scan of the passing run), or null. */
  endpointSeq: number | null;
  blocks: BlendBlock[];
  revolutions: number;
}

/**
 * Judge the blend end point and, when the blender stopped short of it, propose more revolutions.
 * @throws LkError(LK_VALIDATION) for a bad `now`, scans out of order or limits out of range;
 *   LkError(LK_VALUE_INVALID) for a non-finite or non-positive prediction or revolution count.
 */
export function decide(input: BlendDispenseInput): AgentOutput<BlendDispenseVerdict> {
  const now = checkNow(input.now);
  const revolutions = finite('revolutions', input.revolutions);
  const target = finite('targetRevolutions', input.targetRevolutions);
  const lim = input.limits;
  if (typeof lim !== 'object' || lim === null) throw new LkError('LK_VALIDATION', 'limits must be given', { path: 'limits' });
  for (const k of ['rsdMaxPct', 'meanMinPct', 'meanMaxPct', 'block', 'consecutive', 'confidence'] as const) finite(`limits.${k}`, lim[k]);
  if (!Array.isArray(input.scans)) throw new LkError('LK_VALIDATION', 'scans must be an array', { path: 'scans' });
  const scans = input.scans;
  scans.forEach((s, i) => {
    finite(`scans[${i}].seq`, s.seq);
    finite(`scans[${i}].at`, s.at);
    // a prediction at or under 0 % is a probe out of the powder or a broken model, not a blend
    positive(`scans[${i}].concentrationPct`, s.concentrationPct);
    if (i > 0 && !(s.seq > scans[i - 1]!.seq)) throw new LkError('LK_VALIDATION', `scans must be in increasing seq order (scans[${i}])`, { path: `scans[${i}].seq` });
  });
  const limit = input.targetRevolutionsLimit ? checkLimit('targetRevolutionsLimit', input.targetRevolutionsLimit, '{rev}') : undefined;
  const blendModel = input.blendModel ? { model: checkModel('blendModel.model', input.blendModel.model), params: input.blendModel.params } : undefined;

  const ep = blendEndPoint(
    scans.map((s) => s.concentrationPct),
    { block: lim.block, limitRsdPct: lim.rsdMaxPct, confidence: lim.confidence, consecutive: lim.consecutive, meanRange: [lim.meanMinPct, lim.meanMaxPct] },
  );
  const blocks: BlendBlock[] = ep.blocks.map((b) => ({
    from: scans[b.start]!.seq,
    to: scans[b.start + lim.block - 1]!.seq,
    meanPct: b.mean,
    rsdPct: b.rsdPct,
    uclRsdPct: b.uclRsdPct,
    ok: b.pass,
  }));
  const verdict: BlendDispenseVerdict = { endpoint: ep.reached, endpointSeq: ep.index === null ? null : scans[ep.index]!.seq, blocks, revolutions };
  const last = blocks[blocks.length - 1];
  const inputs = {
    now,
    scans: scans.length,
    revolutions,
    targetRevolutions: target,
    limits: { ...lim },
    lastBlock: last ?? null,
    ...(limit ? { targetRevolutionsLimit: limit } : {}),
    ...(blendModel ? { model: blendModel.model } : {}),
  };
  const status = ep.reached
    ? `end point at scan ${verdict.endpointSeq}: ${lim.consecutive} consecutive blocks of ${lim.block} with the ${fmt(100 * lim.confidence, 0)} % upper bound of the RSD ≤ ${fmt(lim.rsdMaxPct, 1)} % and mean in ${fmt(lim.meanMinPct, 0)}–${fmt(lim.meanMaxPct, 0)} %`
    : last
      ? `no end point yet: last block (scans ${last.from}–${last.to}) mean ${fmt(last.meanPct)} %, RSD ${fmt(last.rsdPct)} %, upper bound ${fmt(last.uclRsdPct)} % against ${fmt(lim.rsdMaxPct, 1)} %`
      : `no end point yet: ${scans.length} scan(s), fewer than one block of ${lim.block}`;

  const stopped = revolutions >= target - AT_TARGET_REV;
  const proposals: Proposal[] = [];
  const candidates: CandidateConsidered[] = [];
  let why = status;
  if (!ep.reached && stopped) {
    const r = raise(target, last, lim, limit, blendModel);
    candidates.push(...r.candidates);
    why = `${status}; the blender stopped at its target of ${fmt(target, 0)} rev. ${r.why}`;
    if (r.proposal) proposals.push({ ...r.proposal, trace: { inputs, ...(r.proposal.predicted ? { prediction: r.proposal.predicted } : {}), candidates: r.candidates, why: r.why } });
  } else if (!ep.reached) {
    why = `${status}; the blender is still turning (${fmt(revolutions, 0)} of ${fmt(target, 0)} rev), nothing to propose`;
  }
  const trace: Trace = { inputs, candidates, why };
  return plain({ proposals, verdict, trace });
}

type Draft = Omit<Proposal, 'trace'>;

function raise(
  target: number,
  last: BlendBlock | undefined,
  lim: BlendLimits,
  limit: DesignLimit | undefined,
  blendModel: { model: ModelRef; params: BlendParams } | undefined,
): { proposal: Draft | null; candidates: CandidateConsidered[]; why: string } {
  if (!last) {
    const none: CandidateConsidered = { moves: [], predicted: {}, score: 0, chosen: true, why: 'too few NIR scans to judge the blend; check nir.ScanInterval before blending more' };
    return { proposal: null, candidates: [none], why: 'Too few NIR scans for one block: no move proposed.' };
  }
  // score: the last block's upper RSD bound over the limit (> 1 fails); a raise scales it by the model's relative RSD decay
  const holdScore = last.uclRsdPct / lim.rsdMaxPct;
  const hold: CandidateConsidered = {
    moves: [],
    predicted: { uclRsdPct: last.uclRsdPct, ...(blendModel ? { blendRsdPct: blendRsdPct(target, blendModel.params) } : {}) },
    score: holdScore,
    chosen: false,
    why: 'stay stopped: the blend does not meet its end point',
  };
  if (last.uclRsdPct <= lim.rsdMaxPct && !last.ok) {
    return {
      proposal: null,
      candidates: [{ ...hold, chosen: true, why: `the blend is uniform but its mean ${fmt(last.meanPct)} % is outside ${fmt(lim.meanMinPct, 0)}–${fmt(lim.meanMaxPct, 0)} %: more revolutions cannot correct a dispensing or potency error` }],
      why: 'The RSD passes but the mean does not: escalate to a person (dispensing / potency), no move proposed.',
    };
  }
  const step = Math.min(REVOLUTION_STEP, limit ? limit.maxStep : REVOLUTION_STEP);
  const next = roundTo(limit ? Math.min(target + step, limit.max) : target + step, 1);
  if (next - target < 1) {
    return {
      proposal: null,
      candidates: [{ ...hold, chosen: true, why: `blender.TargetRevolutions is at its approved maximum ${fmt(limit!.max, 0)} rev` }],
      why: 'Already at the approved maximum of revolutions: escalate to a person, no move proposed (the design space is a limit).',
    };
  }
  const predicted: Record<string, number> = { targetRevolutions: next, addedRevolutions: next - target };
  let score = holdScore;
  if (blendModel) {
    const ratio = blendRsdPct(next, blendModel.params) / blendRsdPct(target, blendModel.params);
    predicted['blendRsdPct'] = blendRsdPct(next, blendModel.params);
    predicted['uclRsdPct'] = last.uclRsdPct * ratio;
    score = holdScore * ratio;
  }
  const move = { setpoint: 'blender.TargetRevolutions', value: next, unit: '{rev}' };
  const justification =
    `Blend not at its NIR end point after ${fmt(target, 0)} rev: the upper ${fmt(100 * lim.confidence, 0)} % bound of the block RSD is ${fmt(last.uclRsdPct)} % against ${fmt(lim.rsdMaxPct, 1)} %. ` +
    `Raise blender.TargetRevolutions by ${fmt(next - target, 0)} to ${fmt(next, 0)} rev and keep scanning` +
    (blendModel ? ` (the fitted model expects an RSD of ${fmt(predicted['blendRsdPct']!)} %).` : '.');
  return {
    proposal: { agent: AGENT, attribute: 'content_uniformity', moves: [move], justification, ...(blendModel ? { model: blendModel.model } : {}), predicted },
    candidates: [
      hold,
      {
        moves: [move],
        predicted,
        score,
        chosen: true,
        why: blendModel
          ? 'more revolutions lower the RSD (exponential decay toward RSD∞); the observed bound scaled by the model’s decay'
          : 'more revolutions lower the RSD (exponential decay toward RSD∞); without the blend model the gain is not predicted',
      },
    ],
    why: justification,
  };
}
