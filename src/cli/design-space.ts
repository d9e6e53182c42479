import type { LoadedConfig } from '../config/load.js';
import { LkError } from '../errors.js';
import { loadPolicyBundle, type PolicyBundle } from '../policy/index.js';
import { twinDesignSpace } from '../twin/design-space.js';
import type { DesignSpaceRanges } from '../twin/setpoints.js';

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
  const space = twinDesignSpace(bundle.designSpace.approved(product, tooling).setpoints, `${product} × ${tooling}`);
  return { bundle, product, tooling, space };
}
