/**
 * The truth of the batch, from the run's own data: before the approval gate the pure evaluator of src/quality/
 * judges every specification of the batch record against what the run measured (every in-process press
 * sample, the blend and drying end points, the coating weight gain, the inspection counts, the NIR potency of
 * each release spectrum, the LIMS results), and the counts are reconciled. A failed specification and a count
 * that does not reconcile are exceptions; the table (with its SHA-256) is what the QA reviewer signs against,
 * and what page 1 of the release package prints with the run's exceptions as they stand when it is written.
 */
import { parseBatchRecord } from '../../domain/batch-record.js';
import { evaluateSpecifications, reconcile, type Reconciliation, type SpecTable } from '../../quality/index.js';
import type { ExceptionRecord } from '../../store/exception-store.js';
import type { ReleaseException, ReleaseQuality } from '../release-types.js';
import { json } from '../json.js';
import { canonical, sha256Hex } from './approval.js';
import type { StepServices } from './step-services.js';
import type { StepContext } from './step-context.js';
import { num } from './steps/common.js';
import { LkError } from '../../errors.js';
import type { RunRecord } from '../../store/run-store.js';
import type { RaiseInput } from './exceptions.js';

/** Tolerance of the reconciliation of two counters of the same tablets (inspected against pressed), %. */
export const RECONCILE_TOLERANCE_PCT = 0.5;
/** Tolerance of the yield line (pressed against the batch size), %: the press stops at the end of a counting interval. */
export const RECONCILE_YIELD_TOLERANCE_PCT = 2;

/** In-process samples the press step keeps for the specification table (in mg, N, mm). */
export interface PressSamples {
  weightMg: number[];
  hardnessN: number[];
  thicknessMm: number[];
}

/** What the gate stores in the run's data (`quality`) and signs against. */
export interface RunQuality {
  specTable: Omit<SpecTable, 'counts'> & { sha256: string; counts: SpecTable['counts'] };
  reconciliation: Pick<Reconciliation, 'ok' | 'lines'> & { findings: string[] };
}

const finiteOr = (v: unknown): number | null => (typeof v === 'number' && Number.isFinite(v) ? v : null);

/** A LIMS result as the evaluator takes it (the folder LIMS answers these). */
export type LimsRow = { test: string; result: number | string; unit?: string; status: string; lims_ref: string };

/** The batch record's field at a dotted path. */
function recordField(run: RunRecord, path: string): unknown {
  let v: unknown = run.record;
  for (const k of path.split('.')) v = v && typeof v === 'object' ? (v as Record<string, unknown>)[k] : undefined;
  return v;
}

/** The run's effective weight tolerance (request ∩ record ∩ site), %. */
function weightTolerance(run: RunRecord): number {
  const v = (run.limits as Record<string, unknown> | null)?.['weightTolerancePct'];
  const value = v && typeof v === 'object' ? (v as { value?: unknown }).value : v;
  return num(value, 5);
}

/**
 * The truth of the batch as its data stands: every specification of the run's batch record judged on the run's
 * data and the LIMS results given, and the counts reconciled. Pure: the same run, data and results give the same
 * table and hash, at the gate and again when QA decides.
 */
export function judgeRun(run: RunRecord, d: Record<string, unknown>, lims: readonly LimsRow[]): RunQuality {
  const record = parseBatchRecord(run.record, `${run.tenant}/${run.batch}`);
  const compress = (d['compress'] ?? {}) as { samples?: Partial<PressSamples>; tablets?: number; inspected?: number; rejected?: number };
  const samples = compress.samples ?? {};
  const evidence = (d['evidence'] ?? {}) as { nir?: { potencyPct?: number; spectrumId?: number; spectrumSha256?: string }[] };
  const inspection = d['inspection'] as { inspected?: number; rejected?: number } | undefined;
  const table = evaluateSpecifications({
    spec: record.specifications,
    weightTolerancePct: weightTolerance(run),
    inProcess: { weightMg: samples.weightMg ?? [], hardnessN: samples.hardnessN ?? [], thicknessMm: samples.thicknessMm ?? [] },
    blend: { rsdPct: finiteOr((d['blend'] as { blendRsdPct?: unknown } | undefined)?.blendRsdPct) },
    dry: { lodPct: finiteOr((d['dry'] as { lodPct?: unknown } | undefined)?.lodPct) },
    coat: { weightGainPct: finiteOr((d['coat'] as { weightGainPct?: unknown } | undefined)?.weightGainPct) },
    ...(inspection && typeof inspection.inspected === 'number' && typeof inspection.rejected === 'number' ? { inspection: { inspected: inspection.inspected, rejected: inspection.rejected } } : {}),
    potency: {
      valuesPct: (evidence.nir ?? []).map((s) => (typeof s.potencyPct === 'number' ? s.potencyPct : Number.NaN)),
      refs: (evidence.nir ?? []).map((s) => `nir spectrum ${String(s.spectrumId)} sha256 ${String(s.spectrumSha256).slice(0, 12)}`),
    },
    lims: lims.map((q) => ({ test: q.test, result: q.result, ...(q.unit ? { unit: q.unit } : {}), status: q.status, lims_ref: q.lims_ref })),
  });
  const sha256 = sha256Hex(canonical(json({ results: table.results, verdict: table.verdict })));
  const batchSize = num(recordField(run, 'batch_size.tablets'), 0);
  const pressed = Math.round(num(compress.tablets, 0));
  // one meaning per counter: the cameras count the press output over the compression step, and the inspection
  // step reports those same counts (never the cameras' lifetime counters)
  const rec = reconcile({ batchSize, pressed, inspected: Math.round(num(inspection?.inspected ?? compress.inspected, 0)), rejected: Math.round(num(inspection?.rejected ?? compress.rejected, 0)), tolerancePct: RECONCILE_TOLERANCE_PCT, yieldTolerancePct: RECONCILE_YIELD_TOLERANCE_PCT });
  return { specTable: { results: table.results, verdict: table.verdict, counts: table.counts, sha256 }, reconciliation: { ok: rec.ok, lines: rec.lines, findings: rec.findings } };
}

