/**
 * The demo site's models: at first start (the daemon calls this), a tenant
 * without models gets the default ones, fitted on simulator data and taken
 * draft → shadow → validated through the same change-controlled, gated
 * promotions a person makes with `linekeeper models promote` — recorded as
 * the demo site's change event (change reference DEMO-SETUP, actor
 * `site-setup`), so the trail says plainly that no person approved them.
 *
 * Idempotent and resumable, per tenant and model family: a family the tenant
 * has no model of is seeded; a draft or shadow version the set-up itself
 * registered (and nobody changed since) is taken on to validated; anything
 * else — a family with a validated, retired or person-registered model — is
 * left alone. A crash between two promotions is finished at the next start.
 */
import type { Store } from '../store/store.js';
import { changeStatus } from './change.js';
import { demoSigner, planDemoTenant, type DemoOptions } from './demo-plan.js';
import { registerModel, type ModelSummary } from './registry.js';
import { buildDefaultModels } from './seed.js';

export { DEMO_CHANGE_REF, demoModelsPending, type DemoOptions } from './demo-plan.js';

export interface DemoResult {
  readonly tenant: string;
  /** Model ids registered now. */
  readonly registered: readonly string[];
  /** Model ids promoted to validated now. */
  readonly validated: readonly string[];
}

/**
 * Seed and validate the default models of every tenant that lacks them (see the module header).
 * @throws LkError from the registry and the promotions: LK_MODEL_GATE_FAILED when a default model does not pass
 *   its golden gate (it then stays a draft or shadow and the next call retries), LK_MODEL_CHANGE when no role may
 *   approve a model change, LK_VALIDATION for bad ids.
 */
export function ensureDemoModels(store: Store, dataDir: string, opts: DemoOptions): DemoResult[] {
  const { by, changeRef, role } = demoSigner(opts);
  const out: DemoResult[] = [];
  for (const tenant of opts.tenants) {
    const plan = planDemoTenant(store, tenant, { by, changeRef });
    const registered: ModelSummary[] = [];
    if (plan.missing.length > 0) {
      for (const c of buildDefaultModels(tenant, opts.seed ?? 20261121, plan.missing, opts.designSpace?.(tenant))) {
        registered.push(registerModel(store, dataDir, { ...c, tenant, sites: [opts.site], by, reason: `demo site set-up (${changeRef}): default model fitted on simulator data` }));
      }
    }
    // the set-up's own drafts and shadows, untouched by anyone since, of families with nothing validated or retired
    const resumable = [...registered, ...plan.resumable];
    const validated: string[] = [];
    for (const m of resumable) {
      let status = m.status;
      for (const to of ['shadow', 'validated'] as const) {
        if (status === 'validated' || (to === 'validated' && status !== 'shadow') || (to === 'shadow' && status !== 'draft')) continue;
        const reason = to === 'shadow' ? 'demo site set-up: default model passed its golden-dataset evaluation; shadow' : 'demo site set-up: default model passed its golden-dataset evaluation; validated for the demo site (replace with site-validated models)';
        status = changeStatus(store, dataDir, { tenant, id: m.id, to, by, role, changeRef, reason }, { approvers: opts.approvers, ...(opts.goldenDir ? { goldenDir: opts.goldenDir } : {}) }).to;
      }
      if (status === 'validated') validated.push(m.id);
    }
    out.push({ tenant, registered: registered.map((m) => m.id), validated });
  }
  return out;
}
