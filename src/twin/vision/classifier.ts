/**
 * Defect classification of a six-camera frame set: engineered image features
 * (silhouette area against the expected shape, enclosed holes, dark and bright
 * specks, crack rows, texture, shading gradient) aggregated over the face and
 * side cameras, then multinomial logistic regression (softmax, L2) trained in
 * plain TypeScript by full-batch gradient descent with a fixed seed on
 * simulator frame sets. No downloaded weights.
 *
 * The naive peer for the benchmark and the test is {@link NearestNeighbour}:
 * 1-NN on raw pixels, what one writes first without feature engineering.
 */
import { LkError } from '../../errors.js';
import { BAND, CAMERAS, DEFECT_CLASSES, FACE_RADIUS, PIXELS, SIZE, type DefectClass, type FrameSet, type LabelledFrameSet } from './frames.js';

const THRESHOLD = 90;
const FACE_AREA = Math.PI * FACE_RADIUS * FACE_RADIUS;
const BAND_AREA = (BAND.bottom - BAND.top) * (BAND.right - BAND.left);

interface ImageFeatures {
  area: number;
  holes: number;
  dark: number;
  bright: number;
  crack: number;
  texture: number;
  gradient: number;
}

function imageFeatures(img: Uint8Array, face: boolean): ImageFeatures {
  let n = 0;
  let sum = 0;
  let sx = 0;
  let sy = 0;
  for (let y = 0; y < SIZE; y++)
    for (let x = 0; x < SIZE; x++) {
      const v = img[y * SIZE + x]!;
      if (v >= THRESHOLD) {
        n++;
        sum += v;
        sx += x;
        sy += y;
      }
    }
  const mean = n > 0 ? sum / n : 0;
  const cx = n > 0 ? sx / n : SIZE / 2;
  const cy = n > 0 ? sy / n : SIZE / 2;
  let holes = 0;
  let dark = 0;
  let bright = 0;
  let tex = 0;
  let texN = 0;
  let gx = 0;
  let gy = 0;
  const rowSum = new Float64Array(SIZE);
  const rowN = new Float64Array(SIZE);
  for (let y = 1; y < SIZE - 1; y++)
    for (let x = 1; x < SIZE - 1; x++) {
      const i = y * SIZE + x;
      const v = img[i]!;
      const l = img[i - 1]! >= THRESHOLD;
      const r = img[i + 1]! >= THRESHOLD;
      const u = img[i - SIZE]! >= THRESHOLD;
      const d = img[i + SIZE]! >= THRESHOLD;
      if (v < THRESHOLD) {
        // a speck darker than the threshold inside the tablet shows up as an enclosed hole
        if ((l && r && (u || d)) || (u && d && (l || r))) holes++;
        continue;
      }
      if (v < mean - 30) dark++;
      if (v > mean + 45) bright++;
      if (l && r && u && d) {
        tex += Math.abs(v - img[i + 1]!) + Math.abs(v - img[i + SIZE]!);
        texN++;
        gx += (v - mean) * (x - cx);
        gy += (v - mean) * (y - cy);
      }
      rowSum[y] = rowSum[y]! + v;
      rowN[y] = rowN[y]! + 1;
    }
  let crack = 0;
  if (!face) {
    for (let y = 1; y < SIZE - 1; y++) {
      if (rowN[y]! < 6 || rowN[y - 1]! < 6 || rowN[y + 1]! < 6) continue;
      const m = rowSum[y]! / rowN[y]!;
      crack = Math.max(crack, mean - m);
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

/** The feature vector of a frame set. Throws LK_VALIDATION for a set that is not 6 frames of 24×24. */
export function frameSetFeatures(set: FrameSet): Float64Array {
  if (set.frames.length !== CAMERAS || set.frames.some((f) => f.length !== PIXELS)) {
    throw new LkError('LK_VALIDATION', `a frame set is ${CAMERAS} frames of ${SIZE}×${SIZE} pixels`, { triggerId: set.triggerId });
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
  const K = DEFECT_CLASSES.length;
  for (const c of DEFECT_CLASSES) if (!sets.some((s) => s.label === c)) throw new LkError('LK_VALIDATION', `no training example of class ${c}`);
  const X = sets.map(frameSetFeatures);
  const y = sets.map((s) => DEFECT_CLASSES.indexOf(s.label));
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
  const x = frameSetFeatures(set);
  const z = Float64Array.from(x, (v, j) => (v - model.mean[j]!) / model.sd[j]!);
  const p = new Float64Array(model.classes.length);
  softmax(model.weights, z, p);
  let best = 0;
  for (let k = 1; k < p.length; k++) if (p[k]! > p[best]!) best = k;
  const probabilities = {} as Record<DefectClass, number>;
  model.classes.forEach((c, k) => (probabilities[c] = p[k]!));
  return { triggerId: set.triggerId, label: model.classes[best]!, confidence: p[best]!, probabilities };
}

/** The naive peer: 1-nearest-neighbour on the raw pixels of all six frames. */
export class NearestNeighbour {
  private readonly data: { px: Uint8Array[]; label: DefectClass }[];
  constructor(train: readonly LabelledFrameSet[]) {
    this.data = train.map((s) => ({ px: s.frames, label: s.label }));
  }
  classify(set: FrameSet): DefectClass {
    let best = Number.POSITIVE_INFINITY;
    let label: DefectClass = 'good';
    for (const d of this.data) {
      let dist = 0;
      for (let c = 0; c < CAMERAS && dist < best; c++) {
        const a = d.px[c]!;
        const b = set.frames[c]!;
        for (let i = 0; i < PIXELS; i++) {
          const e = a[i]! - b[i]!;
          dist += e * e;
        }
      }
      if (dist < best) {
        best = dist;
        label = d.label;
      }
    }
    return label;
  }
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
