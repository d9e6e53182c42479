/**
 * Synthetic frame sets of the six synchronised inspection cameras, at the
 * size a real station delivers: one trigger gives six 640×480 8-bit grey
 * images of the same tablet. Cameras 0 and 1 see the upper and lower faces
 * (a disc of radius 180 px: a 10 mm tablet at 18 px/mm), cameras 2–5 the
 * side band at 0°, 90°, 180° and 270° (360 × 120 px). Each set carries at
 * most one injected defect class, drawn where that defect shows and at a
 * physical size: chipping (a bite 2.8–3.9 mm across out of the rim), capping
 * (a crack 3 px high near the top of the band under a lifted cap), sticking
 * (rough dark patches of 1–2.5 mm on a face), coating defects (orange-peel
 * relief or uneven colour), a foreign particle (a speck 0.45–0.65 mm across,
 * very dark or bright), broken (a large part missing). Lighting, position
 * (±20 px) and sensor noise (σ = 5 grey levels, every pixel) vary from set to
 * set. Frames are Uint8Array, one byte per pixel, row-major.
 *
 * Rendering is deterministic for the rng state: the sensor noise is a fixed
 * field of Gaussian values read at two offsets drawn per frame, which keeps a
 * set at a few milliseconds instead of 1.8 million Box–Muller draws.
 */
import { createRng, type Rng } from '../../clock.js';

export const CAMERAS = 6;
export const WIDTH = 640;
export const HEIGHT = 480;
export const PIXELS = WIDTH * HEIGHT;
export const FACE_RADIUS = 180;
/** The side band relative to the tablet's centre, px. */
export const BAND = Object.freeze({ top: -60, bottom: 60, left: -180, right: 180 });
export const BACKGROUND = 25;
const SENSOR_SD = 5;

export const DEFECT_CLASSES = ['good', 'chipped', 'capped', 'sticking', 'coating_defect', 'foreign_particle', 'broken'] as const;
export type DefectClass = (typeof DEFECT_CLASSES)[number];

export interface FrameSet {
  triggerId: number;
  /** Six images, row-major, WIDTH×HEIGHT each. */
  frames: Uint8Array[];
}

export interface LabelledFrameSet extends FrameSet {
  label: DefectClass;
}

const isFace = (cam: number): boolean => cam < 2;
// the row stride as a constant of this module: V8 reads an exported binding in a hot loop as a slot it checks each
// time (the noise loop bounded by the exported PIXELS ran at half the speed of the same loop on a local bound)
const W = WIDTH;

// A field of Gaussian sensor noise (σ = 5/√2 each), two frames long, from a fixed seed: the same in every process,
// made on the first render. A frame's noise is the sum of the field at two offsets drawn per frame.
let noiseField: Int8Array | undefined;
function noise(): Int8Array {
  if (!noiseField) {
    const r = createRng(0x5e4504);
    noiseField = Int8Array.from({ length: 2 * PIXELS }, () => Math.max(-127, Math.min(127, Math.round(r.normal(0, SENSOR_SD / Math.SQRT2)))));
  }
  return noiseField;
}

/** A frame being drawn: clamped bytes, and whether (x, y) lies on the tablet as this camera sees it. */
interface Canvas {
  img: Uint8ClampedArray;
  inside: (x: number, y: number) => boolean;
  /** Rows spanned by the tablet, and each row's first and last x (inclusive; x1 < x0 for none). */
  rows: { y0: number; y1: number; x0: Int32Array; x1: Int32Array };
}

function baseCanvas(cam: number, level: number, cx: number, cy: number): Canvas {
  const img = new Uint8ClampedArray(PIXELS).fill(BACKGROUND);
  const x0 = new Int32Array(HEIGHT).fill(0);
  const x1 = new Int32Array(HEIGHT).fill(-1);
  let inside: (x: number, y: number) => boolean;
  let y0: number;
  let y1: number;
  if (isFace(cam)) {
    const r2 = FACE_RADIUS * FACE_RADIUS;
    inside = (x, y) => (x - cx) ** 2 + (y - cy) ** 2 <= r2;
    y0 = Math.max(0, cy - FACE_RADIUS);
    y1 = Math.min(HEIGHT - 1, cy + FACE_RADIUS);
    for (let y = y0; y <= y1; y++) {
      const h = Math.sqrt(Math.max(0, r2 - (y - cy) ** 2));
      x0[y] = Math.max(0, Math.ceil(cx - h));
      x1[y] = Math.min(WIDTH - 1, Math.floor(cx + h));
    }
  } else {
    const t = cy + BAND.top;
    const b = cy + BAND.bottom;
    const l = cx + BAND.left;
    const r = cx + BAND.right;
    inside = (x, y) => y >= t && y < b && x >= l && x < r;
    y0 = t;
    y1 = b - 1;
    for (let y = y0; y <= y1; y++) {
      x0[y] = l;
      x1[y] = r - 1;
    }
  }
  for (let y = y0; y <= y1; y++) if (x1[y]! >= x0[y]!) img.fill(level, y * WIDTH + x0[y]!, y * WIDTH + x1[y]! + 1);
  return { img, inside, rows: { y0, y1, x0, x1 } };
}

