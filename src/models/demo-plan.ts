/**
 * What the demo site's model set-up (demo.ts) has left to do, found without loading what fits the models: the
 * daemon asks at every start of the embedded default and loads the fitting only when a tenant lacks a default model
 * family or has a draft or shadow the set-up registered and may still take on. The rules are demo.ts's, in one place.
 */
import { LkError } from '../errors.js';
import type { Store } from '../store/store.js';
import type { DesignSpaceRanges } from '../twin/setpoints.js';
import { listModels, type ModelSummary } from './registry.js';

/** The default model families of a tenant, by analyte and family. */
export const DEFAULT_FAMILIES = ['process-twin', 'potency-pls', 'defects-softmax'] as const;
export type DefaultFamily = (typeof DEFAULT_FAMILIES)[number];

export const DEMO_CHANGE_REF = 'DEMO-SETUP';

export interface DemoOptions {
  /** Site id the models are pinned to. */
  readonly site: string;
  readonly tenants: readonly string[];
  /** Who the set-up acts as (default `site-setup`): recorded as actor and signer. */
  readonly by?: string;
  /** Roles the bundle permits for a model change (`approvers.change`); the set-up signs in the first unless `role` says. */
  readonly approvers: readonly string[];
  readonly role?: string;
  /** Change reference of the set-up (default DEMO-SETUP). */
  readonly changeRef?: string;
  /** Simulator seed the models are fitted to (default 20261121, the default site's). */
  readonly seed?: number;
  /** The tenant's approved design space for its twin (default: the built-in one). */
  readonly designSpace?: (tenant: string) => Readonly<DesignSpaceRanges> | undefined;
  /** Golden datasets (default config/golden). */
  readonly goldenDir?: string;
}

/** Who the set-up acts as, its change reference and the role it signs in. */
export interface DemoSigner {
  readonly by: string;
  readonly changeRef: string;
  readonly role: string;
}

/**
 * The set-up's signer.
 * @throws LkError LK_MODEL_CHANGE when the bundle permits no role the set-up could sign a model change in.
 */
export function demoSigner(opts: DemoOptions): DemoSigner {
  const by = opts.by ?? 'site-setup';
  const changeRef = opts.changeRef ?? DEMO_CHANGE_REF;
  const role = opts.role ?? opts.approvers[0] ?? '';
  // refuse before fitting anything: without a permitted role no draft could be taken further
  if (!opts.approvers.includes(role)) throw new LkError('LK_MODEL_CHANGE', `the demo set-up cannot sign model changes as "${role}" (bundle approvers.change: ${opts.approvers.join(', ') || 'none'})`, { role });
  return { by, changeRef, role };
}

/** One tenant's part of the set-up as its models stand now. */
export interface DemoTenantPlan {
  /** Families the tenant has no model of: to be fitted and registered. */
  readonly missing: readonly DefaultFamily[];
  /** The set-up's own drafts and shadows, untouched by anyone since, of families with nothing validated or retired. */
  readonly resumable: readonly ModelSummary[];
}

export function planDemoTenant(store: Store, tenant: string, signer: Pick<DemoSigner, 'by' | 'changeRef'>): DemoTenantPlan {
  const { by, changeRef } = signer;
  const have = listModels(store, tenant);
  const ours = (f: DefaultFamily): ModelSummary[] => have.filter((m) => `${m.analyte}-${m.family}` === f);
  const missing = DEFAULT_FAMILIES.filter((f) => ours(f).length === 0);
  const resumable = DEFAULT_FAMILIES.flatMap((f) => {
    const ms = ours(f);
    if (ms.some((m) => m.status === 'validated' || m.status === 'retired')) return [];
    return ms.filter((m) => m.createdBy === by && m.changedBy === by && (m.changeRef === null || m.changeRef === changeRef));
  });
  return { missing, resumable };
}

/**
 * Whether `ensureDemoModels` would register or promote anything now (false: every tenant's set-up is done).
 * @throws LkError LK_MODEL_CHANGE as {@link demoSigner}, as `ensureDemoModels` does.
 */
export function demoModelsPending(store: Store, opts: DemoOptions): boolean {
  const signer = demoSigner(opts);
  return opts.tenants.some((t) => {
    const p = planDemoTenant(store, t, signer);
    return p.missing.length > 0 || p.resumable.length > 0;
  });
}
