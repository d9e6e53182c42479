/**
 * NIR and vision inference latency.
 * - PLS: one spectrum through SNV and the model. Ours: `nirScore` (regression
 *   vector W(PᵀW)⁻¹BQᵀ compiled once into typed arrays, one dot product).
 *   Peer: ml-pls `PLS.predict` on the same SNV spectrum (the library's own
 *   Matrix path; its P·B·Qᵀ coefficients differ, the work per call is the same shape).
 * - Vision: one six-camera frame set. Ours: `classifyFrameSet` (features +
 *   softmax). Peer: 1-nearest-neighbour on raw pixels over the same training
 *   set. Budget: 100 ms per frame set (p99).
 */
import { PLS } from 'ml-pls';
import { createRng } from '../src/clock.js';
import { nirScore, trainPls } from '../src/twin/nir/pls.js';
import { nirSamples, snv } from '../src/twin/nir/spectra.js';
import { classifyFrameSet, NearestNeighbour, precisionRecall, trainVision } from '../src/twin/vision/classifier.js';
import { DEFECT_CLASSES, frameSets } from '../src/twin/vision/frames.js';
import { latencies, percentile, report } from './lib.js';

// ── NIR
const rng = createRng(7);
const cal = nirSamples(120, rng);
const test = nirSamples(40, rng, 85, 115);
const trained = trainPls(cal, test, { tenant: 'bench', seed: 7 });
const model = { id: 'potency-pls-v1', version: 1, artefact: trained.artefact };
const raw = new PLS({ latentVectors: trained.artefact.latentVariables, scale: true }, {});
raw.train(
  cal.map((s) => Array.from(snv(s.spectrum))),
  cal.map((s) => [s.potencyPct]),
);
const spectra = nirSamples(200, createRng(8));
let i = 0;
const oursNir = await latencies(() => nirScore(model, spectra[i++ % spectra.length]!.spectrum), 20_000, 2_000);
i = 0;
const peerNir = await latencies(() => raw.predict([Array.from(snv(spectra[i++ % spectra.length]!.spectrum))]), 5_000, 500);
report({
  name: 'NIR PLS prediction per spectrum (351 points, SNV)',
  unit: 'ms p50',
  ours: { label: `nirScore (${trained.artefact.latentVariables} LV, compiled)`, value: percentile(oursNir, 50) },
  peer: { label: 'ml-pls PLS.predict', value: percentile(peerNir, 50) },
  higherIsBetter: false,
  extra: { ours_p99_ms: percentile(oursNir, 99), peer_p99_ms: percentile(peerNir, 99), rmsep_pct_lc: trained.artefact.rmsep },
});

// ── vision
const train = frameSets(100, createRng(31), 1);
const held = frameSets(30, createRng(32), 100_000);
const vision = trainVision(train);
const nn = new NearestNeighbour(train);
let j = 0;
const oursVis = await latencies(() => classifyFrameSet(vision, held[j++ % held.length]!), 5_000, 300);
j = 0;
const peerVis = await latencies(() => nn.classify(held[j++ % held.length]!), 300, 20);
const macroRecall = (pred: string[]): number => {
  const pr = precisionRecall(
    held.map((s) => s.label),
    pred as never,
  );
  return DEFECT_CLASSES.reduce((a, c) => a + pr[c].recall, 0) / DEFECT_CLASSES.length;
};
report({
  name: 'vision classification per 6-frame set',
  unit: 'ms p99',
  ours: { label: 'classifyFrameSet (features + softmax)', value: percentile(oursVis, 99) },
  peer: { label: '1-NN on raw pixels', value: percentile(peerVis, 99) },
  higherIsBetter: false,
  target: 'p99 < 100 ms per frame set',
  extra: {
    ours_p50_ms: percentile(oursVis, 50),
    peer_p50_ms: percentile(peerVis, 50),
    budget_ms: 100,
    ours_macro_recall: macroRecall(held.map((s) => classifyFrameSet(vision, s).label)),
    peer_macro_recall: macroRecall(held.map((s) => nn.classify(s))),
  },
});
