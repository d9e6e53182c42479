/**
 * The NIR potency model fitted on a site's own spectra (`linekeeper models fit --from FILE` with a
 * `nir-calibration` document), not on the simulator's: the site exports the spectra its analyser took of blend or
 * tablets together with their reference values from the LIMS (HPLC assay, % label claim) in the documented JSON
 * format ({@link NirCalibration}, `linekeeper config schema --of nir-calibration`). linekeeper trains the PLS model
 * on them exactly as the default one is trained (SNV, latent variables by cross-validation), measures it on the
 * spectra it held out, and registers it as a DRAFT pinned to the site — promoted like any model, through the
 * golden-dataset gate. The card records where the data came from (the file's SHA-256, every spectrum id,
 * calibration or held out). Pure but for the registry write; the file is read by the caller.
 *
 * The spectra must be on linekeeper's wavelength axis ({@link WL_START_NM}, {@link WL_STEP_NM}, {@link WL_COUNT}):
 * the models score the analyser's spectra point by point on that axis. Resampling another axis onto it is not
 * built: a file on another axis is refused, saying which axis is expected.
 */
import { createHash } from 'node:crypto';
import { z } from 'zod';
import { LkError } from '../errors.js';
import type { Store } from '../store/store.js';
import type { ModelCard } from '../twin/card.js';
import { trainPls } from '../twin/nir/pls.js';
import { WL_COUNT, WL_START_NM, WL_STEP_NM } from '../twin/nir/spectra.js';
import { siteCriteria } from './golden.js';
import { parseJsonFile } from './site-fit.js';
import { registerModel, type ModelSummary } from './registry.js';

const finite = z.number().refine(Number.isFinite, 'must be a finite number');
const EXPECTED_AXIS = `${WL_START_NM} nm, step ${WL_STEP_NM} nm, ${WL_COUNT} points (${WL_START_NM}–${WL_START_NM + (WL_COUNT - 1) * WL_STEP_NM} nm)`;

/** One spectrum with its reference value. */
export const NirReferenceSpectrum = z.strictObject({
  /** The sample's id (unique in the file); the split into calibration and held-out spectra is by id. */
  id: z.string().min(1).max(64),
  /** Absorbance (log 1/R) at each wavelength of the axis, `wavelengths.count` values. */
  absorbance: z.array(finite).min(1),
  /** The reference value of the analyte (HPLC assay), % of label claim. */
  reference_pct: finite.refine((v) => v >= 0 && v <= 200, 'must be a % of label claim (0–200)'),
  /** The LIMS sample or result the reference value comes from. */
  lims_ref: z.string().min(1).max(128).optional(),
});

/** A site's NIR spectra with their LIMS reference values: what an analyser export joined to the LIMS fills. */
export const NirCalibration = z.strictObject({
  format: z.literal(1),
  kind: z.literal('nir-calibration'),
  /** Where the data comes from, in words (analyser, product, period, LIMS method). */
  description: z.string().min(1).max(2000),
  /** The analyte the reference values are of (the only one the NIR models predict). */
  analyte: z.literal('potency'),
  /** The wavelength axis of every spectrum; it must be linekeeper's (no resampling). */
  wavelengths: z
    .strictObject({ start_nm: finite, step_nm: finite.refine((v) => v > 0, 'must be > 0'), count: z.int().min(1) })
    .describe(`The spectra's wavelength axis. It must be linekeeper's NIR axis: start_nm ${WL_START_NM}, step_nm ${WL_STEP_NM}, count ${WL_COUNT}; other axes are refused (resampling is not built).`),
  spectra: z.array(NirReferenceSpectrum).min(1),
});
export type NirCalibrationFile = z.infer<typeof NirCalibration>;

/** The PLS training's least: 20 spectra to calibrate, 5 held out to test. */
const MIN_CALIBRATION = 20;
const MIN_TEST = 5;
/** Every HOLD_OUT-th spectrum by id is held out. */
const HOLD_OUT = 4;
/** Fewest spectra a site NIR fit takes (26: 20 calibrate, every 4th held out gives 6). */
export const MIN_SITE_SPECTRA = (() => {
  let n = MIN_CALIBRATION;
  while (Math.floor(n / HOLD_OUT) < MIN_TEST || n - Math.floor(n / HOLD_OUT) < MIN_CALIBRATION) n++;
  return n;
})();

interface Issue {
  path: string;
  message: string;
}

function refuse(file: string, issues: Issue[]): never {
  throw new LkError('LK_VALIDATION', issues.map((i) => `${file}: ${i.path}: ${i.message}`).join('\n'), { file, issues });
}

/**
 * Parse a nir-calibration document. Every problem names the file and the path of the field; besides the schema: the
 * axis must be linekeeper's, every spectrum has `wavelengths.count` values, ids are unique, and there are enough
 * spectra for the split.
 * @throws LkError LK_VALIDATION
 */
