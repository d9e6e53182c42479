/**
 * Arbitration of contested setpoints (the spec's rules 1–4), pure:
 * `arbitrate(requests, state, now, bundle, scope) → result`.
 *
 * 1. Quality attributes (content uniformity, potency, dissolution, defect
 *    rate) outrank yield, energy and takt, whatever the order of arrival.
 * 2. A request outside the design space is refused before arbitration: the
 *    design space is a limit, not a target, so it never contests.
 * 3. The winner owns the setpoint for the bundle's ownership window; a
 *    request of another agent inside the window contests the owner's claim
 *    (higher rank takes over, lower rank is declined until the window ends,
 *    equal rank with another target is a deadlock). After the window the
 *    owner must re-justify with a new request.
 * 4. Every loser is returned with its score and reason (for the batch
 *    genealogy); a throughput loser is flagged to re-plan by other means.
 * A true deadlock (equal rank, different targets) escalates to a human and
 * stays pending: no path here resolves it by time. Only a human
 * ({@link resolveEscalation}) or a strictly higher-ranked request ends it.
 * One contest gives one outcome: a winner with its declined losers, or an
 * escalation — never both. A lower-ranked request in a deadlocked contest is
 * not declined without a winner: it is held with the escalation (`outranked`)
 * and declined, naming the winner, when the person decides.
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
  /** The request that won (kept so a deadlock against the owner shows both sides to the human). */
  readonly request: ArbitrationRequest;
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
  /** The deadlocked sides (equal rank), the latest request per agent. */
  readonly requests: readonly ArbitrationRequest[];
  /**
   * Lower-ranked requests of the contested setpoint while it is held (the latest per agent): they cannot win the
   * deadlock and are declined, naming the winner, when it is decided. Absent in escalations stored before it existed.
   */
  readonly outranked?: readonly ArbitrationRequest[];
  readonly reason: 'DEADLOCK_EQUAL_RANK';
  readonly since: number;
}

export interface ArbitrationState {
  readonly owners: Readonly<Record<string, Ownership>>;
  readonly escalations: Readonly<Record<string, Escalation>>;
}

export type DeclineReason = 'OUTRANKED' | 'SUPERSEDED' | 'SAME_TARGET' | 'HUMAN_DECISION';

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
  /** When the setpoint is owned by the winner: when its window ends and the owner must re-justify. */
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
  /** The time the round was decided at (an escalation opened by it has `since` equal to it). */
  readonly at: number;
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
  out.win({ request: chosen, score: esc.score, value });
  const until = now + bundle.content.ownershipWindowMs;
  for (const r of esc.requests) if (r !== chosen) out.decline({ request: r, score: esc.score, value: Number.NaN }, 'HUMAN_DECISION', { request: chosen, score: esc.score }, until);
  for (const r of esc.outranked ?? []) out.decline({ request: r, score: scoreOf(r.attribute) ?? 0, value: Number.NaN }, 'OUTRANKED', { request: chosen, score: esc.score }, until);
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