/** Set every pixel of a disc (clipped to the frame) to `v(x, y)`; only where `where` holds, when given. */
function disc(c: Canvas, cx: number, cy: number, r: number, v: (i: number) => number, where?: (x: number, y: number) => boolean): void {
  const ya = Math.max(0, Math.floor(cy - r));
  const yb = Math.min(HEIGHT - 1, Math.ceil(cy + r));
  for (let y = ya; y <= yb; y++) {
    const h = Math.sqrt(Math.max(0, r * r - (y - cy) ** 2));
    const xa = Math.max(0, Math.ceil(cx - h));
    const xb = Math.min(WIDTH - 1, Math.floor(cx + h));
    for (let x = xa; x <= xb; x++) if (!where || where(x, y)) c.img[y * WIDTH + x] = v(y * WIDTH + x);
  }
}

/** Orange-peel relief: a 16-px lattice of N(0, sd) heights, bilinearly interpolated. */
function relief(rng: Rng, sd: number): (x: number, y: number) => number {
  const cell = 16;
  const gw = Math.ceil(WIDTH / cell) + 2;
  const gh = Math.ceil(HEIGHT / cell) + 2;
  const g = Float32Array.from({ length: gw * gh }, () => rng.normal(0, sd));
  return (x, y) => {
    const fx = x / cell;
    const fy = y / cell;
    const ix = Math.floor(fx);
    const iy = Math.floor(fy);
    const ax = fx - ix;
    const ay = fy - iy;
    const i = iy * gw + ix;
    return (g[i]! * (1 - ax) + g[i + 1]! * ax) * (1 - ay) + (g[i + gw]! * (1 - ax) + g[i + gw + 1]! * ax) * ay;
  };
}

/**
 * Render one frame set with a defect of class `label`. Deterministic for the
 * rng state; lighting, position and sensor noise vary from set to set.
 */
