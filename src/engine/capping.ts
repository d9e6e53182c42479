/**
 * Safety inputs of a decision that the guarded writer computes itself at call
 * time, never taking them from the proposer:
 *
 * - the capping risk of a proposal that moves the press: the tenant's
 *   validated, site-pinned twin (asked through the injected `twin` function),
 *   the proposed moves applied to the press setpoints as they are now on the
 *   equipment, and the twin's press relations (`pressModel`, what
 *   `compileTwin` predicts capping with);
 * - the model registry's record of the model a proposal names.
 *
 * Nothing here throws: what cannot be computed is recorded as unknown, with
 * why, and the policy denies on it (CAPPING_RISK_UNKNOWN, MODEL_MISSING…).
 */
import type { CappingRisk, ModelRecord } from '../domain/policy.js';
import { LkError } from '../errors.js';
import type { ModelStatusView } from '../models/registry.js';
import { type PolicyBundle, toSetpointUnit } from '../policy/index.js';
import { pressModel } from '../twin/process.js';
import { outOfRange, SETPOINTS, type SetpointVector } from '../twin/setpoints.js';
import type { TwinModel } from '../twin/simulate.js';
import type { WriteProposal } from './writer-types.js';
import type { RoleMap } from '../domain/roles.js';

/** The press setpoint roles the twin's press relations take (each played by a site tag: {@link RoleMap}). */
export const PRESS_SETPOINTS = ['press.FillDepth', 'press.MainForce', 'press.PreForce', 'press.TurretSpeed'] as const;

/** True when the bundle says `setpoint` is on a press (its capping risk must be known before it moves). */
export function isPressMove(bundle: PolicyBundle | null, setpoint: string): boolean {
  return bundle !== null && Object.hasOwn(bundle.content.setpoints, setpoint) && bundle.content.setpoints[setpoint]!.equipmentType === 'press';
}

/**
 * Predicted capping (fraction) of the press as it would be after the proposal: the current press setpoints with
 * the proposal's moves applied, in the twin's units, on the tenant's twin. `current` must hold the four
 * {@link PRESS_SETPOINTS} in their tag units. Never throws; `risk: null` with `error` when it cannot be computed.
 */
export function cappingRisk(
  twinOf: ((tenant: string) => TwinModel & { readonly sha256?: string }) | undefined,
  p: WriteProposal,
  current: ReadonlyMap<string, number | null>,
  bundle: PolicyBundle,
  roles?: RoleMap,
): CappingRisk {
  if (!twinOf) return { risk: null, model: null, error: 'LK_MODEL_MISSING' };
  let twin: TwinModel & { readonly sha256?: string };
  try {
    twin = twinOf(p.tenant);
  } catch (err) {
    return { risk: null, model: null, error: LkError.is(err) ? err.code : 'LK_MODEL_CORRUPT' };
  }
  const model = { id: twin.id, version: String(twin.version), ...(twin.sha256 ? { sha256: twin.sha256 } : {}) };
  const press: Record<string, number | null> = {};
  let error: string | undefined;
  for (const id of PRESS_SETPOINTS) {
    // the twin's press relations take the roles; the proposal, the bundle and the readings name the site's tags
    const tag = roles ? roles.tag(id) : id;
    const sp = bundle.content.setpoints[tag];
    const move = p.moves.find((m) => m.setpoint === tag);
    let inTag: number | null = null;
    if (!sp) error ??= 'TAG_UNKNOWN';
    else if (move) {
      const v = toSetpointUnit(bundle.index, move.value, sp.unit);
      if (v.ok) inTag = v.value;
      else error ??= v.reason;
    } else {
      const c = current.get(tag);
      if (typeof c === 'number' && Number.isFinite(c)) inTag = c;
      else error ??= 'CURRENT_VALUE_UNKNOWN';
    }
    // the site's tag unit → the twin's unit (the same for the default site; a site may configure N or rpm)
    const conv = sp && inTag !== null ? toSetpointUnit(bundle.index, { value: inTag, unit: sp.unit }, SETPOINTS[id].unit) : null;
    press[id] = conv?.ok ? conv.value : null;
    if (conv && !conv.ok) error ??= conv.reason;
  }
  if (error) return { risk: null, model, press, error };
  const v = press as Record<(typeof PRESS_SETPOINTS)[number], number>;
  // never extrapolated: outside the ranges the twin was fitted over there is no risk to speak of
  const outside = outOfRange(v as unknown as SetpointVector, Object.fromEntries(PRESS_SETPOINTS.flatMap((id) => (twin.validRanges[id] ? [[id, twin.validRanges[id]]] : []))));
  if (outside.length > 0) return { risk: null, model, press, error: 'LK_MODEL_OUT_OF_RANGE' };
  let pct: number;
  try {
    pct = pressModel({ fillDepthMm: v['press.FillDepth'], mainForceKn: v['press.MainForce'], preForceKn: v['press.PreForce'], turretRpm: v['press.TurretSpeed'] }, twin.params.press).cappingPct;
  } catch {
    pct = Number.NaN;
  }
  if (!Number.isFinite(pct) || pct < 0) return { risk: null, model, press, error: 'PREDICTION_NOT_FINITE' };
  return { risk: pct / 100, model, press };
}

/**
 * The registry's record of the model a proposal names, for the policy: the tenant's own model in full; only
 * `other_tenant` when the id is another tenant's (R9); null when the registry has none (or cannot be asked).
 * Undefined when the proposal names no model.
 */
export function modelRecordOf(models: ((tenant: string, id: string) => ModelStatusView | null) | undefined, p: WriteProposal): ModelRecord | null | undefined {
  if (!p.model) return undefined;
  let v: ModelStatusView | null = null;
  try {
    v = models?.(p.tenant, p.model.id) ?? null;
  } catch {
    v = null; // a registry that cannot answer knows no model: MODEL_MISSING
  }
  if (!v) return null;
  if (v.tenant !== p.tenant) return { owner: 'other_tenant' };
  return { owner: 'own', family: `${v.analyte}-${v.family}`, version: v.version, status: v.status, sites: [...v.sites], sha256: v.sha256 };
}
