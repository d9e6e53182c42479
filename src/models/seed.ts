/**
 * Default models for a fresh install: the twin fitted to simulator batches,
 * the NIR potency PLS model and the defect classifier trained on simulator
 * spectra and frame sets, all from fixed seeds, registered as validated and
 * pinned to the site so that `models list` and the run engine have something
 * to use. A real site replaces them with models fitted to its own batches.
 * Takes a few seconds (PLS cross-validation dominates).
 */
import { createRng } from '../clock.js';
import { recordBatches } from '../twin/batch.js';
import type { ModelCard } from '../twin/card.js';
import { evaluateTwin, fitTwin } from '../twin/fit.js';
import { nirSamples } from '../twin/nir/spectra.js';
import { trainPls } from '../twin/nir/pls.js';
import { DEFAULT_DESIGN_SPACE, widen, type DesignSpaceRanges } from '../twin/setpoints.js';
import { NOMINAL_PARAMS, perturbParams } from '../twin/truth.js';
import { classifyFrameSet, precisionRecall, trainVision } from '../twin/vision/classifier.js';
import { frameSets } from '../twin/vision/frames.js';
import type { TwinArtefact } from './artefacts.js';
import { registerModel, type ModelManifest, type ModelStatus } from './registry.js';

export interface SeedOptions {
  tenant: string;
  site: string;
  /** Seed of the simulated plant and of every generator (default 20261121, the default site's simulator seed). */
  seed?: number;
  /** Epoch ms from the caller's clock. */
  at: number;
  by: string;
  /** Register as draft instead of validated. */
  draft?: boolean;
  /** The approved design space the twin must cover (default: the built-in DEFAULT_DESIGN_SPACE). */
  designSpace?: Readonly<DesignSpaceRanges>;
}

/** Fit and train the three default models and register them. Throws the registry's errors. */
export function seedDefaultModels(dataDir: string, opts: SeedOptions): ModelManifest[] {
  const seed = opts.seed ?? 20261121;
  const status: ModelStatus = opts.draft ? 'draft' : 'validated';
  const common = { tenant: opts.tenant, sites: [opts.site], status, at: opts.at, by: opts.by };
  const out: ModelManifest[] = [];

  // twin: fitted on 16 batches spanning a knowledge space 10 % wider than the design space, checked on 8 held-out batches
  const truth = perturbParams(NOMINAL_PARAMS, seed);
  const rng = createRng(seed);
  const space = opts.designSpace ?? DEFAULT_DESIGN_SPACE;
  const train = recordBatches(truth, widen(space, 0.1), 16, rng, 'T');
  const held = recordBatches(truth, space, 8, rng, 'H');
  const fit = fitTwin(train, { tenant: opts.tenant, seed });
  const heldOut = evaluateTwin(fit.params, held);
  const card: ModelCard = { ...fit.card, metrics: { ...fit.card.metrics, ...Object.fromEntries(Object.entries(heldOut).map(([k, r]) => [`rmsep.${k}`, r.rmse])) } };
  const twin: TwinArtefact = { kind: 'twin', params: fit.params, validRanges: fit.card.validRanges };
  out.push(registerModel(dataDir, { ...common, analyte: 'process', family: 'twin', kind: 'twin', artefact: twin, card }));

  // NIR potency: 120 calibration spectra 80–120 % LC, 40 independent test spectra
  const nrng = createRng(seed + 1);
  const pls = trainPls(nirSamples(120, nrng), nirSamples(40, nrng, 85, 115), { tenant: opts.tenant, seed: seed + 1 });
  out.push(registerModel(dataDir, { ...common, analyte: 'potency', family: 'pls', kind: 'nir-pls', artefact: pls.artefact, card: pls.card }));

  // vision: 100 frame sets per class to train, 40 per class held out
  const vrng = createRng(seed + 2);
  const vtrain = frameSets(100, vrng, 1);
  const vtest = frameSets(40, vrng, 1_000_000);
  const vision = trainVision(vtrain);
  const pr = precisionRecall(
    vtest.map((s) => s.label),
    vtest.map((s) => classifyFrameSet(vision, s).label),
  );
  const metrics: Record<string, number> = {};
  for (const [c, v] of Object.entries(pr)) {
    metrics[`precision.${c}`] = v.precision;
    metrics[`recall.${c}`] = v.recall;
  }
  out.push(
    registerModel(dataDir, {
      ...common,
      analyte: 'defects',
      family: 'softmax',
      kind: 'vision-softmax',
      artefact: vision,
      card: {
        analyte: 'defects',
        family: 'softmax',
        intendedUse: 'Classify each six-camera frame set of the inspection station (good, chipped, capped, sticking, coating defect, foreign particle, broken) within 100 ms.',
        tenant: opts.tenant,
        trainingData: { summary: `${vtrain.length} simulator frame sets (${vtrain.length / 7} per class), ${vtest.length} held out`, ids: [], samples: vtrain.length + vtest.length, seed: seed + 2 },
        metrics,
        validRanges: {},
        limitations: ['Trained on simulator frame sets (6 × 24×24 grey); a real station needs retraining on its own defect library.'],
      },
    }),
  );
  return out;
}
