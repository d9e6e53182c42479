/**
 * The outcome of one contest for one setpoint, as a person reads it (the genealogy, the audit trail's reason):
 * a winner with its declined losers, or an escalation that holds the setpoint for a person — one or the other,
 * never both, and never an empty "contested: ;". Pure.
 */
import type { RequestedValue } from '../domain/policy.js';
import type { ArbitrationRequest, ArbitrationResult, Escalation } from './arbitrate.js';

export interface ContestLoser {
  readonly agent: string;
  readonly setpoint: string;
  readonly attribute: string;
  readonly requested: string;
  readonly score: number;
  /** The decline reason with who won, e.g. `OUTRANKED by agent.quality_conf (content_uniformity, score 2)`. */
  readonly reason: string;
  readonly replan: boolean;
}

export type ContestOutcome =
  | {
    readonly kind: 'won';
    readonly setpoint: string;
    /** Who holds the setpoint after the contest: a new winner, or the owner whose window still runs. */
    readonly winner: { readonly agent: string; readonly attribute: string; readonly score: number; readonly requested: string | null; readonly owner: boolean };
    readonly declined: readonly ContestLoser[];
  }
  | {
    readonly kind: 'escalated';
    readonly setpoint: string;
    /** True when this contest opened the escalation; false when it found one waiting (the setpoint stays held). */
    readonly opened: boolean;
    readonly escalation: Escalation;
  }
  | { readonly kind: 'none'; readonly setpoint: string };

/** A requested value as a person reads it: `13 kN`. */
export function requestedText(v: RequestedValue): string {
  return typeof v === 'object' ? `${v.value} ${v.unit}` : String(v);
}

const side = (r: ArbitrationRequest): string => `${r.agent} (${r.attribute}) ${requestedText(r.value)}`;

/** The one outcome of `result` for `setpoint`. Never throws. */
export function contestOutcome(setpoint: string, result: ArbitrationResult): ContestOutcome {
  const esc = result.escalated.find((e) => e.setpoint === setpoint);
  if (esc) return { kind: 'escalated', setpoint, opened: esc.since === result.at, escalation: esc };
  const declined = result.declined.filter((d) => d.request.setpoint === setpoint && d.reason !== 'SUPERSEDED');
  const w = result.winners.find((x) => x.request.setpoint === setpoint);
  const by = declined.find((d) => d.winner !== null)?.winner ?? null;
  if (!w && !by) return { kind: 'none', setpoint };
  const winner = w
    ? { agent: w.request.agent, attribute: w.request.attribute, score: w.score, requested: requestedText(w.request.value), owner: false }
    : { agent: by!.agent, attribute: by!.attribute, score: by!.score, requested: null, owner: true };
  return {
    kind: 'won', setpoint, winner,
    declined: declined.map((d) => ({
      agent: d.request.agent, setpoint, attribute: d.request.attribute, requested: requestedText(d.request.value), score: d.score, replan: d.replan,
      reason: `${d.reason}${d.winner ? ` by ${d.winner.agent} (${d.winner.attribute}, score ${d.winner.score})` : ''}`,
    })),
  };
}

/** One line for the genealogy: what was contested and its one outcome. */
export function contestText(o: ContestOutcome): string {
  if (o.kind === 'none') return `${o.setpoint}: no contest`;
  if (o.kind === 'escalated') {
    const e = o.escalation;
    const rank = e.score >= 2 ? 'quality' : 'throughput';
    const held = (e.outranked ?? []).length > 0 ? `; held with it, lower rank: ${(e.outranked ?? []).map(side).join(', ')}` : '';
    const head = o.opened
      ? `${o.setpoint} contested: deadlock of equal rank (${rank}) between ${e.requests.map(side).join(' and ')}: escalated to a person`
      : `${o.setpoint} contested: still held by the deadlock escalated at ${new Date(e.since).toISOString()} between ${e.requests.map(side).join(' and ')}`;
    return `${head}; the setpoint is held until a named person decides${held}`;
  }
  const w = o.winner;
  const win = w.owner ? `${w.agent} (${w.attribute}, score ${w.score}) keeps it as its owner` : `${w.agent} (${w.attribute}, score ${w.score}) wins${w.requested ? ` with ${w.requested}` : ''}`;
  const lost = o.declined.map((d) => `${d.agent} declined (requested ${d.requested}, score ${d.score}): ${d.reason}${d.replan ? ', re-plans by other means' : ''}`);
  return `${o.setpoint} contested: ${win}${lost.length > 0 ? `; ${lost.join('; ')}` : ''}`;
}
