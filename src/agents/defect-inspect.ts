/**
 * agent.defect_inspect — the six-camera inspection's verdict on the batch.
 *
 * The batch reject rate is vision.Rejected / vision.Inspected; the live rate
 * (vision.DefectRate) is judged too, and both must be within the batch
 * record's defect_rate_max_pct. `classified` are the defect classifier's
 * labels for a sample of the reject bin: when at least
 * {@link MIN_CLASSIFIED} were classified and more than
 * {@link FALSE_REJECT_MAX_PCT} % of them are `good`, the cameras are rejecting
 * good tablets and vision.RejectThreshold is probably set too sensitive.
 * That is only ever a recommendation (a person checks the reject bin first),
 * and a move is named only when the current threshold and its approved limit
 * are given. Genuine defects over the limit are a process problem (capping →
 * compression), which no threshold change may hide.
 */
import { LkError } from '../errors.js';
import { checkLimit, checkNow, finite, fmt, plain, roundTo } from './support.js';
import type { AgentOutput, CandidateConsidered, DesignLimit, Proposal } from './types.js';

export const AGENT = 'agent.defect_inspect';
export const MIN_CLASSIFIED = 20;
export const FALSE_REJECT_MAX_PCT = 30;
/** The classifier's label for a tablet without a defect. */
export const GOOD_LABEL = 'good';

export interface DefectInspectInput {
  now: number;
  /** vision.Inspected and vision.Rejected counters for the batch. */
  inspected: number;
  rejected: number;
  /** vision.DefectRate, %: the live reject rate. */
  defectRatePct: number;
  /** Classifier labels of a sample of rejected tablets. */
  classified?: { label: string; count: number }[];
  /** defect_rate_max_pct of the batch record. */
  specMaxPct: number;
  /** The current vision.RejectThreshold (%) and its approved limit: when given, a recommendation names the move. */
  rejectThreshold?: { valuePct: number; limit: DesignLimit };
}

export interface DefectClass {
  label: string;
  count: number;
  /** Share of the classified rejects, %. */
  pctOfClassified: number;
}

export interface DefectInspectVerdict {
  /** Batch and live reject rates both within the specification. */
  ok: boolean;
  /** Batch reject rate (rejected / inspected), % — the live rate while nothing has been inspected. */
  defectRatePct: number;
  liveDefectRatePct: number;
  byClass: DefectClass[];
  /** Share of classified rejects that are good tablets, %; null without classifications. */
  falseRejectPct: number | null;
  thresholdSuspect: boolean;
}

/**
 * Judge the reject rate against the specification and the classes behind it.
 * @throws LkError(LK_VALIDATION) for a bad `now`, counts that contradict each other or a duplicate label;
 *   LkError(LK_VALUE_INVALID) for non-finite numbers.
 */
