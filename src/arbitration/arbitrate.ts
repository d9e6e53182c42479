/**
 * Arbitration of contested setpoints (the spec's rules 1–4), pure:
 * `arbitrate(requests, state, now, bundle, scope) → result`.
 *
 * 1. Quality attributes (content uniformity, potency, dissolution, defect
 *    rate) outrank yield, energy and takt, whatever the order of arrival.
 * 2. A request outside the design space is refused before arbitration: the
 *    design space is a limit, not a target, so it never contests.
 * 3. The winner of a contest owns the setpoint for the bundle's ownership
 *    window; within it, equal or lower rank is declined; after it, the owner
 *    must re-justify with a new request.
 * 4. Every loser is returned with its score and reason (for the batch
 *    genealogy); a throughput loser is flagged to re-plan by other means.
 * A true deadlock (equal rank, different targets) escalates to a human and
 * stays pending: no path here resolves it by time. Only a human
 * ({@link resolveEscalation}) or a strictly higher-ranked request ends it.
 */
import { type ArbitrationAttribute, QUALITY_ATTRIBUTES, type ReasonCode, type RequestedValue, THROUGHPUT_ATTRIBUTES } from '../domain/policy.js';
import { LkError } from '../errors.js';
import { type PolicyBundle, designSpaceKey } from '../policy/bundle.js';
import { boundEpsilon, toSetpointUnit } from '../policy/value.js';

export interface ArbitrationRequest {
  /** Unique request id (ties are broken on it, never on arrival order). */
  readonly id: string;
  readonly agent: string;
  readonly setpoint: string;
  readonly value: RequestedValue;
  /** The attribute the move serves. */
  readonly attribute: ArbitrationAttribute;
  readonly justification: string;
  /** Epoch ms the agent made the request. */
  readonly at: number;
}

export interface Ownership {
  readonly setpoint: string;
  readonly agent: string;
  readonly requestId: string;
  readonly attribute: ArbitrationAttribute;
  readonly score: number;
  readonly value: number;
  readonly since: number;
  readonly expiresAt: number;
}

export interface Escalation {
  readonly setpoint: string;
  readonly score: number;
  readonly requests: readonly ArbitrationRequest[];
  readonly reason: 'DEADLOCK_EQUAL_RANK';
  readonly since: number;
}

export interface ArbitrationState {
  readonly owners: Readonly<Record<string, Ownership>>;
  readonly escalations: Readonly<Record<string, Escalation>>;
}

export type DeclineReason = 'OUTRANKED' | 'OWNED' | 'SUPERSEDED' | 'SAME_TARGET' | 'HUMAN_DECISION';

export interface Winner {
  readonly request: ArbitrationRequest;
  readonly score: number;
  readonly valueInSetpointUnit: number;
}

export interface Declined {
  readonly request: ArbitrationRequest;
  readonly score: number;
  readonly reason: DeclineReason;
  /** Who won instead (request id and agent), or the owner holding the setpoint. */
  readonly winner: { readonly requestId: string; readonly agent: string; readonly attribute: ArbitrationAttribute; readonly score: number } | null;
  /** When reason is OWNED: when the owner must re-justify. */
  readonly ownedUntil: number | null;
  /** True for throughput requests: re-plan by other means (e.g. re-sequence the next changeover) instead of moving the equipment. */
  readonly replan: boolean;
  readonly at: number;
}

export interface Refused {
  readonly request: ArbitrationRequest;
  readonly reasons: readonly ReasonCode[];
}

export interface ArbitrationResult {
  readonly winners: readonly Winner[];
  readonly declined: readonly Declined[];
  readonly refused: readonly Refused[];
  /** Escalations created or extended in this call (all pending ones stay in `state`). */
  readonly escalated: readonly Escalation[];
  readonly state: ArbitrationState;
}

export const EMPTY_ARBITRATION: ArbitrationState = Object.freeze({ owners: Object.freeze({}), escalations: Object.freeze({}) });

const QUALITY = new Set<string>(QUALITY_ATTRIBUTES);
const THROUGHPUT = new Set<string>(THROUGHPUT_ATTRIBUTES);

/** Score of an attribute: every quality attribute (2) outranks every throughput attribute (1). */
export function scoreOf(attribute: string): number | undefined {
  return QUALITY.has(attribute) ? 2 : THROUGHPUT.has(attribute) ? 1 : undefined;
}

interface Valid {
  readonly request: ArbitrationRequest;
  readonly score: number;
  readonly value: number;
}

const byAtThenId = (a: Valid, b: Valid): number => a.request.at - b.request.at || (a.request.id < b.request.id ? -1 : a.request.id > b.request.id ? 1 : 0);

/**
 * Arbitrate one round of requests at time `now`.
 * @param scope product and tooling family of the batch (for the design-space check of rule 2)
 * @throws LkError(LK_VALIDATION) when `now` is not finite or two requests share an id.
 */
