/**
 * The lifecycle of a model version, pure: which status changes exist, which
 * need the golden-dataset gate, and what each means when it is signed.
 *
 *   draft ──promote──► shadow ──promote──► validated
 *     │                  │                    │
 *     └──────retire──────┴───────retire───────┴──► retired (final)
 *
 * - A version moves forward only. There is no way back (shadow → draft,
 *   validated → shadow): the artefact of a version never changes (its SHA-256
 *   is fixed at registration), so "rework" means registering a new version,
 *   and a status history that never re-enters a state answers "was this
 *   version ever validated, and from when to when" from the trail alone.
 * - No step is skipped: a draft reaches `validated` only through `shadow`
 *   (the spec's workflow: promote to shadow under change control first, where
 *   nothing writes).
 * - Both promotions are gated by the golden-dataset evaluation: the spec puts
 *   the golden gate before shadow ("golden-dataset evaluation gates the merge",
 *   then "promote under change control to shadow mode"), and the promotion to
 *   `validated` is what lets the model's proposals move equipment, so it is
 *   re-evaluated there against the datasets then in force.
 * - Retiring needs no gate and is allowed from any status but `retired`:
 *   taking a model out of use must never be harder than putting it in.
 */
export const MODEL_STATUSES = ['draft', 'shadow', 'validated', 'retired'] as const;
export type ModelStatus = (typeof MODEL_STATUSES)[number];

/** The change-control action a transition is audited as. */
export type ModelAction = 'model.promote' | 'model.retire';

export interface Transition {
  readonly from: ModelStatus;
  readonly to: ModelStatus;
  readonly action: ModelAction;
  /** The golden-dataset evaluation must pass before the row changes. */
  readonly gated: boolean;
  /** Meaning of the signature (Part 11 §11.50(a)(3)). */
  readonly meaning: string;
}

/** Every permitted status change; anything not listed is refused. */
export const TRANSITIONS: readonly Transition[] = Object.freeze([
  { from: 'draft', to: 'shadow', action: 'model.promote', gated: true, meaning: 'Approved for shadow use: the model observes and predicts, nothing it proposes is written' },
  { from: 'shadow', to: 'validated', action: 'model.promote', gated: true, meaning: 'Approved as validated: proposals from this model may move equipment within policy' },
  { from: 'draft', to: 'retired', action: 'model.retire', gated: false, meaning: 'Retired: the model is withdrawn from any use' },
  { from: 'shadow', to: 'retired', action: 'model.retire', gated: false, meaning: 'Retired: the model is withdrawn from any use' },
  { from: 'validated', to: 'retired', action: 'model.retire', gated: false, meaning: 'Retired: the model is withdrawn from any use' },
] satisfies Transition[]);

/** True when `s` is a model status. */
export function isModelStatus(s: unknown): s is ModelStatus {
  return typeof s === 'string' && (MODEL_STATUSES as readonly string[]).includes(s);
}

/** The permitted transition `from → to`, or undefined when the lifecycle has none (the caller refuses). */
export function transition(from: ModelStatus, to: ModelStatus): Transition | undefined {
  return TRANSITIONS.find((t) => t.from === from && t.to === to);
}

/** Statuses reachable from `from` in one step (for messages and the CLI's help). */
export function nextStatuses(from: ModelStatus): ModelStatus[] {
  return TRANSITIONS.filter((t) => t.from === from).map((t) => t.to);
}
