/**
 * Default models for a fresh install: the twin fitted to simulator batches,
 * the NIR potency PLS model and the defect classifier trained on simulator
 * spectra and frame sets, all from fixed seeds. They are registered as
 * DRAFTS pinned to the site: a model reaches `validated` only through the
 * change-controlled promotions and their golden-dataset gate (change.ts; the
 * demo site does that in demo.ts). A real site replaces them with models
 * fitted to its own batches. Takes a few seconds (twin fit and PLS
 * cross-validation dominate).
 *
 * Each card carries its acceptance criteria (the golden gate's pass
 * criteria), written here before any evaluation, at the site limits of
 * golden.ts: a validation protocol states its criteria before the test.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { recordBatches } from '../../connectors/sim/ground/batches.js';
import { perturbParams } from '../../connectors/sim/ground/truth.js';
import { createRng } from '../clock.js';
import { LkError } from '../errors.js';
import type { Store } from '../store/store.js';
import type { ModelCard } from '../twin/card.js';
import { evaluateTwin, fitTwin } from '../twin/fit.js';
import { nirSamples } from '../twin/nir/spectra.js';
import { trainPls } from '../twin/nir/pls.js';
import { DEFAULT_DESIGN_SPACE, SETPOINT_IDS, widen, type DesignSpaceRanges } from '../twin/setpoints.js';
import { NOMINAL_PARAMS } from '../twin/params.js';
import { classifyFeatures, frameSetFeatures, precisionRecall, trainVisionOnFeatures, type VisionArtefact } from '../twin/vision/classifier.js';
import { DEFECT_CLASSES, forEachFrameSet, HEIGHT, WIDTH, type DefectClass } from '../twin/vision/frames.js';
import type { TwinArtefact } from './artefacts.js';
import { siteCriteria, TWIN_FIDELITY } from './golden.js';
import { DEFAULT_FAMILIES, type DefaultFamily } from './demo-plan.js';
import { defaultGoldenDir } from './golden-data.js';
import { registerModel, type ModelSummary, type RegisterInput } from './registry.js';

/** The default model families, as agents.yaml names them (`<analyte>-<family>`). */
export { DEFAULT_FAMILIES, type DefaultFamily };

export interface SeedOptions {
  tenant: string;
  site: string;
  /** Seed of the simulated plant and of every generator (default 20261121, the default site's simulator seed). */
  seed?: number;
  /** The person registering the drafts. */
  by: string;
  /**
   * The tenant's approved design space. The twin is fitted over a knowledge space 10 % wider than the hull of
   * this space and the built-in design space (where the golden batches lie), so it covers both.
   */
  designSpace?: Readonly<DesignSpaceRanges>;
  /** Only these families (default: all three). */
  families?: readonly DefaultFamily[];
}

/** A model to register: kind, analyte/family, artefact and card. */
export type Candidate = Pick<RegisterInput, 'analyte' | 'family' | 'kind' | 'artefact' | 'card'>;

const criteria = siteCriteria;

function hull(a: Readonly<DesignSpaceRanges>, b: Readonly<DesignSpaceRanges>): DesignSpaceRanges {
  const out = {} as DesignSpaceRanges;
  for (const id of SETPOINT_IDS) out[id] = { min: Math.min(a[id].min, b[id].min), max: Math.max(a[id].max, b[id].max), unit: a[id].unit };
  return out;
}

/** The twin: fitted on 16 batches over the knowledge space, checked on 8 held-out batches of the design space. */
export function buildTwin(tenant: string, seed: number, designSpace?: Readonly<DesignSpaceRanges>): Candidate {
  const truth = perturbParams(NOMINAL_PARAMS, seed);
  const rng = createRng(seed);
  const space = designSpace ?? DEFAULT_DESIGN_SPACE;
  const train = recordBatches(truth, widen(hull(space, DEFAULT_DESIGN_SPACE), 0.1), 16, rng, 'T');
  const held = recordBatches(truth, space, 8, rng, 'H');
  const fit = fitTwin(train, { tenant, seed });
  const heldOut = evaluateTwin(fit.params, held);
  const card: ModelCard = {
    ...fit.card,
    metrics: { ...fit.card.metrics, ...Object.fromEntries(Object.entries(heldOut).map(([k, r]) => [`rmsep.${k}`, r.rmse])) },
    acceptance: criteria('twin'),
    fidelity: Object.fromEntries(Object.entries(TWIN_FIDELITY).map(([k, v]) => [k, { ...v }])),
  };
  const artefact: TwinArtefact = { kind: 'twin', params: fit.params, validRanges: fit.card.validRanges };
  return { analyte: 'process', family: 'twin', kind: 'twin', artefact, card };
}

