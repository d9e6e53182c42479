/**
 * Defect classification of a six-camera frame set (6 × 640×480 grey):
 * engineered image features (silhouette area against the expected shape,
 * enclosed holes, dark and bright specks, crack rows, texture, shading
 * gradient) aggregated over the face and side cameras, then multinomial
 * logistic regression (softmax, L2) trained in plain TypeScript by
 * full-batch gradient descent with a fixed seed on simulator frame sets. No
 * downloaded weights.
 *
 * Features are taken on 4×4 block means (160×120 cells per frame), computed
 * in one pass over the bytes: averaging 16 pixels cuts the sensor noise to a
 * quarter while every defect of the simulator's physical size (the smallest,
 * a 0.45 mm particle, is 8 px across) still darkens or brightens a cell, and
 * the per-cell work is 1/16 of the per-pixel work. The benchmark's peer (the
 * same features at full resolution with numpy) lives under bench/.
 */
import { LkError } from '../../errors.js';
import { BAND, CAMERAS, DEFECT_CLASSES, FACE_RADIUS, HEIGHT, PIXELS, WIDTH, type DefectClass, type FrameSet, type LabelledFrameSet } from './frames.js';

const THRESHOLD = 90;
const BLOCK = 4;
// the frame's size as constants of this module (an imported binding is re-read in a loop)
const W = WIDTH;
const H = HEIGHT;
const BW = WIDTH / BLOCK;
const BH = HEIGHT / BLOCK;
const FACE_AREA = (Math.PI * FACE_RADIUS * FACE_RADIUS) / (BLOCK * BLOCK);
const BAND_AREA = ((BAND.bottom - BAND.top) * (BAND.right - BAND.left)) / (BLOCK * BLOCK);
/** Rows of cells a side band row must have to be judged for a crack (a quarter of the band's width). */
const MIN_ROW_CELLS = (BAND.right - BAND.left) / BLOCK / 4;

interface ImageFeatures {
  area: number;
  holes: number;
  dark: number;
  bright: number;
  crack: number;
  texture: number;
  gradient: number;
}

/** 4×4 block means of one frame (one pass; the scratch is reused, so only one frame's cells live at a time). */
function blockMeans(img: Uint8Array, out: Float32Array): void {
  out.fill(0);
  for (let y = 0; y < H; y++) {
    const row = ((y / BLOCK) | 0) * BW;
    let o = y * W;
    for (let bx = 0; bx < BW; bx++, o += BLOCK) out[row + bx] = out[row + bx]! + img[o]! + img[o + 1]! + img[o + 2]! + img[o + 3]!;
  }
  for (let i = 0; i < out.length; i++) out[i] = out[i]! / (BLOCK * BLOCK);
}

const cells = new Float32Array(BW * BH);
const rowSum = new Float64Array(BH);
const rowN = new Float64Array(BH);

function imageFeatures(img: Uint8Array, face: boolean): ImageFeatures {
  blockMeans(img, cells);
  let n = 0;
  let sum = 0;
  let sx = 0;
  let sy = 0;
  for (let y = 0; y < BH; y++)
    for (let x = 0; x < BW; x++) {
      const v = cells[y * BW + x]!;
      if (v >= THRESHOLD) {
        n++;
        sum += v;
        sx += x;
        sy += y;
      }
    }
  const mean = n > 0 ? sum / n : 0;
  const cx = n > 0 ? sx / n : BW / 2;
  const cy = n > 0 ? sy / n : BH / 2;
  let holes = 0;
  let dark = 0;
  let bright = 0;
  let tex = 0;
  let texN = 0;
  let gx = 0;
  let gy = 0;
  rowSum.fill(0);
  rowN.fill(0);
  // judged only where the cells two away on all four sides are on the tablet: the rim's partly covered cells
  // (the block grid cuts the silhouette) would otherwise read as dark specks, holes and crack rows
  for (let y = 2; y < BH - 2; y++)
    for (let x = 2; x < BW - 2; x++) {
      const i = y * BW + x;
      if (cells[i - 2]! < THRESHOLD || cells[i + 2]! < THRESHOLD || cells[i - 2 * BW]! < THRESHOLD || cells[i + 2 * BW]! < THRESHOLD) continue;
      const v = cells[i]!;
      if (v < THRESHOLD) {
        // a speck darker than the threshold inside the tablet shows up as an enclosed hole
        holes++;
        continue;
      }
      if (v < mean - 30) dark++;
      if (v > mean + 45) bright++;
      tex += Math.abs(v - cells[i + 1]!) + Math.abs(v - cells[i + BW]!);
      texN++;
      gx += (v - mean) * (x - cx);
      gy += (v - mean) * (y - cy);
      rowSum[y] = rowSum[y]! + v;
      rowN[y] = rowN[y]! + 1;
    }
  let crack = 0;
  if (!face) {
    let interior = 0;
    let interiorN = 0;
    for (let y = 0; y < BH; y++) {
      interior += rowSum[y]!;
      interiorN += rowN[y]!;
    }
    const m0 = interiorN > 0 ? interior / interiorN : mean;
    for (let y = 1; y < BH - 1; y++) {
      if (rowN[y]! < MIN_ROW_CELLS || rowN[y - 1]! < MIN_ROW_CELLS || rowN[y + 1]! < MIN_ROW_CELLS) continue;
      crack = Math.max(crack, m0 - rowSum[y]! / rowN[y]!);
    }
  }
  return {
    area: n / (face ? FACE_AREA : BAND_AREA),
    holes,
    dark,
    bright,
    crack,
    texture: texN > 0 ? tex / texN : 0,
    gradient: texN > 0 ? Math.hypot(gx, gy) / texN : 0,
  };
}

