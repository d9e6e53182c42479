/**
 * The shapes the REST API answers with, as the SDK types them. A run and everything the run routes answer (its
 * steps, tool-call lines, genealogy, exceptions, approvals, signatures) are the wire contract's types
 * (src/contract/runs.ts: the zod schemas the daemon serves and the engine builds), re-exported here; the rest
 * are taken from the zod schemas that validate and serialise the other routes (src/api/schemas.ts). Either way
 * the SDK cannot drift from the daemon it ships with.
 */
import type { z } from 'zod';
import type {
  AbortView, ApprovalList as ApprovalListView, CloseExceptionView, ExceptionList as ExceptionListView, GenealogyView, ReassignView, RunPage as RunPageView, RunView, SignatureView, StepView,
  ToolCallLine as ToolCallLineView, WriteDecisionView,
} from '../contract/runs.js';
import type {
  AttendanceView, AuditPageView, AuditQuery, DesignSpaceView, Health as HealthSchema, LineView, ModelChangeView, ModelList as ModelListSchema,
  SimulationView, TokenView, EscalationList as EscalationListSchema, EscalationDecisionView,
  AutonomyBody, AutonomyChangeView, PasswordChangedView, SignOutView,
} from '../api/schemas.js';
import type { ReadinessView, RearmView } from '../api/routes-line.js';
import type { ReviewView, TrailView } from '../api/routes-trail-review.js';
import type { MeaningsView } from '../api/routes-signatures.js';
import type { SIGNATURE_PURPOSES } from '../domain/signature-meanings.js';
import type { RUN_STATUSES, STEP_STATUSES } from '../domain/run.js';

export type { ExceptionMarker, RunView, StepView } from '../contract/runs.js';
export type RunStatus = (typeof RUN_STATUSES)[number];
export type StepStatus = (typeof STEP_STATUSES)[number];
export type Autonomy = 'L0' | 'L1' | 'L2' | 'L3';

/**
 * A run as GET /runs/{id} returns it: ordered steps, the approval gate, the genealogy pointer.
 * @deprecated the wire object is {@link RunView}; this older name is the same type.
 */
export type RunRecord = RunView;
/** @deprecated the wire object is {@link StepView}; this older name is the same type. */
export type StepRecord = StepView;
export type RunPage = RunPageView;
/** One line of the run's tool-call log: a call, or its ok / error result. */
export type ToolCallLine = ToolCallLineView;
export type Genealogy = GenealogyView;
export type ApprovalList = ApprovalListView;
/** A setpoint move waiting for a person (an item of GET /approvals of kind `setpoint_write`). */
export type PendingMove = ApprovalList['items'][number];
/** Deciding a waiting move: the signature binds to `recordHash`, the vector hash GET /approvals showed. */
export interface MoveDecision {
  decision: 'approve' | 'reject';
  /** One of the site's move meanings for the decision (GET /signature-meanings), by id (`move-approval`) or its text. */
  meaning: string;
  /** Free text beside the meaning, in the signer's words. */
  comment?: string;
  password: string;
  recordHash: string;
}
/** A signed move decision and what the guarded writer did with it. */
export type MoveDecided = WriteDecisionView;
/** Arbitration deadlocks waiting for a person (they hold their setpoint). */
export type EscalationList = z.output<typeof EscalationListSchema>;
export type Escalation = EscalationList['items'][number];
/** A deadlock decided: who, why, the winner and the declined sides. */
export type EscalationDecided = z.output<typeof EscalationDecisionView>;
/** A Part 11 signature: identity, meaning, time, bound to the record hash. */
export type Signature = SignatureView;
/** A run's exceptions (deviations) with their evidence and status, and its specification table. */
export type ExceptionList = ExceptionListView;
export type RunException = ExceptionList['items'][number];
/** An exception as closed: who, when, the comment, the deviation reference, and the signature of a critical or major one. */
export type ClosedException = CloseExceptionView;
/** Closing an exception: the comment is required; the password re-authenticates (a signature for critical and major ones). */
export interface ExceptionClosure {
  comment: string; deviation?: string; password?: string;
  /** A signed (critical or major) closure's meaning: one of the site's exception_close meanings, by id or text; default the first. */
  meaning?: string;
}
/** What a signature may be for: the kinds of signature linekeeper makes (release, move, trail_review, …). */
export type SignaturePurpose = (typeof SIGNATURE_PURPOSES)[number];
/** The site's controlled list of signature meanings in force (GET /signature-meanings), with what each purpose fills. */
export type SignatureMeanings = z.output<typeof MeaningsView>;
/** An aborted run: the run (ABORTED), each PLC's revert as read back, the gate withdrawn, and the signature of the abort. */
export type AbortedRun = AbortView;
/** A reassigned QA reviewer: old, new, the gate that now waits for the new one, and the signature. */
export type ReassignedReviewer = ReassignView;
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

/**
 * A step as `run.stream()` yields it, each time its status changes: the contract's step (seq, name, status,
 * duration, durationMs, agent, tool, detail, attempt, gate — documented on {@link StepView}) without its
 * exception marker (read the run, or its exceptions, for those).
 */
export type Step = Readonly<Omit<StepView, 'exceptions'>>;

export interface Decision {
  readonly decision: 'approve' | 'reject';
  /**
   * What the signature means: one of the site's release meanings for the decision (GET /signature-meanings), by its
   * id (`qa-release`) or its text filled for the batch ("QA release of batch B-1042").
   */
  readonly meaning: string;
  /** Free text beside the meaning, in the signer's words (signed and audited with it). */
  readonly comment?: string;
  /** The signed-in reviewer's password, checked again at signing (21 CFR 11.200). */
  readonly password: string;
}
