/**
 * What the last step of a run (`release.genealogy`, tool `audit.write_release_package`)
 * seals into a release package, and the shape of the package's `release.json`.
 *
 * The input is validated once here, strictly: a release record is evidence, so a
 * NaN potency, a blank printed name or a record of another tenant must stop the
 * package, not be written as `null` or as someone else's data. The same holds for the
 * quality section (the verdict page): a spec table or reconciliation that would read as a
 * pass while one of its rows is not is refused.
 */
import { isKnownTimeZone } from '../domain/site-time.js';
import { z } from 'zod';
import { LkError } from '../errors.js';
import { jsonProblem } from '../audit/entry.js';
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

const hex64 = z.string().regex(/^[0-9a-f]{64}$/, 'must be 64 lower-case hex digits (SHA-256)');
const name = z.string().min(1).max(200);
const text = z.string().max(4000);
const pct = z.number();
const epochMs = z.number().nonnegative().max(8.64e15, 'must be epoch milliseconds within the Date range');
const base64 = z.string().regex(/^[A-Za-z0-9+/]+={0,2}$/, 'must be base64');
const jsonObject = z.record(z.string(), z.unknown()).refine((v) => jsonProblem(v) === undefined, { message: 'must be plain JSON (finite numbers, plain objects, well-formed strings)' });

const GenealogyEventSchema = z.strictObject({
  at: epochMs, kind: z.enum(GENEALOGY_KINDS), step: name.optional(), agent: name.optional(), tag: name.optional(), summary: text, data: jsonObject.optional(),
});

const SignatureSchema = z.strictObject({
  approvalId: name,
  user: name,
  name: name.refine((s) => s.trim().length > 0, 'printed name must not be blank'),
  role: name,
  meaning: name.refine((s) => s.trim().length > 0, 'meaning must not be blank'),
  decision: z.enum(['approve', 'reject']),
  at: z.iso.datetime({ offset: false }),
  recordHash: hex64,
  signature: base64,
  keyId: name,
});

const finite = z.number(); // zod 4 refuses NaN and ±Infinity; jsonProblem checks the whole input again
const nonBlank = (s: string): boolean => s.trim().length > 0;

const SpecResultSchema = z.strictObject({
  id: name, title: name, source: name, limits: z.string().max(200),
  limit: z.strictObject({ min: finite.optional(), max: finite.optional(), unit: z.string().max(60) }),
  data: z.strictObject({
    n: z.number().int().nonnegative(), unit: z.string().max(60),
    mean: finite.optional(), sd: finite.optional(), rsdPct: finite.optional(), min: finite.optional(), max: finite.optional(),
    values: z.array(finite).max(100_000).optional(), refs: z.array(name).max(100_000).optional(),
    // a model's prediction shown beside the data (dissolution's surrogate), never judged as a result
    prediction: z.strictObject({ pct: finite, atMin: finite, model: name }).optional(),
  }),
  verdict: z.enum(['PASS', 'FAIL', 'NOT_EVALUATED']),
  reason: text,
});

const ExceptionSchema = z.strictObject({
  id: z.string().regex(/^exc_[0-9a-f]{1,64}$/, 'exception id must be exc_<hex>'),
  kind: z.string().regex(/^[A-Z][A-Z0-9_]{0,63}$/, 'exception kind must be an upper-case code such as OOS'),
  severity: z.enum(['critical', 'major', 'minor']),
  status: z.enum(['open', 'closed']),
  step: name.optional(),
  title: z.string().min(1).max(500),
  raisedAt: epochMs,
  closedBy: z.strictObject({
    user: name,
    name: name.refine(nonBlank, 'printed name must not be blank'),
    at: z.iso.datetime({ offset: false }),
    comment: text.refine(nonBlank, 'a closed exception needs a comment'),
    deviation: name.optional(),
  }).optional(),
}).refine((e) => (e.status === 'closed') === (e.closedBy !== undefined), {
  message: 'a closed exception names who closed it, an open one does not', path: ['closedBy'],
});

// The refinements refuse only what would show a pass that is not one: a PASS table with a row that is
// not PASS (or no row at all), a reconciliation "ok" with a line that is not.
const QualitySchema = z.strictObject({
  specTable: z.strictObject({
    results: z.array(SpecResultSchema), verdict: z.enum(['PASS', 'FAIL', 'INCOMPLETE']), sha256: hex64,
  }).refine((t) => t.verdict !== 'PASS' || (t.results.length > 0 && t.results.every((r) => r.verdict === 'PASS')), {
    message: 'verdict PASS but not every specification passed', path: ['verdict'],
  }),
  exceptions: z.array(ExceptionSchema),
  reconciliation: z.strictObject({
    ok: z.boolean(),
    lines: z.array(z.strictObject({ name, expected: finite, actual: finite, diff: finite, ok: z.boolean() })),
  }).refine((r) => !r.ok || r.lines.every((l) => l.ok), { message: 'ok but a line is not', path: ['ok'] }).optional(),
});

