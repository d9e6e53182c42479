/**
 * What a step leaves waiting for a person when it ends. A setpoint move still waiting for its reviewer belongs
 * to the process state of its step: once the step has ended (or the run), signing it would approve a move on a
 * phase that is over, so it is **withdrawn** (audited with the reason; a later signature is refused with
 * LK_MOVE_WITHDRAWN) and recorded for review as a `MOVE_UNREVIEWED` exception. An arbitration deadlock of the
 * run still waiting is an `ESCALATION_UNRESOLVED` exception; the escalation itself stays pending and keeps
 * holding its setpoint until a named person decides it (never resolved by time or by the step ending).
 */
import type { Escalation } from '../../arbitration/index.js';
import { requestedText } from '../../arbitration/index.js';
import type { RunRecord } from '../../store/run-store.js';
import type { GuardedWriter, PendingWrite } from '../guarded-writer.js';
import type { RaiseInput } from './exceptions.js';

export interface StepWaitsDeps {
  readonly writer: GuardedWriter;
  readonly raise: (run: RunRecord, e: RaiseInput) => unknown;
  /** The batch's assigned reviewer (who an L2 move waits for). */
  readonly reviewer: (tenant: string, batch: string) => string | null;
}

/** A pending write comes from a step of this run: the run engine's proposal ids are `<run>:<seq>:<attempt>:<n>`. */
export function moveOfStep(w: PendingWrite, run: string, seq: string | null): boolean {
  if (w.proposal.run !== run) return false;
  return seq === null || w.proposal.id.startsWith(`${run}:${seq}:`);
}

/**
 * An escalation has a side (or a held request) of this run — of its step `seq` when given: the engine's request
 * ids start with `<run>:<seq>:` (a proposal's with its id, a contest round's with the step's).
 */
export function escalationOfRun(e: Escalation, run: string, seq: string | null = null): boolean {
  const prefix = seq === null ? `${run}:` : `${run}:${seq}:`;
  return [...e.requests, ...(e.outranked ?? [])].some((r) => r.id.startsWith(prefix));
}

/** `press.MainForce 12 → 10.5 kN` for each move of a pending write. */
export function movesText(w: PendingWrite): string {
  return w.proposal.moves.map((m) => `${m.setpoint} → ${requestedText(m.value)}`).join(', ');
}

/**
 * The step `step` of `run` ended (`seq` null: the run ended): withdraw its pending moves and raise what waited
 * unreviewed. Never throws for a move or an escalation (it logs through the exception it raises).
 */
export async function closeStepWaits(d: StepWaitsDeps, run: RunRecord, step: { readonly seq: string; readonly name: string } | null, attempt: number, how: string): Promise<void> {
  const where = step ? `step ${step.seq} ${step.name}` : `run ${run.id}`;
  const reason = `${where} ended (${how}) before a person decided`;
  const gone = await d.writer.withdraw((w) => moveOfStep(w, run.id, step?.seq ?? null), reason);
  for (const w of gone) {
    const waitedFor = w.needs === 'qa' ? 'QA' : (d.reviewer(run.tenant, run.batch) ?? 'the batch\'s reviewer');
    d.raise(run, {
      kind: 'MOVE_UNREVIEWED', key: `MOVE_UNREVIEWED:${w.id}`, step, by: 'system', ...(w.proposal.moves[0] ? { tag: w.proposal.moves[0].setpoint } : {}),
      title: `MOVE_UNREVIEWED ${w.proposal.agent}: ${movesText(w)} waited for ${waitedFor} from ${new Date(w.since).toISOString()}; withdrawn when ${where} ended`,
      evidence: { pendingId: w.id, agent: w.proposal.agent, moves: w.proposal.moves, needs: w.needs, waitedFor, since: w.since, vectorHash: w.vectorHash, reasons: w.reasons, withdrawn: reason },
    });
  }
  if (!step) return;
  for (const { tenant, escalation: e } of d.writer.escalations()) {
    if (tenant !== run.tenant || !escalationOfRun(e, run.id, step.seq)) continue;
    d.raise(run, {
      kind: 'ESCALATION_UNRESOLVED', key: `ESCALATION_UNRESOLVED:${e.setpoint}:${step.seq}:${attempt}`, step, by: 'agent.orchestrator', tag: e.setpoint,
      title: `ESCALATION_UNRESOLVED ${e.setpoint}: the deadlock between ${e.requests.map((r) => `${r.agent} (${requestedText(r.value)})`).join(' and ')} escalated at ${new Date(e.since).toISOString()} was not decided when ${where} ended; it holds the setpoint until a named person decides`,
      evidence: { setpoint: e.setpoint, since: e.since, score: e.score, sides: e.requests.map((r) => ({ requestId: r.id, agent: r.agent, target: requestedText(r.value), attribute: r.attribute })), outranked: (e.outranked ?? []).map((r) => ({ requestId: r.id, agent: r.agent, target: requestedText(r.value) })) },
    });
  }
}