export const FEATURE_NAMES = [
  'faceAreaMin',
  'faceAreaMax',
  'sideAreaMin',
  'sideAreaMean',
  'holesMax',
  'holesSum',
  'faceDarkMax',
  'sideDarkMax',
  'brightMax',
  'crackMax',
  'crackMean',
  'textureMean',
  'textureMax',
  'gradientMean',
  'faceAreaDiff',
  'sideAreaMinOfTwo',
] as const;

/** The feature vector of a frame set. Throws LK_VALIDATION for a set that is not 6 frames of 640×480. */
export function frameSetFeatures(set: FrameSet): Float64Array {
  if (set.frames.length !== CAMERAS || set.frames.some((f) => f.length !== PIXELS)) {
    throw new LkError('LK_VALIDATION', `a frame set is ${CAMERAS} frames of ${WIDTH}×${HEIGHT} pixels`, { triggerId: set.triggerId });
  }
  const f = set.frames.map((img, cam) => imageFeatures(img, cam < 2));
  const faces = f.slice(0, 2);
  const sides = f.slice(2);
  const max = (xs: ImageFeatures[], k: keyof ImageFeatures): number => Math.max(...xs.map((x) => x[k]));
  const min = (xs: ImageFeatures[], k: keyof ImageFeatures): number => Math.min(...xs.map((x) => x[k]));
  const mean = (xs: ImageFeatures[], k: keyof ImageFeatures): number => xs.reduce((a, x) => a + x[k], 0) / xs.length;
  const sideAreas = sides.map((s) => s.area).sort((a, b) => a - b);
  return Float64Array.from([
    min(faces, 'area'),
    max(faces, 'area'),
    min(sides, 'area'),
    mean(sides, 'area'),
    max(f, 'holes'),
    f.reduce((a, x) => a + x.holes, 0),
    max(faces, 'dark'),
    max(sides, 'dark'),
    max(f, 'bright'),
    max(sides, 'crack'),
    mean(sides, 'crack'),
    mean(f, 'texture'),
    max(f, 'texture'),
    mean(f, 'gradient'),
    max(faces, 'area') - min(faces, 'area'),
    sideAreas[1]!,
  ]);
}

/** The stored form of the classifier (the registry's artefact JSON). */
export interface VisionArtefact {
  kind: 'vision-softmax';
  classes: DefectClass[];
  features: string[];
  /** Standardisation of the features. */
  mean: number[];
  sd: number[];
  /** Weights, classes × (features + 1 bias), row-major. */
  weights: number[];
}

export interface TrainVisionOptions {
  iterations?: number;
  learningRate?: number;
  l2?: number;
}

/**
 * Train the softmax classifier on labelled frame sets. Deterministic (weights
 * start at zero; full-batch gradient descent). Throws LK_VALIDATION when a
 * class has no example.
 */
export function trainVision(sets: readonly LabelledFrameSet[], opts: TrainVisionOptions = {}): VisionArtefact {
  return trainVisionOnFeatures(
    sets.map((s) => ({ features: frameSetFeatures(s), label: s.label })),
    opts,
  );
}

/**
 * Train on feature vectors already taken ({@link frameSetFeatures}): what a caller that renders or reads
 * thousands of 1.8 MB frame sets uses, keeping 16 numbers per set instead of the pixels. Same result as
 * {@link trainVision} on the same sets. Throws LK_VALIDATION when a class has no example.
 */
