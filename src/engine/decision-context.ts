/** The policy context of one move, assembled at call time for the guarded writer (reads the store, no writes). */
import type { Attendance, Approval, CappingRisk, ModelRecord, PolicyContext } from '../domain/policy.js';
import { levelRank } from '../domain/policy.js';
import { type AutonomyState, type PolicyBundle, autonomyFor } from '../policy/index.js';
import type { Store } from '../store/store.js';
import { autonomyLevels } from '../store/autonomy-store.js';
import type { LastMove } from './writer-state.js';
import type { BatchRegistry, WriteProposal } from './writer-types.js';

/** Where the context comes from: the store (persisted autonomy), the run engine, the attended session. */
export interface ContextSources {
  readonly store: Store;
  readonly batches: BatchRegistry;
  readonly autonomy?: () => AutonomyState;
  readonly attendance?: () => Attendance | null;
}

/** What the writer computed for the whole proposal at call time (capping.ts): passed into each move's context. */
export interface ComputedInputs {
  /** The registry's record of the model the proposal names (undefined: it names none). */
  readonly modelRecord?: ModelRecord | null;
  /** Capping risk of the vector, for press moves (undefined for other moves). */
  readonly capping?: CappingRisk;
}

/**
 * Everything `evaluate` needs besides the request: batch state and reviewer asked of the run engine now,
 * the autonomy in force for the proposal's tenant (given, or read from the store), the current value and the last move of the setpoint,
 * and the safety inputs the writer computed (model record, capping risk) — never the proposer's.
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
  computed: ComputedInputs = {},
): PolicyContext {
  let autonomy: PolicyContext['autonomy'];
  const given = src.autonomy?.();
  if (given) {
    const lv = autonomyFor(given, p.agent, setpoint);
    autonomy = { agent: lv.agent, setpoint: lv.setpoint };
  } else if (bundle) {
    // the levels of the proposal's tenant: another tenant's change of a level never governs this run
    autonomy = autonomyLevels(src.store.db, p.tenant, bundle, p.agent, setpoint);
  }
  // a run started "--autonomy L1" caps every agent of that run at L1; it never raises a level
  if (autonomy && p.autonomyCap && autonomy.agent && levelRank(p.autonomyCap) < levelRank(autonomy.agent)) autonomy = { ...autonomy, agent: p.autonomyCap };
  const batch = src.batches(p.tenant, p.batch);
  return {
    now,
    batchState: batch?.state ?? 'unknown',
    ...(autonomy ? { autonomy } : {}),
    ...(p.model ? { model: { id: p.model.id, version: p.model.version }, modelRecord: computed.modelRecord ?? null } : {}),
    current: current.get(setpoint) ?? null,
    lastMove: last ?? null,
    reviewer: batch?.reviewer ?? null,
    attendance: src.attendance?.() ?? null,
    approval,
    ...(computed.capping ? { capping: computed.capping } : {}),
  };
}
