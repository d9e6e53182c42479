/**
 * Synthetic frame sets of the six synchronised inspection cameras. One
 * trigger gives six 24×24 8-bit grey images of the same tablet: cameras 0 and
 * 1 see the upper and lower faces (a disc), cameras 2–5 the side band at 0°,
 * 90°, 180° and 270°. Each set carries at most one injected defect class,
 * drawn where that defect shows: chipping (a bite out of the rim), capping (a
 * crack line near the top of the band and a lifted cap), sticking (rough dark
 * patches on a face), coating defects (orange-peel texture or uneven colour),
 * a foreign particle (a tiny very dark or bright speck), broken (a large part
 * missing). Tiny images keep inference inside the budget on an edge box while
 * the classifier still has to find the defect in pixels, not in labels.
 */
import type { Rng } from '../../clock.js';

export const CAMERAS = 6;
export const SIZE = 24;
export const PIXELS = SIZE * SIZE;
export const FACE_RADIUS = 9;
export const BAND = Object.freeze({ top: 9, bottom: 15, left: 3, right: 21 });
export const BACKGROUND = 25;

export const DEFECT_CLASSES = ['good', 'chipped', 'capped', 'sticking', 'coating_defect', 'foreign_particle', 'broken'] as const;
export type DefectClass = (typeof DEFECT_CLASSES)[number];

export interface FrameSet {
  triggerId: number;
  /** Six images, row-major, SIZE×SIZE each. */
  frames: Uint8Array[];
}

export interface LabelledFrameSet extends FrameSet {
  label: DefectClass;
}

const isFace = (cam: number): boolean => cam < 2;

function put(img: Float32Array, x: number, y: number, v: number): void {
  if (x >= 0 && x < SIZE && y >= 0 && y < SIZE) img[y * SIZE + x] = v;
}

function baseImage(cam: number, level: number, cx: number, cy: number): { img: Float32Array; inside: (x: number, y: number) => boolean } {
  const img = new Float32Array(PIXELS).fill(BACKGROUND);
  const inside = isFace(cam)
    ? (x: number, y: number) => (x - cx) ** 2 + (y - cy) ** 2 <= FACE_RADIUS * FACE_RADIUS
    : (x: number, y: number) => y >= BAND.top + (cy - 12) && y < BAND.bottom + (cy - 12) && x >= BAND.left + (cx - 12) && x < BAND.right + (cx - 12);
  for (let y = 0; y < SIZE; y++) for (let x = 0; x < SIZE; x++) if (inside(x, y)) img[y * SIZE + x] = level;
  return { img, inside };
}

/**
 * Render one frame set with a defect of class `label`. Deterministic for the
 * rng state; lighting, position and sensor noise vary from set to set.
 */
