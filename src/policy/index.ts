/**
 * The policy engine: bundle compilation and change control, decisions, design
 * space, autonomy and attendance. Everything here is pure: the bundle folder is
 * read by `loadPolicyBundle` in src/config/policy-bundle.ts, which hands the
 * files to `compilePolicyBundle`.
 */
export { DesignSpace, designSpaceKey } from './bundle.js';
export type { AgentPolicy, ApprovedDesignSpace, BundleContent, CompiledLimit, PolicyBundle, SetpointInfo } from './bundle.js';
export { compilePolicyBundle } from './compile.js';
export type { BundleIssue } from './compile.js';
export { checkChangeControl } from './change-control.js';
export type { AcceptedBundle, ChangeControlEvent } from './change-control.js';
export { evaluate, decisionId } from './evaluate.js';
export { agentLevel, autonomyFor, changeAutonomy, initialAutonomy, setpointLevel } from './autonomy.js';
export type { AutonomyChange, AutonomyEvent, AutonomyState, AutonomyTarget } from './autonomy.js';
export { attendanceTransition, isAttended } from './attendance.js';
export type { AttendanceEvent } from './attendance.js';
export { parseRequestedValue, toSetpointUnit } from './value.js';
export { combineDecisions, vectorHash } from './vector.js';
export type { VectorMove } from './vector.js';
