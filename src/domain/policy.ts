/**
 * Domain types of the policy engine and arbitration: autonomy levels, reason
 * codes, decisions, requests and their context. Plain data, no behaviour: the
 * engine (src/policy) and arbitration (src/arbitration) compute them, the
 * guarded writer, the API and the audit trail carry them.
 */

/** Autonomy levels of the spec's table, lowest first. There is no unattended level (R5). */
export const AUTONOMY_LEVELS = ['L0', 'L1', 'L2', 'L3'] as const;
export type AutonomyLevel = (typeof AUTONOMY_LEVELS)[number];

/** Numeric rank of a level, for min/compare. */
export function levelRank(l: AutonomyLevel): number {
  return AUTONOMY_LEVELS.indexOf(l);
}

/** The four outcomes of a decision. */
export type Outcome = 'allow' | 'deny' | 'needs_qa' | 'recommend_only';

/** Reason codes that force `deny` whenever present (the first group of {@link REASON_CODES}). */
const DENY_CODES = [
  'BUNDLE_MISSING',
  'AGENT_UNKNOWN',
  'NOT_IN_ALLOW_LIST',
  'TAG_UNKNOWN',
  'DESIGN_SPACE_UNKNOWN',
  'VALUE_NOT_NUMERIC',
  'VALUE_NOT_FINITE',
  'UNIT_UNKNOWN',
  'UNIT_INCOMPATIBLE',
  'OUTSIDE_INSTRUMENT_RANGE',
  'CURRENT_VALUE_UNKNOWN',
  'STEP_TOO_LARGE',
  'RATE_TOO_HIGH',
  'BATCH_STATE_FORBIDS',
  'MODEL_MISSING',
  'MODEL_NOT_PINNED',
  'MODEL_NOT_VALIDATED',
  'CAPPING_RISK_TOO_HIGH',
  'APPROVAL_ROLE_INVALID',
  'APPROVER_NOT_ASSIGNED',
  // appended with the model registry in the store: never reorder or rename the codes above
  'CAPPING_RISK_UNKNOWN',
  'MODEL_TENANT',
  'MODEL_RETIRED',
] as const;

/**
 * Stable, machine-readable reason codes. Consumers (console, API clients,
 * audit queries) match on these strings; never rename one, only add.
 */
export const REASON_CODES = [
  ...DENY_CODES,
  // needs_qa
  'OUTSIDE_DESIGN_SPACE',
  'VALIDATED_PARAMETER',
  'BATCH_RELEASE_NEEDS_QA',
  // recommend_only
  'AUTONOMY_RECOMMEND_ONLY',
  'UNATTENDED',
  // informational (do not change the outcome on their own)
  'APPROVAL_REQUIRED',
  'NOT_LOW_RISK',
  'NO_REVIEWER_ASSIGNED',
  'QA_APPROVED',
  'REVIEWER_APPROVED',
  // arbitration only: the request names no known quality or throughput attribute
  'ATTRIBUTE_UNKNOWN',
] as const;
export type ReasonCode = (typeof REASON_CODES)[number];

/** Reason codes that force `deny` whenever present. */
export const DENY_REASONS: ReadonlySet<ReasonCode> = new Set<ReasonCode>(DENY_CODES);

/**
 * A value as an agent, the CLI or the API sends it: a number in the
 * setpoint's own unit, a string such as `"12.5 kN"` / `"140 [degF]"`, or a
 * `{ value, unit }` pair. Anything else is refused as not numeric.
 */
export type RequestedValue = number | string | { readonly value: number; readonly unit: string };

/** One setpoint move (or a batch release) an agent asks for. */
export interface PolicyRequest {
  /** `setpoint` (default) or `release` (batch release: always waits for QA, R3). */
  readonly kind?: 'setpoint' | 'release';
  readonly agent: string;
  /** Tag id `<equipment>.<Tag>`; ignored for `release`. */
  readonly setpoint: string;
  readonly value: RequestedValue;
  readonly product: string;
  readonly tooling: string;
}

export interface Attendance {
  /** Signed-in operator's user id. */
  readonly operator: string;
  /** Epoch ms of the last presence heartbeat from the console or the CLI. */
  readonly lastPresenceAt: number;
}

export interface Approval {
  /** Named person who approved the exact setpoint vector. */
  readonly by: string;
  /** Their role (checked against the bundle's approver roles). */
  readonly role: string;
  /** `qa` satisfies R4 (design space, validated parameter) and the L2 review; `reviewer` only the L2 review. */
  readonly kind: 'qa' | 'reviewer';
}

