/**
 * What the last step of a run (`release.genealogy`, tool `audit.write_release_package`)
 * seals into a release package, and the shape of the package's `release.json`.
 *
 * The input is validated once, strictly, on the caller's thread (release-input.ts).
 */
import type { SignedCheckpoint } from '../audit/checkpoints.js';

export const GENEALOGY_KINDS = ['sensor', 'recommendation', 'action', 'response', 'approval', 'qc', 'arbitration', 'step', 'watchdog'] as const;
export type GenealogyKind = (typeof GENEALOGY_KINDS)[number];

/** One time-aligned fact of the batch (spec: Genealogy). */
export interface GenealogyEvent {
  /** Epoch milliseconds. */
  at: number;
  kind: GenealogyKind;
  step?: string;
  agent?: string;
  tag?: string;
  summary: string;
  data?: Record<string, unknown>;
}

/** One electronic signature as Part 11 §11.50 / §11.70 need it: who, what it means, when, bound to which record. */
export interface SignatureManifest {
  approvalId: string;
  /** User id of the signer. */
  user: string;
  /** Printed name of the signer (§11.50(a)(1)). */
  name: string;
  role: string;
  /** Meaning of the signature, e.g. "approved for release" (§11.50(a)(3)). */
  meaning: string;
  decision: 'approve' | 'reject';
  /** Date and time of signing, ISO 8601 UTC (§11.50(a)(2)). */
  at: string;
  /** SHA-256 (hex) of the signed record. */
  recordHash: string;
  /** Ed25519 signature, base64. */
  signature: string;
  keyId: string;
}

/** An arbitration request that lost, with its score and the reason (spec: arbitration rule 4). */
export interface LosingRequest {
  agent: string;
  setpoint: string;
  score: number;
  reason: string;
  /** Epoch milliseconds. */
  at: number;
}

export interface ReleaseStep {
  seq: string;
  name: string;
  agent: string;
  tool: string;
  status: string;
  duration: string;
  detail: string;
}

export interface NirSpectrumEvidence {
  spectrumId: number;
  potencyPct: number;
  spectrumSha256: string;
  model: { id: string; version: number };
}

export interface QcResult {
  test: string;
  result: number | string;
  unit?: string;
  status: string;
  lims_ref: string;
}

export interface ReleaseEvidence {
  nir: NirSpectrumEvidence[];
  potency: { n: number; meanPct: number; sdPct: number; ciLowPct: number; ciHighPct: number; pass: boolean };
  contentUniformity: { av: number; pass: boolean };
  inspection: { inspected: number; rejected: number; defectRatePct: number; pass: boolean };
  qc: QcResult[];
}

export interface ReleaseRun {
  id: string;
  batch: string;
  line: string;
  product: string;
  tooling: string;
  goal: string;
  /** Epoch milliseconds. */
  startedAt: number;
  /** Epoch milliseconds; also the PDF's CreationDate, so the same input gives the same bytes. */
  endedAt: number;
  status: string;
}

/**
 * One specification of the batch record as the quality evaluator judged it: its limits, the data it
 * was judged on, and the verdict with its reason. NOT_EVALUATED is never a pass (DESIGN: the truth of
 * the batch).
 */
export interface ReleaseSpecResult {
  id: string;
  title: string;
  /** Where the data came from (in-process samples, release evidence, LIMS). */
  source: string;
  /** The limits as printed, e.g. "≤ 150 N" or "95–105 %". */
  limits: string;
  limit: { min?: number; max?: number; unit: string };
  data: { n: number; unit: string; mean?: number; sd?: number; rsdPct?: number; min?: number; max?: number; values?: number[]; refs?: string[]; prediction?: { pct: number; atMin: number; model: string } };
  verdict: 'PASS' | 'FAIL' | 'NOT_EVALUATED';
  reason: string;
}

/** A deviation recorded during the run (OOS, OOT, PLC lost, …): open until a named person closes it with a comment. */
export interface ReleaseException {
  /** exc_<hex> */
  id: string;
  /** 'OOS' | 'OOT' | 'PLC_LOST' | 'CONNECTION_LOST' | 'MODEL_FIDELITY' | 'MOVE_UNREVIEWED' | 'ESCALATION_UNRESOLVED' | 'RECONCILIATION' | 'RUN_HELD' | 'MANUAL_ACTION' | 'SPEC_FAIL' … */
  kind: string;
  severity: 'critical' | 'major' | 'minor';
  status: 'open' | 'closed';
  /** e.g. '05 compress.press' */
  step?: string;
  title: string;
  /** Epoch milliseconds. */
  raisedAt: number;
  /** Who closed it; `at` is ISO 8601 UTC, `deviation` the deviation report's reference. */
  closedBy?: { user: string; name: string; at: string; comment: string; deviation?: string };
}

