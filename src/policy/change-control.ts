/**
 * Change control of the policy bundle (pure). The bundle version is the hash
 * of its content, so any edit to a limit, an allow-list or an autonomy
 * ceiling changes it. A changed version is accepted only when CHANGE.yaml
 * names a change reference different from the one the last accepted bundle
 * carried (and, checked at compile, an approver of a permitted role). The
 * returned event is what the caller writes to the audit trail.
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
 * Decide whether `bundle` may replace the last accepted one.
 * @throws LkError(LK_POLICY_CHANGE_CONTROL) when the content changed but CHANGE.yaml still carries the last accepted change reference.
 */
export function checkChangeControl(bundle: PolicyBundle, lastAccepted: AcceptedBundle | null | undefined): ChangeControlEvent {
  const ch = bundle.change;
  const base = { version: bundle.version, changeRef: ch.change_ref, approver: { ...ch.approver }, reason: ch.reason, date: ch.date };
  if (!lastAccepted) return { kind: 'initial', previousVersion: null, ...base };
  if (lastAccepted.version === bundle.version) return { kind: 'unchanged', previousVersion: lastAccepted.version, ...base };
  if (ch.change_ref === lastAccepted.changeRef) {
    throw new LkError(
      'LK_POLICY_CHANGE_CONTROL',
      `policy bundle changed (${lastAccepted.version.slice(0, 12)} → ${bundle.version.slice(0, 12)}) but CHANGE.yaml still names change ${ch.change_ref}: record the new change reference and its approver`,
      { previousVersion: lastAccepted.version, version: bundle.version, changeRef: ch.change_ref },
    );
  }
  return { kind: 'changed', previousVersion: lastAccepted.version, ...base };
}
