/**
 * What an exception of a run is (review by exception): its kinds and severities. The records live in the
 * store (src/store/exception-store.ts); the severity of each kind is a site decision in the policy bundle
 * (`exceptions.severity` in bundle.yaml), with the defaults of src/engine/run/exceptions.ts.
 */

export const EXCEPTION_SEVERITIES = ['critical', 'major', 'minor'] as const;
export type ExceptionSeverity = (typeof EXCEPTION_SEVERITIES)[number];

/** Kinds of exception (DESIGN.md, "The truth of the batch"). */
export const EXCEPTION_KINDS = [
  'OOS', 'OOT', 'SPEC_FAIL', 'PLC_LOST', 'CONNECTION_LOST', 'MODEL_FIDELITY', 'MOVE_UNREVIEWED', 'ESCALATION_UNRESOLVED', 'RECONCILIATION', 'RUN_HELD', 'MANUAL_ACTION', 'REVERT_UNVERIFIED',
] as const;
export type ExceptionKind = (typeof EXCEPTION_KINDS)[number];