/** NIR potency: 120 calibration spectra 80–120 % LC, 40 independent test spectra. */
export function buildPls(tenant: string, seed: number): Candidate {
  const rng = createRng(seed + 1);
  const pls = trainPls(nirSamples(120, rng), nirSamples(40, rng, 85, 115), { tenant, seed: seed + 1 });
  return { analyte: 'potency', family: 'pls', kind: 'nir-pls', artefact: pls.artefact, card: { ...pls.card, acceptance: criteria('nir-pls') } };
}

/** Frame sets per class the default classifier is trained on, and held out to measure it. */
export const VISION_TRAIN_PER_CLASS = 60;
export const VISION_HELD_OUT_PER_CLASS = 40;

/** The default classifier of a seed and its held-out figures, as committed in config/models (see {@link trainDefaultVision}). */
export interface TrainedVision {
  format: 1;
  seed: number;
  trainPerClass: number;
  heldOutPerClass: number;
  artefact: VisionArtefact;
  /** precision.<class>, recall.<class>, precision.min, recall.min, accuracy on the held-out sets. */
  metrics: Record<string, number>;
}

/**
 * Train the default classifier of a seed: {@link VISION_TRAIN_PER_CLASS} simulator frame sets per class, measured
 * on {@link VISION_HELD_OUT_PER_CLASS} held-out ones. Renders 700 sets of 6 × 640×480 one at a time (features kept,
 * pixels dropped): about 10 s of CPU, which is why the default seed's result is committed
 * (`config/models/defects-softmax-<seed>.json`, written by tools/make-golden.ts, checked by a test).
 */
export function trainDefaultVision(seed: number): TrainedVision {
  const rng = createRng(seed + 2);
  const take = (perClass: number, first: number): { features: Float64Array; label: DefectClass }[] => {
    const out: { features: Float64Array; label: DefectClass }[] = [];
    forEachFrameSet(perClass, rng, first, (s) => out.push({ features: frameSetFeatures(s), label: s.label }));
    return out;
  };
  const train = take(VISION_TRAIN_PER_CLASS, 1);
  const test = take(VISION_HELD_OUT_PER_CLASS, 1_000_000);
  const artefact = trainVisionOnFeatures(train);
  const predicted = test.map((t) => classifyFeatures(artefact, 0, t.features).label);
  const pr = precisionRecall(
    test.map((t) => t.label),
    predicted,
  );
  const metrics: Record<string, number> = {};
  for (const c of DEFECT_CLASSES) {
    metrics[`precision.${c}`] = pr[c].precision;
    metrics[`recall.${c}`] = pr[c].recall;
  }
  metrics['precision.min'] = Math.min(...DEFECT_CLASSES.map((c) => pr[c].precision));
  metrics['recall.min'] = Math.min(...DEFECT_CLASSES.map((c) => pr[c].recall));
  metrics['accuracy'] = predicted.filter((p, i) => p === test[i]!.label).length / test.length;
  return { format: 1, seed, trainPerClass: VISION_TRAIN_PER_CLASS, heldOutPerClass: VISION_HELD_OUT_PER_CLASS, artefact, metrics };
}

/** `config/models/defects-softmax-<seed>.json` of this installation. */
export function trainedVisionFile(seed: number): string {
  return join(defaultGoldenDir(), '..', 'models', `defects-softmax-${seed}.json`);
}

