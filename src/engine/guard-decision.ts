/**
 * The guarded writer's decisions, as values: arbitration and policy in, a plan
 * of actions out (decide/evolve style). No I/O, no clock, no randomness: the
 * time, the current values, the policy contexts and the id of a new pending
 * write are inputs, so a recorded input replays to the same plan. The executor
 * (guarded-writer.ts) journals, writes, reads back and reverts what a plan says.
 *
 * Two steps, because the current values are read from the equipment between
 * them and only when arbitration lets the proposal through:
 *   {@link decideArbitration}: contest the setpoints → declined / go on;
 *   {@link decideWrite}: evaluate each move → denied, recommended, pending, stale or write.
 */
import { type ArbitrationResult, type ArbitrationState, type Declined, type Escalation, arbitrate } from '../arbitration/index.js';
import type { AuditEntryInput } from '../audit/index.js';
import type { Approval, Decision, PolicyContext } from '../domain/policy.js';
import { type PolicyBundle, combineDecisions, evaluate, vectorHash } from '../policy/index.js';
import { json } from './json.js';
import { entryFor, supersededBy, withoutWins } from './proposal.js';
import type { PendingWrite, WriteProposal } from './writer-types.js';

/** A move of the vector in the setpoint's own unit, with the value the equipment held before (NaN: unknown). */
export type Move = { readonly setpoint: string; readonly value: number; readonly unit: string; readonly old: number };

/** The approval being executed: the pending write it came from, and the vector hash it binds to. */
export interface ApprovalInForce {
  readonly approval: Approval;
  readonly pendingId: string;
  readonly vectorHash: string;
}

/** Outcome of {@link decideArbitration}. */
export type ArbitrationPlan =
  /** Nothing contested (or no bundle: policy denies later); `result` null when arbitration did not run. */
  | { readonly kind: 'proceed'; readonly result: ArbitrationResult | null }
  /** Declined or escalated: audit `entry`, keep `arbNext`, settle an approval with `status`. Nothing is read or written. */
  | {
    readonly kind: 'declined';
    readonly status: 'declined' | 'escalated';
    readonly entry: AuditEntryInput;
    readonly arbNext: ArbitrationState;
    readonly declined: readonly Declined[];
    readonly escalation?: Escalation;
  };

/**
 * Contest the proposal's setpoints with the owners and escalations in force. A move outside the design space
 * does not contest here: policy sends it to QA or denies it. Without a bundle nothing is arbitrated.
 * @throws LkError LK_VALIDATION from {@link arbitrate} for a non-finite `now` (a bug of the caller).
 */
export function decideArbitration(p: WriteProposal, bundle: PolicyBundle | null, arb: ArbitrationState, now: number): ArbitrationPlan {
  if (!bundle) return { kind: 'proceed', result: null };
  const reqs = p.moves.map((m) => ({
    id: `${p.id}:${m.setpoint}`, agent: p.agent, setpoint: m.setpoint, value: m.value,
    attribute: p.attribute, justification: p.justification, at: now,
  }));
  const r = arbitrate(reqs, arb, now, bundle, { product: p.product, tooling: p.tooling });
  if (r.declined.length === 0 && r.escalated.length === 0) return { kind: 'proceed', result: r };
  const esc = r.escalated[0];
  const entry = entryFor(p, {
    kind: 'arbitration', action: 'arbitration.decline',
    result: json({ declined: r.declined, escalated: r.escalated }),
    reason: r.declined.map((d) => d.reason).join(', ') || 'DEADLOCK_EQUAL_RANK',
  });
  return {
    kind: 'declined', status: esc ? 'escalated' : 'declined', entry, arbNext: withoutWins(arb, r, p.id),
    declined: r.declined, ...(esc ? { escalation: esc } : {}),
  };
}

/** What {@link decideWrite} decides on: everything is a value the executor gathered at call time. */
export interface WriteInput {
  readonly proposal: WriteProposal;
  readonly bundle: PolicyBundle | null;
  readonly now: number;
  /** Arbitration state before this proposal, and the result of {@link decideArbitration} ('proceed'). */
  readonly arb: ArbitrationState;
  readonly arbResult: ArbitrationResult | null;
  /** The policy context of each move, in the order of `proposal.moves`. */
  readonly contexts: readonly PolicyContext[];
  /** Current values read from the equipment (null or absent: unknown). */
  readonly current: ReadonlyMap<string, number | null>;
  readonly approving: ApprovalInForce | null;
  /** The pending queue, oldest first. */
  readonly pending: readonly PendingWrite[];
  /** Id for a pending write this decision may queue (the executor draws it, lazily: read only when one is queued). */
  readonly newPendingId: string;
}

