/**
 * The simulated plant's hidden "true" process parameters: the twin's nominal
 * values (src/twin/params.ts) perturbed by the plant's seed, so that a twin
 * fitted to the plant's batches has something to learn. The plant simulator
 * (connectors/sim/truth.ts) and the batch generator (batches.ts) MUST draw
 * their hidden parameters from the same {@link perturbParams}, so that a twin
 * fitted to generated batches is fitted to the same plant the simulator runs.
 *
 * Ground truth belongs to the simulator, not to the product twin: the twin
 * never imports this layer (docs/architecture.md). Pure: no I/O, no clock;
 * the seed is the only source of variation.
 */
import { createRng } from '../../../src/clock.js';
import { cloneParams, NOMINAL_PARAMS, type ProcessParams } from '../../../src/twin/params.js';

/**
 * Relative half-width of the perturbation of each material/equipment parameter
 * (a factor uniform in [1 − s, 1 + s]). Geometry (punch diameter, PCD, flat,
 * true density), set-points of the physics (reference temperature, ambient) and
 * formulation constants (coating solids, core mass) are known and not perturbed.
 */
export const PERTURBATION: Readonly<{ [G in keyof ProcessParams]: Partial<Record<keyof ProcessParams[G], number>> }> = Object.freeze({
  press: {
    bulkDensity: 0.1,
    fillSpeedCoeff: 0.3,
    heckelK: 0.15,
    heckelA: 0.2,
    sigma0: 0.15,
    rdB: 0.12,
    capC0: 0.08,
    capForce: 0.2,
    capDwell: 0.25,
    capPre: 0.25,
    ejection0: 0.25,
    ejectionForce: 0.2,
  },
  blend: { rsd0: 0.2, rsdInf: 0.3, kPerRev: 0.3 },
  drying: { lod0: 0.1, lodEq: 0.3, kRef: 0.25, eaJmol: 0.2, airflowExp: 0.3 },
  coating: { efficiency: 0.05, heatLoss: 0.3 },
  dissolution: { tau0Min: 0.25, tauPerMpa: 0.3, tauPerWg: 0.3, beta: 0.12 },
  uniformity: { weightRsd0: 0.3, weightRsdPerRpm: 0.3 },
});

/**
 * Hidden "true" parameters for a seed: each perturbable parameter multiplied by
 * a factor uniform in [1 − s, 1 + s] (s from `spread`, default {@link PERTURBATION}).
 * Deterministic for a seed; parameters are visited in a fixed order so that the
 * simulator and the twin agree bit for bit. Never throws.
 */
export function perturbParams(
  nominal: Readonly<ProcessParams> = NOMINAL_PARAMS,
  seed: number,
  spread: typeof PERTURBATION = PERTURBATION,
): ProcessParams {
  const rng = createRng(seed);
  const out = cloneParams(nominal);
  for (const group of Object.keys(spread).sort() as (keyof ProcessParams)[]) {
    const g = out[group] as unknown as Record<string, number>;
    const s = spread[group] as Record<string, number | undefined>;
    for (const key of Object.keys(s).sort()) {
      const half = s[key] ?? 0;
      const factor = 1 + half * (2 * rng.next() - 1);
      const v = g[key];
      if (typeof v === 'number') g[key] = v * factor;
    }
  }
  return out;
}
