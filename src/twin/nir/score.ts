/**
 * NIR potency from a stored PLS model (training is pls.ts): the prediction of one SNV-pre-treated spectrum from the
 * model's regression vector, with a 95 % interval from RMSEP (t quantile on the calibration degrees of freedom), and
 * a flag for a prediction outside the calibrated range instead of trusting it. Apart from the training so that a
 * daemon that scores spectra does not load ml-pls and ml-matrix.
 */
import jStat from 'jstat';
import { LkError } from '../../errors.js';
import { snv } from './spectra.js';

/** The stored form of a PLS model (the registry's artefact JSON). */
export interface PlsArtefact {
  kind: 'nir-pls';
  analyte: string;
  wavelengths: { startNm: number; stepNm: number; count: number };
  pretreatment: 'snv';
  latentVariables: number;
  /** Autoscaling of the SNV spectra and of y, and the regression vector, from ml-pls. */
  meanX: number[];
  stdDevX: number[];
  meanY: number;
  stdDevY: number;
  coefficients: number[];
  calibration: { n: number; yMin: number; yMax: number };
  rmsec: number;
  rmsecv: number;
  rmsep: number;
}

export interface NirModel {
  id: string;
  version: number;
  artefact: PlsArtefact;
}

export interface NirScore {
  prediction: number;
  /** 95 % prediction interval, % label claim. */
  ci95: [number, number];
  /** The prediction is outside the calibrated range: flagged, not to be trusted as evidence. */
  outsideCalibration: boolean;
  modelId: string;
  modelVersion: number;
}

const compiled = new WeakMap<PlsArtefact, { mx: Float64Array; inv: Float64Array; coef: Float64Array; half: number }>();

function compile(a: PlsArtefact): { mx: Float64Array; inv: Float64Array; coef: Float64Array; half: number } {
  let c = compiled.get(a);
  if (!c) {
    const t = jStat.studentt.inv(0.975, Math.max(1, a.calibration.n - a.latentVariables - 1));
    c = {
      mx: Float64Array.from(a.meanX),
      inv: Float64Array.from(a.stdDevX, (s) => (s > 0 ? 1 / s : 0)),
      coef: Float64Array.from(a.coefficients),
      half: t * a.rmsep * Math.sqrt(1 + 1 / a.calibration.n),
    };
    compiled.set(a, c);
  }
  return c;
}

/**
 * `nir.score`: predict one spectrum. Throws LK_VALIDATION for a spectrum of
 * the wrong length and LK_VALUE_INVALID for a non-finite or flat one.
 */
export function nirScore(model: NirModel, spectrum: ArrayLike<number>): NirScore {
  const a = model.artefact;
  if (spectrum.length !== a.wavelengths.count) {
    throw new LkError('LK_VALIDATION', `spectrum has ${spectrum.length} points, the model expects ${a.wavelengths.count}`);
  }
  for (let i = 0; i < spectrum.length; i++) {
    if (!Number.isFinite(spectrum[i])) throw new LkError('LK_VALUE_INVALID', `spectrum point ${i} is not a finite number`);
  }
  let z: Float64Array;
  try {
    z = snv(spectrum);
  } catch {
    throw new LkError('LK_VALUE_INVALID', 'spectrum is flat');
  }
  const c = compile(a);
  let acc = 0;
  for (let i = 0; i < z.length; i++) acc += (z[i]! - c.mx[i]!) * c.inv[i]! * c.coef[i]!;
  const prediction = acc * a.stdDevY + a.meanY;
  return {
    prediction,
    ci95: [prediction - c.half, prediction + c.half],
    outsideCalibration: prediction < a.calibration.yMin || prediction > a.calibration.yMax,
    modelId: model.id,
    modelVersion: model.version,
  };
}