/** Everything besides the request a decision depends on. The engine reads no clock of its own. */
export interface PolicyContext {
  /** Epoch ms of the decision. */
  readonly now: number;
  /** Caller-supplied decision id (e.g. from a sequence); otherwise derived from the inputs. */
  readonly decisionId?: string;
  /** Batch state as the run engine knows it (e.g. `running`). */
  readonly batchState: string;
  /** Autonomy of the agent and of the setpoint; missing parts come from the bundle's initial levels. */
  readonly autonomy?: { readonly agent?: AutonomyLevel; readonly setpoint?: AutonomyLevel };
  /** The model that produced the proposal, if any, as the proposal names it. */
  readonly model?: { readonly id: string; readonly version: string };
  /**
   * What the model registry says of `model` at call time (looked up by the guarded writer, never taken from
   * the proposer); null or absent: the registry has no model of that id.
   */
  readonly modelRecord?: ModelRecord | null;
  /** Current value of the setpoint in its own unit (read from the equipment). */
  readonly current?: number | null;
  /** The last move applied to this setpoint (for the rate-of-change limit), in the setpoint's unit. */
  readonly lastMove?: { readonly value: number; readonly at: number } | null;
  /** Named reviewer assigned to the batch, if any. */
  readonly reviewer?: string | null;
  readonly attendance?: Attendance | null;
  /** Approval bound to this exact setpoint vector (the guarded writer checks the binding). */
  readonly approval?: Approval | null;
  /**
   * Capping risk of the whole proposed vector, computed by the guarded writer from the tenant's validated,
   * site-pinned twin (never taken from the proposer). A press move without a finite risk here is denied.
   */
  readonly capping?: CappingRisk | null;
}

/** The model registry's record of a model, as a decision sees it (plain data: src/policy does no look-up). */
export interface ModelRecord {
  /**
   * `own`: a model of the proposal's tenant; `other_tenant`: only another tenant has a model of that id — R9:
   * nothing else of it is shown (the other fields are absent).
   */
  readonly owner: 'own' | 'other_tenant';
  /** `<analyte>-<family>` (e.g. `process-twin`), what an agent's bundle entry names as `model_family`. */
  readonly family?: string;
  readonly version?: number;
  /** Lifecycle status: draft, shadow, validated, retired. */
  readonly status?: string;
  /** Sites the model is pinned to. */
  readonly sites?: readonly string[];
  /** SHA-256 of the artefact the registry holds. */
  readonly sha256?: string;
}

/** The capping risk of a proposed vector and where it came from (for the decision and its audit entry). */
export interface CappingRisk {
  /** Predicted capping, fraction of tablets (0.01 = 1 %); null when it could not be computed. */
  readonly risk: number | null;
  /** The twin that predicted it; null when none could be used. */
  readonly model: { readonly id: string; readonly version: string; readonly sha256?: string } | null;
  /** The press setpoints predicted on (proposed moves applied to the current values), in the twin's units. */
  readonly press?: Readonly<Record<string, number | null>>;
  /**
   * Why no risk could be computed: the twin's `LK_MODEL_*` error (none, not validated, not pinned, corrupt, outside
   * its valid ranges), a reason code of a press value (`CURRENT_VALUE_UNKNOWN`, `UNIT_INCOMPATIBLE`, …) or
   * `PREDICTION_NOT_FINITE`.
   */
  readonly error?: string;
}

export interface Decision {
  readonly id: string;
  readonly outcome: Outcome;
  readonly reasons: readonly ReasonCode[];
  /** Version (SHA-256) of the bundle that decided; `none` when no bundle was loaded. */
  readonly bundleVersion: string;
  /** Requested value converted to the setpoint's unit, when it could be. */
  readonly valueInSetpointUnit: number | null;
  readonly setpointUnit: string | null;
  /** Effective autonomy (min of agent and setpoint). */
  readonly autonomy: AutonomyLevel;
  /** Who must approve before the guarded writer may write: nobody, a named reviewer (L2), or QA. */
  readonly pendingApproval: 'none' | 'reviewer' | 'qa';
  readonly at: number;
  /** The inputs, for the audit trail and replay. */
  readonly inputs: { readonly request: PolicyRequest; readonly context: PolicyContext };
}

/** Quality attributes outrank throughput attributes (arbitration rule 1). */
export const QUALITY_ATTRIBUTES = ['content_uniformity', 'potency', 'dissolution', 'defect_rate'] as const;
export const THROUGHPUT_ATTRIBUTES = ['yield', 'energy', 'takt'] as const;
export type ArbitrationAttribute = (typeof QUALITY_ATTRIBUTES)[number] | (typeof THROUGHPUT_ATTRIBUTES)[number];