export const ReleaseInputSchema: z.ZodType<ReleaseInput> = z.strictObject({
  tenant: z.string().regex(/^[a-z][a-z0-9-]{0,63}$/, 'tenant must be lower-case letters, digits and dashes'),
  site: name,
  run: z.strictObject({
    id: z.string().regex(/^run_[A-Za-z0-9_-]{1,64}$/, 'run id must be run_<token>'),
    batch: name, line: name, product: name, tooling: name, goal: text, startedAt: epochMs, endedAt: epochMs, status: name,
  }).refine((r) => r.endedAt >= r.startedAt, { message: 'endedAt is before startedAt', path: ['endedAt'] }),
  batchRecord: jsonObject,
  batchRecordSha256: hex64,
  steps: z.array(z.strictObject({
    seq: z.string().regex(/^\d{2}$/, 'seq must be two digits'), name, agent: name, tool: name, status: name, duration: z.string().max(40), detail: text,
  })),
  evidence: z.strictObject({
    nir: z.array(z.strictObject({
      spectrumId: z.number().int(), potencyPct: pct, spectrumSha256: hex64, model: z.strictObject({ id: name, version: z.number().int().positive() }),
    })),
    potency: z.strictObject({ n: z.number().int().nonnegative(), meanPct: pct, sdPct: pct, ciLowPct: pct, ciHighPct: pct, pass: z.boolean() }),
    contentUniformity: z.strictObject({ av: z.number(), pass: z.boolean() }),
    inspection: z.strictObject({ inspected: z.number().int().nonnegative(), rejected: z.number().int().nonnegative(), defectRatePct: pct, pass: z.boolean() }),
    qc: z.array(z.strictObject({ test: name, result: z.union([z.number(), z.string().max(200)]), unit: name.optional(), status: name, lims_ref: name })),
  }),
  signatures: z.array(SignatureSchema),
  genealogy: z.array(GenealogyEventSchema),
  losingRequests: z.array(z.strictObject({ agent: name, setpoint: name, score: z.number(), reason: text, at: epochMs })),
  quality: QualitySchema.optional(),
  abort: z.strictObject({
    user: name, name, role: name, at: z.iso.datetime({ offset: false }), reason: text, from: name, step: name.nullable(),
    reverted: z.array(z.strictObject({ equipment: name, ok: z.boolean(), state: name.optional(), error: text.optional() })),
    recordHash: hex64, signature: base64, keyId: name,
  }).optional(),
  trailReview: z.strictObject({
    reviewed: z.boolean(),
    statement: text.refine(nonBlank, 'the review statement must not be blank'),
    reviews: z.array(z.strictObject({
      seq: z.number().int().positive(), user: name, name: name.refine(nonBlank, 'printed name must not be blank'), role: name, at: z.iso.datetime({ offset: false }),
      meaning: name, comment: text, entries: z.number().int().nonnegative(), first: z.number().int().nonnegative(), last: z.number().int().nonnegative(),
      digest: hex64, recordHash: hex64, signature: base64, keyId: name,
    })),
  }).refine((t) => t.reviewed === (t.reviews.length > 0), { message: 'reviewed must say whether a review is listed', path: ['reviewed'] }).optional(),
  timezone: z.string().max(64).refine(isKnownTimeZone, 'unknown IANA time zone').optional(),
});

/**
 * Validate a release input; strings are checked for lone surrogates too (they have no canonical JSON).
 * Where the batch record names its tenant or batch, they must be the run's (R1: a package of one
 * tenant never carries another's record).
 * @throws LkError LK_VALIDATION naming the path of the first bad field.
 */
export function parseReleaseInput(v: unknown): ReleaseInput {
  const r = ReleaseInputSchema.safeParse(v);
  if (!r.success) {
    const i = r.error.issues[0]!;
    throw new LkError('LK_VALIDATION', `release input ${i.path.join('.') || '(root)'}: ${i.message}`, { issues: r.error.issues.map((x) => ({ path: x.path.join('.'), message: x.message })) });
  }
  const input = r.data;
  const problem = jsonProblem(input);
  if (problem !== undefined) throw new LkError('LK_VALIDATION', `release input: ${problem}`);
  const rec = input.batchRecord;
  if (typeof rec.tenant === 'string' && rec.tenant !== input.tenant) {
    throw new LkError('LK_VALIDATION', `release input batchRecord.tenant: "${rec.tenant}" is not the run's tenant "${input.tenant}"`);
  }
  if (typeof rec.batch === 'string' && rec.batch !== input.run.batch) {
    throw new LkError('LK_VALIDATION', `release input batchRecord.batch: "${rec.batch}" is not the run's batch "${input.run.batch}"`);
  }
  return input;
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
