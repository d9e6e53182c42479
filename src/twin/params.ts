/**
 * The twin's parameter set and its prior: every parameter of the line's
 * process relations (process.ts), one group per unit operation, and the
 * nominal values a fit starts from and an unfitted twin predicts with.
 * A fitted model (fit.ts, the registry's `process-twin-v<n>`) is one
 * {@link ProcessParams}.
 *
 * Pure: no I/O, no clock.
 */
import {
  NOMINAL_BLEND,
  NOMINAL_COATING,
  NOMINAL_DISSOLUTION,
  NOMINAL_DRYING,
  NOMINAL_PRESS,
  type BlendParams,
  type CoatingParams,
  type DissolutionParams,
  type DryingParams,
  type PressParams,
} from './process.js';

/**
 * Tablet-to-tablet variation that process.ts does not carry: weight RSD grows
 * with turret speed (less time under the feed frame, more fill scatter).
 */
export interface UniformityParams {
  /** Weight RSD at zero turret speed, %. */
  weightRsd0: number;
  /** Weight RSD added per turret rpm, %/rpm. */
  weightRsdPerRpm: number;
}

export const NOMINAL_UNIFORMITY: Readonly<UniformityParams> = Object.freeze({ weightRsd0: 0.6, weightRsdPerRpm: 0.012 });

/** Every parameter of the line's process relations, one group per unit operation. */
export interface ProcessParams {
  press: PressParams;
  blend: BlendParams;
  drying: DryingParams;
  coating: CoatingParams;
  dissolution: DissolutionParams;
  uniformity: UniformityParams;
}

/** The prior: published and typical values of every parameter, before any batch of the site is seen. */
export const NOMINAL_PARAMS: Readonly<ProcessParams> = Object.freeze({
  press: NOMINAL_PRESS,
  blend: NOMINAL_BLEND,
  drying: NOMINAL_DRYING,
  coating: NOMINAL_COATING,
  dissolution: NOMINAL_DISSOLUTION,
  uniformity: NOMINAL_UNIFORMITY,
});

/** A deep, mutable copy of a parameter bundle. */
export function cloneParams(p: Readonly<ProcessParams>): ProcessParams {
  return {
    press: { ...p.press },
    blend: { ...p.blend },
    drying: { ...p.drying },
    coating: { ...p.coating },
    dissolution: { ...p.dissolution },
    uniformity: { ...p.uniformity },
  };
}
