/**
 * The run engine's access to the tenant's models: the latest validated, site-pinned version of each family,
 * loaded at every call with its artefact hash checked, so a model that went missing, corrupt, unvalidated or
 * retired since the last call throws its typed LkError (LK_MODEL_*) — which the engine treats as lost (R8).
 */
import { nirModelOf, twinModelOf, visionModelOf } from '../../models/artefacts.js';
import { loadLatest } from '../../models/registry.js';
import type { ModelAccess } from './types.js';

export function registryModels(dataDir: string, site: string): ModelAccess {
  return {
    twin(tenant) {
      const m = twinModelOf(loadLatest(dataDir, 'process', 'twin', { tenant, site }));
      return { ref: { id: m.id, version: m.version }, model: m };
    },
    potency(tenant) {
      const m = nirModelOf(loadLatest(dataDir, 'potency', 'pls', { tenant, site }));
      return { ref: { id: m.id, version: m.version }, model: m, rmsepPct: m.artefact.rmsep };
    },
    defects(tenant) {
      const loaded = loadLatest(dataDir, 'defects', 'softmax', { tenant, site });
      return { ref: { id: loaded.manifest.id, version: loaded.manifest.version }, model: visionModelOf(loaded) };
    },
  };
}
