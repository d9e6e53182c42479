/**
 * The golden datasets that gate model promotion: small JSON files under
 * `config/golden/`, one per model kind, generated deterministically from the
 * simulator's generators with fixed seeds (the plant's ground truth in
 * connectors/sim/ground, the NIR and vision generators of src/twin) (`npx tsx
 * tools/make-golden.ts` writes them; a unit test regenerates them in memory
 * and compares byte for byte, so the committed files are exactly what the
 * generators give).
 *
 * - `twin-batches.json` — batches recorded on the default site's simulated
 *   plant (the hidden parameters of simulator seed 20261121), recipes and
 *   press segments a Latin hypercube over the built-in design space;
 * - `nir-spectra.json` — NIR spectra (351 points, rounded to 1e-6) with the
 *   reference potency, 85–115 % label claim;
 * - `vision-frames.json` — six-camera frame sets of every defect class. A set
 *   is 6 × 640×480 bytes (1.8 MB; 140 of them would be 250 MB), so the file
 *   holds each set's render seed and the SHA-256 of its exact pixels: the
 *   gate renders the frames with `renderFrameSet` and refuses a set whose
 *   pixels hash differently (a changed renderer cannot silently change the
 *   golden images).
 *
 * None of them shares a generator stream with the data the default models
 * are fitted on (seeds `seed`, `seed + 1`, `seed + 2` in seed.ts): a golden
 * dataset is held out by construction. A real site replaces them with its
 * own recorded batches, reference spectra and defect library.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { z } from 'zod';
import { recordBatches } from '../../connectors/sim/ground/batches.js';
import { perturbParams } from '../../connectors/sim/ground/truth.js';
import { createRng, type Rng } from '../clock.js';
import { defaultConfigFile, installationPath } from '../config/installation.js';
import { LkError } from '../errors.js';
import { nirSamples } from '../twin/nir/spectra.js';
import { DEFAULT_DESIGN_SPACE } from '../twin/setpoints.js';
import { NOMINAL_PARAMS } from '../twin/params.js';
import type { RecordedBatch } from '../twin/recorded.js';
import { DEFECT_CLASSES, renderFrameSet, type DefectClass, type LabelledFrameSet } from '../twin/vision/frames.js';
import type { ModelKind } from './registry.js';

/** Seed of the default site's simulated plant (config/site.yaml simulator.seed). */
export const GOLDEN_PLANT_SEED = 20261121;
/** Generator seeds of the golden datasets: far from the training seeds of seed.ts. */
export const GOLDEN_SEEDS = Object.freeze({ twin: GOLDEN_PLANT_SEED + 1000, nir: GOLDEN_PLANT_SEED + 1001, vision: GOLDEN_PLANT_SEED + 1002 });
export const GOLDEN_FILES: Readonly<Record<ModelKind, string>> = Object.freeze({ twin: 'twin-batches.json', 'nir-pls': 'nir-spectra.json', 'vision-softmax': 'vision-frames.json' });

export interface TwinGolden {
  format: 1;
  kind: 'twin';
  description: string;
  plantSeed: number;
  seed: number;
  batches: RecordedBatch[];
}

export interface NirGolden {
  format: 1;
  kind: 'nir-pls';
  description: string;
  seed: number;
  samples: { id: string; potencyPct: number; spectrum: number[] }[];
}

export interface VisionGolden {
  format: 1;
  kind: 'vision-softmax';
  description: string;
  seed: number;
  /**
   * Frame sets: rendered by `renderFrameSet(label, triggerId, createRng(seed))`; `sha256` is the hex SHA-256 of
   * the six images concatenated (camera 0 first), row-major, 8-bit grey.
   */
  sets: { triggerId: number; label: DefectClass; seed: number; sha256: string }[];
}

export type GoldenDataset = TwinGolden | NirGolden | VisionGolden;

/** A loaded golden dataset and the SHA-256 of the exact file bytes (recorded with every evaluation). */
export interface LoadedGolden<T extends GoldenDataset = GoldenDataset> {
  readonly file: string;
  readonly sha256: string;
  readonly data: T;
}

const round6 = (x: number): number => Math.round(x * 1e6) / 1e6;

/** The three golden datasets, exactly as committed (same seeds → same bytes). */
export function buildGoldenDatasets(): { twin: TwinGolden; 'nir-pls': NirGolden; 'vision-softmax': VisionGolden } {
  const truth = perturbParams(NOMINAL_PARAMS, GOLDEN_PLANT_SEED);
  const batches = recordBatches(truth, DEFAULT_DESIGN_SPACE, 10, createRng(GOLDEN_SEEDS.twin), 'GOLD');
  const spectra = nirSamples(40, createRng(GOLDEN_SEEDS.nir), 85, 115);
  const sets = goldenVisionSets(20, createRng(GOLDEN_SEEDS.vision), 5_000_000);
  return {
    twin: {
      format: 1,
      kind: 'twin',
      description: `10 batches recorded on the simulated plant of seed ${GOLDEN_PLANT_SEED} (the default site), recipes and 4 press segments each over the built-in design space`,
      plantSeed: GOLDEN_PLANT_SEED,
      seed: GOLDEN_SEEDS.twin,
      batches,
    },
    'nir-pls': {
      format: 1,
      kind: 'nir-pls',
      description: '40 tablet spectra, 1100–2500 nm in 4 nm steps, reference potency uniform in 85–115 % label claim',
      seed: GOLDEN_SEEDS.nir,
      samples: spectra.map((s, i) => ({ id: `GS-${String(i + 1).padStart(3, '0')}`, potencyPct: round6(s.potencyPct), spectrum: Array.from(s.spectrum, round6) })),
    },
    'vision-softmax': {
      format: 1,
      kind: 'vision-softmax',
      description: `20 six-camera frame sets (6 × 640×480 8-bit grey) per class (${DEFECT_CLASSES.join(', ')}), as render seeds and pixel hashes`,
      seed: GOLDEN_SEEDS.vision,
      sets,
    },
  };
}