export function renderFrameSet(label: DefectClass, triggerId: number, rng: Rng): LabelledFrameSet {
  const level = 170 + rng.normal(0, 8);
  const cx = 12 + rng.int(-1, 1);
  const cy = 12 + rng.int(-1, 1);
  const imgs = Array.from({ length: CAMERAS }, (_, cam) => baseImage(cam, level + (isFace(cam) ? 0 : -10), cx, cy));
  const chippedCam = rng.int(0, 1);
  const particleCam = rng.int(0, CAMERAS - 1);
  const angle = rng.uniform(0, 2 * Math.PI);
  switch (label) {
    case 'good':
      break;
    case 'chipped': {
      const r = rng.uniform(2.5, 3.5);
      const bx = cx + FACE_RADIUS * Math.cos(angle);
      const by = cy + FACE_RADIUS * Math.sin(angle);
      const { img } = imgs[chippedCam]!;
      for (let y = 0; y < SIZE; y++) for (let x = 0; x < SIZE; x++) if ((x - bx) ** 2 + (y - by) ** 2 <= r * r) img[y * SIZE + x] = BACKGROUND;
      const side = imgs[2 + rng.int(0, 3)]!.img;
      const left = rng.next() < 0.5;
      for (let dy = 0; dy < 3; dy++) for (let dx = 0; dx < 2; dx++) put(side, left ? BAND.left + (cx - 12) + dx : BAND.right + (cx - 12) - 1 - dx, BAND.top + (cy - 12) + dy, BACKGROUND);
      break;
    }
    case 'broken': {
      const d = FACE_RADIUS * rng.uniform(-0.2, 0.35);
      const nx = Math.cos(angle);
      const ny = Math.sin(angle);
      for (const cam of [0, 1]) {
        const { img } = imgs[cam]!;
        for (let y = 0; y < SIZE; y++) for (let x = 0; x < SIZE; x++) if ((x - cx) * nx + (y - cy) * ny > d) img[y * SIZE + x] = BACKGROUND;
      }
      const cut = Math.round((BAND.right - BAND.left) * rng.uniform(0.3, 0.5));
      for (const cam of [2 + rng.int(0, 1), 4 + rng.int(0, 1)]) {
        const { img } = imgs[cam]!;
        for (let y = 0; y < SIZE; y++) for (let x = BAND.right + (cx - 12) - cut; x < SIZE; x++) img[y * SIZE + x] = BACKGROUND;
      }
      break;
    }
    case 'capped': {
      const crackRow = BAND.top + (cy - 12) + rng.int(1, 2);
      for (let cam = 2; cam < CAMERAS; cam++) {
        const { img } = imgs[cam]!;
        const from = BAND.left + (cx - 12) + rng.int(0, 3);
        const to = BAND.right + (cx - 12) - rng.int(0, 3);
        for (let x = from; x < to; x++) {
          img[crackRow * SIZE + x] = level - 80 + rng.normal(0, 8);
          img[(crackRow - 1) * SIZE + x] = img[(crackRow - 1) * SIZE + x]! + 15;
        }
      }
      break;
    }
    case 'sticking': {
      const cam = rng.int(0, 1);
      const { img } = imgs[cam]!;
      const blobs = rng.int(3, 6);
      for (let b = 0; b < blobs; b++) {
        const bx = cx + rng.uniform(-5, 5);
        const by = cy + rng.uniform(-5, 5);
        const r = rng.uniform(1, 2.2);
        for (let y = 0; y < SIZE; y++) for (let x = 0; x < SIZE; x++) if ((x - bx) ** 2 + (y - by) ** 2 <= r * r) img[y * SIZE + x] = level - 45 + rng.normal(0, 12);
      }
      break;
    }
    case 'coating_defect': {
      const orangePeel = rng.next() < 0.5;
      const gx = rng.normal(0, 1);
      const gy = rng.normal(0, 1);
      const gn = Math.hypot(gx, gy) || 1;
      for (const { img, inside } of imgs) {
        for (let y = 0; y < SIZE; y++)
          for (let x = 0; x < SIZE; x++) {
            if (!inside(x, y)) continue;
            const i = y * SIZE + x;
            img[i] = orangePeel ? img[i]! + rng.normal(0, 18) : img[i]! + (35 * ((x - cx) * gx + (y - cy) * gy)) / (gn * FACE_RADIUS);
          }
      }
      break;
    }
    case 'foreign_particle': {
      const { img, inside } = imgs[particleCam]!;
      let px = cx;
      let py = cy;
      for (let k = 0; k < 20; k++) {
        px = cx + rng.int(-6, 6);
        py = cy + rng.int(-2, 2);
        if (inside(px, py) && inside(px + 1, py)) break;
      }
      const v = rng.next() < 0.7 ? rng.uniform(5, 40) : 255;
      put(img, px, py, v);
      if (rng.next() < 0.5) put(img, px + 1, py, v);
      break;
    }
  }
  const frames = imgs.map(({ img }) => {
    const out = new Uint8Array(PIXELS);
    for (let i = 0; i < PIXELS; i++) out[i] = Math.max(0, Math.min(255, Math.round(img[i]! + rng.normal(0, 5))));
    return out;
  });
  return { triggerId, frames, label };
}

/** `perClass` frame sets of every class, interleaved, trigger ids from `firstTrigger`. */
export function frameSets(perClass: number, rng: Rng, firstTrigger = 1): LabelledFrameSet[] {
  const out: LabelledFrameSet[] = [];
  let t = firstTrigger;
  for (let i = 0; i < perClass; i++) for (const c of DEFECT_CLASSES) out.push(renderFrameSet(c, t++, rng));
  return out;
}
