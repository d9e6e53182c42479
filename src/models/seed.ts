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
import { createRng } from '../clock.js';
import { LkError } from '../errors.js';
import type { Store } from '../store/store.js';
import { recordBatches } from '../twin/batch.js';
import type { ModelCard } from '../twin/card.js';
import { evaluateTwin, fitTwin } from '../twin/fit.js';
import { nirSamples } from '../twin/nir/spectra.js';
import { trainPls } from '../twin/nir/pls.js';
import { DEFAULT_DESIGN_SPACE, SETPOINT_IDS, widen, type DesignSpaceRanges } from '../twin/setpoints.js';
import { NOMINAL_PARAMS, perturbParams } from '../twin/truth.js';
import { classifyFrameSet, precisionRecall, trainVision } from '../twin/vision/classifier.js';
import { frameSets } from '../twin/vision/frames.js';
import type { TwinArtefact } from './artefacts.js';
import { SITE_LIMITS } from './golden.js';
import { registerModel, type ModelKind, type ModelSummary, type RegisterInput } from './registry.js';

/** The default model families, as agents.yaml names them (`<analyte>-<family>`). */
export const DEFAULT_FAMILIES = ['process-twin', 'potency-pls', 'defects-softmax'] as const;
export type DefaultFamily = (typeof DEFAULT_FAMILIES)[number];

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

const criteria = (kind: ModelKind): ModelCard['acceptance'] => Object.fromEntries(Object.entries(SITE_LIMITS[kind]).map(([k, v]) => [k, { ...v }]));

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

/** Vision: 100 frame sets per class to train, 40 per class held out. */
export function buildVision(tenant: string, seed: number): Candidate {
  const rng = createRng(seed + 2);
  const train = frameSets(100, rng, 1);
  const test = frameSets(40, rng, 1_000_000);
  const vision = trainVision(train);
  const pr = precisionRecall(
    test.map((s) => s.label),
    test.map((s) => classifyFrameSet(vision, s).label),
  );
  const metrics: Record<string, number> = {};
  for (const [c, v] of Object.entries(pr)) {
    metrics[`precision.${c}`] = v.precision;
    metrics[`recall.${c}`] = v.recall;
  }
  return {
    analyte: 'defects',
    family: 'softmax',
    kind: 'vision-softmax',
    artefact: vision,
    card: {
      analyte: 'defects',
      family: 'softmax',
      intendedUse: 'Classify each six-camera frame set of the inspection station (good, chipped, capped, sticking, coating defect, foreign particle, broken) within 100 ms.',
      tenant,
      trainingData: { summary: `${train.length} simulator frame sets (${train.length / 7} per class), ${test.length} held out`, ids: [], samples: train.length + test.length, seed: seed + 2 },
      metrics,
      acceptance: criteria('vision-softmax'),
      validRanges: {},
      limitations: ['Trained on simulator frame sets (6 × 24×24 grey); a real station needs retraining on its own defect library.'],
    },
  };
}

/**
 * Build the default candidates of `families` (fit and train; pure computation, a few seconds). The PLS and vision
 * models depend on the seed only (their training data is the simulator's, whoever the tenant): with a `shared`
 * map, one call's training is reused by the next tenant's with the card's tenant replaced — the same bytes as
 * training again, at a fraction of the time. The twin is fitted per tenant (its knowledge space is the tenant's).
 */
export function buildDefaultModels(
  tenant: string,
  seed: number,
  families: readonly DefaultFamily[] = DEFAULT_FAMILIES,
  designSpace?: Readonly<DesignSpaceRanges>,
  shared?: Map<string, Candidate>,
): Candidate[] {
  return families.map((f) => {
    if (f === 'process-twin') return buildTwin(tenant, seed, designSpace);
    const key = `${f}:${seed}`;
    const c = shared?.get(key) ?? (f === 'potency-pls' ? buildPls(tenant, seed) : buildVision(tenant, seed));
    shared?.set(key, c);
    return { ...c, card: { ...c.card, tenant } };
  });
}

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
