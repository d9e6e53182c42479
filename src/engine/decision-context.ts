/** The policy context of one move, assembled at call time for the guarded writer (reads the store, no writes). */
import type { Attendance, Approval, PolicyContext } from '../domain/policy.js';
import { type AutonomyState, type PolicyBundle, autonomyFor } from '../policy/index.js';
import type { Store } from '../store/store.js';
import { autonomyLevels } from './autonomy-store.js';
import type { LastMove } from './writer-state.js';
import type { BatchRegistry, WriteProposal } from './writer-types.js';

/** Where the context comes from: the store (persisted autonomy), the run engine, the attended session. */
export interface ContextSources {
  readonly store: Store;
  readonly batches: BatchRegistry;
  readonly autonomy?: () => AutonomyState;
  readonly attendance?: () => Attendance | null;
}

/**
 * Everything `evaluate` needs besides the request: batch state and reviewer asked of the run engine now,
 * the autonomy in force (given, or read from the store), the current value and the last move of the setpoint.
 * Never throws for missing data: what is unknown is passed as unknown and the policy denies on it.
 */
export function decisionContext(
  src: ContextSources,
  p: WriteProposal,
  setpoint: string,
  now: number,
  current: ReadonlyMap<string, number | null>,
  last: LastMove | undefined,
  approval: Approval | null,
  bundle: PolicyBundle | null,
): PolicyContext {
  let autonomy: PolicyContext['autonomy'];
  const given = src.autonomy?.();
  if (given) {
    const lv = autonomyFor(given, p.agent, setpoint);
    autonomy = { agent: lv.agent, setpoint: lv.setpoint };
  } else if (bundle) {
    autonomy = autonomyLevels(src.store.db, bundle, p.agent, setpoint);
  }
  const batch = src.batches(p.tenant, p.batch);
  return {
    now,
    batchState: batch?.state ?? 'unknown',
    ...(autonomy ? { autonomy } : {}),
    ...(p.model ? { model: p.model } : {}),
    current: current.get(setpoint) ?? null,
    lastMove: last ?? null,
    reviewer: batch?.reviewer ?? null,
    attendance: src.attendance?.() ?? null,
    approval,
    ...(p.predictedCappingRisk !== undefined ? { predictedCappingRisk: p.predictedCappingRisk } : {}),
  };
}
