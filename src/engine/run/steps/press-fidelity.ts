/**
 * Model fidelity at the press (R8, "loss of the model"): the fitted twin's prediction for the setpoints in force
 * against what the press measured at those setpoints — tablet weight, hardness, thickness and capping rate — judged
 * by the acceptance on the twin's card (src/quality/fidelity.ts). Residuals beyond it mean the model no longer
 * describes this plant: it counts as lost for the run, exactly as a missing model (the engine's fail-safe reverts the
 * line to its last known-good recipe, drops the twin's agents to L0 and holds the run for a named person).
 */
import type { Reading } from '../../../agents/types.js';
import { fidelity, type Fidelity } from '../../../quality/index.js';
import { pressModel } from '../../../twin/process.js';
import type { ProcessParams } from '../../../twin/params.js';
import type { TwinFidelity } from '../types.js';

/** What the press measured at the setpoints in force (each reading taken since they last changed). */
export interface PressMeasured {
  readonly weights: readonly Reading[];
  readonly hardness: readonly Reading[];
  readonly thickness: readonly Reading[];
  readonly capping: readonly Reading[];
}

/** The attributes judged, the twin's name for each and the press tag that measures it. */
export const FIDELITY_ATTRIBUTES = [
  { attribute: 'tabletWeightMg', tag: 'press.TabletWeight', unit: 'mg' },
  { attribute: 'hardnessN', tag: 'press.Hardness', unit: 'N' },
  { attribute: 'thicknessMm', tag: 'press.Thickness', unit: 'mm' },
  { attribute: 'cappingPct', tag: 'press.CappingRate', unit: '%' },
] as const;

/** Fewest readings at one setpoint vector on which a mean is judged (fewer: listed, not judged). */
export const FIDELITY_MIN_N = 3;

export interface PressFidelity extends Fidelity {
  readonly acceptanceFrom: TwinFidelity['from'];
  readonly setpoints: Readonly<Record<string, number>>;
}

/**
 * Judge the twin at the press's setpoints in force. Pure: the caller passes the readings and the model.
 * An attribute with fewer than {@link FIDELITY_MIN_N} readings is listed as not judged (n 0).
 */
export function pressFidelity(params: Readonly<ProcessParams>, setpoints: Readonly<Record<'press.FillDepth' | 'press.MainForce' | 'press.PreForce' | 'press.TurretSpeed', number>>, measured: PressMeasured, acceptance: TwinFidelity): PressFidelity {
  const out = pressModel({ fillDepthMm: setpoints['press.FillDepth'], mainForceKn: setpoints['press.MainForce'], preForceKn: setpoints['press.PreForce'], turretRpm: setpoints['press.TurretSpeed'] }, params.press);
  const predicted = { tabletWeightMg: out.tabletWeightMg, hardnessN: out.hardnessN, thicknessMm: out.thicknessMm, cappingPct: out.cappingPct };
  const values = (xs: readonly Reading[]): number[] => (xs.length >= FIDELITY_MIN_N ? xs.map((x) => x.value) : []);
  const f = fidelity({
    predicted,
    measured: { tabletWeightMg: values(measured.weights), hardnessN: values(measured.hardness), thicknessMm: values(measured.thickness), cappingPct: values(measured.capping) },
    acceptance: acceptance.acceptance,
  });
  return { ...f, acceptanceFrom: acceptance.from, setpoints: { ...setpoints } };
}

/** One line for the genealogy and the exception: each attribute's measured mean against the prediction. */
export function fidelityText(f: PressFidelity): string {
  const unit = (a: string): string => FIDELITY_ATTRIBUTES.find((x) => x.attribute === a)?.unit ?? '';
  const p = (x: number): string => String(Number(x.toPrecision(4)));
  return f.residuals
    .map((r) => {
      if (r.measuredMean === null) return `${r.attribute} not judged (n ${r.n})`;
      const lim = r.limit?.maxRelResidualPct !== undefined ? `≤ ${p(r.limit.maxRelResidualPct)} %` : r.limit?.maxAbsResidual !== undefined ? `≤ ${p(r.limit.maxAbsResidual)} ${unit(r.attribute)}` : 'no limit';
      const res = r.limit?.maxRelResidualPct !== undefined && r.relPct !== null ? `${r.relPct >= 0 ? '+' : ''}${p(r.relPct)} %` : `${r.residual! >= 0 ? '+' : ''}${p(r.residual!)} ${unit(r.attribute)}`;
      return `${r.attribute} ${p(r.measuredMean)} vs ${p(r.predicted)} ${unit(r.attribute)} (n ${r.n}, ${res}, ${lim})${r.ok ? '' : ' OUT'}`;
    })
    .join('; ');
}