export function arbitrate(
  requests: readonly ArbitrationRequest[],
  state: ArbitrationState,
  now: number,
  bundle: PolicyBundle,
  scope: { readonly product: string; readonly tooling: string },
): ArbitrationResult {
  if (!Number.isFinite(now)) throw new LkError('LK_VALIDATION', 'arbitration needs `now` as finite epoch milliseconds');
  const ids = new Set<string>();
  for (const r of requests) {
    if (ids.has(r.id)) throw new LkError('LK_VALIDATION', `duplicate arbitration request id "${r.id}"`, { id: r.id });
    if (typeof r.at !== 'number' || !Number.isFinite(r.at)) throw new LkError('LK_VALIDATION', `request "${r.id}" needs \`at\` as finite epoch milliseconds`, { id: r.id });
    ids.add(r.id);
  }
  const out = new Collector(state, now, bundle.content.ownershipWindowMs);
  const groups = new Map<string, Valid[]>();
  for (const request of requests) {
    const reasons = refuse(request, bundle, scope);
    if ('reasons' in reasons) {
      out.refused.push({ request, reasons: reasons.reasons });
      continue;
    }
    const list = groups.get(request.setpoint) ?? [];
    list.push({ request, score: reasons.score, value: reasons.value });
    groups.set(request.setpoint, list);
  }
  for (const setpoint of [...groups.keys()].sort()) {
    const latest = supersede(groups.get(setpoint)!, out);
    out.settle(setpoint, latest);
  }
  return out.result();
}

/**
 * A human decides a pending deadlock: the chosen request wins and owns the setpoint; the others are declined.
 * @throws LkError(LK_NOT_FOUND) when no escalation is pending for the setpoint or the request is not part of it.
 * @throws LkError(LK_POLICY_DENIED) when the person is not named or their role may not review.
 */
export function resolveEscalation(
  state: ArbitrationState,
  setpoint: string,
  decision: { readonly requestId: string; readonly by: { readonly person: string; readonly role: string }; readonly reason: string },
  now: number,
  bundle: PolicyBundle,
): ArbitrationResult {
  const esc = state.escalations[setpoint];
  if (!esc) throw new LkError('LK_NOT_FOUND', `no escalation is pending for ${setpoint}`, { setpoint });
  const chosen = esc.requests.find((r) => r.id === decision.requestId);
  if (!chosen) throw new LkError('LK_NOT_FOUND', `request "${decision.requestId}" is not part of the escalation for ${setpoint}`, { setpoint });
  const roles = bundle.index.reviewerRoles;
  if (!decision.by.person || !roles.has(decision.by.role)) {
    throw new LkError('LK_POLICY_DENIED', `a named person with a reviewer or QA role must decide (got role "${decision.by.role}")`, { role: decision.by.role });
  }
  const sp = bundle.index.setpoints.get(setpoint);
  const conv = sp ? toSetpointUnit(bundle.index, chosen.value, sp.unit) : undefined;
  const value = conv?.ok ? conv.value : Number.NaN;
  const out = new Collector(state, now, bundle.content.ownershipWindowMs);
  out.escalations.delete(setpoint);
  out.win({ request: chosen, score: esc.score, value }, true);
  for (const r of esc.requests) if (r !== chosen) out.decline({ request: r, score: esc.score, value: Number.NaN }, 'HUMAN_DECISION', { request: chosen, score: esc.score }, null);
  return out.result();
}

/** Rule 2 and input hygiene: returns the score and the value in the setpoint's unit, or the refusal reasons. */
function refuse(r: ArbitrationRequest, bundle: PolicyBundle, scope: { product: string; tooling: string }): { score: number; value: number } | { reasons: ReasonCode[] } {
  const reasons: ReasonCode[] = [];
  const score = scoreOf(r.attribute);
  if (score === undefined) reasons.push('ATTRIBUTE_UNKNOWN');
  const sp = bundle.index.setpoints.get(r.setpoint);
  if (!sp) return { reasons: [...reasons, 'TAG_UNKNOWN'] };
  const limit = bundle.index.designSpaces.get(designSpaceKey(scope.product, scope.tooling))?.get(r.setpoint);
  if (!limit) return { reasons: [...reasons, 'DESIGN_SPACE_UNKNOWN'] };
  const v = toSetpointUnit(bundle.index, r.value, sp.unit);
  if (!v.ok) return { reasons: [...reasons, v.reason] };
  const eps = boundEpsilon(limit.min, limit.max);
  if (v.value < limit.min - eps || v.value > limit.max + eps) reasons.push('OUTSIDE_DESIGN_SPACE');
  return reasons.length > 0 || score === undefined ? { reasons } : { score, value: v.value };
}

/** One agent, one setpoint, one round: its latest request stands, earlier ones are declined explicitly (never merged). */
function supersede(list: Valid[], out: Collector): Valid[] {
  const byAgent = new Map<string, Valid[]>();
  for (const v of list) byAgent.set(v.request.agent, [...(byAgent.get(v.request.agent) ?? []), v]);
  const latest: Valid[] = [];
  for (const vs of byAgent.values()) {
    vs.sort(byAtThenId);
    const last = vs[vs.length - 1]!;
    latest.push(last);
    for (const v of vs.slice(0, -1)) out.decline(v, 'SUPERSEDED', last, null);
  }
  return latest.sort(byAtThenId);
}