/** The exceptions a judgement raises: one SPEC_FAIL per failed specification, one RECONCILIATION (keys dedupe them per run). */
export function qualityExceptions(q: RunQuality): Omit<RaiseInput, 'step'>[] {
  const out: Omit<RaiseInput, 'step'>[] = [];
  for (const r of q.specTable.results) {
    if (r.verdict !== 'FAIL') continue;
    out.push({ kind: 'SPEC_FAIL', key: `SPEC_FAIL:${r.id}`, by: 'agent.orchestrator', title: `SPEC_FAIL ${r.title}: ${r.reason} (limits ${r.limits})`, evidence: { spec: r.id, limits: r.limit, data: r.data, source: r.source } });
  }
  if (!q.reconciliation.ok) {
    out.push({ kind: 'RECONCILIATION', key: 'RECONCILIATION:counts', by: 'agent.orchestrator', title: `RECONCILIATION counts do not agree: ${q.reconciliation.findings.join('; ')}`, evidence: { lines: q.reconciliation.lines, tolerancePct: RECONCILE_TOLERANCE_PCT, yieldTolerancePct: RECONCILE_YIELD_TOLERANCE_PCT } });
  }
  return out;
}

/**
 * Why this judgement can never be released, or null. A batch whose specification table has a FAIL is not
 * released by anyone: closing its exceptions records the investigation, it does not make the data pass; the QA
 * reviewer's only decision is a rejection. A table that is not there at all is refused the same way (fail safe).
 * Pure, so the rule is proved over arbitrary tables (test/unit/release-rule.unit.spec.ts).
 */
export function releaseRefusal(q: Pick<RunQuality, 'specTable'> | undefined, batch: string): LkError | null {
  if (!q?.specTable || !Array.isArray(q.specTable.results)) {
    return new LkError('LK_SPEC_FAILED', `batch ${batch} has no specification table: nothing shows that it meets its specifications, so it cannot be released; reject it`, { verdict: null, failed: [] });
  }
  const failed = q.specTable.results.filter((r) => r.verdict === 'FAIL');
  if (failed.length === 0 && q.specTable.verdict !== 'FAIL') return null;
  return new LkError(
    'LK_SPEC_FAILED',
    `batch ${batch} failed ${failed.length === 1 ? 'a specification' : `${failed.length} specifications`} (${failed.map((r) => `${r.title}: ${r.reason}`).join('; ') || 'verdict FAIL'}): it cannot be released, whatever is closed; the decision left is a rejection`,
    { verdict: 'FAIL', specTableSha256: q.specTable.sha256, failed: failed.map((r) => ({ id: r.id, title: r.title, limits: r.limits, reason: r.reason })) },
  );
}

/**
 * Evaluate every specification of the run's batch record on the run's data, reconcile the counts, and raise an
 * exception for each failed specification and each count that does not reconcile (once per run: the keys make a
 * re-evaluation after a restart raise nothing twice).
 */
export function evaluateRun(ctx: StepContext, services: Pick<StepServices, 'lims'>): RunQuality {
  const q = judgeRun(ctx.run, ctx.data, services.lims?.results(ctx.run.tenant, ctx.run.batch) ?? []);
  for (const e of qualityExceptions(q)) ctx.exception(e);
  return q;
}

/** An exception as the release package prints it. */
export function releaseException(e: ExceptionRecord): ReleaseException {
  return {
    id: e.id, kind: e.kind, severity: e.severity, status: e.status, ...(e.step ? { step: e.step } : {}), title: e.title, raisedAt: e.raisedAt,
    ...(e.closure ? { closedBy: { user: e.closure.user, name: e.closure.name, at: new Date(e.closure.at).toISOString(), comment: e.closure.comment, ...(e.closure.deviation ? { deviation: e.closure.deviation } : {}) } } : {}),
  };
}

/** The quality section of a release package: the table evaluated at the gate, and the exceptions as they stand now. */
export function releaseQuality(services: Pick<StepServices, 'exceptionsOfRun'>, runId: string, data: Record<string, unknown>): ReleaseQuality | undefined {
  const q = data['quality'] as RunQuality | undefined;
  const exceptions = services.exceptionsOfRun(runId).map(releaseException);
  if (!q?.specTable) return undefined;
  return {
    specTable: { results: q.specTable.results, verdict: q.specTable.verdict, sha256: q.specTable.sha256 } as ReleaseQuality['specTable'],
    exceptions,
    reconciliation: { ok: q.reconciliation.ok, lines: q.reconciliation.lines },
  };
}
