/**
 * The process twin fitted on a site's own recorded batches (`linekeeper models fit --from FILE`), not on the
 * simulator: a site exports its batches from its historian and LIMS in the documented JSON format
 * ({@link RecordedBatches}, `linekeeper config schema --of recorded-batches`), linekeeper fits the twin on them,
 * measures it on the batches it held out, and registers it as a DRAFT pinned to the site — which then goes
 * through the same change-controlled promotions and golden-dataset gate as any model. The card records where
 * the data came from (the file's SHA-256 and every batch id, trained or held out). Pure but for the registry
 * write; the file is read by the caller.
 */
import { createHash } from 'node:crypto';
import { z } from 'zod';
import { LkError } from '../errors.js';
import type { Store } from '../store/store.js';
import type { ModelCard } from '../twin/card.js';
import { evaluateTwin, fitTwin } from '../twin/fit.js';
import type { RecordedBatch } from '../twin/recorded.js';
import { SETPOINT_IDS } from '../twin/setpoints.js';
import type { TwinArtefact } from './artefacts.js';
import { siteCriteria, TWIN_FIDELITY } from './golden.js';
import { registerModel, type ModelSummary } from './registry.js';

const finite = z.number().refine(Number.isFinite, 'must be a finite number');
const nonNeg = finite.refine((v) => v >= 0, 'must be ≥ 0');
const pct = finite.refine((v) => v >= 0 && v <= 100, 'must be a percentage (0–100)');
const series = <T extends z.ZodRawShape>(shape: T) => z.array(z.strictObject(shape)).min(2, 'needs at least two samples');

/** One recorded batch, in the units of the twin's setpoints (docs/twin.md). */
export const RecordedBatchSchema = z.strictObject({
  id: z.string().min(1).max(64),
  setpoints: z.strictObject(Object.fromEntries(SETPOINT_IDS.map((id) => [id, finite])) as Record<(typeof SETPOINT_IDS)[number], typeof finite>),
  blend: z.strictObject({ speedRpm: nonNeg, samples: series({ rev: nonNeg, rsdPct: pct }) }),
  drying: z.strictObject({ inletC: finite, airflowM3h: nonNeg, samples: series({ min: nonNeg, lodPct: pct }) }),
  press: z
    .array(z.strictObject({ fillDepthMm: nonNeg, mainForceKn: nonNeg, preForceKn: nonNeg, turretRpm: nonNeg, weightMg: nonNeg, weightRsdPct: pct, thicknessMm: nonNeg, hardnessN: nonNeg, cappingPct: pct, ejectionN: nonNeg }))
    .min(1, 'needs at least one press segment'),
  coating: z.strictObject({ sprayRateGMin: nonNeg, inletAirC: finite, airflowM3h: nonNeg, panRpm: nonNeg.optional(), exhaustC: finite, samples: series({ min: nonNeg, weightGainPct: pct }) }),
  dissolution: z
    .strictObject({ tensileMpa: nonNeg, weightGainPct: pct, timesMin: z.array(nonNeg).min(2), releasedPct: z.array(finite).min(2) })
    .refine((d) => d.timesMin.length === d.releasedPct.length, { message: 'timesMin and releasedPct pair up (same length)', path: ['releasedPct'] }),
});

/** A site's recorded batches: what a historian and LIMS export fills. */
export const RecordedBatches = z.strictObject({
  format: z.literal(1),
  kind: z.literal('recorded-batches'),
  /** Where the data comes from, in words (plant, period, export). */
  description: z.string().min(1).max(2000),
  batches: z.array(RecordedBatchSchema).min(1),
});
export type RecordedBatchesFile = z.infer<typeof RecordedBatches>;

/** The documents `models fit --from` takes, by their `kind`: the twin's recorded batches, the NIR model's spectra (site-nir.ts). */
export const SITE_DATA_KINDS = ['recorded-batches', 'nir-calibration'] as const;
export type SiteDataKind = (typeof SITE_DATA_KINDS)[number];

/**
 * Which site-data document this is, by its `kind`, so that it is parsed by its own schema.
 * @throws LkError LK_VALIDATION (not JSON, or no known kind), naming the file
 */
export function siteDataKind(text: string, file: string): SiteDataKind {
  const raw = parseJsonFile(text, file);
  const kind = raw !== null && typeof raw === 'object' && !Array.isArray(raw) ? (raw as Record<string, unknown>)['kind'] : undefined;
  if (!(SITE_DATA_KINDS as readonly unknown[]).includes(kind)) {
    const message = `must be one of ${SITE_DATA_KINDS.map((k) => `"${k}"`).join(', ')}, not ${JSON.stringify(kind) ?? 'missing'}`;
    throw new LkError('LK_VALIDATION', `${file}: kind: ${message}`, { file, issues: [{ path: 'kind', message }] });
  }
  return kind as SiteDataKind;
}