interface Decided {
  readonly decisions: readonly Decision[];
  /** The policy_decision entries, one per move. */
  readonly decisionEntries: readonly AuditEntryInput[];
  readonly vectorHash: string | null;
}

/** Plan of a proposal (or approval) that arbitration let through. */
export type WritePlan =
  /** Audit the decisions, keep `arbNext`, settle an approval with `status`. */
  | Decided & { readonly kind: 'closed'; readonly status: 'denied' | 'recommended'; readonly arbNext: ArbitrationState }
  /** Audit the decisions, decline `supersede`, queue `pending` (audited by `entry`), settle an approval as pending. */
  | Decided & {
    readonly kind: 'queue'; readonly arbNext: ArbitrationState; readonly supersede: readonly PendingWrite[];
    readonly pending: PendingWrite; readonly entry: AuditEntryInput;
  }
  /**
   * The bundle in force computes another vector than the one approved: audit the decisions, re-key the pending
   * write (`requeue`, absent when it left the queue meanwhile) and refuse the approval (LK_APPROVAL_STALE).
   */
  | Decided & { readonly kind: 'stale'; readonly vectorHash: string; readonly requeue?: { readonly pending: PendingWrite; readonly entry: AuditEntryInput } }
  /** Audit the decisions with the first intent, decline `supersede`, then write `moves` one by one (`intents[i]` before move i). */
  | Decided & {
    readonly kind: 'write'; readonly vectorHash: string; readonly arbNext: ArbitrationState; readonly supersede: readonly PendingWrite[];
    readonly moves: readonly Move[]; readonly intents: readonly AuditEntryInput[];
  };

/**
 * Evaluate every move with its context, combine them (the most restrictive move decides the vector) and say what
 * to do. A kept move (allowed or waiting for approval) owns its setpoint; a refused one gives the ownership back.
 * Never throws for a refusal: a denial is a plan.
 */
export function decideWrite(x: WriteInput): WritePlan {
  const { proposal: p, bundle, approving } = x;
  const decisions = p.moves.map((m, i) => evaluate(
    { agent: p.agent, setpoint: m.setpoint, value: m.value, product: p.product, tooling: p.tooling }, bundle, x.contexts[i]!,
  ));
  const decisionEntries = decisions.map((d, i) => entryFor(p, {
    kind: 'policy_decision', action: 'policy.evaluate', subject: { setpoint: p.moves[i]!.setpoint },
    args: json(d.inputs), result: json({ ...d, inputs: undefined }), reason: d.reasons.join(', ') || d.outcome,
  }));
  const combined = combineDecisions(decisions);
  const moves = vectorOf(p, decisions, x.current);
  const hash = moves ? vectorHash({ agent: p.agent, product: p.product, tooling: p.tooling, moves }) : null;
  const decided = { decisions, decisionEntries, vectorHash: hash };
  if (approving && hash && hash !== approving.vectorHash && combined.outcome !== 'deny') {
    return { ...decided, kind: 'stale', vectorHash: hash, ...staleRequeue(x, hash, decisions) };
  }
  const keep = combined.outcome === 'allow' || combined.pendingApproval !== 'none';
  const arbNext = x.arbResult ? (keep ? x.arbResult.state : withoutWins(x.arb, x.arbResult, p.id)) : x.arb;
  if (combined.outcome === 'deny' || (combined.outcome !== 'allow' && (combined.pendingApproval === 'none' || !hash))) {
    return { ...decided, kind: 'closed', status: combined.outcome === 'deny' ? 'denied' : 'recommended', arbNext };
  }
  const victims = supersededBy(x.pending, p, approving?.pendingId ?? null);
  if (combined.outcome !== 'allow') {
    const needs = combined.pendingApproval === 'qa' ? 'qa' : 'reviewer';
    const existing = x.pending.find((w) => w.proposal.id === p.id);
    const id = existing?.id ?? x.newPendingId;
    const pending: PendingWrite = {
      id, proposal: p, vectorHash: hash!, needs, since: existing?.since ?? x.now,
      reasons: decisions.flatMap((d) => d.reasons), bundleVersion: bundle?.version ?? null,
    };
    const entry = entryFor(p, {
      kind: 'state_change', action: 'setpoint.pending',
      args: json({ pendingId: id, vectorHash: hash, needs, bundle: pending.bundleVersion }),
      reason: `waits for ${needs === 'qa' ? 'QA' : 'a named reviewer'}`,
    });
    return { ...decided, kind: 'queue', arbNext, supersede: victims.filter((v) => v.id !== id), pending, entry };
  }
  const intents = moves!.map((m, i) => entryFor(p, {
    kind: 'intent', action: 'setpoint.write', subject: { setpoint: m.setpoint },
    args: json({ decision: decisions[i]!.id, bundleVersion: decisions[i]!.bundleVersion, vectorHash: hash, unit: m.unit }),
    old: json(m.old), new: m.value,
  }));
  return { ...decided, kind: 'write', vectorHash: hash!, arbNext, supersede: victims, moves: moves!, intents };
}

