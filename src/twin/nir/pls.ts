/**
 * NIR potency by PLS regression (ml-pls) on SNV-pre-treated spectra.
 *
 * Training picks the number of latent variables by k-fold cross-validation
 * (the smallest count whose RMSECV is within 2 % of the best, for parsimony),
 * then reports RMSEC (calibration), RMSECV and RMSEP (an independent test
 * set) on the card. Scoring (score.ts, re-exported here) gives the prediction with a 95 % interval from
 * RMSEP (t quantile on the calibration degrees of freedom) and flags spectra
 * whose prediction falls outside the calibrated range instead of trusting them.
 */
import { inverse, Matrix } from 'ml-matrix';
import { PLS } from 'ml-pls';
import { createRng } from '../../clock.js';
import { LkError } from '../../errors.js';
import type { ModelCard } from '../card.js';
import { snv, WL_COUNT, WL_START_NM, WL_STEP_NM } from './spectra.js';
import type { PlsArtefact } from './score.js';

export { nirScore, type NirModel, type NirScore, type PlsArtefact } from './score.js';

export interface PlsTraining {
  artefact: PlsArtefact;
  card: ModelCard;
  /** RMSECV for each latent-variable count tried (index 0 = 1 LV). */
  rmsecvByLv: number[];
}

function fitPls(x: number[][], y: number[], lv: number): PLS {
  const pls = new PLS({ latentVectors: lv, scale: true, tolerance: 1e-8 }, {});
  pls.train(x, y.map((v) => [v]));
  return pls;
}

function rmse(a: readonly number[], b: readonly number[]): number {
  let ss = 0;
  for (let i = 0; i < a.length; i++) ss += (a[i]! - b[i]!) ** 2;
  return Math.sqrt(ss / a.length);
}

/**
 * Regression vector in autoscaled units, b = W·(PᵀW)⁻¹·B·Qᵀ. ml-pls's own
 * `predict` uses P·B·Qᵀ, which equals it only for one latent variable and
 * degrades with more (RMSECV rose from 2 LVs on in our calibrations); the
 * scores of the deflated NIPALS are T = X·W·(PᵀW)⁻¹, hence this form.
 */
function regressionVector(pls: PLS): number[] {
  const W = pls.W!;
  const P = pls.P!;
  const r = W.mmul(inverse(P.transpose().mmul(W)));
  return r.mmul(pls.B!).mmul(pls.Q!.transpose()).getColumn(0);
}

function predictWith(pls: PLS, x: number[][]): number[] {
  const b = Matrix.columnVector(regressionVector(pls));
  const mx = pls.meanX as number[];
  const sx = pls.stdDevX as number[];
  const z = new Matrix(x).subRowVector(mx).divRowVector(sx);
  return z.mmul(b).getColumn(0).map((v) => v * (pls.stdDevY as number[])[0]! + (pls.meanY as number[])[0]!);
}

/** What PLS training reads of a sample: its spectrum and its reference potency (a LIMS value, or the simulator's). */
export interface PlsSample {
  spectrum: ArrayLike<number>;
  potencyPct: number;
}

export interface TrainPlsOptions {
  tenant: string;
  analyte?: string;
  /** Latent variables tried: 1…maxLv (default 8). */
  maxLv?: number;
  folds?: number;
  /** Seed of the fold assignment (and of the generator, recorded on the card). */
  seed: number;
  ids?: string[];
}

/**
 * Train a PLS potency model on calibration samples and test it on an
 * independent set. Throws LK_VALIDATION with fewer than 20 calibration or 5
 * test samples, or spectra of the wrong length.
 */
export function trainPls(calibration: readonly PlsSample[], test: readonly PlsSample[], opts: TrainPlsOptions): PlsTraining {
  if (calibration.length < 20 || test.length < 5) throw new LkError('LK_VALIDATION', 'PLS training needs at least 20 calibration and 5 test samples');
  for (const s of [...calibration, ...test]) {
    if (s.spectrum.length !== WL_COUNT) throw new LkError('LK_VALIDATION', `spectra must have ${WL_COUNT} points`);
  }
  const x = calibration.map((s) => Array.from(snv(s.spectrum)));
  const y = calibration.map((s) => s.potencyPct);
  const maxLv = opts.maxLv ?? 8;
  const folds = opts.folds ?? 5;
  const rng = createRng(opts.seed);
  const fold = x.map((_, i) => i % folds);
  for (let i = fold.length - 1; i > 0; i--) {
    const j = rng.int(0, i);
    [fold[i], fold[j]] = [fold[j]!, fold[i]!];
  }
  const rmsecvByLv: number[] = [];
  for (let lv = 1; lv <= maxLv; lv++) {
    const pred = new Array<number>(y.length);
    for (let f = 0; f < folds; f++) {
      const tr = x.flatMap((_, i) => (fold[i] !== f ? [i] : []));
      const te = x.flatMap((_, i) => (fold[i] === f ? [i] : []));
      const m = fitPls(
        tr.map((i) => x[i]!),
        tr.map((i) => y[i]!),
        lv,
      );
      const p = predictWith(
        m,
        te.map((i) => x[i]!),
      );
      te.forEach((i, k) => (pred[i] = p[k]!));
    }
    rmsecvByLv.push(rmse(y, pred));
  }
  const best = Math.min(...rmsecvByLv);
  const lv = rmsecvByLv.findIndex((r) => r <= best * 1.02) + 1;
  const pls = fitPls(x, y, lv);
  const rmsec = rmse(y, predictWith(pls, x));
  const xt = test.map((s) => Array.from(snv(s.spectrum)));
  const yt = test.map((s) => s.potencyPct);
  const rmsep = rmse(yt, predictWith(pls, xt));
  const analyte = opts.analyte ?? 'potency';
  const artefact: PlsArtefact = {
    kind: 'nir-pls',
    analyte,
    wavelengths: { startNm: WL_START_NM, stepNm: WL_STEP_NM, count: WL_COUNT },
    pretreatment: 'snv',
    latentVariables: lv,
    meanX: Array.from(pls.meanX as ArrayLike<number>),
    stdDevX: Array.from(pls.stdDevX as ArrayLike<number>),
    meanY: (pls.meanY as number[])[0]!,
    stdDevY: (pls.stdDevY as number[])[0]!,
    coefficients: regressionVector(pls),
    calibration: { n: y.length, yMin: Math.min(...y), yMax: Math.max(...y) },
    rmsec,
    rmsecv: rmsecvByLv[lv - 1]!,
    rmsep,
  };
  const card: ModelCard = {
    analyte,
    family: 'pls',
    intendedUse: `In-line NIR ${analyte} (% label claim) of blend and tablets for blend end point and release evidence; predictions outside the calibrated range are flagged.`,
    tenant: opts.tenant,
    trainingData: {
      summary: `${calibration.length} calibration and ${test.length} independent test spectra (SNV, ${WL_COUNT} points ${WL_START_NM}–${WL_START_NM + (WL_COUNT - 1) * WL_STEP_NM} nm), ${folds}-fold CV`,
      ids: opts.ids ?? [],
      samples: calibration.length + test.length,
      seed: opts.seed,
    },
    metrics: { latentVariables: lv, rmsec, rmsecv: artefact.rmsecv, rmsep },
    validRanges: { [analyte]: { min: artefact.calibration.yMin, max: artefact.calibration.yMax, unit: '%' } },
    limitations: ['Calibrated for the MCC/lactose formulation; other excipient systems need their own model.'],
  };
  return { artefact, card, rmsecvByLv };
}
