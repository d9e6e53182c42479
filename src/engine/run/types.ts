/** Types of the run engine's public surface and of its steps. */
import type { Sample } from '../../../connectors/types.js';
import type { MesIntake } from '../../../connectors/mes/index.js';
import type { Clock } from '../../clock.js';
import type { SiteConfig } from '../../config/schema.js';
import type { StepName, StepStatus } from '../../domain/run.js';
import type { Logger } from '../../log.js';
import type { PolicyBundle } from '../../policy/index.js';
import type { Store } from '../../store/store.js';
import type { NirModel } from '../../twin/nir/score.js';
import type { FidelityCriterion } from '../../twin/card.js';
import type { TwinModel } from '../../twin/simulate.js';
import type { VisionArtefact } from '../../twin/vision/classifier.js';
import type { GuardedWriter } from '../guarded-writer.js';
import type { StepContext } from './step-context.js';
import type { StepServices } from './step-services.js';
import type { PeopleLookup } from './lifecycle.js';

/** The parsed run request (src/domain/run-request.ts). */
export interface ParsedRequest {
  readonly batch: string;
  readonly line: string;
  readonly goal: string;
  readonly text: string;
  readonly autonomy?: 'L0' | 'L1' | 'L2' | 'L3';
  readonly limits: Readonly<Record<string, unknown>>;
  readonly objectives?: readonly string[];
}

/** Where batch records come from (connectors/mes); `intake` keeps ingested records and refuses changed ones (batch-closure.ts). */
export interface BatchRecordSource {
  read(tenant: string, batch: string): unknown;
  readonly intake?: MesIntake;
}

/** What the line reports for the readiness judgement before a run (readiness.ts); absent, no PLC or connection is judged. */
export interface LineState {
  /** Each PLC's supervisor view as its tags last reported it. */
  supervision(): ReadonlyMap<string, { readonly state?: string }>;
  /** PLCs linekeeper refused to supervise (their watchdog times out before the next heartbeat). */
  unsupervised(): ReadonlySet<string>;
  connections(): readonly { readonly id: string; readonly state: string }[];
}

/**
 * How a phase of the batch starts on the line: the PLC's phase logic starts it (from the operator at the HMI or
 * the MES) and linekeeper waits until the line's phase tag reports it — the embedded simulator included, whose
 * simulated operator answers the engine's notice.
 */
export interface LineSequencer {
  readonly kind: 'plc';
  /** The tag the phase is read from (line.phase.tag, or the tag playing plc.BatchPhase). */
  readonly tag: string;
  enter(phase: 'BLEND' | 'DRY' | 'COMPRESS' | 'COAT' | 'INSPECT' | 'RELEASE' | 'COMPLETE', batch: string, signal: AbortSignal): Promise<void>;
}

export interface ModelRef {
  readonly id: string;
  readonly version: number;
}

/**
 * The tenant's validated, site-pinned models, loaded (artefact hash checked) at every call: a model that went
 * missing, corrupt, unvalidated or retired since the last call throws its typed LkError (LK_MODEL_*), which
 * the engine treats as a lost model (R8).
 */
export interface ModelAccess {
  twin(tenant: string): { readonly ref: ModelRef; readonly model: TwinModel; readonly fidelity?: TwinFidelity };
  potency(tenant: string): { readonly ref: ModelRef; readonly model: NirModel; readonly rmsepPct: number };
  defects(tenant: string): { readonly ref: ModelRef; readonly model: VisionArtefact };
}

/** The twin's run-time acceptance against the plant (R8): its card's `fidelity` section, or the site's when the card has none. */
export interface TwinFidelity {
  readonly from: 'card' | 'site';
  readonly acceptance: Readonly<Record<string, Readonly<FidelityCriterion>>>;
}

export interface RunEngineOptions {
  readonly models: ModelAccess;
  readonly store: Store;
  readonly site: SiteConfig;
  readonly dataDir: string;
  /** Wall clock: audit, policy, attendance. */
  readonly clock: Clock;
  /** Process time: the simulator's scaled clock on the embedded default, the wall clock on a real line. */
  readonly processClock: Clock;
  readonly writer: GuardedWriter;
  /** Read-only equipment access (batched read through the connectors). */
  readonly read: (tags: readonly string[]) => Promise<Sample[]>;
  /** State of the connection serving a tag (a lost unit gets no proposals). */
  readonly connection?: (tag: string) => string | undefined;
  readonly mes: BatchRecordSource;
  /** The line's supervisor and connection states, for the readiness check before a run. */
  readonly line?: LineState;
  /** QC results of the batch from the LIMS, joined at release (optional: a site without one releases on in-line evidence and QA's signature). */
  readonly lims?: { results(tenant: string, batch: string): readonly { test: string; result: number | string; unit?: string; status: string; lims_ref: string }[] };
  readonly sequencer: LineSequencer;
  readonly policy: () => PolicyBundle | null;
  readonly log: Logger;
  /** Parse a free-text run request. @throws LkError LK_RUN_REQUEST_INVALID. */
  readonly parseRequest: (text: string) => ParsedRequest;
  /** Check a batch record against the site. @throws LkError LK_BATCH_RECORD_INVALID / LK_NOT_FOUND. */
  readonly checkRecord: (record: unknown, site: SiteConfig) => void;
  /** The run's effective limits: the request may only tighten the record's and the site's. @throws LK_RUN_REQUEST_LOOSENS. */
  readonly effectiveLimits: (req: ParsedRequest, record: unknown, bundle: PolicyBundle | null) => Record<string, unknown>;
  readonly steps: Readonly<Record<StepName, StepHandler>>;
  /** Wall ms between readings inside a step (default 250). */
  readonly pollMs?: number;
  /** Wall ms between checks of the models of executing runs (default 2000). */
  readonly modelWatchMs?: number;
  /** Run views kept between state changes (least recently read dropped first; default 256, 0 keeps none). */
  readonly viewCacheSize?: number;
  /**
   * The site's people (its local identities): the people a batch record names are checked at intake, and a
   * reassigned QA reviewer. Absent (an engine without a directory of people, e.g. a daemon without its API),
   * intake does not check them, and a reviewer cannot be reassigned.
   */
  readonly people?: PeopleLookup;
}

export interface StartRunInput {
  readonly tenant: string;
  /** The free-text run request. */
  readonly request: string;
  /** A cap on the agents' autonomy for this run (never raises a level). */
  readonly autonomy?: 'L0' | 'L1' | 'L2' | 'L3';
  /** The signed-in person who starts it (becomes the attended operator). */
  readonly by: string;
}

export interface StepResult {
  readonly status: Extract<StepStatus, 'SUCCEEDED' | 'FAILED' | 'HELD' | 'APPROVAL' | 'REJECTED'>;
  readonly detail: string;
  /** Merged into the run's data (what later steps use). */
  readonly data?: Record<string, unknown>;
  /** After a REJECTED gate is committed: write the genealogy all the same. */
  readonly after?: () => Promise<void>;
}

/**
 * A step of the plan: it works through its context (tool calls, agent calls, readings, proposals, arbitration
 * rounds, genealogy events, exceptions) and the engine's narrow services (read-only views and named transitions);
 * it never holds the guarded writer, the store or the engine.
 */
export type StepHandler = (ctx: StepContext, services: StepServices) => Promise<StepResult>;

export type { StepServices } from './step-services.js';

/** The run, its steps and their exception markers as the API shows them: the wire contract's types (src/contract/runs.ts). */
export type { ExceptionMarker, RunView, StepView } from '../../contract/runs.js';
