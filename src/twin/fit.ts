/**
 * Fitting the twin's parameters to recorded batches by Levenberg–Marquardt
 * (ml-levenberg-marquardt), one block of parameters per unit operation, each
 * against the observations that depend on it. A fit yields the parameters and
 * a model card (training batches, tenant, residuals and RMSE per attribute,
 * valid ranges); the registry turns that into a new model version.
 *
 * Parameters are fitted as multipliers of their starting values (θ = p / p₀,
 * starting at 1), so one finite-difference step and one pair of bounds suit
 * parameters that differ by orders of magnitude (Ea ≈ 4·10⁴ J/mol, Heckel K ≈ 10⁻²).
 */
import { levenbergMarquardt } from 'ml-levenberg-marquardt';
import { LkError } from '../errors.js';
import type { ModelCard } from './card.js';
import { cloneParams, NOMINAL_PARAMS, type ProcessParams } from './params.js';
import type { RecordedBatch } from './recorded.js';
import { evaluateTwin, pointsOf, validRangesOf, type TwinAttribute } from './residuals.js';

export { evaluateTwin, TWIN_ATTRIBUTES, validRangesOf, type TwinAttribute } from './residuals.js';

/** Which parameters are fitted to which attributes, in the order the blocks are fitted. */
const BLOCKS: { group: keyof ProcessParams; keys: string[]; attrs: TwinAttribute[] }[] = [
  { group: 'blend', keys: ['rsd0', 'rsdInf', 'kPerRev'], attrs: ['blendRsdPct'] },
  { group: 'drying', keys: ['lod0', 'lodEq', 'kRef', 'eaJmol', 'airflowExp'], attrs: ['lodPct'] },
  // bulk density and fill fraction at rest only appear as a product: fit the density, hold f₀
  { group: 'press', keys: ['bulkDensity', 'fillSpeedCoeff'], attrs: ['tabletWeightMg'] },
  { group: 'uniformity', keys: ['weightRsd0', 'weightRsdPerRpm'], attrs: ['weightRsdPct'] },
  { group: 'press', keys: ['heckelK', 'heckelA', 'sigma0', 'rdB'], attrs: ['thicknessMm', 'hardnessN'] },
  { group: 'press', keys: ['capC0', 'capForce', 'capDwell', 'capPre'], attrs: ['cappingPct'] },
  { group: 'press', keys: ['ejection0', 'ejectionForce'], attrs: ['ejectionN'] },
  { group: 'coating', keys: ['efficiency', 'heatLoss'], attrs: ['coatWeightGainPct', 'coatExhaustC'] },
  { group: 'dissolution', keys: ['tau0Min', 'tauPerMpa', 'tauPerWg', 'beta'], attrs: ['dissolutionPct'] },
];

export interface FitOptions {
  tenant: string;
  /** Starting parameters (default the nominal ones). */
  start?: Readonly<ProcessParams>;
  /** Seed of the generator, recorded on the card when the batches came from the simulator. */
  seed?: number;
  maxIterations?: number;
}

export interface TwinFit {
  params: ProcessParams;
  card: ModelCard;
  iterations: Record<string, number>;
}

/**
 * Fit the twin to recorded batches. Throws LK_VALIDATION with fewer than 3
 * batches (not enough to separate the press parameters) and LK_VALUE_INVALID
 * when an observation is not finite.
 */
export function fitTwin(batches: readonly RecordedBatch[], opts: FitOptions): TwinFit {
  if (batches.length < 3) throw new LkError('LK_VALIDATION', `fitting needs at least 3 recorded batches, got ${batches.length}`);
  const pts = pointsOf(batches);
  for (const pt of pts) if (!Number.isFinite(pt.y)) throw new LkError('LK_VALUE_INVALID', `recorded ${pt.attr} is not a finite number`, { attribute: pt.attr });
  const params = cloneParams(opts.start ?? NOMINAL_PARAMS);
  const iterations: Record<string, number> = {};
  for (const block of BLOCKS) {
    const sel = pts.filter((p) => block.attrs.includes(p.attr));
    if (sel.length < block.keys.length + 2) continue;
    const g = params[block.group] as unknown as Record<string, number>;
    const base = block.keys.map((k) => g[k]!);
    // each call gets its own copy: the library holds several parameter vectors' functions at once (Jacobian columns)
    const withTheta = (theta: readonly number[]): ProcessParams => {
      const trial = cloneParams(params);
      const tg = trial[block.group] as unknown as Record<string, number>;
      block.keys.forEach((k, i) => (tg[k] = base[i]! * theta[i]!));
      return trial;
    };
    const res = levenbergMarquardt(
      { x: sel.map((_, i) => i), y: sel.map((p) => p.y / p.sd) },
      (theta) => {
        const trial = withTheta(theta);
        return (i) => {
          const pt = sel[i]!;
          const v = pt.predict(trial) / pt.sd;
          return Number.isFinite(v) ? v : 1e6;
        };
      },
      {
        initialValues: block.keys.map(() => 1),
        minValues: block.keys.map(() => 0.2),
        maxValues: block.keys.map(() => 5),
        gradientDifference: 1e-4,
        centralDifference: true,
        damping: 1e-2,
        maxIterations: opts.maxIterations ?? 60,
        errorTolerance: 1e-9,
      },
    );
    block.keys.forEach((k, i) => (g[k] = base[i]! * res.parameterValues[i]!));
    iterations[`${block.group}:${block.keys.join(',')}`] = res.iterations;
  }
  const residuals = evaluateTwin(params, batches);
  const metrics: Record<string, number> = {};
  for (const [attr, r] of Object.entries(residuals)) metrics[`rmse.${attr}`] = r.rmse;
  const card: ModelCard = {
    analyte: 'process',
    family: 'twin',
    intendedUse:
      'Rehearse candidate setpoint vectors of the tablet line (blend, dry, compress, coat) before they are proposed: content uniformity, capping risk, weight, hardness, dissolution and takt. Not for release decisions.',
    tenant: opts.tenant,
    trainingData: {
      summary: `${batches.length} recorded batches (${pts.length} observations), fitted by Levenberg–Marquardt per unit operation`,
      ids: batches.map((b) => b.id),
      samples: pts.length,
      ...(opts.seed !== undefined ? { seed: opts.seed } : {}),
    },
    metrics,
    residuals,
    validRanges: validRangesOf(batches),
    limitations: [
      'Press relations are steady-state; transients after a setpoint move are not predicted.',
      'Blender speed only sets blend time; segregation at high speed is not modelled.',
    ],
  };
  return { params, card, iterations };
}
