/**
 * Change control of the policy bundle (pure). The bundle version is the hash
 * of its content, so any edit to a limit, an allow-list or an autonomy
 * ceiling changes it. A changed version is accepted only when CHANGE.yaml
 * names a change reference different from the one the last accepted bundle
 * carried (and, checked at compile, an approver of a permitted role). A change
 * reference belongs to exactly one bundle version, forever: a reference that
 * an earlier accepted bundle of another version carried is refused too, so an
 * old approval cannot be replayed for new content. The returned event is what
 * the caller writes to the audit trail.
 */
import { LkError } from '../errors.js';
import type { PolicyBundle } from './bundle.js';

/** What the store remembers of the last accepted bundle. */
export interface AcceptedBundle {
  readonly version: string;
  readonly changeRef: string;
}

export interface ChangeControlEvent {
  /** `initial`: first bundle ever accepted; `changed`: a new version under a new change ref; `unchanged`: same content. */
  readonly kind: 'initial' | 'changed' | 'unchanged';
  readonly version: string;
  readonly previousVersion: string | null;
  readonly changeRef: string;
  readonly approver: { readonly name: string; readonly role: string };
  readonly reason: string;
  readonly date: string;
}

/**
 * Decide whether `bundle` may replace the last accepted one. `signed` is the verified signature's change
 * reference and signer (src/policy/signature.ts); they replace what CHANGE.yaml types.
 * `history` is every bundle ever accepted on this node (any order); the last accepted one need not be repeated in it.
 * @throws LkError(LK_POLICY_CHANGE_CONTROL) when the content changed but CHANGE.yaml still carries the last accepted change reference.
 * @throws LkError(LK_POLICY_CHANGE_REF_REUSED) when CHANGE.yaml names a reference an accepted bundle of another version carried.
 */
export function checkChangeControl(
  bundle: PolicyBundle, lastAccepted: AcceptedBundle | null | undefined, history: readonly AcceptedBundle[] = [], signed?: { readonly change_ref: string; readonly approver: { readonly name: string; readonly role: string } },
): ChangeControlEvent {
  // a signed change: its change reference and its signer, not what CHANGE.yaml types
  const ch = signed ? { ...bundle.change, change_ref: signed.change_ref, approver: signed.approver } : bundle.change;
  const base = { version: bundle.version, changeRef: ch.change_ref, approver: { ...ch.approver }, reason: ch.reason, date: ch.date };
  if (lastAccepted && lastAccepted.version === bundle.version) return { kind: 'unchanged', previousVersion: lastAccepted.version, ...base };
  if (lastAccepted && ch.change_ref === lastAccepted.changeRef) {
    throw new LkError(
      'LK_POLICY_CHANGE_CONTROL',
      `policy bundle changed (${lastAccepted.version.slice(0, 12)} → ${bundle.version.slice(0, 12)}) but CHANGE.yaml still names change ${ch.change_ref}: record the new change reference and its approver`,
      { previousVersion: lastAccepted.version, version: bundle.version, changeRef: ch.change_ref },
    );
  }
  const owner = history.find((a) => a.changeRef === ch.change_ref && a.version !== bundle.version);
  if (owner) {
    throw new LkError(
      'LK_POLICY_CHANGE_REF_REUSED',
      `change ${ch.change_ref} already belongs to policy bundle ${owner.version.slice(0, 12)}: a change reference covers exactly one bundle version; record a new change reference for ${bundle.version.slice(0, 12)}`,
      { changeRef: ch.change_ref, ownerVersion: owner.version, version: bundle.version },
    );
  }
  if (!lastAccepted) return { kind: 'initial', previousVersion: null, ...base };
  return { kind: 'changed', previousVersion: lastAccepted.version, ...base };
}
