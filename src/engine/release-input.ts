/**
 * The release input's schema and its validation, on the thread that receives the input (the daemon's main thread;
 * tools and tests): a release record is evidence, so a NaN potency, a blank printed name or a record of another
 * tenant must stop the package, not be written as `null` or as someone else's data. The same holds for the
 * quality section (the verdict page): a spec table or reconciliation that would read as a pass while one of its
 * rows is not is refused. The package's worker thread seals an input validated here and loads no schema
 * library (release-seal.ts).
 */
import { z } from 'zod';
import { isKnownTimeZone } from '../domain/site-time.js';
import { LkError } from '../errors.js';
import { jsonProblem } from '../audit/entry.js';
import { GENEALOGY_KINDS, type ReleaseInput } from './release-types.js';

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
