/**
 * The twin's residuals on recorded batches: every observation of a batch, how the twin predicts it from a
 * parameter set, and the residual statistics per attribute. What the golden-dataset gate evaluates a candidate
 * twin with, and what a fit reports on its card; apart from the fit itself (fit.ts, Levenberg–Marquardt) so that
 * a daemon that evaluates twins but fits none does not load the optimiser.
 */
import { residualStats, type ResidualStats } from './card.js';
import { dissolutionWeibull, dryingRatePerMin, coatingModel, lodPct, pressModel, blendRsdPct, weibullReleasePct, type PressSetpoints } from './process.js';
import { weightRsdPct } from './predict.js';
import { SETPOINT_IDS, SETPOINTS, type Range, type SetpointId } from './setpoints.js';
import type { ProcessParams } from './params.js';
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
export interface Point {
  attr: TwinAttribute;
  y: number;
  /** Expected measurement SD: residuals are scaled by it so every attribute weighs by its precision. */
  sd: number;
  predict: (p: Readonly<ProcessParams>) => number;
}

/** Every observation of the batches, with its prediction from a parameter set. */
export function pointsOf(batches: readonly RecordedBatch[]): Point[] {
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
