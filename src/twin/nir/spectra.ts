/**
 * Synthetic NIR spectra of the blend and the tablets, as the simulated
 * analyser emits them: absorbance over 1100–2500 nm (4 nm steps, 351 points)
 * as the sum of the components' bands (Gaussians for API, microcrystalline
 * cellulose, lactose and water), scaled by a multiplicative scatter factor,
 * plus a baseline offset and slope and white noise. Pure: an rng in, numbers out.
 */
import type { Rng } from '../../clock.js';

export const WL_START_NM = 1100;
export const WL_STEP_NM = 4;
export const WL_COUNT = 351;
export const WAVELENGTHS_NM: readonly number[] = Object.freeze(Array.from({ length: WL_COUNT }, (_, i) => WL_START_NM + i * WL_STEP_NM));

/** Bands of each component: [centre nm, width (SD) nm, absorbance per unit mass fraction]. */
export const COMPONENT_BANDS = Object.freeze({
  api: [
    [1680, 22, 0.9],
    [2150, 30, 1.2],
    [2275, 18, 0.8],
  ],
  mcc: [
    [1490, 60, 0.35],
    [2100, 70, 0.7],
    [2340, 45, 0.45],
  ],
  lactose: [
    [1440, 45, 0.4],
    [1930, 40, 0.3],
    [2260, 50, 0.5],
  ],
  water: [
    [1450, 35, 2.5],
    [1940, 30, 4.0],
  ],
} as const satisfies Record<string, readonly (readonly [number, number, number])[]>);

export type Component = keyof typeof COMPONENT_BANDS;

/** Pure-component spectra (absorbance per unit mass fraction), precomputed once. */
const PURE: Record<Component, Float64Array> = (() => {
  const out = {} as Record<Component, Float64Array>;
  for (const c of Object.keys(COMPONENT_BANDS) as Component[]) {
    const s = new Float64Array(WL_COUNT);
    for (const [mu, sd, a] of COMPONENT_BANDS[c]) {
      for (let i = 0; i < WL_COUNT; i++) {
        const z = (WAVELENGTHS_NM[i]! - mu) / sd;
        s[i]! += a * Math.exp(-0.5 * z * z);
      }
    }
    out[c] = s;
  }
  return out;
})();

/** API mass fraction of the formulation at 100 % label claim. */
export const API_FRACTION_AT_LABEL = 0.2;

export interface NirSample {
  spectrum: Float64Array;
  /** API content, % of label claim (the PLS target). */
  potencyPct: number;
  composition: Record<Component, number>;
}

export interface SpectrumNoise {
  /** SD of the multiplicative scatter factor around 1. */
  scatterSd: number;
  offsetSd: number;
  slopeSd: number;
  noiseSd: number;
}

export const DEFAULT_NOISE: Readonly<SpectrumNoise> = Object.freeze({ scatterSd: 0.08, offsetSd: 0.05, slopeSd: 0.03, noiseSd: 0.002 });

/**
 * One spectrum of a blend or tablet with API at `potencyPct` % of label claim;
 * the excipient ratio (MCC : lactose) and water (1–4 %) vary from sample to sample.
 */
export function nirSample(potencyPct: number, rng: Rng, noise: Readonly<SpectrumNoise> = DEFAULT_NOISE): NirSample {
  const api = (API_FRACTION_AT_LABEL * potencyPct) / 100;
  const water = rng.uniform(0.01, 0.04);
  const mccShare = rng.uniform(0.45, 0.65);
  const rest = Math.max(0, 1 - api - water);
  const composition: Record<Component, number> = { api, water, mcc: rest * mccShare, lactose: rest * (1 - mccShare) };
  const scatter = 1 + rng.normal(0, noise.scatterSd);
  const offset = 0.3 + rng.normal(0, noise.offsetSd);
  const slope = rng.normal(0, noise.slopeSd);
  const s = new Float64Array(WL_COUNT);
  for (let i = 0; i < WL_COUNT; i++) {
    const pure = composition.api * PURE.api[i]! + composition.mcc * PURE.mcc[i]! + composition.lactose * PURE.lactose[i]! + composition.water * PURE.water[i]!;
    s[i] = scatter * pure + offset + (slope * (WAVELENGTHS_NM[i]! - 1800)) / 1000 + rng.normal(0, noise.noiseSd);
  }
  return { spectrum: s, potencyPct, composition };
}

/**
 * Move `rng` on exactly as {@link nirSample} does, without drawing the spectrum: a caller that wants the spectrum
 * only later draws it then from a clone of `rng` taken before (`nirSample(p, clone)` gives what `nirSample(p, rng)`
 * would have given now). The two uniforms, then three normals and one per wavelength.
 */
export function skipNirSample(rng: Rng): void {
  rng.next();
  rng.next();
  rng.skipNormals(3 + WL_COUNT);
}

/** `n` samples with potency uniform in [lo, hi] % label claim (a calibration design). */
export function nirSamples(n: number, rng: Rng, lo = 80, hi = 120): NirSample[] {
  return Array.from({ length: n }, () => nirSample(rng.uniform(lo, hi), rng));
}

/**
 * Standard normal variate: centre and scale each spectrum by its own mean and
 * SD, which removes the multiplicative scatter and the offset. Throws RangeError
 * for a flat spectrum (SD 0), which no analyser emits.
 */
export function snv(spectrum: ArrayLike<number>): Float64Array {
  const n = spectrum.length;
  let mean = 0;
  for (let i = 0; i < n; i++) mean += spectrum[i]!;
  mean /= n;
  let ss = 0;
  for (let i = 0; i < n; i++) ss += (spectrum[i]! - mean) ** 2;
  const sd = Math.sqrt(ss / (n - 1));
  if (!(sd > 0)) throw new RangeError('SNV of a flat spectrum');
  const out = new Float64Array(n);
  for (let i = 0; i < n; i++) out[i] = (spectrum[i]! - mean) / sd;
  return out;
}

/**
 * Spectra an in-line probe takes while blending: at each revolution count the
 * local API content scatters around 100 % label claim with the blend's RSD(n)
 * (src/twin/process.ts), so the NIR predictions settle as the blend homogenises.
 */
export function blendScans(rsdAt: (revolutions: number) => number, revolutions: readonly number[], rng: Rng): NirSample[] {
  return revolutions.map((n) => nirSample(100 * (1 + (rsdAt(n) / 100) * rng.normal()), rng));
}