/** The committed training result of a seed, or null when none is committed (or it is of another shape). */
function committedVision(seed: number): TrainedVision | null {
  const file = trainedVisionFile(seed);
  if (!existsSync(file)) return null;
  const t = JSON.parse(readFileSync(file, 'utf8')) as TrainedVision;
  return t.format === 1 && t.seed === seed && t.trainPerClass === VISION_TRAIN_PER_CLASS && t.heldOutPerClass === VISION_HELD_OUT_PER_CLASS && t.artefact?.kind === 'vision-softmax' ? t : null;
}

/**
 * Vision: trained on 60 frame sets per class, measured on 40 per class held out; the card's metrics are those
 * measured figures. The default seed's result is read from config/models (the same bytes training gives, tested);
 * any other seed trains here.
 */
export function buildVision(tenant: string, seed: number): Candidate {
  const trained = committedVision(seed) ?? trainDefaultVision(seed);
  const nTrain = trained.trainPerClass * DEFECT_CLASSES.length;
  const nTest = trained.heldOutPerClass * DEFECT_CLASSES.length;
  return {
    analyte: 'defects',
    family: 'softmax',
    kind: 'vision-softmax',
    artefact: trained.artefact,
    card: {
      analyte: 'defects',
      family: 'softmax',
      intendedUse: 'Classify each six-camera frame set of the inspection station (good, chipped, capped, sticking, coating defect, foreign particle, broken) within 100 ms.',
      tenant,
      trainingData: { summary: `${nTrain} simulator frame sets (${trained.trainPerClass} per class), ${nTest} held out (${trained.heldOutPerClass} per class)`, ids: [], samples: nTrain + nTest, seed: seed + 2 },
      metrics: { ...trained.metrics },
      acceptance: criteria('vision-softmax'),
      validRanges: {},
      limitations: [`Trained on simulator frame sets (6 × ${WIDTH}×${HEIGHT} 8-bit grey); a real station needs retraining on its own defect library.`],
    },
  };
}

/**
 * Build the default candidates of `families` (fit and train; pure computation, a few seconds), each once per
 * process ({@link BUILT}). The PLS and vision models depend on the seed only (their training data is the
 * simulator's, whoever the tenant): the next tenant's are the same candidates with the card's tenant replaced —
 * the same bytes as training again. The twin is fitted per tenant (its knowledge space is the tenant's).
 */
export function buildDefaultModels(
  tenant: string,
  seed: number,
  families: readonly DefaultFamily[] = DEFAULT_FAMILIES,
  designSpace?: Readonly<DesignSpaceRanges>,
): Candidate[] {
  return families.map((f) => {
    if (f === 'process-twin') {
      const key = `${f}:${seed}:${tenant}:${designSpace ? JSON.stringify(designSpace) : '-'}`;
      const twin = BUILT.get(key) ?? buildTwin(tenant, seed, designSpace);
      BUILT.set(key, twin);
      return structuredClone(twin);
    }
    const key = `${f}:${seed}`;
    const c = BUILT.get(key) ?? (f === 'potency-pls' ? buildPls(tenant, seed) : buildVision(tenant, seed));
    BUILT.set(key, c);
    return structuredClone({ ...c, card: { ...c.card, tenant } });
  });
}

/**
 * Candidates this process has built, by family, seed (and for the twin tenant and design space): the computation
 * is pure, so a data directory set up again in the same process (a second site, a test's fresh node) gets the same
 * bytes without fitting again. A handful of entries of a few kB; callers receive copies.
 */
const BUILT = new Map<string, Candidate>();

/**
 * Fit and train the default models and register them as drafts pinned to the site.
 * @throws the registry's errors (LK_VALIDATION for a bad tenant, site or person).
 */
export function seedDefaultModels(store: Store, dataDir: string, opts: SeedOptions): ModelSummary[] {
  const families = opts.families ?? DEFAULT_FAMILIES;
  if (families.some((f) => !DEFAULT_FAMILIES.includes(f))) throw new LkError('LK_VALIDATION', `default model families are ${DEFAULT_FAMILIES.join(', ')}`);
  const seed = opts.seed ?? 20261121;
  return buildDefaultModels(opts.tenant, seed, families, opts.designSpace).map((c) =>
    registerModel(store, dataDir, { ...c, tenant: opts.tenant, sites: [opts.site], by: opts.by, reason: `default model fitted on simulator data (seed ${seed})` }),
  );
}
