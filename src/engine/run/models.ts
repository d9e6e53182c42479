/**
 * The run engine's access to the tenant's models: the latest validated, site-pinned version of each family
 * from the one registry in the store, loaded at every call with its artefact hash checked, so a model that
 * went missing, corrupt, unvalidated or retired since the last call throws its typed LkError (LK_MODEL_*) —
 * which the engine treats as a lost model (R8).
 */
import { nirModelOf, twinModelOf, visionModelOf } from '../../models/artefacts.js';
import { TWIN_FIDELITY } from '../../models/golden.js';
import { loadValidated } from '../../models/registry.js';
import type { Store } from '../../store/store.js';
import type { ModelAccess } from './types.js';

export function registryModels(store: Pick<Store, 'db'>, dataDir: string, site: string): ModelAccess {
  return {
    twin(tenant) {
      const loaded = loadValidated(store, dataDir, tenant, site, 'process', 'twin');
      const m = twinModelOf(loaded);
      // the card's run-time acceptance against the plant (R8); a card without one is judged by the site's
      const card = loaded.model.card.fidelity;
      return { ref: { id: m.id, version: m.version }, model: m, fidelity: card ? { from: 'card', acceptance: card } : { from: 'site', acceptance: TWIN_FIDELITY } };
    },
    potency(tenant) {
      const m = nirModelOf(loadValidated(store, dataDir, tenant, site, 'potency', 'pls'));
      return { ref: { id: m.id, version: m.version }, model: m, rmsepPct: m.artefact.rmsep };
    },
    defects(tenant) {
      const loaded = loadValidated(store, dataDir, tenant, site, 'defects', 'softmax');
      return { ref: { id: loaded.model.id, version: loaded.model.version }, model: visionModelOf(loaded) };
    },
  };
}