export function trainVisionOnFeatures(examples: readonly { features: Float64Array; label: DefectClass }[], opts: TrainVisionOptions = {}): VisionArtefact {
  const K = DEFECT_CLASSES.length;
  for (const c of DEFECT_CLASSES) if (!examples.some((s) => s.label === c)) throw new LkError('LK_VALIDATION', `no training example of class ${c}`);
  const X = examples.map((e) => e.features);
  const y = examples.map((s) => DEFECT_CLASSES.indexOf(s.label));
  const D = FEATURE_NAMES.length;
  const mean = new Array<number>(D).fill(0);
  const sd = new Array<number>(D).fill(0);
  for (const x of X) for (let j = 0; j < D; j++) mean[j]! += x[j]! / X.length;
  for (const x of X) for (let j = 0; j < D; j++) sd[j]! += (x[j]! - mean[j]!) ** 2 / X.length;
  for (let j = 0; j < D; j++) sd[j] = Math.sqrt(sd[j]!) || 1;
  const Z = X.map((x) => Float64Array.from(x, (v, j) => (v - mean[j]!) / sd[j]!));
  const W = new Float64Array(K * (D + 1));
  const grad = new Float64Array(K * (D + 1));
  const p = new Float64Array(K);
  const iters = opts.iterations ?? 400;
  const lr = opts.learningRate ?? 0.5;
  const l2 = opts.l2 ?? 1e-4;
  for (let it = 0; it < iters; it++) {
    grad.fill(0);
    for (let n = 0; n < Z.length; n++) {
      softmax(W, Z[n]!, p);
      const yn = y[n]!;
      for (let k = 0; k < K; k++) {
        const g = p[k]! - (k === yn ? 1 : 0);
        const row = k * (D + 1);
        for (let j = 0; j < D; j++) grad[row + j]! += g * Z[n]![j]!;
        grad[row + D]! += g;
      }
    }
    for (let i = 0; i < W.length; i++) W[i] = W[i]! - lr * (grad[i]! / Z.length + l2 * W[i]!);
  }
  return { kind: 'vision-softmax', classes: [...DEFECT_CLASSES], features: [...FEATURE_NAMES], mean, sd, weights: Array.from(W) };
}

function softmax(W: ArrayLike<number>, z: ArrayLike<number>, out: Float64Array): void {
  const K = out.length;
  const D = z.length;
  let max = Number.NEGATIVE_INFINITY;
  for (let k = 0; k < K; k++) {
    const row = k * (D + 1);
    let s = W[row + D]!;
    for (let j = 0; j < D; j++) s += W[row + j]! * z[j]!;
    out[k] = s;
    if (s > max) max = s;
  }
  let tot = 0;
  for (let k = 0; k < K; k++) {
    out[k] = Math.exp(out[k]! - max);
    tot += out[k]!;
  }
  for (let k = 0; k < K; k++) out[k] = out[k]! / tot;
}

export interface Classification {
  triggerId: number;
  label: DefectClass;
  confidence: number;
  probabilities: Record<DefectClass, number>;
}

/** Classify one frame set (`vision` inspection). Throws LK_VALIDATION for a malformed set. */
export function classifyFrameSet(model: VisionArtefact, set: FrameSet): Classification {
  return classifyFeatures(model, set.triggerId, frameSetFeatures(set));
}

/** Classify a frame set from its feature vector ({@link frameSetFeatures}). Never throws. */
export function classifyFeatures(model: VisionArtefact, triggerId: number, x: Float64Array): Classification {
  const z = Float64Array.from(x, (v, j) => (v - model.mean[j]!) / model.sd[j]!);
  const p = new Float64Array(model.classes.length);
  softmax(model.weights, z, p);
  let best = 0;
  for (let k = 1; k < p.length; k++) if (p[k]! > p[best]!) best = k;
  const probabilities = {} as Record<DefectClass, number>;
  model.classes.forEach((c, k) => (probabilities[c] = p[k]!));
  return { triggerId, label: model.classes[best]!, confidence: p[best]!, probabilities };
}

/** Per-class precision and recall of predicted against true labels. */
export function precisionRecall(truth: readonly DefectClass[], predicted: readonly DefectClass[]): Record<DefectClass, { precision: number; recall: number; support: number }> {
  const out = {} as Record<DefectClass, { precision: number; recall: number; support: number }>;
  for (const c of DEFECT_CLASSES) {
    let tp = 0;
    let fp = 0;
    let fn = 0;
    truth.forEach((t, i) => {
      const p = predicted[i];
      if (p === c && t === c) tp++;
      else if (p === c) fp++;
      else if (t === c) fn++;
    });
    out[c] = { precision: tp + fp > 0 ? tp / (tp + fp) : 0, recall: tp + fn > 0 ? tp / (tp + fn) : 0, support: tp + fn };
  }
  return out;
}
