/**
 * The limits an operator's screen holds the line's key process values to while a run is on the line: the press's
 * in-process attributes (tablet weight, hardness, thickness, capping rate) and the dryer's loss on drying. They are
 * the limits the run works to — the batch record's specifications, each tightened where the run's request stated
 * a stricter one (src/domain/run-request-limits.ts), and the capping threshold of the policy bundle — converted
 * (UCUM) to the unit the site's tag reads in, so a reading is compared in its own unit. A limit whose unit does not
 * convert to the tag's is left out, never compared as if it did.
 *
 * The press step records the same in-process limits in the genealogy when it starts (src/engine/run/steps/press.ts):
 * these are what the line page shows before and after that step as well.
 *
 * Pure: no I/O, no clock.
 */
import { convertUnit } from '../domain/units.js';

/** Where a limit applies: to every reading (in process), or to the reading at the end of a phase (LOD end of drying). */
export type LimitApplies = 'in_process' | 'end_point';

export interface LineLimit {
  readonly min?: number;
  readonly max?: number;
  /** The tag's unit (UCUM), which min and max are in. */
  readonly unit: string;
  /** Where the limit comes from, in words. */
  readonly source: string;
  readonly applies: LimitApplies;
}

/** The roles whose limits the line page shows, in its order (src/domain/roles.ts). */
export const LINE_LIMIT_ROLES = ['press.TabletWeight', 'press.Hardness', 'press.Thickness', 'press.CappingRate', 'fluidbed.Lod'] as const;
export type LineLimitRole = (typeof LINE_LIMIT_ROLES)[number];

export interface LineLimitsInput {
  /** The run's batch record, as it was ingested (validated then; read defensively here). */
  readonly record: Readonly<Record<string, unknown>>;
  /** The run's effective limits as the engine stored them: `{ name: { value, source: 'site' | 'request' } }`. */
  readonly runLimits: unknown;
  /** The policy bundle's capping-risk threshold in %, when a bundle is in force. */
  readonly cappingThresholdPct: number | undefined;
  /** The site's weight tolerance around the record's target, in %, when neither record nor request names one. */
  readonly siteWeightTolerancePct: number;
  /** The site tag playing a role and the unit it reads in; undefined when the site has no such tag. */
  readonly tagOf: (role: LineLimitRole) => { readonly tag: string; readonly unit: string } | undefined;
}

const finite = (v: unknown): number | undefined => (typeof v === 'number' && Number.isFinite(v) ? v : undefined);
const at = (o: unknown, path: string): unknown => path.split('.').reduce<unknown>((v, k) => (v && typeof v === 'object' ? (v as Record<string, unknown>)[k] : undefined), o);

/** An effective limit of the run and whether the request tightened it. */
function effective(runLimits: unknown, name: string): { value: number; request: boolean } | undefined {
  const v = at(runLimits, name);
  if (typeof v === 'number') return Number.isFinite(v) ? { value: v, request: false } : undefined;
  const value = finite(at(v, 'value'));
  return value === undefined ? undefined : { value, request: at(v, 'source') === 'request' };
}

/**
 * The limits in force for each key process value of a run, by site tag, in the tag's unit.
 * A role the site lacks, or whose record entry is missing or does not convert, has no entry.
 */
export function lineLimits(i: LineLimitsInput): Record<string, LineLimit> {
  const out: Record<string, LineLimit> = {};
  const batch = typeof i.record['batch'] === 'string' ? i.record['batch'] : 'of the run';
  const record = `batch record ${batch}`;
  const put = (role: LineLimitRole, l: { min?: number | undefined; max?: number | undefined; unit: string }, source: string, applies: LimitApplies = 'in_process'): void => {
    const t = i.tagOf(role);
    if (!t) return;
    const min = l.min === undefined ? undefined : convertUnit(l.min, l.unit, t.unit);
    const max = l.max === undefined ? undefined : convertUnit(l.max, l.unit, t.unit);
    if ((l.min !== undefined && min === undefined) || (l.max !== undefined && max === undefined) || (min === undefined && max === undefined)) return;
    out[t.tag] = { ...(min !== undefined ? { min } : {}), ...(max !== undefined ? { max } : {}), unit: t.unit, source, applies };
  };

  // tablet weight: the record's target ± the run's tolerance (the request may tighten the site's)
  const target = finite(at(i.record, 'specifications.tablet_weight.target'));
  const wUnit = at(i.record, 'specifications.tablet_weight.unit');
  if (target !== undefined && typeof wUnit === 'string') {
    const tol = effective(i.runLimits, 'weightTolerancePct') ?? { value: i.siteWeightTolerancePct, request: false };
    put('press.TabletWeight', { min: target * (1 - tol.value / 100), max: target * (1 + tol.value / 100), unit: wUnit },
      `${record}: target ${+target.toPrecision(6)} ${wUnit} ± ${+tol.value.toPrecision(4)} %${tol.request ? ' (tolerance of the run request)' : ''}`);
  }
  // hardness: the run's effective range is in N (the engine's limits); else the record's, in its own unit
  const hMin = effective(i.runLimits, 'hardnessMinN');
  const hMax = effective(i.runLimits, 'hardnessMaxN');
  if (hMin && hMax) put('press.Hardness', { min: hMin.value, max: hMax.value, unit: 'N' }, hMin.request || hMax.request ? `run request (tighter than ${record})` : record);
  else {
    const h = at(i.record, 'specifications.hardness');
    const unit = at(h, 'unit');
    if (typeof unit === 'string') put('press.Hardness', { min: finite(at(h, 'min')), max: finite(at(h, 'max')), unit }, record);
  }
  const th = at(i.record, 'specifications.thickness');
  const thUnit = at(th, 'unit');
  if (typeof thUnit === 'string') put('press.Thickness', { min: finite(at(th, 'min')), max: finite(at(th, 'max')), unit: thUnit }, record);
  // capping: the run's threshold (the request may tighten the bundle's), else the bundle's
  const capping = effective(i.runLimits, 'cappingRiskPct') ?? (i.cappingThresholdPct !== undefined ? { value: i.cappingThresholdPct, request: false } : undefined);
  if (capping) put('press.CappingRate', { max: capping.value, unit: '%' }, capping.request ? 'run request (tighter than the policy bundle\'s capping threshold)' : 'policy bundle: capping threshold');
  // LOD: the record's end point of drying, which a reading is held to when drying ends (not while it dries)
  const lod = finite(at(i.record, 'specifications.lod_end_pct'));
  if (lod !== undefined) put('fluidbed.Lod', { max: lod, unit: '%' }, `${record}: LOD at end of drying`, 'end_point');
  return out;
}
