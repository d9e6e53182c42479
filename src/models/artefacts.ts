/**
 * Typed artefacts of the registry's model kinds, checked when loaded: a
 * registered artefact that does not have the shape of its kind is corrupt
 * (LK_MODEL_CORRUPT), whatever its hash says.
 */
import { z } from 'zod';
import { LkError } from '../errors.js';
import type { PlsArtefact, NirModel } from '../twin/nir/score.js';
import type { TwinModel } from '../twin/simulate.js';
import type { ProcessParams } from '../twin/params.js';
import type { VisionArtefact } from '../twin/vision/classifier.js';
import type { LoadedModel } from './registry.js';

const num = z.number().refine(Number.isFinite, 'must be finite');
const numRecord = z.record(z.string(), num);
const range = z.object({ min: num, max: num, unit: z.string() });

export interface TwinArtefact {
  kind: 'twin';
  params: ProcessParams;
  validRanges: TwinModel['validRanges'];
}

const TwinSchema = z.object({
  kind: z.literal('twin'),
  params: z.object({ press: numRecord, blend: numRecord, drying: numRecord, coating: numRecord, dissolution: numRecord, uniformity: numRecord }),
  validRanges: z.record(z.string(), range),
});

const PlsSchema = z.object({
  kind: z.literal('nir-pls'),
  analyte: z.string(),
  wavelengths: z.object({ startNm: num, stepNm: num, count: z.number().int().positive() }),
  pretreatment: z.literal('snv'),
  latentVariables: z.number().int().positive(),
  meanX: z.array(num),
  stdDevX: z.array(num),
  meanY: num,
  stdDevY: num,
  coefficients: z.array(num),
  calibration: z.object({ n: z.number().int().positive(), yMin: num, yMax: num }),
  rmsec: num,
  rmsecv: num,
  rmsep: num,
});

const VisionSchema = z.object({
  kind: z.literal('vision-softmax'),
  classes: z.array(z.string()),
  features: z.array(z.string()),
  mean: z.array(num),
  sd: z.array(num),
  weights: z.array(num),
});

function parse<T>(schema: z.ZodType, loaded: LoadedModel, kind: string): T {
  if (loaded.model.kind !== kind) throw new LkError('LK_MODEL_CORRUPT', `model ${loaded.model.id} is a ${loaded.model.kind} model, not ${kind}`, { id: loaded.model.id });
  const r = schema.safeParse(loaded.artefact);
  if (!r.success) throw new LkError('LK_MODEL_CORRUPT', `model ${loaded.model.id}: artefact does not have the shape of a ${kind} model`, { id: loaded.model.id });
  return r.data as T;
}

/** A loaded twin, ready for `simulate`. Throws LK_MODEL_CORRUPT for a wrong kind or shape. */
export function twinModelOf(loaded: LoadedModel): TwinModel {
  const a = parse<TwinArtefact>(TwinSchema, loaded, 'twin');
  return { id: loaded.model.id, version: loaded.model.version, params: a.params, validRanges: a.validRanges };
}

/** A loaded NIR PLS model, ready for `nirScore`. Throws LK_MODEL_CORRUPT for a wrong kind or shape. */
export function nirModelOf(loaded: LoadedModel): NirModel {
  const a = parse<PlsArtefact>(PlsSchema, loaded, 'nir-pls');
  const n = a.wavelengths.count;
  if (a.meanX.length !== n || a.stdDevX.length !== n || a.coefficients.length !== n) {
    throw new LkError('LK_MODEL_CORRUPT', `model ${loaded.model.id}: vector lengths do not match the wavelength count`, { id: loaded.model.id });
  }
  return { id: loaded.model.id, version: loaded.model.version, artefact: a };
}

/** A loaded defect classifier, ready for `classifyFrameSet`. Throws LK_MODEL_CORRUPT for a wrong kind or shape. */
export function visionModelOf(loaded: LoadedModel): VisionArtefact {
  const a = parse<VisionArtefact>(VisionSchema, loaded, 'vision-softmax');
  if (a.weights.length !== a.classes.length * (a.features.length + 1) || a.mean.length !== a.features.length || a.sd.length !== a.features.length) {
    throw new LkError('LK_MODEL_CORRUPT', `model ${loaded.model.id}: weight matrix does not match classes × features`, { id: loaded.model.id });
  }
  return a;
}
