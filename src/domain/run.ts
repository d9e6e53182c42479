/**
 * Runs and steps of a supervised batch: the plan, the statuses and the
 * transitions between them. Plain data and pure functions: the run engine
 * (src/engine/run) enforces {@link RUN_TRANSITIONS} and {@link STEP_TRANSITIONS}
 * on every state change it commits, and docs/engine.md prints the same tables.
 */
import { LkError } from '../errors.js';

/** Whole-run statuses. */
export const RUN_STATUSES = ['PENDING', 'RUNNING', 'APPROVAL', 'HELD', 'SUCCEEDED', 'FAILED', 'REJECTED', 'INTERRUPTED', 'ABORTED'] as const;
export type RunStatus = (typeof RUN_STATUSES)[number];

/** Step statuses. */
export const STEP_STATUSES = ['PENDING', 'RUNNING', 'SUCCEEDED', 'FAILED', 'APPROVAL', 'REJECTED', 'HELD', 'INTERRUPTED', 'SKIPPED', 'ABORTED'] as const;
export type StepStatus = (typeof STEP_STATUSES)[number];

/**
 * Allowed run transitions. A run never leaves SUCCEEDED, FAILED, REJECTED or ABORTED. HELD and INTERRUPTED go
 * back to RUNNING only by a named person (resume); nothing re-arms by itself. Every state that is not final may
 * be ABORTED by a named person with a signature: no run can keep its line busy without a way out.
 */
export const RUN_TRANSITIONS: Readonly<Record<RunStatus, readonly RunStatus[]>> = Object.freeze({
  PENDING: ['RUNNING', 'FAILED', 'ABORTED'],
  RUNNING: ['APPROVAL', 'HELD', 'SUCCEEDED', 'FAILED', 'INTERRUPTED', 'ABORTED'],
  APPROVAL: ['RUNNING', 'REJECTED', 'HELD', 'INTERRUPTED', 'ABORTED'],
  HELD: ['RUNNING', 'FAILED', 'ABORTED'],
  INTERRUPTED: ['RUNNING', 'FAILED', 'ABORTED'],
  SUCCEEDED: [],
  FAILED: [],
  REJECTED: [],
  ABORTED: [],
});

/**
 * Allowed step transitions. A step that was RUNNING when the daemon died is INTERRUPTED; resuming runs it
 * again from its start with fresh observations and fresh policy decisions (a write is never replayed). When a
 * run is aborted, the step under way (running, at the gate, held or interrupted) is ABORTED and the steps not
 * yet started are SKIPPED.
 */
export const STEP_TRANSITIONS: Readonly<Record<StepStatus, readonly StepStatus[]>> = Object.freeze({
  PENDING: ['RUNNING', 'SKIPPED'],
  RUNNING: ['SUCCEEDED', 'FAILED', 'APPROVAL', 'HELD', 'INTERRUPTED', 'ABORTED'],
  APPROVAL: ['SUCCEEDED', 'REJECTED', 'HELD', 'INTERRUPTED', 'ABORTED'],
  HELD: ['RUNNING', 'FAILED', 'ABORTED'],
  INTERRUPTED: ['RUNNING', 'FAILED', 'ABORTED'],
  SUCCEEDED: [],
  FAILED: [],
  REJECTED: [],
  SKIPPED: [],
  ABORTED: [],
});

export const TERMINAL_RUN: ReadonlySet<RunStatus> = new Set(['SUCCEEDED', 'FAILED', 'REJECTED', 'ABORTED']);

/** @throws LkError LK_RUN_STATE when `to` is not reachable from `from`. */
export function checkRunTransition(from: RunStatus, to: RunStatus, run?: string): void {
  if (!RUN_TRANSITIONS[from].includes(to)) throw new LkError('LK_RUN_STATE', `run${run ? ` ${run}` : ''} cannot go from ${from} to ${to}`, { from, to, ...(run ? { run } : {}) });
}

/** @throws LkError LK_RUN_STATE when `to` is not reachable from `from`. */
export function checkStepTransition(from: StepStatus, to: StepStatus, step?: string): void {
  if (!STEP_TRANSITIONS[from].includes(to)) throw new LkError('LK_RUN_STATE', `step${step ? ` ${step}` : ''} cannot go from ${from} to ${to}`, { from, to, ...(step ? { step } : {}) });
}

/** One step of the plan: the spec's dotted name, the agent that executes it and its main tool. */
export interface PlanStep {
  readonly seq: string;
  readonly name: StepName;
  readonly agent: string;
  readonly tool: string;
  /** The approval gate of the run (R3): the run waits here for a named QA reviewer. */
  readonly gate: boolean;
  /** Inspection runs for as long as tablets are made: its duration is shown as `continuous`. */
  readonly continuous: boolean;
}

export const STEP_NAMES = [
  'ingest.batch_record',
  'twin.rehearse',
  'blend.uniformity',
  'granulate.dry',
  'compress.press',
  'coat.spray',
  'inspect.tablets',
  'spectra.release_evidence',
  'approval.batch_release',
  'release.genealogy',
] as const;
export type StepName = (typeof STEP_NAMES)[number];

const STEP_AGENT_TOOL: Readonly<Record<StepName, readonly [string, string]>> = Object.freeze({
  'ingest.batch_record': ['agent.orchestrator', 'mes.read_batch_record'],
  'twin.rehearse': ['agent.orchestrator', 'twin.simulate'],
  'blend.uniformity': ['agent.blend_dispense', 'nir.score'],
  'granulate.dry': ['agent.granulate_dry', 'plc.write_setpoint'],
  'compress.press': ['agent.compress_fill', 'press.write_setpoint'],
  'coat.spray': ['agent.coat_dry', 'coater.write_setpoint'],
  'inspect.tablets': ['agent.defect_inspect', 'vision.stream'],
  'spectra.release_evidence': ['agent.quality_potency', 'nir.evidence_chain'],
  'approval.batch_release': ['agent.orchestrator', 'approval.request'],
  'release.genealogy': ['agent.orchestrator', 'audit.write_release_package'],
});

/** The full batch plan: ten ordered steps and one approval gate, whatever the goal (the goal tightens limits). */
export function composePlan(): PlanStep[] {
  return STEP_NAMES.map((name, i) => {
    const [agent, tool] = STEP_AGENT_TOOL[name];
    return { seq: String(i + 1).padStart(2, '0'), name, agent, tool, gate: name === 'approval.batch_release', continuous: name === 'inspect.tablets' };
  });
}

/** "10 steps, 1 approval gate". */
export function planSummary(plan: readonly PlanStep[]): { steps: number; gates: number; text: string } {
  const gates = plan.filter((s) => s.gate).length;
  return { steps: plan.length, gates, text: `${plan.length} steps, ${gates} approval gate${gates === 1 ? '' : 's'}` };
}

/**
 * A step's elapsed time as the spec renders it: `continuous` for inspection, `m:ss` from a minute on, else
 * seconds with one decimal (`4.2s`). Null (not yet started) renders as an empty string.
 */
export function formatDuration(ms: number | null, continuous = false): string {
  if (continuous) return 'continuous';
  if (ms === null || !Number.isFinite(ms) || ms < 0) return '';
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)}s`;
  const s = Math.round(ms / 1000);
  return `${Math.floor(s / 60)}:${String(s % 60).padStart(2, '0')}`;
}

/** HH:MM:SS (UTC) of an epoch-ms time, the tool-call log's time of day. */
export function timeOfDay(at: number): string {
  return new Date(at).toISOString().slice(11, 19);
}

export const RUN_ID_RE = /^run_[0-9a-z]{10,32}$/;
