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
import { residualStats, type ModelCard, type ResidualStats } from './card.js';
import { dissolutionWeibull, dryingRatePerMin, coatingModel, lodPct, pressModel, blendRsdPct, weibullReleasePct, type PressSetpoints } from './process.js';
import { weightRsdPct } from './predict.js';
import { SETPOINT_IDS, SETPOINTS, type Range, type SetpointId } from './setpoints.js';
import { cloneParams, NOMINAL_PARAMS, type ProcessParams } from './params.js';
import { INSTRUMENT_PRECISION, type RecordedBatch } from './recorded.js';

export const TWIN_ATTRIBUTES = [
  'blendRsdPct',
  'lodPct',
  'tabletWeightMg',
  'weightRsdPct',
  'thicknessMm',
  'hardnessN',
  'cappingPct',
  'ejectionN',
  'coatWeightGainPct',
  'coatExhaustC',
  'dissolutionPct',
] as const;
export type TwinAttribute = (typeof TWIN_ATTRIBUTES)[number];

/** One observation and how the twin predicts it from a parameter set. */
interface Point {
  attr: TwinAttribute;
  y: number;
  /** Expected measurement SD: residuals are scaled by it so every attribute weighs by its precision. */
  sd: number;
  predict: (p: Readonly<ProcessParams>) => number;
}

function pointsOf(batches: readonly RecordedBatch[]): Point[] {
  const N = INSTRUMENT_PRECISION;
  const pts: Point[] = [];
  for (const b of batches) {
    for (const s of b.blend.samples) {
      pts.push({ attr: 'blendRsdPct', y: s.rsdPct, sd: N.blendRsdRel * s.rsdPct + N.blendRsdAbs, predict: (p) => blendRsdPct(s.rev, p.blend) });
    }
    const { inletC, airflowM3h } = b.drying;
    for (const s of b.drying.samples) {
      pts.push({ attr: 'lodPct', y: s.lodPct, sd: N.lodPct, predict: (p) => lodPct(s.min, dryingRatePerMin(inletC, airflowM3h, p.drying), p.drying) });
    }
    for (const o of b.press) {
      const sp: PressSetpoints = { fillDepthMm: o.fillDepthMm, mainForceKn: o.mainForceKn, preForceKn: o.preForceKn, turretRpm: o.turretRpm };
      pts.push({ attr: 'tabletWeightMg', y: o.weightMg, sd: N.weightMg, predict: (p) => pressModel(sp, p.press).tabletWeightMg });
      pts.push({ attr: 'weightRsdPct', y: o.weightRsdPct, sd: N.weightRsdPct, predict: (p) => weightRsdPct(p, sp.turretRpm) });
      pts.push({ attr: 'thicknessMm', y: o.thicknessMm, sd: N.thicknessMm, predict: (p) => pressModel(sp, p.press).thicknessMm });
      pts.push({ attr: 'hardnessN', y: o.hardnessN, sd: N.hardnessN, predict: (p) => pressModel(sp, p.press).hardnessN });
      const cSd = (100 * Math.sqrt(Math.max(o.cappingPct / 100, 2e-4) * (1 - o.cappingPct / 100))) / Math.sqrt(N.cappingInspected);
      pts.push({ attr: 'cappingPct', y: o.cappingPct, sd: cSd, predict: (p) => pressModel(sp, p.press).cappingPct });
      pts.push({ attr: 'ejectionN', y: o.ejectionN, sd: N.ejectionN, predict: (p) => pressModel(sp, p.press).ejectionForceN });
    }
    const c = b.coating;
    const cs = { sprayRateGMin: c.sprayRateGMin, inletAirC: c.inletAirC, airflowM3h: c.airflowM3h, panRpm: 0 };
    pts.push({ attr: 'coatExhaustC', y: c.exhaustC, sd: N.exhaustC, predict: (p) => coatingModel(cs, p.coating).exhaustC });
    for (const s of c.samples) {
      pts.push({ attr: 'coatWeightGainPct', y: s.weightGainPct, sd: N.weightGainPct, predict: (p) => coatingModel(cs, p.coating).weightGainPctPerMin * s.min });
    }
    const d = b.dissolution;
    d.timesMin.forEach((t, i) => {
      pts.push({ attr: 'dissolutionPct', y: d.releasedPct[i]!, sd: N.dissolutionPct, predict: (p) => weibullReleasePct(t, dissolutionWeibull(d.tensileMpa, d.weightGainPct, p.dissolution)) });
    });
  }
  return pts;
}

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

/** Residuals per attribute of a parameter set on recorded batches (observed − predicted). */
export function evaluateTwin(params: Readonly<ProcessParams>, batches: readonly RecordedBatch[]): Record<TwinAttribute, ResidualStats> {
  const pts = pointsOf(batches);
  const out = {} as Record<TwinAttribute, ResidualStats>;
  for (const attr of TWIN_ATTRIBUTES) {
    const sel = pts.filter((p) => p.attr === attr);
    out[attr] = residualStats(
      sel.map((p) => p.y),
      sel.map((p) => p.predict(params)),
    );
  }
  return out;
}

/** The setpoint ranges covered by the batches (press setpoints over all press segments). */
export function validRangesOf(batches: readonly RecordedBatch[]): Record<SetpointId, Range> {
  const lo = {} as Record<SetpointId, number>;
  const hi = {} as Record<SetpointId, number>;
  const see = (id: SetpointId, x: number): void => {
    lo[id] = Math.min(lo[id] ?? Number.POSITIVE_INFINITY, x);
    hi[id] = Math.max(hi[id] ?? Number.NEGATIVE_INFINITY, x);
  };
  for (const b of batches) {
    for (const id of SETPOINT_IDS) see(id, b.setpoints[id]);
    for (const o of b.press) {
      see('press.FillDepth', o.fillDepthMm);
      see('press.MainForce', o.mainForceKn);
      see('press.PreForce', o.preForceKn);
      see('press.TurretSpeed', o.turretRpm);
    }
  }
  const out = {} as Record<SetpointId, Range>;
  for (const id of SETPOINT_IDS) out[id] = { min: lo[id]!, max: hi[id]!, unit: SETPOINTS[id].unit };
  return out;
}
