/**
 * What a step handler gets besides its {@link StepContext}: the read-only things it works with (the line's
 * sequencer, the tenant's models, the policy bundle in force, the site, the MES and the LIMS), read-only views of
 * its run, and the engine's named transitions of the approval gate and the release. It holds no guarded writer
 * and no store: equipment proposals and the orchestrator's arbitration rounds go through the StepContext (each a
 * logged tool call or an audited round), and every state change a step asks for is one of the operations below,
 * which the engine commits — state and audit entries — in one store transaction. The architecture rules keep a
 * step from importing the writer, the store or the engine (test/unit/architecture-rules.ts).
 */
import type { ReleaseInput, ReleasePackage } from '../release-types.js';
import type { SiteConfig } from '../../config/schema.js';
import type { PolicyBundle } from '../../policy/index.js';
import type { TrailReview } from '../../audit/review.js';
import type { ApprovalRecord, RunEventRecord, RunRecord, StepRecord } from '../../store/run-store.js';
import type { ExceptionRecord } from '../../store/exception-store.js';
import type { StepContext } from './step-context.js';
import type { BatchRecordSource, LineSequencer, ModelAccess, RunEngineOptions, RunView } from './types.js';

/** The approval the gate asks for: the record QA signs, its hash, and the quality evaluation kept in the run's data. */
export interface ApprovalRequest {
  readonly id: string;
  readonly reviewer: string;
  /** The canonical text of the record to be signed. */
  readonly record: string;
  readonly recordHash: string;
  /** The gate's evaluation of the run (stored as the run's data `quality`, where the release package reads it). */
  readonly quality: unknown;
}

export interface StepServices {
  // --- read-only things the steps work with
  /** How a phase of the batch starts on the line. */
  readonly sequencer: LineSequencer;
  /** The tenant's validated, site-pinned models (a lost model throws its LK_MODEL_*). */
  readonly models: ModelAccess;
  /** The policy bundle in force, or null when none is loaded. */
  readonly policy: () => PolicyBundle | null;
  readonly site: SiteConfig;
  /** The data directory (release packages go under `releases/`). */
  readonly dataDir: string;
  /** Where batch records come from. */
  readonly mes: BatchRecordSource;
  /** QC results of the batch from the LIMS (absent on a site without one). */
  readonly lims: RunEngineOptions['lims'];

  // --- read-only views of a run
  /** The run as stored now (its status, its data, a reassigned reviewer), or null. */
  runRecord(runId: string): RunRecord | null;
  /** The run's steps as stored now, in plan order. */
  steps(runId: string): StepRecord[];
  /** The run's approval gate, or null before the gate asked for one. */
  readApproval(runId: string): ApprovalRecord | null;
  /** The run's genealogy events, in order. */
  events(runId: string): RunEventRecord[];
  /** The run's exceptions, in the order they were raised. */
  exceptionsOfRun(runId: string): ExceptionRecord[];
  /** The run as the API shows it. */
  runView(run: RunRecord): RunView;
  /** The audit-trail reviews of a run recorded so far (Annex 11 §9), oldest first. */
  trailReviewsOf(tenant: string, runId: string): TrailReview[];
  /** Wait until the run is woken (a decision of its gate) or `ms` pass on the engine's clock. */
  waitWake(runId: string, signal: AbortSignal, ms: number): Promise<void>;

  // --- named transitions (each commits its state change with its audit entries in one transaction)
  /**
   * The gate asks for the QA reviewer's signature: the approval row, the run's `quality` data, the gate step and
   * the run into APPROVAL.
   */
  requestApproval(gate: Pick<StepContext, 'run' | 'step'>, a: ApprovalRequest): void;
  /** The signed approval lets the run go on: the run back to RUNNING, by the signer. */
  approvalApproved(runId: string, by: string): void;
  /**
   * After a rejection has been committed: the release step's generator writes the rejection record (genealogy and
   * package, not a release) with a context of its own, then merges its data and marks the release step SKIPPED.
   */
  releaseAfterRejection(gate: Pick<StepContext, 'run' | 'step' | 'signal'>): Promise<void>;
  /** Write the release package (release.json, release.pdf, the audit bundle to a signed checkpoint) under `dir`. */
  writeReleasePackage(dir: string, input: ReleaseInput): Promise<ReleasePackage>;
}