/** The vector in setpoint units, or null when a move has no value in its setpoint's unit (then it cannot be written). */
function vectorOf(p: WriteProposal, ds: readonly Decision[], current: ReadonlyMap<string, number | null>): Move[] | null {
  if (!ds.every((d) => d.valueInSetpointUnit !== null && d.setpointUnit !== null)) return null;
  return ds.map((d, i) => {
    const setpoint = p.moves[i]!.setpoint;
    return { setpoint, value: d.valueInSetpointUnit!, unit: d.setpointUnit!, old: current.get(setpoint) ?? Number.NaN };
  });
}

function staleRequeue(x: WriteInput, hash: string, decisions: readonly Decision[]): { requeue?: { pending: PendingWrite; entry: AuditEntryInput } } {
  const pw = x.pending.find((w) => w.id === x.approving!.pendingId);
  if (!pw) return {};
  const pending: PendingWrite = { ...pw, vectorHash: hash, reasons: decisions.flatMap((d) => d.reasons), bundleVersion: x.bundle?.version ?? null };
  const entry = entryFor(x.proposal, {
    kind: 'state_change', action: 'setpoint.pending',
    args: json({ pendingId: pw.id, vectorHash: hash, needs: pw.needs, bundle: pending.bundleVersion, staleApproval: x.approving!.vectorHash }),
    reason: 'the bundle in force computes another vector: the approval is stale, a new one is needed',
  });
  return { requeue: { pending, entry } };
}

/** What to do when a vector fails part-way: the alarm entry, and the moves to put back, last written first. */
export interface RevertPlan {
  readonly alarm: AuditEntryInput;
  /** Moves to revert (to `old`), in order; a move with an unknown old value or no connector is left as it is. */
  readonly revert: readonly Move[];
  /** True when every touched move is in `revert` (else the outcome is `failed` whatever the reverts do). */
  readonly complete: boolean;
}

/**
 * The vector is all or nothing: alarm, then put back every setpoint touched so far, last first.
 * `writable` says whether a setpoint still has a connector to write through.
 */
export function decideRevert(p: WriteProposal, touched: readonly Move[], what: string, error: { readonly code: string; readonly message: string }, writable: (setpoint: string) => boolean): RevertPlan {
  const back = [...touched].reverse();
  const revert = back.filter((m) => Number.isFinite(m.old) && writable(m.setpoint));
  const alarm = entryFor(p, {
    actor: 'system', kind: 'alarm',
    action: error.code === 'LK_READBACK_MISMATCH' ? 'setpoint.readback_mismatch' : 'setpoint.write_failed',
    reason: what, result: json({ error, moves: touched.map((m) => m.setpoint) }),
  });
  return { alarm, revert, complete: revert.length === back.length };
}

/** The audit intent of reverting `move` (the executor journals it before the write). */
export function revertIntent(p: WriteProposal, move: Move, what: string): AuditEntryInput {
  return entryFor(p, { actor: 'system', kind: 'intent', action: 'setpoint.revert', subject: { setpoint: move.setpoint }, old: move.value, new: move.old, reason: what });
}