/** A site-data file's JSON. @throws LkError LK_VALIDATION naming the file when it is not JSON */
export function parseJsonFile(text: string, file: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch (err) {
    throw new LkError('LK_VALIDATION', `${file}: not JSON (${(err as Error).message})`, { file });
  }
}

/** Fewest batches a site fit takes: two thirds train the twin, one third measures it. */
export const MIN_SITE_BATCHES = 6;

/**
 * Parse a recorded-batches document. Every problem names the file and the path of the field.
 * @throws LkError LK_VALIDATION
 */
export function parseRecordedBatches(text: string, file: string): RecordedBatchesFile {
  const r = RecordedBatches.safeParse(parseJsonFile(text, file));
  if (!r.success) {
    const issues = r.error.issues.slice(0, 10).map((i) => ({ path: i.path.join('.') || '(root)', message: i.message }));
    throw new LkError('LK_VALIDATION', issues.map((i) => `${file}: ${i.path}: ${i.message}`).join('\n'), { file, issues });
  }
  const ids = new Set<string>();
  for (const [i, b] of r.data.batches.entries()) {
    if (ids.has(b.id)) throw new LkError('LK_VALIDATION', `${file}: batches.${i}.id: batch ${b.id} is listed twice`, { file, issues: [{ path: `batches.${i}.id`, message: 'duplicate' }] });
    ids.add(b.id);
  }
  if (r.data.batches.length < MIN_SITE_BATCHES) {
    throw new LkError('LK_VALIDATION', `${file}: ${r.data.batches.length} batch(es); a site fit needs at least ${MIN_SITE_BATCHES} (two thirds to fit, one third held out to measure the twin)`, { file });
  }
  return r.data;
}

export interface SiteFitInput {
  tenant: string;
  site: string;
  by: string;
  /** The file's text, and its name for messages and the card. */
  text: string;
  file: string;
}

/**
 * Fit the twin on the site's batches and register it as a draft. The batches are ordered by id; every third
 * (the 3rd, 6th, …) is held out, the rest fit the twin: the split is fixed by the data, so the same file gives
 * the same model. The card carries the held-out residuals (`rmsep.*`), the site's acceptance criteria (the
 * golden gate's) and the data's provenance.
 * @throws LkError LK_VALIDATION (the file), whatever the registry throws
 */
export function fitSiteTwin(store: Store, dataDir: string, i: SiteFitInput): { model: ModelSummary; trained: string[]; heldOut: string[] } {
  const doc = parseRecordedBatches(i.text, i.file);
  const sorted = [...doc.batches].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)) as unknown as RecordedBatch[];
  const held = sorted.filter((_, k) => k % 3 === 2);
  const train = sorted.filter((_, k) => k % 3 !== 2);
  const fit = fitTwin(train, { tenant: i.tenant, seed: 0 });
  const residuals = evaluateTwin(fit.params, held);
  const sha256 = createHash('sha256').update(i.text).digest('hex');
  const card: ModelCard = {
    ...fit.card,
    metrics: { ...fit.card.metrics, ...Object.fromEntries(Object.entries(residuals).map(([k, r]) => [`rmsep.${k}`, r.rmse])) },
    acceptance: siteCriteria('twin'),
    fidelity: Object.fromEntries(Object.entries(TWIN_FIDELITY).map(([k, v]) => [k, { ...v }])),
    trainingData: {
      summary: `${train.length} recorded batches of site ${i.site} from ${i.file} (sha256 ${sha256}): ${doc.description}; held out to measure it: ${held.map((b) => b.id).join(', ')}`,
      ids: train.map((b) => b.id),
      samples: train.length,
    },
    limitations: [...fit.card.limitations, `fitted on the site's own recorded batches; valid over the ranges they span (validRanges), nowhere else`],
  };
  const artefact: TwinArtefact = { kind: 'twin', params: fit.params, validRanges: fit.card.validRanges };
  const model = registerModel(store, dataDir, {
    tenant: i.tenant, analyte: 'process', family: 'twin', kind: 'twin', artefact, card, sites: [i.site], by: i.by,
    reason: `fitted on ${train.length} recorded batches of the site (${i.file}, sha256 ${sha256.slice(0, 12)}…), measured on ${held.length} held out`,
  });
  return { model, trained: train.map((b) => b.id), heldOut: held.map((b) => b.id) };
}
