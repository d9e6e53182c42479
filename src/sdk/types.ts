/**
 * The shapes the REST API answers with, as the SDK types them: taken from the zod schemas that validate and
 * serialise every route (src/api/schemas.ts), so the SDK cannot drift from the daemon it ships with.
 */
import type { z } from 'zod';
import type {
  ApprovalList as ApprovalListSchema, AttendanceView, AuditPageView, AuditQuery, DesignSpaceView, GenealogyView, Health as HealthSchema, LineView, ModelChangeView, ModelList as ModelListSchema,
  RunPage as RunPageSchema, RunView, SignatureView, SimulationView, StepView, TokenView, ToolCallLine as ToolCallLineSchema,
  ExceptionList as ExceptionListSchema, CloseExceptionView, AbortView, ReassignView, EscalationList as EscalationListSchema, EscalationDecisionView, WriteDecisionView,
  AutonomyBody, AutonomyChangeView, PasswordChangedView, SignOutView,
} from '../api/schemas.js';
import type { ReadinessView, RearmView } from '../api/routes-line.js';
import type { ReviewView, TrailView } from '../api/routes-trail-review.js';
import type { RUN_STATUSES, STEP_STATUSES } from '../domain/run.js';

export type RunStatus = (typeof RUN_STATUSES)[number];
export type StepStatus = (typeof STEP_STATUSES)[number];
export type Autonomy = 'L0' | 'L1' | 'L2' | 'L3';

/** A run as GET /runs/{id} returns it: ordered steps, the approval gate, the genealogy pointer. */
export type RunRecord = z.output<typeof RunView>;
export type StepRecord = z.output<typeof StepView>;
export type RunPage = z.output<typeof RunPageSchema>;
/** One line of the run's tool-call log: a call, or its ok / error result. */
export type ToolCallLine = z.output<typeof ToolCallLineSchema>;
export type Genealogy = z.output<typeof GenealogyView>;
export type ApprovalList = z.output<typeof ApprovalListSchema>;
/** A setpoint move waiting for a person (an item of GET /approvals of kind `setpoint_write`). */
export type PendingMove = ApprovalList['items'][number];
/** Deciding a waiting move: the signature binds to `recordHash`, the vector hash GET /approvals showed. */
export interface MoveDecision { decision: 'approve' | 'reject'; meaning: string; password: string; recordHash: string }
/** A signed move decision and what the guarded writer did with it. */
export type MoveDecided = z.output<typeof WriteDecisionView>;
/** Arbitration deadlocks waiting for a person (they hold their setpoint). */
export type EscalationList = z.output<typeof EscalationListSchema>;
export type Escalation = EscalationList['items'][number];
/** A deadlock decided: who, why, the winner and the declined sides. */
export type EscalationDecided = z.output<typeof EscalationDecisionView>;
/** A Part 11 signature: identity, meaning, time, bound to the record hash. */
export type Signature = z.output<typeof SignatureView>;
/** A run's exceptions (deviations) with their evidence and status, and its specification table. */
export type ExceptionList = z.output<typeof ExceptionListSchema>;
export type RunException = ExceptionList['items'][number];
/** An exception as closed: who, when, the comment, the deviation reference, and the signature of a critical or major one. */
export type ClosedException = z.output<typeof CloseExceptionView>;
/** Closing an exception: the comment is required; the password re-authenticates (a signature for critical and major ones). */
export interface ExceptionClosure { comment: string; deviation?: string; password?: string }
/** An aborted run: the run (ABORTED), each PLC's revert as read back, the gate withdrawn, and the signature of the abort. */
export type AbortedRun = z.output<typeof AbortView>;
/** A reassigned QA reviewer: old, new, the gate that now waits for the new one, and the signature. */
export type ReassignedReviewer = z.output<typeof ReassignView>;
export type ModelList = z.output<typeof ModelListSchema>;
/** A model status change as signed: from, to, the audit entry and the signature manifestation. */
export type ModelChange = z.output<typeof ModelChangeView>;
export type Simulation = z.output<typeof SimulationView>;
export type Attendance = z.output<typeof AttendanceView>;
export type Line = z.output<typeof LineView>;
/** Is the line ready for a run: every reason it is not (stable codes), empty when ready. */
export type LineReadiness = z.output<typeof ReadinessView>;
/** A PLC re-armed by a named person: the state it reports after the command, who and why. */
export type Rearmed = z.output<typeof RearmView>;
export type AuditPage = z.output<typeof AuditPageView>;
/** A run's or a period's audit trail as a reviewer reads it (Annex 11 §9): GMP-relevant entries first, routine counted. */
export type TrailReviewView = z.output<typeof TrailView>;
/** A signed audit-trail review: the record (scope, entries, digest, head, who, meaning, comment, time) and its signature. */
export type TrailReview = z.output<typeof ReviewView>;
/** The scope of an audit-trail review: one run, or a period [from, to) in UTC. */
export type TrailScope = { run: string } | { from: string; to: string };
export type AuditFilter = Partial<Omit<z.input<typeof AuditQuery>, 'limit' | 'cursor'>> & { limit?: number; cursor?: string };
export type DesignSpaceRecord = z.output<typeof DesignSpaceView>;
export type TokenInfo = z.output<typeof TokenView>;
/** A session ended on the daemon (POST /v1/auth/logout): whose. */
export type SignedOut = z.output<typeof SignOutView>;
/** A password changed by its owner (POST /v1/auth/password). */
export type PasswordChanged = z.output<typeof PasswordChangedView>;
/** One autonomy level to set (PUT /autonomy): an agent, an agent on a setpoint, or a setpoint's ceiling. */
export type AutonomyChangeRequest = z.input<typeof AutonomyBody>;
/** An autonomy level as changed (or found unchanged): from, to, who, the change reference, the audit entry. */
export type AutonomyChange = z.output<typeof AutonomyChangeView>;
export type Health = z.output<typeof HealthSchema>;

/** A step as `run.stream()` yields it, each time its status changes. */
export interface Step {
  /** Two-digit position in the plan: `01` … `10`. */
  readonly seq: string;
  /** Dotted step name: `ingest.batch_record` … `release.genealogy`. */
  readonly name: string;
  readonly status: StepStatus;
  /** As the spec renders it: `4.2s`, `2:05`, `continuous` for inspection, empty before the step started. */
  readonly duration: string;
  readonly durationMs: number | null;
  readonly agent: string;
  readonly tool: string;
  /** What the step did, in words. */
  readonly detail: string;
  /** 1, or more after a named person resumed the step. */
  readonly attempt: number;
  /** The QA approval gate of the run. */
  readonly gate: boolean;
}

export interface Decision {
  readonly decision: 'approve' | 'reject';
  /** What the signature means, e.g. "QA release of batch B-1042". */
  readonly meaning: string;
  /** The signed-in reviewer's password, checked again at signing (21 CFR 11.200). */
  readonly password: string;
}
