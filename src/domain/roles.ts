/**
 * Equipment roles: the vocabulary in which the run engine, the agents and the twin speak of the line. A role
 * is what a value means to the process (the press's main compression force, the fluid bed's loss on drying),
 * with its unit; a site maps each role to one of its own tags (`roles:` in site.yaml), named as its
 * equipment and HMI name them. The engine never names a site tag: it reads and proposes by role, and the
 * translation happens here, at the edge of the engine (the guarded writer, the policy bundle and the audit
 * trail see the site's tags).
 *
 * A role's id keeps the spelling of the reference line (`press.MainForce`), so that models, golden datasets
 * and recorded-batch exports stay readable across sites; a role not mapped defaults to the site tag of the same
 * id when there is one (the embedded simulator's site is such a site).
 */
import type { SiteConfig } from '../config/schema.js';

export type RoleKind = 'setpoint' | 'measurement';

export interface RoleInfo {
  readonly kind: RoleKind;
  /** UCUM unit of the role's values: the mapped tag carries this unit (after its scale and unit alias). */
  readonly unit: string;
  readonly meaning: string;
}

const sp = (unit: string, meaning: string): RoleInfo => ({ kind: 'setpoint', unit, meaning });
const pv = (unit: string, meaning: string): RoleInfo => ({ kind: 'measurement', unit, meaning });

/** The equipment a role belongs to (`press` of `press.MainForce`). */
export const EQUIPMENT_ROLES = ['blender', 'nir', 'fluidbed', 'press', 'coater', 'vision', 'plc'] as const;

/** Every role the engine, the agents and the twin use, with unit and meaning (docs/roles.md is generated from the same table's text). */
export const ROLES = Object.freeze({
  'blender.Speed': sp('{rev}/min', 'blender drum speed'),
  'blender.TargetRevolutions': sp('{rev}', 'revolutions at which the blender stops (the blend end point)'),
  'blender.Revolutions': pv('{rev}', 'revolutions of the blend so far'),
  'blender.BlendRsd': pv('%', 'blend uniformity (RSD) the blender reports'),
  'nir.BlendConcentration': pv('%', 'API concentration of the last NIR scan, % of label claim'),
  'nir.Spectrum': pv('1', 'absorbance of the last NIR scan (array on the model\u2019s wavelength axis)'),
  'nir.SpectrumId': pv('1', 'scan number of nir.Spectrum (+1 per scan)'),
  'fluidbed.InletAirTemp': sp('Cel', 'fluid-bed inlet air temperature'),
  'fluidbed.Airflow': sp('m3/h', 'fluid-bed process air flow'),
  'fluidbed.InletAirTempActual': pv('Cel', 'measured inlet air temperature'),
  'fluidbed.ProductTemp': pv('Cel', 'product (bed) temperature'),
  'fluidbed.Lod': pv('%', 'loss on drying of the granulate'),
  'fluidbed.DryingTime': pv('min', 'drying time so far'),
  'press.FillDepth': sp('mm', 'die fill depth'),
  'press.MainForce': sp('kN', 'main compression force'),
  'press.PreForce': sp('kN', 'pre-compression force'),
  'press.TurretSpeed': sp('{rev}/min', 'turret speed'),
  'press.TabletWeight': pv('mg', 'tablet weight (in-line)'),
  'press.Hardness': pv('N', 'tablet breaking force (in-line)'),
  'press.Thickness': pv('mm', 'tablet thickness (in-line)'),
  'press.CappingRate': pv('%', 'capping rate the press detects'),
  'press.EjectionForce': pv('N', 'ejection force'),
  'press.DwellTime': pv('ms', 'dwell time under the main compression roller'),
  'press.Output': pv('{tbl}/h', 'press output'),
  'coater.SprayRate': sp('g/min', 'coating suspension spray rate'),
  'coater.InletAirTemp': sp('Cel', 'coater inlet air temperature'),
  'coater.Airflow': sp('m3/h', 'coater process air flow'),
  'coater.PanSpeed': sp('{rev}/min', 'coating pan speed'),
  'coater.ExhaustTemp': pv('Cel', 'coater exhaust air temperature'),
  'coater.WeightGain': pv('%', 'coating weight gain'),
  'coater.WettingRatio': pv('1', 'spray rate over drying capacity (over 1: over-wetting)'),
  'vision.RejectThreshold': sp('%', 'defect score above which the inspection rejects a tablet'),
  'vision.Inspected': pv('1', 'tablets inspected'),
  'vision.Rejected': pv('1', 'tablets rejected'),
  'vision.DefectRate': pv('%', 'defect rate of the inspection'),
  'vision.TriggerId': pv('1', 'trigger (tablet) of the frame set in Frame1..Frame6'),
  'vision.Frame1': pv('1', 'camera 1 frame (upper face)'),
  'vision.Frame2': pv('1', 'camera 2 frame (lower face)'),
  'vision.Frame3': pv('1', 'camera 3 frame (side 0 deg)'),
  'vision.Frame4': pv('1', 'camera 4 frame (side 90 deg)'),
  'vision.Frame5': pv('1', 'camera 5 frame (side 180 deg)'),
  'vision.Frame6': pv('1', 'camera 6 frame (side 270 deg)'),
  'plc.BatchPhase': pv('1', 'batch phase the line PLC reports (the default phase source; see line.phase)'),
} satisfies Record<string, RoleInfo>);

export type RoleId = keyof typeof ROLES;

