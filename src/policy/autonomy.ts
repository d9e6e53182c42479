/**
 * Autonomy levels per agent and per setpoint, as a pure state machine:
 * `changeAutonomy(state, change, bundle) → { state, event }`. The caller
 * persists the state and writes the event to the audit trail.
 *
 * - New agents start at L0 (shadow); an agent the bundle names starts at the
 *   level the bundle (under its own change control) gives it.
 * - Raising is one level at a time, needs a named person whose role the
 *   bundle permits for the target level, and a change reference.
 * - Lowering is immediate and always allowed (any number of levels); it
 *   records who did it when known.
 * The effective level of a request is min(agent level, setpoint level).
 */
import { AUTONOMY_LEVELS, type AutonomyLevel, levelRank } from '../domain/policy.js';
import { LkError } from '../errors.js';
import type { PolicyBundle } from './bundle.js';

export interface AutonomyState {
  readonly bundleVersion: string;
  readonly agents: Readonly<Record<string, AutonomyLevel>>;
  readonly setpoints: Readonly<Record<string, AutonomyLevel>>;
}

export type AutonomyTarget = { readonly agent: string } | { readonly setpoint: string };

export interface AutonomyChange {
  readonly target: AutonomyTarget;
  readonly to: AutonomyLevel;
  /** Named person and role; required to raise, recorded when lowering (`system` for automatic lowering). */
  readonly by?: { readonly person: string; readonly role: string };
  /** Change-control reference; required to raise. */
  readonly changeRef?: string;
  readonly reason?: string;
  /** Epoch ms (from the caller's clock). */
  readonly at: number;
}

export interface AutonomyEvent {
  readonly type: 'autonomy_raised' | 'autonomy_lowered' | 'autonomy_unchanged';
  readonly target: AutonomyTarget;
  readonly from: AutonomyLevel;
  readonly to: AutonomyLevel;
  readonly by: { readonly person: string; readonly role: string } | null;
  readonly changeRef: string | null;
  readonly reason: string | null;
  readonly at: number;
  readonly bundleVersion: string;
}

/** The levels the bundle starts agents and setpoints at. */
export function initialAutonomy(bundle: PolicyBundle): AutonomyState {
  const agents: Record<string, AutonomyLevel> = {};
  for (const [id, a] of Object.entries(bundle.content.agents)) agents[id] = a.autonomy;
  const setpoints: Record<string, AutonomyLevel> = {};
  for (const [id, s] of Object.entries(bundle.content.setpoints)) setpoints[id] = s.autonomy;
  return { bundleVersion: bundle.version, agents, setpoints };
}

/** Level of an agent (L0 when never seen: new agents start in shadow mode). */
export function agentLevel(state: AutonomyState, agent: string): AutonomyLevel {
  return Object.hasOwn(state.agents, agent) ? state.agents[agent]! : 'L0';
}

/** Level (ceiling) of a setpoint (L0 when the bundle does not list it). */
export function setpointLevel(state: AutonomyState, setpoint: string): AutonomyLevel {
  return Object.hasOwn(state.setpoints, setpoint) ? state.setpoints[setpoint]! : 'L0';
}

/** Agent, setpoint and effective (min) level, in the shape `PolicyContext.autonomy` takes. */
export function autonomyFor(state: AutonomyState, agent: string, setpoint: string): { agent: AutonomyLevel; setpoint: AutonomyLevel; effective: AutonomyLevel } {
  const a = agentLevel(state, agent);
  const s = setpointLevel(state, setpoint);
  return { agent: a, setpoint: s, effective: levelRank(a) <= levelRank(s) ? a : s };
}

/**
 * Apply one autonomy change.
 * @throws LkError(LK_AUTONOMY_CHANGE) when raising without a named person, a permitted role or a change
 *   reference, when raising by more than one level, or when the target or level is not known.
 */
export function changeAutonomy(state: AutonomyState, change: AutonomyChange, bundle: PolicyBundle): { state: AutonomyState; event: AutonomyEvent } {
  if (!(AUTONOMY_LEVELS as readonly string[]).includes(change.to)) {
    throw new LkError('LK_AUTONOMY_CHANGE', `unknown autonomy level "${String(change.to)}" (L0–L3 only: there is no unattended level)`);
  }
  const isAgent = 'agent' in change.target;
  const key = isAgent ? (change.target as { agent: string }).agent : (change.target as { setpoint: string }).setpoint;
  if (isAgent && !/^agent\.[a-z][a-z0-9_]*$/.test(key)) throw new LkError('LK_AUTONOMY_CHANGE', `"${key}" is not an agent id (agent.<role>)`);
  if (!isAgent && !Object.hasOwn(bundle.content.setpoints, key)) throw new LkError('LK_AUTONOMY_CHANGE', `"${key}" is not a setpoint of this site`);
  const from = isAgent ? agentLevel(state, key) : setpointLevel(state, key);
  const base = {
    target: change.target,
    from,
    to: change.to,
    by: change.by ? { person: change.by.person, role: change.by.role } : null,
    changeRef: change.changeRef ?? null,
    reason: change.reason ?? null,
    at: change.at,
    bundleVersion: bundle.version,
  };
  const diff = levelRank(change.to) - levelRank(from);
  if (diff > 0) {
    const by = change.by;
    if (!by || typeof by.person !== 'string' || by.person.trim() === '') throw new LkError('LK_AUTONOMY_CHANGE', 'raising autonomy needs a named person', { target: change.target, to: change.to });
    if (!change.changeRef || change.changeRef.trim() === '') throw new LkError('LK_AUTONOMY_CHANGE', 'raising autonomy needs a change reference', { target: change.target, to: change.to });
    if (diff > 1) throw new LkError('LK_AUTONOMY_CHANGE', `graduate one level at a time (${from} → ${AUTONOMY_LEVELS[levelRank(from) + 1]}), not ${from} → ${change.to}`, { from, to: change.to });
    const roles = bundle.content.raiseRoles[change.to as 'L1' | 'L2' | 'L3'];
    if (!roles.includes(by.role)) throw new LkError('LK_AUTONOMY_CHANGE', `role "${by.role}" may not raise to ${change.to} (permitted: ${roles.join(', ')})`, { role: by.role, to: change.to });
  }
  const type: AutonomyEvent['type'] = diff > 0 ? 'autonomy_raised' : diff < 0 ? 'autonomy_lowered' : 'autonomy_unchanged';
  const next: AutonomyState = isAgent
    ? { ...state, agents: { ...state.agents, [key]: change.to } }
    : { ...state, setpoints: { ...state.setpoints, [key]: change.to } };
  return { state: diff === 0 ? state : next, event: { type, ...base } };
}
