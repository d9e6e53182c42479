/**
 * agent.orchestrator — the plant orchestrator's pure summaries. It writes
 * nothing: {@link summariseRehearsal} condenses a twin rehearsal
 * (`twin.simulate`) into the data of its tool-call summary line, and
 * {@link arbitrationNote} turns an arbitration result into the genealogy's
 * record of winners and losers (rule 4: the losing request, its score and its
 * reason appear in the batch genealogy).
 */
import type { ArbitrationResult } from '../arbitration/index.js';
import type { RequestedValue } from '../domain/policy.js';
import type { DiscardCode, SimulationResult } from '../twin/simulate.js';
import { fmt, plain } from './support.js';

export const AGENT = 'agent.orchestrator';

/** The attributes of the best candidate the summary line shows. */
const SHOWN = ['contentUniformityAv', 'cappingRiskPct', 'taktMin', 'tabletWeightMg', 'hardnessN', 'dissolutionQ30Pct', 'dissolutionF2', 'tabletsPerHour'] as const;

export interface RehearsalSummary {
  model: { id: string; version: number };
  seed: number;
  horizon: string;
  /** Candidates drawn, ranked and discarded. */
  candidates: number;
  ranked: number;
  discarded: number;
  discardedBy: Record<DiscardCode, number>;
  best: { rank: number; index: number; setpoints: Record<string, { value: number; unit: string }>; predicted: Record<string, number>; score: number } | null;
  capping: {
    thresholdPct: number;
    discarded: number;
    /** Highest predicted capping among the ranked candidates, and the best candidate's. */
    maxRankedPct: number | null;
    bestPct: number | null;
  };
  /** One line for the tool-call log. */
  line: string;
}

/** Condense a rehearsal for its tool-call log line and the step detail. Never throws on a result of `simulate`. */
export function summariseRehearsal(r: SimulationResult): RehearsalSummary {
  const discardedBy: Record<DiscardCode, number> = { capping_risk: 0, outside_valid_range: 0, not_finite: 0 };
  for (const d of r.discarded) {
    const first = d.reasons[0];
    if (first) discardedBy[first.code] += 1;
  }
  const top = r.ranked[0];
  const best = top
    ? {
        rank: top.rank,
        index: top.index,
        setpoints: Object.fromEntries(Object.entries(top.setpoints).map(([k, v]) => [k, { value: v.value, unit: v.unit }])),
        predicted: Object.fromEntries(SHOWN.map((k) => [k, top.predicted[k]])),
        score: Number.isFinite(top.score) ? top.score : Number.MAX_VALUE,
      }
    : null;
  let maxRanked: number | null = null;
  for (const c of r.ranked) if (maxRanked === null || c.predicted.cappingRiskPct > maxRanked) maxRanked = c.predicted.cappingRiskPct;
  const horizon = r.horizon.kind === 'full_batch' ? 'full batch' : `${fmt(r.horizon.minutes, 1)} min`;
  const drop = Object.entries(discardedBy)
    .filter(([, n]) => n > 0)
    .map(([code, n]) => `${n} ${code === 'capping_risk' ? `capping > ${r.cappingThresholdPct} %` : code === 'outside_valid_range' ? 'outside valid range' : 'non-finite'}`);
  const line =
    `${r.requested} candidates on ${r.model.id} v${r.model.version} (${horizon}, seed ${r.seed}): ${r.ranked.length} ranked, ${r.discarded.length} discarded` +
    (drop.length > 0 ? ` (${drop.join(', ')})` : '') +
    (top
      ? `; best #${top.rank}: AV ${fmt(top.predicted.contentUniformityAv)}, capping ${fmt(top.predicted.cappingRiskPct)} %, takt ${fmt(top.predicted.taktMin, 0)} min`
      : '; no candidate passed: escalate to a person');
  return plain({
    model: { id: r.model.id, version: r.model.version },
    seed: r.seed,
    horizon,
    candidates: r.requested,
    ranked: r.ranked.length,
    discarded: r.discarded.length,
    discardedBy,
    best,
    capping: { thresholdPct: r.cappingThresholdPct, discarded: discardedBy.capping_risk, maxRankedPct: maxRanked, bestPct: top ? top.predicted.cappingRiskPct : null },
    line,
  });
}

export interface ArbitrationNote {
  winners: { setpoint: string; agent: string; requestId: string; attribute: string; score: number; value: number | null; justification: string }[];
  /** Losing requests with their score and reason (rule 4). */
  declined: {
    setpoint: string;
    agent: string;
    requestId: string;
    attribute: string;
    requested: RequestedValue;
    score: number;
    reason: string;
    winner: { requestId: string; agent: string; attribute: string; score: number } | null;
    ownedUntil: number | null;
    replan: boolean;
    at: number;
  }[];
  refused: { setpoint: string; agent: string; requestId: string; reasons: string[] }[];
  escalated: { setpoint: string; score: number; requestIds: string[]; reason: string; since: number }[];
  /** One human-readable line per decision, for the genealogy and the console. */
  lines: string[];
}

/** The genealogy’s record of one arbitration round. Never throws on a result of `arbitrate` or `resolveEscalation`. */
export function arbitrationNote(result: ArbitrationResult): ArbitrationNote {
  const show = (v: RequestedValue): string => (typeof v === 'object' ? `${v.value} ${v.unit}` : String(v));
  const winners = result.winners.map((w) => ({
    setpoint: w.request.setpoint,
    agent: w.request.agent,
    requestId: w.request.id,
    attribute: w.request.attribute,
    score: w.score,
    value: Number.isFinite(w.valueInSetpointUnit) ? w.valueInSetpointUnit : null,
    justification: w.request.justification,
  }));
  const declined = result.declined.map((d) => ({
    setpoint: d.request.setpoint,
    agent: d.request.agent,
    requestId: d.request.id,
    attribute: d.request.attribute,
    requested: typeof d.request.value === 'object' ? { value: d.request.value.value, unit: d.request.value.unit } : d.request.value,
    score: d.score,
    reason: d.reason,
    winner: d.winner ? { ...d.winner } : null,
    ownedUntil: d.ownedUntil,
    replan: d.replan,
    at: d.at,
  }));
  const refused = result.refused.map((r) => ({ setpoint: r.request.setpoint, agent: r.request.agent, requestId: r.request.id, reasons: [...r.reasons] }));
  const escalated = result.escalated.map((e) => ({ setpoint: e.setpoint, score: e.score, requestIds: e.requests.map((r) => r.id), reason: e.reason, since: e.since }));
  const lines = [
    ...winners.map((w) => `${w.setpoint}: ${w.agent} wins (${w.attribute}, score ${w.score})${w.value === null ? '' : ` → ${w.value}`}`),
    ...declined.map(
      (d) =>
        `${d.setpoint}: ${d.agent} declined (${d.attribute}, score ${d.score}, ${d.reason}${d.winner ? ` to ${d.winner.agent} ${d.winner.attribute} score ${d.winner.score}` : ''}), requested ${show(d.requested)}` +
        (d.replan ? '; re-plans by other means' : ''),
    ),
    ...refused.map((r) => `${r.setpoint}: ${r.agent} refused before arbitration (${r.reasons.join(', ')})`),
    ...escalated.map((e) => `${e.setpoint}: deadlock between ${e.requestIds.join(', ')} (score ${e.score}) escalated to a person`),
  ];
  return plain({ winners, declined, refused, escalated, lines });
}
