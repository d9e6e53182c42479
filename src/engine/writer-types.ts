/** Types of the guarded writer's public surface (kept apart so its state and recovery modules share them). */
import type { Connector, WriteResult } from '../../connectors/types.js';
import type { Declined, Escalation } from '../arbitration/index.js';
import type { Clock } from '../clock.js';
import type { WRITE_STATUSES } from '../contract/runs.js';
import type { SiteConfig } from '../config/schema.js';
import type { AutonomyLevel, ArbitrationAttribute, Attendance, Decision, RequestedValue } from '../domain/policy.js';
import type { AutonomyState, PolicyBundle } from '../policy/index.js';
import type { ModelStatusView } from '../models/registry.js';
import type { Store } from '../store/store.js';
import type { TwinModel } from '../twin/simulate.js';

export interface WriteProposal {
  /** Unique id of the proposal (from the run engine or the agent). */
  readonly id: string;
  readonly tenant: string;
  readonly batch: string;
  readonly run?: string;
  readonly agent: string;
  readonly product: string;
  readonly tooling: string;
  readonly moves: readonly { readonly setpoint: string; readonly value: RequestedValue }[];
  /** The attribute the moves serve (arbitration rank). */
  readonly attribute: ArbitrationAttribute;
  /**
   * What the moves serve as the agent reasoned it, when that is not the rank's attribute itself (a press move about
   * weight and hardness): shown to the person who reviews the move, never an input of the policy or arbitration.
   */
  readonly serves?: readonly { readonly tag: string; readonly from: number; readonly to: number; readonly unit: string }[];
  /** The twin's prediction the agent gave with the moves (shown to the reviewer; the writer computes its own safety inputs). */
  readonly predicted?: Readonly<Record<string, number>>;
  readonly justification: string;
  /**
   * The model the proposal comes from, as the agent names it (`version` is the registry version as a string, e.g.
   * `{ id: 'process-twin-v1', version: '1' }`). The writer checks it against the model registry at call time.
   * There is no capping-risk field: safety inputs are computed by the writer, never taken from the proposer.
   */
  readonly model?: { readonly id: string; readonly version: string };
  /** A cap on the agent's autonomy for this proposal (the run's `--autonomy`): lowers the level in force, never raises it. */
  readonly autonomyCap?: AutonomyLevel;
}

/**
 * What the owner of batches (the run engine) knows of one batch at call time. The guarded writer asks for it
 * at every decision — a proposal and its later approval alike — so a batch put on hold, or a reviewer
 * reassigned, after a proposal was queued is what the approval is checked against (R6).
 */
export interface BatchContext {
  readonly state: string;
  /** Named reviewer assigned to the batch, or null. */
  readonly reviewer: string | null;
}

/** Batch lookup; null when the batch is unknown (then no setpoint moves for it). */
export type BatchRegistry = (tenant: string, batch: string) => BatchContext | null;

/** What the guarded writer did with a write: the contract's list, so the API's outcome schema is the engine's. */
export type WriteStatus = (typeof WRITE_STATUSES)[number];

export interface WriteOutcome {
  readonly status: WriteStatus;
  readonly proposalId: string;
  readonly decisions: readonly Decision[];
  readonly vectorHash: string | null;
  /**
   * The write waits for a person: its id (as GET /approvals lists it), whom it waits for (`waitsFor`: the batch's
   * assigned reviewer, null for QA or when none is assigned), since when, and each move from what the equipment
   * held to the value asked, in the setpoint's unit.
   */
  readonly pending?: {
    readonly id: string; readonly needs: 'qa' | 'reviewer'; readonly waitsFor?: string | null; readonly since?: number;
    readonly moves?: readonly { readonly setpoint: string; readonly from: number | null; readonly to: number | null; readonly unit: string | null }[];
  };
  readonly results?: readonly WriteResult[];
  readonly declined?: readonly Declined[];
  readonly escalation?: Escalation;
  readonly error?: { readonly code: string; readonly message: string };
}

export interface PendingWrite {
  readonly id: string;
  readonly proposal: WriteProposal;
  readonly vectorHash: string;
  readonly needs: 'qa' | 'reviewer';
  /** Epoch ms of the first queuing (kept when the same proposal is queued again). */
  readonly since: number;
  readonly reasons: readonly string[];
  /** Version of the policy bundle in force when the current vector was queued (null: none). */
  readonly bundleVersion: string | null;
}

/** What {@link GuardedWriter.recover} did at start. */
export interface RecoveryReport {
  /** Intents that had no outcome and now have an `interrupted` one. */
  readonly interrupted: readonly { readonly tenant: string; readonly seq: number; readonly setpoint: string | null; readonly intended: unknown; readonly equipment: number | null; readonly quality: string }[];
  /** Pending writes whose approval was being executed when the process stopped (back to waiting). */
  readonly approvalsInterrupted: readonly string[];
}

/** What the one guarded writer of a process is built from (see `new GuardedWriter`). */
export interface GuardedWriterOptions {
  readonly store: Store;
  readonly site: SiteConfig;
  readonly connectors: readonly Connector[];
  readonly clock: Clock;
  /** The bundle in force; null when none could be loaded (every write is then denied). */
  readonly policy: () => PolicyBundle | null;
  /**
   * Autonomy state to use instead of the persisted one (tests, replay). Without it the writer reads the
   * levels from the store at every decision (bundle levels overridden by `policy autonomy set`).
   */
  readonly autonomy?: () => AutonomyState;
  /** The attended operator session, if any (R5). */
  readonly attendance?: () => Attendance | null;
  /** Batch state and assigned reviewer at call time (the run engine); an unknown batch moves nothing. */
  readonly batches: BatchRegistry;
  /**
   * The tenant's validated process twin pinned to this site, asked at call time for every proposal with a press
   * setpoint; it throws the typed model errors (LK_MODEL_MISSING / NOT_VALIDATED / NOT_PINNED / CORRUPT / TENANT).
   * The writer predicts the capping risk of the proposed vector with it. Without it (or when it throws) every
   * press move is denied: CAPPING_RISK_UNKNOWN. `registrySources` (src/models/sources.ts) backs it with the store.
   */
  readonly twin?: (tenant: string) => TwinModel & { readonly sha256?: string };
  /**
   * The model registry's view of a model id for a tenant at call time (own model; or, when only another tenant
   * has the id, a view naming that tenant; else null). Without it every proposal naming a model is denied
   * (MODEL_MISSING).
   */
  readonly models?: (tenant: string, id: string) => ModelStatusView | null;
  /**
   * How many times faster process time runs than the wall clock (the embedded simulator's `time_scale`; 1, the
   * default, on a real line). A design space's `max_rate_per_min` limits how fast the process may be moved, so the
   * time since a setpoint's last move is judged in process time: on a fast-forwarded plant a move five process
   * minutes after the last is five minutes after it for the rate, not the half second of wall time it took.
   */
  readonly processTimeScale?: number;
  /**
   * The random part of the ids the writer draws (a pending write's `pw_<ms>_<hex>`): `bytes` random bytes as hex.
   * Default: node:crypto. The core simulator passes a seeded source, so a failing seed replays identically.
   */
  readonly randomHex?: (bytes: number) => string;
}
