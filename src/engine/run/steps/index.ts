/** The handler of every step of the plan, by its dotted name. */
import type { StepName } from '../../../domain/run.js';
import type { StepHandler } from '../types.js';
import { blend, dry } from './blend-dry.js';
import { coat, evidence, inspect } from './coat-inspect.js';
import { gate } from './gate.js';
import { ingest, rehearse } from './plan-steps.js';
import { compress } from './press.js';
import { release } from './release.js';

export const STEPS: Readonly<Record<StepName, StepHandler>> = Object.freeze({
  'ingest.batch_record': ingest,
  'twin.rehearse': rehearse,
  'blend.uniformity': blend,
  'granulate.dry': dry,
  'compress.press': compress,
  'coat.spray': coat,
  'inspect.tablets': inspect,
  'spectra.release_evidence': evidence,
  'approval.batch_release': gate,
  'release.genealogy': release,
});
