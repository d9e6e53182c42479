/**
 * Step 10: the batch genealogy and the release package (`audit.write_release_package`): release.json,
 * release.pdf and the tenant's audit bundle up to a signed checkpoint, under
 * `<dataDir>/releases/<tenant>/<run>/`. Also written, as a record of the decision, when QA rejected the
 * batch (the package then says it is not a release). The quality evaluation and the exceptions the
 * engine left in the run's data travel in the package and open its report (page 1 is the verdict).
 */
import { join, relative, sep } from 'node:path';
import type { GenealogyEvent, LosingRequest, ReleaseAbort, ReleaseInput, ReleaseTrailReview, SignatureManifest } from '../../release-types.js';
import { GENEALOGY_KINDS } from '../../release-types.js';
import type { Signature } from '../approval.js';
import type { StepServices } from '../step-services.js';
import type { StepContext } from '../step-context.js';
import type { StepHandler, StepResult } from '../types.js';
import { releaseQuality } from '../quality.js';

export const release: StepHandler = async (ctx, services) => writePackage(ctx, services);

/**
 * The package of an ABORTED run, by the same generator: its input carries the abort, so release.json opens with
 * `aborted` and page 1 of release.pdf says "ABORTED — NOT A RELEASE".
 */
export function writeNotARelease(ctx: StepContext, services: StepServices, abort: ReleaseAbort): Promise<StepResult> {
  return writePackage(ctx, services, abort);
}

async function writePackage(ctx: StepContext, services: StepServices, abort?: ReleaseAbort): Promise<StepResult> {
  const { run } = ctx;
  const dir = join(services.dataDir, 'releases', run.tenant, run.id);
  // what the run, its log and its audit entries keep: the folder relative to the data directory (never a path of
  // the server's file system; the API answers download URLs)
  const rel = (f: string): string => relative(services.dataDir, f).split(sep).join('/');
  const input = { ...releaseInput(ctx, services), ...(abort ? { abort } : {}) };
  const pkg = await ctx.tool(
    'audit.write_release_package',
    { run: run.id, batch: run.batch, events: input.genealogy.length, signatures: input.signatures.length },
    () => services.writeReleasePackage(dir, input),
    (p) => ({
      summary: `${abort ? 'package of the aborted batch (not a release)' : 'release package'} sha256 ${p.sha256.json.slice(0, 12)}… (json), ${p.sha256.pdf.slice(0, 12)}… (pdf); audit head #${p.auditHead.seq} ${p.auditHead.hash.slice(0, 12)}… checkpointed`,
      result: { dir: rel(p.dir), sha256: p.sha256, auditHead: p.auditHead, checkpoint: { seq: p.checkpoint.seq, keyId: p.checkpoint.key_id } },
    }),
  );
  const rejected = input.signatures.some((s) => s.decision === 'reject');
  return {
    status: 'SUCCEEDED',
    detail: `Genealogy of ${input.genealogy.length} time-aligned events and the ${abort ? 'record of the aborted batch (not a release)' : rejected ? 'rejection record (not a release)' : 'release package'} written: release.json, release.pdf and the audit bundle up to entry #${pkg.auditHead.seq}, which verifies offline with tools/verify-audit-bundle.mjs.`,
    data: { release: { json: rel(pkg.jsonFile), pdf: rel(pkg.pdfFile), bundle: rel(pkg.bundleFile), sha256: pkg.sha256 } },
  };
}

/** What {@link releaseInput} reads: the run's views, the LIMS and the site. */
export type ReleaseInputServices = Pick<StepServices, 'events' | 'readApproval' | 'lims' | 'runView' | 'runRecord' | 'exceptionsOfRun' | 'site' | 'trailReviewsOf'>;

