import { byRole, roleMapOf } from '../domain/roles.js';
import type { LoadedConfig } from '../config/load.js';
import { LkError } from '../errors.js';
import { type PolicyBundle } from '../policy/index.js';
import { loadPolicyBundle } from '../config/policy-bundle.js';
import { twinDesignSpace } from '../twin/design-space.js';
import { convertUnit } from '../domain/units.js';
import { SETPOINT_IDS, SETPOINTS, type DesignSpaceRanges } from '../twin/setpoints.js';

/**
 * The instrument ranges (EURange) of the twin's setpoints from the configured tags, converted to each
 * setpoint's unit; setpoints whose tag has no range (or an inconvertible unit) are left out.
 */
export function instrumentRanges(config: LoadedConfig['config']): Partial<DesignSpaceRanges> {
  const out: Partial<DesignSpaceRanges> = {};
  const roles = roleMapOf(config);
  for (const id of SETPOINT_IDS) {
    const [equipment, name] = roles.tag(id).split('.') as [string, string];
    const tag = config.equipment.find((e) => e.id === equipment)?.tags.find((t) => t.name === name);
    if (!tag?.range) continue;
    const unit = SETPOINTS[id].unit;
    const min = convertUnit(tag.range.min, tag.unit, unit);
    const max = convertUnit(tag.range.max, tag.unit, unit);
    if (min !== undefined && max !== undefined) out[id] = { min: Math.min(min, max), max: Math.max(min, max), unit };
  }
  return out;
}

/**
 * The approved design space of a tenant's product (its first product and that
 * product's first tooling unless named), restricted to the twin's setpoints.
 * Loads the policy bundle: without one there is no design space (fail closed).
 *
 * @throws LkError(LK_POLICY_BUNDLE) for a missing/invalid bundle or incomplete design space,
 *   LK_VALIDATION when the tenant has no product/tooling, LK_NOT_FOUND for an unapproved pair.
 */
export function approvedTwinSpace(
  loaded: LoadedConfig,
  tenant: string,
  choice: { product?: string; tooling?: string } = {},
): { bundle: PolicyBundle; product: string; tooling: string; space: DesignSpaceRanges } {
  const { bundle } = loadPolicyBundle(loaded.policyDir, { site: loaded.config });
  const product = choice.product ?? loaded.config.tenants.find((t) => t.id === tenant)?.products[0];
  const tooling = choice.tooling ?? loaded.config.products.find((p) => p.id === product)?.tooling[0];
  if (!product || !tooling) throw new LkError('LK_VALIDATION', `tenant ${tenant}: no product or tooling to take the design space from`, { tenant });
  const space = twinDesignSpace(byRole(bundle.designSpace.approved(product, tooling).setpoints, roleMapOf(loaded.config)), `${product} × ${tooling}`);
  return { bundle, product, tooling, space };
}
