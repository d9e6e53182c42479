/**
 * A QC result from the LIMS: one test of one batch, as the laboratory reported
 * it. Results arrive asynchronously (hours or days after the samples were
 * taken) and become release evidence, so they are validated as strictly as a
 * batch record. Pure: no I/O, no clock.
 */
import { z } from 'zod';
import { LkError } from '../errors.js';
import { BATCH_ID_RE, TENANT_ID_RE, printable, ucumUnit, userId } from './batch-record.js';
import { type DocumentIssue, deepFreeze, issuesOf } from './issues.js';

export const QC_TESTS = ['assay', 'content_uniformity', 'dissolution', 'hardness', 'friability', 'water_content', 'identity', 'microbial'] as const;
export type QcTest = (typeof QC_TESTS)[number];

const isoDateTime = z.iso.datetime({ offset: true, error: 'must be an ISO 8601 date-time with Z or an offset' });

export const QcResult = z
  .strictObject({
    format: z.literal(1),
    batch: z.string().regex(BATCH_ID_RE, 'must be 2–32 upper-case letters, digits and dashes (e.g. B-1042)'),
    tenant: z.string().regex(TENANT_ID_RE, 'must be a tenant id: lower-case letters, digits and dashes'),
    test: z.enum(QC_TESTS),
    /** A number (in `unit`) or a reported text such as `conforms` or `<10 cfu/g`. */
    result: z.union([z.number(), printable(256)]),
    unit: ucumUnit.optional(),
    /** The specification as the LIMS states it, e.g. `95.0–105.0 % LC`. */
    specification: printable(256),
    status: z.enum(['pass', 'fail', 'oos']),
    analyst: userId,
    reviewed_by: userId.optional(),
    sampled_at: isoDateTime.optional(),
    reported_at: isoDateTime,
    lims_ref: printable(128),
  })
  .superRefine((r, ctx) => {
    // second-person review is the point of the field
    if (r.reviewed_by !== undefined && r.reviewed_by === r.analyst) ctx.addIssue({ code: 'custom', path: ['reviewed_by'], message: 'must not be the analyst' });
    if (r.sampled_at !== undefined && Date.parse(r.sampled_at) > Date.parse(r.reported_at)) ctx.addIssue({ code: 'custom', path: ['sampled_at'], message: 'must not be after reported_at' });
  });

export type QcResult = z.infer<typeof QcResult>;

/**
 * Validate a QC result (parsed JSON) and return it frozen.
 * @throws LkError(LK_QC_RESULT_INVALID) naming `source` and the path of the first bad field;
 *   `detail.issues` lists every `{ path, message }`.
 */
export function parseQcResult(raw: unknown, source: string): QcResult {
  const r = QcResult.safeParse(raw);
  if (!r.success) {
    const issues: DocumentIssue[] = issuesOf(r.error);
    const more = issues.length > 1 ? ` (and ${issues.length - 1} more)` : '';
    throw new LkError('LK_QC_RESULT_INVALID', `${source}: ${issues[0]!.path}: ${issues[0]!.message}${more}`, { source, issues });
  }
  return deepFreeze(r.data);
}

/** Order of results for a batch: by report time (instants, whatever the offset), then LIMS reference. */
export function compareQcResults(a: QcResult, b: QcResult): number {
  return Date.parse(a.reported_at) - Date.parse(b.reported_at) || (a.lims_ref < b.lims_ref ? -1 : a.lims_ref > b.lims_ref ? 1 : 0);
}