export function parseNirCalibration(text: string, file: string): NirCalibrationFile {
  const r = NirCalibration.safeParse(parseJsonFile(text, file));
  if (!r.success) refuse(file, r.error.issues.slice(0, 10).map((i) => ({ path: i.path.join('.') || '(root)', message: i.message })));
  const doc = r.data;
  const axis: Issue[] = [];
  const expected = { start_nm: WL_START_NM, step_nm: WL_STEP_NM, count: WL_COUNT } as const;
  for (const k of ['start_nm', 'step_nm', 'count'] as const) {
    if (doc.wavelengths[k] !== expected[k]) {
      axis.push({ path: `wavelengths.${k}`, message: `is ${doc.wavelengths[k]}, linekeeper's NIR axis has ${expected[k]}: spectra must be on ${EXPECTED_AXIS} (resampling another axis is not built; export the spectra on this axis)` });
    }
  }
  if (axis.length) refuse(file, axis);
  const issues: Issue[] = [];
  const ids = new Map<string, number>();
  for (const [i, s] of doc.spectra.entries()) {
    if (s.absorbance.length !== doc.wavelengths.count) issues.push({ path: `spectra.${i}.absorbance`, message: `has ${s.absorbance.length} values, wavelengths.count says ${doc.wavelengths.count}` });
    const first = ids.get(s.id);
    if (first !== undefined) issues.push({ path: `spectra.${i}.id`, message: `spectrum ${s.id} is listed twice (also spectra.${first}.id)` });
    else ids.set(s.id, i);
  }
  if (issues.length) refuse(file, issues.slice(0, 10));
  const { calibration, heldOut } = split(doc.spectra);
  if (calibration.length < MIN_CALIBRATION || heldOut.length < MIN_TEST) {
    refuse(file, [{
      path: 'spectra',
      message: `${doc.spectra.length} spectra: ${calibration.length} to calibrate and ${heldOut.length} held out (every ${HOLD_OUT}th by id); PLS needs at least ${MIN_CALIBRATION} and ${MIN_TEST}, so a site NIR fit needs at least ${MIN_SITE_SPECTRA} spectra`,
    }]);
  }
  return doc;
}

type Spectrum = NirCalibrationFile['spectra'][number];

/** Ordered by id, every 4th (the 4th, 8th, …) held out: fixed by the data, so the same file gives the same model. */
function split(spectra: readonly Spectrum[]): { calibration: Spectrum[]; heldOut: Spectrum[] } {
  const sorted = [...spectra].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  return { calibration: sorted.filter((_, k) => k % HOLD_OUT !== HOLD_OUT - 1), heldOut: sorted.filter((_, k) => k % HOLD_OUT === HOLD_OUT - 1) };
}

export interface SiteNirInput {
  tenant: string;
  site: string;
  by: string;
  /** The file's text, and its name for messages and the card. */
  text: string;
  file: string;
}

/**
 * Train the PLS potency model on the site's spectra and register it as a draft. The held-out spectra are the
 * independent test set: the card's `rmsep` is measured on them. The card's acceptance criteria are the site limits
 * of the default PLS model (the golden gate's); its training data names the file, its SHA-256 and every id.
 * @throws LkError LK_VALIDATION (the file), whatever the registry throws
 */
export function fitSiteNir(store: Store, dataDir: string, i: SiteNirInput): { model: ModelSummary; trained: string[]; heldOut: string[] } {
  const doc = parseNirCalibration(i.text, i.file);
  const { calibration, heldOut } = split(doc.spectra);
  const sample = (s: Spectrum) => ({ spectrum: s.absorbance, potencyPct: s.reference_pct });
  const trained = calibration.map((s) => s.id);
  const held = heldOut.map((s) => s.id);
  const pls = trainPls(calibration.map(sample), heldOut.map(sample), { tenant: i.tenant, analyte: doc.analyte, seed: 0, ids: trained });
  const sha256 = createHash('sha256').update(i.text).digest('hex');
  const card: ModelCard = {
    ...pls.card,
    acceptance: siteCriteria('nir-pls'),
    trainingData: {
      summary:
        `${trained.length} NIR spectra of site ${i.site} with LIMS reference values from ${i.file} (sha256 ${sha256}): ${doc.description}; ` +
        `SNV, ${WL_COUNT} points ${WL_START_NM}–${WL_START_NM + (WL_COUNT - 1) * WL_STEP_NM} nm, 5-fold CV (fold seed 0); held out as the independent test set (rmsep): ${held.join(', ')}`,
      ids: trained,
      samples: trained.length,
    },
    limitations: [
      `Calibrated on the site's own spectra (${i.file}): valid for the formulation, analyser and reference method they come from, over the reference range they span (validRanges), nowhere else.`,
    ],
  };
  const model = registerModel(store, dataDir, {
    tenant: i.tenant, analyte: doc.analyte, family: 'pls', kind: 'nir-pls', artefact: pls.artefact, card, sites: [i.site], by: i.by,
    reason: `fitted on ${trained.length} NIR spectra of the site (${i.file}, sha256 ${sha256.slice(0, 12)}…), measured on ${held.length} held out`,
  });
  return { model, trained, heldOut: held };
}