export function decide(input: DefectInspectInput): AgentOutput<DefectInspectVerdict> {
  const now = checkNow(input.now);
  const inspected = finite('inspected', input.inspected);
  const rejected = finite('rejected', input.rejected);
  const live = finite('defectRatePct', input.defectRatePct);
  const spec = finite('specMaxPct', input.specMaxPct);
  if (inspected < 0 || rejected < 0 || rejected > inspected) throw new LkError('LK_VALIDATION', 'need 0 ≤ rejected ≤ inspected', { path: 'rejected' });
  const classified = input.classified ?? [];
  const seen = new Set<string>();
  classified.forEach((c, i) => {
    if (typeof c.label !== 'string') throw new LkError('LK_VALIDATION', `classified[${i}].label must be a string`, { path: `classified[${i}].label` });
    if (seen.has(c.label)) throw new LkError('LK_VALIDATION', `classified: label "${c.label}" appears twice`, { path: `classified[${i}].label` });
    seen.add(c.label);
    if (finite(`classified[${i}].count`, c.count) < 0) throw new LkError('LK_VALUE_INVALID', `classified[${i}].count must not be negative`, { path: `classified[${i}].count` });
  });
  const threshold = input.rejectThreshold ? { valuePct: finite('rejectThreshold.valuePct', input.rejectThreshold.valuePct), limit: checkLimit('rejectThreshold.limit', input.rejectThreshold.limit, '%') } : undefined;

  const batchRate = inspected > 0 ? (100 * rejected) / inspected : live;
  const total = classified.reduce((a, c) => a + c.count, 0);
  const byClass: DefectClass[] = classified
    .map((c) => ({ label: c.label, count: c.count, pctOfClassified: total > 0 ? (100 * c.count) / total : 0 }))
    .sort((a, b) => b.count - a.count || (a.label < b.label ? -1 : a.label > b.label ? 1 : 0));
  const good = classified.find((c) => c.label === GOOD_LABEL)?.count ?? 0;
  const falseRejectPct = total > 0 ? (100 * good) / total : null;
  const thresholdSuspect = total >= MIN_CLASSIFIED && falseRejectPct !== null && falseRejectPct > FALSE_REJECT_MAX_PCT;
  const ok = batchRate <= spec && live <= spec;
  const verdict: DefectInspectVerdict = { ok, defectRatePct: batchRate, liveDefectRatePct: live, byClass, falseRejectPct, thresholdSuspect };
  // rejects that are real defects, as a share of all inspected tablets
  const genuineRatePct = falseRejectPct === null ? batchRate : batchRate * (1 - falseRejectPct / 100);
  const inputs = { now, inspected, rejected, liveDefectRatePct: live, specMaxPct: spec, classifiedTotal: total, genuineDefectRatePct: genuineRatePct, ...(threshold ? { rejectThreshold: threshold } : {}) };
  const top = byClass.filter((c) => c.label !== GOOD_LABEL)[0];
  const status =
    `reject rate ${fmt(batchRate, 3)} % of ${fmt(inspected, 0)} inspected (live ${fmt(live, 3)} %) against ${fmt(spec, 2)} %: ${ok ? 'within' : 'OVER'} the specification` +
    (top ? `; most frequent defect ${top.label} (${fmt(top.pctOfClassified, 1)} % of ${fmt(total, 0)} classified)` : '') +
    (falseRejectPct !== null ? `; ${fmt(falseRejectPct, 1)} % of classified rejects are good tablets` : '');
  if (!thresholdSuspect) {
    const why = ok || total === 0 ? status : `${status}: genuine defects, a process problem for the upstream agents — no threshold change`;
    return plain({ proposals: [], verdict, trace: { inputs, candidates: [], why } });
  }
  const justification =
    `Recommendation only: ${fmt(falseRejectPct!, 1)} % of ${fmt(total, 0)} classified rejects are good tablets (over ${FALSE_REJECT_MAX_PCT} %), so vision.RejectThreshold is probably too sensitive; ` +
    `a person should check the reject bin and the classifier before any change. Genuine defects are about ${fmt(genuineRatePct, 3)} % of inspected tablets.`;
  const candidates: CandidateConsidered[] = [];
  const proposals: Proposal[] = [];
  if (threshold) {
    const value = roundTo(Math.min(threshold.valuePct + threshold.limit.maxStep, threshold.limit.max), 0.1);
    if (value > threshold.valuePct + 0.05 && value >= threshold.limit.min) {
      const move = { setpoint: 'vision.RejectThreshold', value, unit: '%' };
      const predicted = { falseRejectPct: falseRejectPct!, genuineDefectRatePct: genuineRatePct };
      candidates.push({ moves: [], predicted, score: falseRejectPct! / 100, chosen: false, why: 'keep the threshold: good tablets keep being rejected' });
      candidates.push({ moves: [move], predicted, score: 0, chosen: true, why: `raise the threshold ${fmt(threshold.valuePct, 0)} → ${fmt(value, 0)} % (one step); recommendation for a person to confirm` });
      const why = `${justification} Suggested: vision.RejectThreshold ${fmt(threshold.valuePct, 0)} → ${fmt(value, 0)} % (step ≤ ${fmt(threshold.limit.maxStep, 0)}, approved ≤ ${fmt(threshold.limit.max, 0)}).`;
      proposals.push({ agent: AGENT, attribute: 'defect_rate', moves: [move], justification: why, predicted, trace: { inputs, prediction: predicted, candidates, why } });
      return plain({ proposals, verdict, trace: { inputs, candidates, why } });
    }
    return plain({ proposals, verdict, trace: { inputs, candidates, why: `${justification} The threshold is already at its approved maximum ${fmt(threshold.limit.max, 0)} %.` } });
  }
  return plain({ proposals, verdict, trace: { inputs, candidates, why: `${justification} The current threshold was not given, so no value is suggested.` } });
}