class Collector {
  readonly winners: Winner[] = [];
  readonly declined: Declined[] = [];
  readonly refused: Refused[] = [];
  readonly escalated: Escalation[] = [];
  readonly owners: Map<string, Ownership>;
  readonly escalations: Map<string, Escalation>;

  constructor(
    state: ArbitrationState,
    private readonly now: number,
    private readonly windowMs: number,
  ) {
    this.owners = new Map(Object.entries(state.owners));
    this.escalations = new Map(Object.entries(state.escalations));
  }

  win(v: Valid, contested: boolean): void {
    this.winners.push({ request: v.request, score: v.score, valueInSetpointUnit: v.value });
    if (contested) {
      const r = v.request;
      this.owners.set(r.setpoint, { setpoint: r.setpoint, agent: r.agent, requestId: r.id, attribute: r.attribute, score: v.score, value: v.value, since: this.now, expiresAt: this.now + this.windowMs });
    }
  }

  decline(v: Valid, reason: DeclineReason, winner: { request: ArbitrationRequest; score: number } | Ownership | null, ownedUntil: number | null): void {
    const w = winner === null ? null : 'request' in winner ? { requestId: winner.request.id, agent: winner.request.agent, attribute: winner.request.attribute, score: winner.score } : { requestId: winner.requestId, agent: winner.agent, attribute: winner.attribute, score: winner.score };
    this.declined.push({ request: v.request, score: v.score, reason, winner: w, ownedUntil, replan: THROUGHPUT.has(v.request.attribute), at: this.now });
  }

  /** Decide one setpoint from its latest request per agent. */
  settle(setpoint: string, list: Valid[]): void {
    const top = Math.max(...list.map((v) => v.score));
    const esc = this.escalations.get(setpoint);
    if (esc) {
      if (top <= esc.score) {
        // the deadlock stays with the human; equal rank joins it, lower rank cannot win it
        const known = new Set(esc.requests.map((r) => r.id));
        const joined = list.filter((v) => v.score === esc.score && !known.has(v.request.id)).map((v) => v.request);
        for (const v of list) if (v.score < esc.score) this.decline(v, 'OUTRANKED', null, null);
        const next = { ...esc, requests: [...esc.requests, ...joined] };
        this.escalations.set(setpoint, next);
        this.escalated.push(next);
        return;
      }
      // a strictly higher rank decides by rule 1: the deadlocked requests lose to it
      this.escalations.delete(setpoint);
      const escTop = list.filter((v) => v.score === top);
      const winner = escTop.length === 1 ? escTop[0]! : undefined;
      for (const r of esc.requests) this.decline({ request: r, score: esc.score, value: Number.NaN }, 'OUTRANKED', winner ?? null, null);
    }
    let owner = this.owners.get(setpoint);
    if (owner && owner.expiresAt <= this.now) {
      this.owners.delete(setpoint); // rule 3: the window ran out; the owner must re-justify
      owner = undefined;
    }
    const incumbent = owner ? list.find((v) => v.request.agent === owner.agent) : undefined;
    let contenders = list;
    if (owner) {
      // within the window a challenger needs a strictly higher rank than the owner's claim
      const holdScore = Math.max(owner.score, incumbent?.score ?? 0);
      const challengers = list.filter((v) => v !== incumbent && v.score > holdScore);
      for (const v of list) if (v !== incumbent && v.score <= holdScore) this.decline(v, 'OWNED', owner, owner.expiresAt);
      if (challengers.length === 0) {
        if (incumbent) this.win(incumbent, false);
        return;
      }
      if (incumbent) this.decline(incumbent, 'OUTRANKED', null, null);
      contenders = challengers;
    }
    this.contest(setpoint, contenders, owner !== undefined);
  }

  private contest(setpoint: string, list: Valid[], tookOver: boolean): void {
    const top = Math.max(...list.map((v) => v.score));
    const best = list.filter((v) => v.score === top);
    const lower = list.filter((v) => v.score < top);
    const first = best[0]!;
    const eps = boundEpsilon(first.value, first.value);
    if (best.length > 1 && best.some((v) => Math.abs(v.value - first.value) > eps)) {
      const esc: Escalation = { setpoint, score: top, requests: best.map((v) => v.request), reason: 'DEADLOCK_EQUAL_RANK', since: this.now };
      this.escalations.set(setpoint, esc);
      this.escalated.push(esc);
      this.owners.delete(setpoint);
      for (const v of lower) this.decline(v, 'OUTRANKED', null, null);
      return;
    }
    // best is sorted by (at, id): equal targets of equal rank → the earliest stands, the rest are declined explicitly
    this.win(first, list.length > 1 || tookOver);
    for (const v of best.slice(1)) this.decline(v, 'SAME_TARGET', first, null);
    for (const v of lower) this.decline(v, 'OUTRANKED', first, null);
  }

  result(): ArbitrationResult {
    return {
      winners: this.winners,
      declined: this.declined,
      refused: this.refused,
      escalated: this.escalated,
      state: { owners: Object.fromEntries(this.owners), escalations: Object.fromEntries(this.escalations) },
    };
  }
}