export interface ReconciliationLine {
  name: string;
  expected: number;
  actual: number;
  diff: number;
  ok: boolean;
}

/** The verdict of the batch that page 1 of release.pdf shows: every specification, every exception, the reconciliation. */
export interface ReleaseQuality {
  specTable: { results: ReleaseSpecResult[]; verdict: 'PASS' | 'FAIL' | 'INCOMPLETE'; sha256: string };
  exceptions: ReleaseException[];
  reconciliation?: { ok: boolean; lines: ReconciliationLine[] };
}

export interface ReleaseInput {
  tenant: string;
  site: string;
  run: ReleaseRun;
  /** The batch record as ingested (JSON). */
  batchRecord: Record<string, unknown>;
  batchRecordSha256: string;
  steps: ReleaseStep[];
  evidence: ReleaseEvidence;
  signatures: SignatureManifest[];
  genealogy: GenealogyEvent[];
  losingRequests: LosingRequest[];
  /**
   * The quality evaluation (src/quality/) and the run's exceptions. Optional for callers that predate it;
   * without it the report says plainly that no specification was evaluated, never an implicit pass.
   */
  quality?: ReleaseQuality;
  /**
   * Set when the run was ABORTED (a signed act of a named person): the package is then the record of an
   * aborted batch, never a release. Absent otherwise, so a released or rejected batch's package is unchanged.
   */
  abort?: ReleaseAbort;
  /**
   * Whether the run's audit trail was reviewed (EU GMP Annex 11 §9) before the package was written, and by whom
   * (src/audit/review.ts). Optional for callers that predate it; the report then says nothing was recorded.
   */
  trailReview?: ReleaseTrailReview;
  /**
   * The site's time zone (IANA, `site.timezone`): release.pdf shows the site's time beside each UTC time of
   * the run and its signatures. Every time in the record stays UTC. Absent or UTC: UTC only.
   */
  timezone?: string;
}

/** The audit-trail reviews of the run recorded before its package was sealed, and what they mean in words. */
export interface ReleaseTrailReview {
  reviewed: boolean;
  statement: string;
  reviews: {
    /** The audit entry that records the review. */
    seq: number;
    user: string;
    name: string;
    role: string;
    /** ISO 8601 UTC. */
    at: string;
    meaning: string;
    comment: string;
    /** The entries of the run the review covered: how many, first and last seq, SHA-256 over their hashes. */
    entries: number;
    first: number;
    last: number;
    digest: string;
    recordHash: string;
    signature: string;
    keyId: string;
  }[];
}

/** Who aborted the run, when, why and from which state, with the Part 11 signature of the act. */
export interface ReleaseAbort {
  user: string;
  name: string;
  role: string;
  /** ISO 8601 UTC. */
  at: string;
  reason: string;
  /** The run status it was aborted from. */
  from: string;
  /** The step under way then (`05 compress.press`), or null. */
  step: string | null;
  /** Per PLC: whether the revert to its last known-good recipe was verified by read-back. */
  reverted: { equipment: string; ok: boolean; state?: string; error?: string }[];
  recordHash: string;
  signature: string;
  keyId: string;
}

/** What an aborted run's package says first (release.json's first key, page 1 of release.pdf). */
export function abortStatement(input: ReleaseInput): string {
  const a = input.abort!;
  return `ABORTED: batch ${input.run.batch} (run ${input.run.id}) was aborted by ${a.name} (${a.user}, ${a.role}) at ${a.at} from ${a.from}${a.step ? ` during step ${a.step}` : ''}: ${a.reason}. This is NOT a release: the batch is not released.`;
}

export const RELEASE_FORMAT = 'linekeeper.release-package';

/** File names inside a package folder. */
export const RELEASE_FILES = { json: 'release.json', pdf: 'release.pdf', bundle: 'audit-bundle.jsonl' } as const;

/** `release.json`: RFC 8785 canonical JSON of this object. */
export interface ReleaseRecord {
  /**
   * Present only for an aborted run: the first key of the canonical JSON (keys sort), so the top of
   * release.json says that the batch was aborted and is not released.
   */
  aborted?: { released: false; statement: string };
  format: typeof RELEASE_FORMAT;
  version: 1;
  input: ReleaseInput;
  audit: {
    /** The tenant chain's head the package is anchored to; the bundle ends exactly here. */
    head: { seq: number; hash: string };
    /** The site key's signed checkpoint of that head. */
    checkpoint: SignedCheckpoint;
    bundle: { file: string; sha256: string; entries: number; key_id: string };
  };
}

/** What {@link writeReleasePackage} returns: absolute paths, digests and the audit anchor. */
export interface ReleasePackage {
  dir: string;
  jsonFile: string;
  pdfFile: string;
  bundleFile: string;
  sha256: { json: string; pdf: string; bundle: string };
  auditHead: { seq: number; hash: string };
  checkpoint: SignedCheckpoint;
}
