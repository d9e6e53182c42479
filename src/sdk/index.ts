/**
 * linekeeper/sdk — the typed TypeScript SDK over linekeeper's REST API: a client with one method per route,
 * `Agent`, `Tool` and `DesignSpace.approved` declarations, and runs followed step by step (`run.stream()`) or
 * line by line (`run.toolCalls()`), resumed after a dropped connection. Errors are `LinekeeperError` with the
 * daemon's `LK_*` code. See docs/sdk.md.
 */
export { Agent, DesignSpace, Tool, type AgentSpec, type Limit, type StartOptions, type ToolSpec } from './agent.js';
export { LinekeeperClient, setDefaultClient, type ClientOptions, type FetchLike } from './client.js';
export { LinekeeperError, type Issue, type MeaningOption } from './errors.js';
export { Channel, type ToolCallStreamOptions } from './events.js';
export { Run, type StreamOptions } from './run.js';
export type {
  ApprovalList, Attendance, AuditFilter, AuditPage, Autonomy, Decision, DesignSpaceRecord, Genealogy, Health, Line, ModelChange, ModelList, RunPage, RunRecord, RunStatus, Signature, Simulation, Step,
  StepRecord, StepStatus, TokenInfo, ToolCallLine, ExceptionList, RunException, ClosedException, ExceptionClosure, AbortedRun, ReassignedReviewer,
  PendingMove, MoveDecision, MoveDecided, EscalationList, Escalation, EscalationDecided, TrailReview, TrailReviewView, TrailScope,
  RunView, StepView, ExceptionMarker, SignatureMeanings, SignaturePurpose,
} from './types.js';
