/**
 * The registry as the guarded writer asks it at call time: the two injected
 * functions of `GuardedWriterOptions` (`twin`, `models`), backed by the store
 * and the artefact files. Nothing is cached: a promotion or a retirement made
 * by the CLI (another process, WAL) is in force at the daemon's next decision,
 * and the twin's artefact is hash-checked at every load.
 *
 *   new GuardedWriter({ ..., ...registrySources(store, dataDir, site.id) })
 */
import type { Store } from '../store/store.js';
import type { TwinModel } from '../twin/simulate.js';
import { twinModelOf } from './artefacts.js';
import { heldByAnotherTenant, loadValidated, modelStatus, checkId, checkTenant, type ModelStatusView } from './registry.js';

export interface RegistrySources {
  /** The tenant's newest validated process twin pinned to the site; throws LK_MODEL_* (missing, not validated, not pinned, corrupt). */
  readonly twin: (tenant: string) => TwinModel & { readonly sha256: string };
  /**
   * The registry's view of a model id for a tenant: the tenant's own; else, when only another tenant has that
   * id, a view carrying that other tenant (the writer records no more than "another tenant's", R9); else null.
   */
  readonly models: (tenant: string, id: string) => ModelStatusView | null;
}

/** The writer's registry look-ups for `site`. Never caches (see the module header). */
export function registrySources(store: Pick<Store, 'db'>, dataDir: string, site: string): RegistrySources {
  return {
    twin: (tenant) => {
      const loaded = loadValidated(store, dataDir, tenant, site, 'process', 'twin');
      return { ...twinModelOf(loaded), sha256: loaded.model.sha256 };
    },
    models: (tenant, id) => {
      try {
        checkTenant(tenant);
        checkId(id);
      } catch {
        return null; // a malformed id names no model: MODEL_MISSING
      }
      const own = modelStatus(store, tenant, id);
      if (own) return own;
      return heldByAnotherTenant(store.db, tenant, id) ? { tenant: '(another tenant)', id, analyte: '', family: '', version: 0, kind: 'twin', status: 'draft', sites: [], sha256: '' } : null;
    },
  };
}