export function isRole(id: string): id is RoleId {
  return Object.hasOwn(ROLES, id);
}

/**
 * What each step of the plan needs from the line, and what happens on a line without it: a `skip` step is not
 * run (its specification rows stay NOT_EVALUATED unless the LIMS gives them), a `hold` step holds the run for a
 * person. Roles a step may use when present but can do without are not listed.
 */
export const STEP_ROLES: Readonly<Record<string, { readonly roles: readonly RoleId[]; readonly missing: 'skip' | 'hold'; readonly without: string }>> = Object.freeze({
  'blend.uniformity': {
    roles: ['blender.TargetRevolutions', 'blender.Revolutions', 'nir.BlendConcentration', 'nir.SpectrumId'],
    missing: 'skip',
    without: 'no in-line NIR and blender mapped: blend uniformity is not monitored by linekeeper; the blend ends at the recipe\u2019s revolutions and is sampled per the site\u2019s procedure',
  },
  'granulate.dry': {
    roles: ['fluidbed.InletAirTemp', 'fluidbed.Airflow', 'fluidbed.Lod'],
    missing: 'skip',
    without: 'no fluid bed mapped (a direct-compression line): no drying step',
  },
  'compress.press': {
    roles: ['press.FillDepth', 'press.MainForce', 'press.PreForce', 'press.TurretSpeed', 'press.TabletWeight', 'press.Hardness', 'press.Thickness'],
    missing: 'hold',
    without: 'the press is not mapped: a tablet batch cannot be compressed under supervision',
  },
  'coat.spray': {
    roles: ['coater.SprayRate', 'coater.InletAirTemp', 'coater.Airflow', 'coater.PanSpeed', 'coater.WeightGain'],
    missing: 'skip',
    without: 'no coater mapped (uncoated tablets): no coating step',
  },
  'inspect.tablets': {
    roles: ['vision.Inspected', 'vision.Rejected', 'vision.TriggerId', 'vision.Frame1', 'vision.Frame2', 'vision.Frame3', 'vision.Frame4', 'vision.Frame5', 'vision.Frame6'],
    missing: 'skip',
    without: 'no vision inspection mapped: tablets are not inspected in-line; the defect specification is left to the LIMS',
  },
  'spectra.release_evidence': {
    roles: ['nir.Spectrum', 'nir.SpectrumId'],
    missing: 'skip',
    without: 'no NIR spectrum mapped: no spectral release evidence; potency comes from the LIMS',
  },
});

/** A site's role map: role ↔ site tag (`<equipment>.<Tag>`), both ways. */
export interface RoleMap {
  /** The site tag of a role; a string that is not a mapped role is returned as is (a site tag already). */
  tag(role: string): string;
  /** The role a site tag plays, or the tag itself when it plays none. */
  role(tag: string): string;
  /** True when the role has a tag on this site. */
  has(role: string): boolean;
  /** Role → tag, for every role this site maps (explicitly or by the same id). */
  readonly entries: ReadonlyMap<string, string>;
}

/**
 * A site's role map: `roles:` of site.yaml — a role to a tag (`press.MainForce: kp200.Hauptdruck`), or an equipment
 * role to a unit (`press: kp200`, whose tags of the roles' names then play them) — then every role whose id is a
 * site tag maps to it. Pure.
 */
export function roleMapOf(site: Pick<SiteConfig, 'equipment'> & { readonly roles?: Readonly<Record<string, string>> | undefined }): RoleMap {
  const cached = CACHE.get(site);
  if (cached) return cached;
  const tags = new Set<string>();
  for (const e of site.equipment) for (const t of e.tags) tags.add(`${e.id}.${t.name}`);
  const toTag = new Map<string, string>();
  // `press: kp200` maps the equipment: each press role to kp200's tag of the same name, unless mapped one by one
  const units = new Map<string, string>();
  for (const [role, tag] of Object.entries(site.roles ?? {})) (role.includes('.') ? toTag : units).set(role, tag);
  for (const role of Object.keys(ROLES)) {
    if (toTag.has(role)) continue;
    const [eq, name] = role.split('.') as [string, string];
    const unit = units.get(eq);
    if (unit !== undefined && tags.has(`${unit}.${name}`)) toTag.set(role, `${unit}.${name}`);
    else if (unit === undefined && tags.has(role)) toTag.set(role, role);
  }
  const toRole = new Map<string, string>();
  for (const [role, tag] of toTag) toRole.set(tag, role);
  const map: RoleMap = {
    tag: (role) => toTag.get(role) ?? role,
    role: (tag) => toRole.get(tag) ?? tag,
    has: (role) => toTag.has(role),
    entries: toTag,
  };
  CACHE.set(site, map);
  return map;
}
const CACHE = new WeakMap<object, RoleMap>();

/** The roles a step needs that the site does not map (empty: the step can run). */
export function missingRoles(step: string, roles: RoleMap): RoleId[] {
  return (STEP_ROLES[step]?.roles ?? []).filter((r) => !roles.has(r));
}

/** A record keyed by site tags, re-keyed by the roles those tags play (entries playing no role are dropped). */
export function byRole<T>(bySiteTag: Readonly<Record<string, T>>, roles: RoleMap): Record<string, T> {
  const out: Record<string, T> = {};
  for (const [role, tag] of roles.entries) if (Object.hasOwn(bySiteTag, tag)) out[role] = bySiteTag[tag]!;
  return out;
}