/** Everything the package seals, from the run's store rows (read through the engine's views). */
export function releaseInput(ctx: StepContext, services: ReleaseInputServices): ReleaseInput {
  const { run } = ctx;
  const events = services.events(run.id);
  const kinds = new Set<string>(GENEALOGY_KINDS);
  const genealogy: GenealogyEvent[] = events.map((e) => ({
    at: e.at, kind: (kinds.has(e.kind) ? e.kind : 'step') as GenealogyEvent['kind'], summary: e.summary,
    ...(e.step ? { step: e.step } : {}), ...(e.agent ? { agent: e.agent } : {}), ...(e.tag ? { tag: e.tag } : {}),
    ...(e.data && typeof e.data === 'object' && !Array.isArray(e.data) ? { data: e.data as Record<string, unknown> } : {}),
  }));
  const losingRequests: LosingRequest[] = events
    .filter((e) => e.kind === 'arbitration')
    .flatMap((e) => ((e.data as { declined?: LosingRequest[] } | null)?.declined ?? []).map((d) => ({ ...d, at: e.at })));
  const a = services.readApproval(run.id);
  const sig = a?.signature as unknown as Signature | null;
  const signatures: SignatureManifest[] = sig
    ? [{ approvalId: a!.id, user: sig.user, name: sig.name, role: sig.role, meaning: sig.meaning, decision: sig.decision, at: sig.timestamp, recordHash: sig.recordHash, signature: sig.signature, keyId: sig.keyId }]
    : [];
  const ev = (ctx.data['evidence'] ?? {}) as Partial<ReleaseInput['evidence']>;
  const qc = services.lims?.results(run.tenant, run.batch) ?? [];
  const view = services.runView(run);
  const rejected = a?.status === 'rejected';
  const aborted = run.status === 'ABORTED' || services.runRecord(run.id)?.status === 'ABORTED';
  // The package is written while this step runs, but is read after it ended: print this step with the
  // status it has once the package exists (SUCCEEDED; SKIPPED after a rejection, as gate.ts's `after` sets it).
  const self = (s: (typeof view.steps)[number]): boolean => s.name === ctx.step.name;
  const quality = releaseQuality(services, run.id, ctx.data);
  return {
    tenant: run.tenant,
    site: services.site.site.id,
    run: { id: run.id, batch: run.batch, line: run.line, product: run.product, tooling: run.tooling, goal: run.goal, startedAt: run.createdAt, endedAt: ctx.now, status: aborted ? 'ABORTED' : rejected ? 'REJECTED' : 'RELEASED' },
    batchRecord: run.record,
    batchRecordSha256: run.recordSha,
    steps: view.steps.map((s) => ({
      seq: s.seq, name: s.name, agent: s.agent, tool: s.tool, duration: s.duration,
      ...(self(s) ? { status: rejected || aborted ? 'SKIPPED' : 'SUCCEEDED', detail: aborted ? 'this package (not a release)' : 'this package' } : { status: s.status, detail: s.detail || '-' }),
    })),
    evidence: {
      nir: ev.nir ?? [],
      potency: ev.potency ?? { n: 0, meanPct: 0, sdPct: 0, ciLowPct: 0, ciHighPct: 0, pass: false },
      contentUniformity: ev.contentUniformity ?? { av: 0, pass: false },
      inspection: ev.inspection ?? { inspected: 0, rejected: 0, defectRatePct: 0, pass: false },
      qc: qc.map((q) => ({ test: q.test, result: q.result, ...(q.unit ? { unit: q.unit } : {}), status: q.status, lims_ref: q.lims_ref })),
    },
    signatures,
    genealogy,
    losingRequests,
    ...(quality ? { quality } : {}),
    trailReview: trailReviewOf(services, run.tenant, run.id),
    timezone: services.site.site.timezone,
  };
}

/** The run's audit-trail reviews recorded so far (Annex 11 §9), and the package's statement of them. */
export function trailReviewOf(services: Pick<StepServices, 'trailReviewsOf'>, tenant: string, run: string): ReleaseTrailReview {
  const reviews = services.trailReviewsOf(tenant, run).map((r) => ({
    seq: r.seq, user: r.record.user, name: r.record.name, role: r.record.role, at: r.record.timestamp, meaning: r.record.meaning, comment: r.record.comment,
    entries: r.record.entries, first: r.record.first, last: r.record.last, digest: r.record.digest, recordHash: r.recordHash, signature: r.signature, keyId: r.keyId,
  }));
  const last = reviews[reviews.length - 1];
  const statement = last
    ? `The audit trail of run ${run} was reviewed by ${last.name} (${last.user}, ${last.role}) at ${last.at}: entries #${last.first}–#${last.last} (${last.entries} entries of the run)${reviews.length > 1 ? `; ${reviews.length} reviews in all` : ''}. Entries after #${last.last} (the release decision, this package) are not covered by that review.`
    : `The audit trail of run ${run} was NOT reviewed before this package was written (EU GMP Annex 11 §9): review it (linekeeper audit review --run ${run}) and keep the record with this package.`;
  return { reviewed: last !== undefined, statement, reviews };
}