/** The JSON text of a golden dataset as committed (compact: the files are data, read by code and by a diff of regenerations). */
export function goldenText(d: GoldenDataset): string {
  return `${JSON.stringify(d)}\n`;
}

/** `config/golden` of this installation (source checkout or built package). */
export function defaultGoldenDir(): string {
  return installationPath('config/golden') ?? resolve(dirname(defaultConfigFile()), 'golden');
}

const num = z.number().refine(Number.isFinite, 'must be finite');
const TwinSchema = z.object({ format: z.literal(1), kind: z.literal('twin'), description: z.string(), plantSeed: z.number(), seed: z.number(), batches: z.array(z.object({ id: z.string(), setpoints: z.record(z.string(), num) }).passthrough()).min(1) });
const NirSchema = z.object({
  format: z.literal(1),
  kind: z.literal('nir-pls'),
  description: z.string(),
  seed: z.number(),
  samples: z.array(z.strictObject({ id: z.string(), potencyPct: num, spectrum: z.array(num) })).min(1),
});
const VisionSchema = z.object({
  format: z.literal(1),
  kind: z.literal('vision-softmax'),
  description: z.string(),
  seed: z.number(),
  sets: z.array(z.strictObject({ triggerId: z.number().int(), label: z.enum(DEFECT_CLASSES), seed: z.number().int(), sha256: z.string().regex(/^[0-9a-f]{64}$/) })).min(1),
});
const SCHEMAS = { twin: TwinSchema, 'nir-pls': NirSchema, 'vision-softmax': VisionSchema } as const;

/**
 * Read and check the golden dataset of a model kind.
 * @throws LkError LK_MODEL_GATE_FAILED when the file is missing, unreadable or not of its shape: without its
 *   golden dataset no model of that kind can be evaluated, so none can be promoted.
 */
export function loadGolden(dir: string, kind: ModelKind): LoadedGolden {
  const file = join(dir, GOLDEN_FILES[kind]);
  let bytes: Buffer;
  try {
    bytes = readFileSync(file);
  } catch (err) {
    throw new LkError('LK_MODEL_GATE_FAILED', `golden dataset ${GOLDEN_FILES[kind]} cannot be read from ${dir}`, { file: GOLDEN_FILES[kind] }, { cause: err });
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(bytes.toString('utf8'));
  } catch (err) {
    throw new LkError('LK_MODEL_GATE_FAILED', `golden dataset ${GOLDEN_FILES[kind]} is not JSON`, { file: GOLDEN_FILES[kind] }, { cause: err });
  }
  const r = SCHEMAS[kind].safeParse(parsed);
  if (!r.success) {
    const i = r.error.issues[0]!;
    throw new LkError('LK_MODEL_GATE_FAILED', `golden dataset ${GOLDEN_FILES[kind]}: ${i.path.join('.') || '(root)'}: ${i.message}`, { file: GOLDEN_FILES[kind] });
  }
  return { file: GOLDEN_FILES[kind], sha256: createHash('sha256').update(bytes).digest('hex'), data: parsed as GoldenDataset };
}

function framesSha256(frames: readonly Uint8Array[]): string {
  const h = createHash('sha256');
  for (const f of frames) h.update(f);
  return h.digest('hex');
}

/** `perClass` golden set specs of every class, interleaved: a seed per set from `rng`, the pixels hashed. */
function goldenVisionSets(perClass: number, rng: Rng, firstTrigger: number): VisionGolden['sets'] {
  const out: VisionGolden['sets'] = [];
  let triggerId = firstTrigger;
  for (let i = 0; i < perClass; i++) {
    for (const label of DEFECT_CLASSES) {
      const seed = rng.int(0, 0x7fffffff);
      out.push({ triggerId, label, seed, sha256: framesSha256(renderFrameSet(label, triggerId, createRng(seed)).frames) });
      triggerId++;
    }
  }
  return out;
}

/**
 * The frame sets of a vision golden dataset, rendered one at a time and handed to `each` (a set is 1.8 MB: the
 * gate never holds more than one). @throws LkError LK_MODEL_GATE_FAILED for a set whose pixels do not hash to the
 * recorded SHA-256.
 */
export function forEachGoldenFrameSet(g: VisionGolden, each: (set: LabelledFrameSet) => void): void {
  for (const s of g.sets) {
    const set = renderFrameSet(s.label, s.triggerId, createRng(s.seed));
    if (framesSha256(set.frames) !== s.sha256) {
      throw new LkError('LK_MODEL_GATE_FAILED', `golden frame set ${s.triggerId}: the rendered pixels do not match the recorded SHA-256 (the frame renderer changed)`, { triggerId: s.triggerId });
    }
    each(set);
  }
}