/** `held` with `incoming` added: one request per agent, the newer replacing the earlier (a request already held stays). */
function join(held: readonly ArbitrationRequest[], incoming: readonly ArbitrationRequest[]): ArbitrationRequest[] {
  const out = [...held];
  for (const r of incoming) {
    if (out.some((x) => x.id === r.id)) continue;
    const i = out.findIndex((x) => x.agent === r.agent);
    if (i >= 0) out[i] = r;
    else out.push(r);
  }
  return out;
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

  /** A winner owns the setpoint for the window from now. */
  win(v: Valid): void {
    this.winners.push({ request: v.request, score: v.score, valueInSetpointUnit: v.value });
    const r = v.request;
    this.owners.set(r.setpoint, { request: r, setpoint: r.setpoint, agent: r.agent, requestId: r.id, attribute: r.attribute, score: v.score, value: v.value, since: this.now, expiresAt: this.now + this.windowMs });
  }

  decline(v: Valid, reason: DeclineReason, winner: { request: ArbitrationRequest; score: number } | null, ownedUntil: number | null): void {
    const w = winner === null ? null : { requestId: winner.request.id, agent: winner.request.agent, attribute: winner.request.attribute, score: winner.score };
    this.declined.push({ request: v.request, score: v.score, reason, winner: w, ownedUntil, replan: THROUGHPUT.has(v.request.attribute), at: this.now });
  }

  /** Decide one setpoint from its latest request per agent. */
  settle(setpoint: string, latest: Valid[]): void {
    let list = latest;
    const top = Math.max(...list.map((v) => v.score));
    const esc = this.escalations.get(setpoint);
    if (esc) {
      if (top <= esc.score) {
        // the deadlock stays with the human and holds the setpoint: equal rank joins it as a side, lower rank is
        // held with it (it cannot win it); an agent's newer request replaces its earlier one (no side grows without end)
        const sides = join(esc.requests, list.filter((v) => v.score === esc.score).map((v) => v.request));
        const outranked = join(esc.outranked ?? [], list.filter((v) => v.score < esc.score).map((v) => v.request));
        const next: Escalation = { ...esc, requests: sides, ...(outranked.length > 0 ? { outranked } : {}) };
        this.escalations.set(setpoint, next);
        this.escalated.push(next);
        return;
      }
      // a strictly higher rank decides by rule 1: the deadlocked requests (and those held with them) contest with
      // their rank and lose to whatever this contest gives — a winner, named in their decline, or a new escalation
      this.escalations.delete(setpoint);
      const carried = [...esc.requests.map((r) => ({ request: r, score: esc.score })), ...(esc.outranked ?? []).map((r) => ({ request: r, score: scoreOf(r.attribute) ?? 0 }))];
      const agents = new Set(list.map((v) => v.request.agent));
      for (const c of carried) {
        // an agent that asked again in this round stands by its new request: its held one is superseded by it
        if (agents.has(c.request.agent)) this.decline({ ...c, value: Number.NaN }, 'SUPERSEDED', list.find((v) => v.request.agent === c.request.agent)!, null);
        else list = [...list, { ...c, value: Number.NaN }];
      }
    }
    let owner = this.owners.get(setpoint);
    if (owner && owner.expiresAt <= this.now) {
      this.owners.delete(setpoint); // rule 3: the window ran out; the owner must re-justify
      owner = undefined;
    }
    if (!owner) return this.contest(setpoint, list, null);
    const o = owner;
    const incumbent = list.find((v) => v.request.agent === o.agent);
    // the owner's standing claim: its new request if it made one (ranked no lower than what it won with), else the old one
    const claim: Valid & { standing: true } = incumbent
      ? { request: incumbent.request, score: Math.max(o.score, incumbent.score), value: incumbent.value, standing: true }
      : { request: o.request, score: o.score, value: o.value, standing: true };
    this.contest(setpoint, [claim, ...list.filter((v) => v !== incumbent)], o);
  }

  /** Rank the contenders; `owner` set when one of them is the live owner's standing claim. */
  private contest(setpoint: string, list: (Valid & { standing?: true })[], owner: Ownership | null): void {
    const top = Math.max(...list.map((v) => v.score));
    const best = list.filter((v) => v.score === top);
    const lower = list.filter((v) => v.score < top);
    // the owner's claim comes first among equals; otherwise earliest request, then id
    const first = best.find((v) => v.standing) ?? best[0]!;
    const eps = boundEpsilon(first.value, first.value);
    if (best.length > 1 && best.some((v) => Math.abs(v.value - first.value) > eps)) {
      // one outcome: the escalation. Lower ranks are held with it, not declined without a winner
      const outranked = lower.filter((v) => !v.standing).map((v) => v.request);
      const esc: Escalation = { setpoint, score: top, requests: best.map((v) => v.request), ...(outranked.length > 0 ? { outranked } : {}), reason: 'DEADLOCK_EQUAL_RANK', since: this.now };
      this.escalations.set(setpoint, esc);
      this.escalated.push(esc);
      this.owners.delete(setpoint);
      return;
    }
    const ownerHolds = first.standing === true && owner !== null;
    if (ownerHolds) {
      // the owner keeps the setpoint (no silent extension of its window); a fresh request of the owner is its winner
      if (first.request.id !== owner.requestId) {
        this.winners.push({ request: first.request, score: first.score, valueInSetpointUnit: first.value });
        this.owners.set(setpoint, { ...owner, request: first.request, requestId: first.request.id, attribute: first.request.attribute, value: first.value });
      }
    } else this.win(first);
    const until = ownerHolds ? owner.expiresAt : this.now + this.windowMs;
    for (const v of best) if (v !== first && !v.standing) this.decline(v, 'SAME_TARGET', first, until);
    for (const v of lower) if (!v.standing) this.decline(v, 'OUTRANKED', first, until);
  }

  result(): ArbitrationResult {
    return {
      winners: this.winners,
      declined: this.declined,
      refused: this.refused,
      escalated: this.escalated,
      at: this.now,
      state: { owners: Object.fromEntries(this.owners), escalations: Object.fromEntries(this.escalations) },
    };
  }
}