export function renderFrameSet(label: DefectClass, triggerId: number, rng: Rng): LabelledFrameSet {
  const level = 170 + rng.normal(0, 8);
  const cx = WIDTH / 2 + rng.int(-20, 20);
  const cy = HEIGHT / 2 + rng.int(-20, 20);
  const cv = Array.from({ length: CAMERAS }, (_, cam) => baseCanvas(cam, level + (isFace(cam) ? 0 : -10), cx, cy));
  const chippedCam = rng.int(0, 1);
  const particleCam = rng.int(0, CAMERAS - 1);
  const angle = rng.uniform(0, 2 * Math.PI);
  const background = (): number => BACKGROUND;
  switch (label) {
    case 'good':
      break;
    case 'chipped': {
      const r = rng.uniform(50, 70);
      disc(cv[chippedCam]!, cx + FACE_RADIUS * Math.cos(angle), cy + FACE_RADIUS * Math.sin(angle), r, background);
      // the same chip seen on a side camera: a notch out of the band's upper corner
      const side = cv[2 + rng.int(0, 3)]!;
      const left = rng.next() < 0.5;
      const xa = left ? cx + BAND.left : cx + BAND.right - 40;
      for (let y = cy + BAND.top; y < cy + BAND.top + 60; y++) side.img.fill(BACKGROUND, y * WIDTH + xa, y * WIDTH + xa + 40);
      break;
    }
    case 'broken': {
      const d = FACE_RADIUS * rng.uniform(-0.2, 0.35);
      const nx = Math.cos(angle);
      const ny = Math.sin(angle);
      // the per-pixel passes here and below are written out over the tablet's rows: a callback per pixel (a
      // different closure at each call site, so V8 could not inline it) took most of their time
      const bg = BACKGROUND;
      for (const cam of [0, 1]) {
        const { img, rows } = cv[cam]!;
        for (let y = rows.y0; y <= rows.y1; y++) {
          for (let x = rows.x0[y]!, x1 = rows.x1[y]!, i = y * W + x; x <= x1; x++, i++) if ((x - cx) * nx + (y - cy) * ny > d) img[i] = bg;
        }
      }
      const cut = Math.round((BAND.right - BAND.left) * rng.uniform(0.3, 0.5));
      for (const cam of [2 + rng.int(0, 1), 4 + rng.int(0, 1)]) {
        const c = cv[cam]!;
        for (let y = c.rows.y0; y <= c.rows.y1; y++) c.img.fill(BACKGROUND, y * WIDTH + cx + BAND.right - cut, (y + 1) * WIDTH);
      }
      break;
    }
    case 'capped': {
      const crackTop = cy + BAND.top + rng.int(20, 40);
      for (let cam = 2; cam < CAMERAS; cam++) {
        const { img } = cv[cam]!;
        const from = cx + BAND.left + rng.int(0, 60);
        const to = cx + BAND.right - rng.int(0, 60);
        for (let y = crackTop - 6; y < crackTop; y++) for (let x = from; x < to; x++) img[y * WIDTH + x] = img[y * WIDTH + x]! + 15; // the lifted cap
        for (let y = crackTop; y < crackTop + 3; y++) img.fill(level - 80, y * WIDTH + from, y * WIDTH + to);
      }
      break;
    }
    case 'sticking': {
      const c = cv[rng.int(0, 1)]!;
      const blobs = rng.int(3, 6);
      for (let b = 0; b < blobs; b++) {
        const v = level - 60 + rng.normal(0, 10);
        disc(c, cx + rng.uniform(-100, 100), cy + rng.uniform(-100, 100), rng.uniform(20, 44), () => v, c.inside);
      }
      break;
    }
    case 'coating_defect': {
      if (rng.next() < 0.5) {
        const h = relief(rng, 18);
        for (const { img, rows } of cv) {
          for (let y = rows.y0; y <= rows.y1; y++) for (let x = rows.x0[y]!, x1 = rows.x1[y]!, i = y * W + x; x <= x1; x++, i++) img[i] = img[i]! + h(x, y);
        }
      } else {
        const gx = rng.normal(0, 1);
        const gy = rng.normal(0, 1);
        const gn = Math.hypot(gx, gy) || 1;
        const den = gn * FACE_RADIUS;
        for (const { img, rows } of cv) {
          for (let y = rows.y0; y <= rows.y1; y++) {
            for (let x = rows.x0[y]!, x1 = rows.x1[y]!, i = y * W + x; x <= x1; x++, i++) img[i] = img[i]! + (35 * ((x - cx) * gx + (y - cy) * gy)) / den;
          }
        }
      }
      break;
    }
    case 'foreign_particle': {
      const c = cv[particleCam]!;
      const face = isFace(particleCam);
      const r = rng.uniform(4, 6);
      let px = cx;
      let py = cy;
      for (let k = 0; k < 20; k++) {
        px = cx + rng.uniform(-120, 120);
        py = cy + (face ? rng.uniform(-120, 120) : rng.uniform(-40, 40));
        if (c.inside(Math.round(px - r), Math.round(py)) && c.inside(Math.round(px + r), Math.round(py))) break;
      }
      const v = rng.next() < 0.7 ? rng.uniform(5, 40) : 255;
      disc(c, px, py, r, () => v);
      break;
    }
  }
  // sensor noise on every pixel: the noise field at two offsets drawn for this frame
  const field = noise();
  const frames = cv.map(({ img }) => {
    const a = rng.int(0, PIXELS - 1);
    const b = rng.int(0, PIXELS - 1);
    addNoise(img, field, a, b);
    return new Uint8Array(img.buffer, img.byteOffset, img.byteLength);
  });
  return { triggerId, frames, label };
}

/**
 * `img[i] += field[a + i] + field[b + i]` for every pixel, clamped once (Uint8ClampedArray). The two views and
 * the offsets forced to int32 (the rng's integers reach here as doubles) keep V8's loop on integer indices: the
 * same bytes at half the time of indexing the field with `a + i` up to the exported PIXELS.
 */
function addNoise(img: Uint8ClampedArray, field: Int8Array, a: number, b: number): void {
  const n = img.length;
  const fa = field.subarray(a | 0, (a | 0) + n);
  const fb = field.subarray(b | 0, (b | 0) + n);
  for (let i = 0; i < n; i++) img[i] = img[i]! + fa[i]! + fb[i]!;
}

/**
 * `perClass` frame sets of every class, interleaved, trigger ids from `firstTrigger`, each handed to `each` as it
 * is rendered and then dropped (a set is 1.8 MB: training never holds more than one). Returns how many were made.
 */
export function forEachFrameSet(perClass: number, rng: Rng, firstTrigger: number, each: (set: LabelledFrameSet) => void): number {
  let t = firstTrigger;
  for (let i = 0; i < perClass; i++) for (const c of DEFECT_CLASSES) each(renderFrameSet(c, t++, rng));
  return t - firstTrigger;
}

/** `perClass` frame sets of every class, interleaved, held in memory (tests and benchmarks of a few dozen sets). */
export function frameSets(perClass: number, rng: Rng, firstTrigger = 1): LabelledFrameSet[] {
  const out: LabelledFrameSet[] = [];
  forEachFrameSet(perClass, rng, firstTrigger, (s) => out.push(s));
  return out;
}
