/**
 * Models for tests: a twin fitted to a simulated plant (what the guarded writer predicts capping with), the
 * registry's status view of it, and a validated twin in a real registry (registered, then promoted draft →
 * shadow → validated through the golden gate, as a person would). Fitting takes about a second, so each
 * result is kept for the test file.
 */
import { createRng } from '../../src/clock.js';
import { changeStatus } from '../../src/models/change.js';
import { registerModel, type ModelStatusView, type ModelSummary } from '../../src/models/registry.js';
import { buildTwin, type Candidate } from '../../src/models/seed.js';
import type { Store } from '../../src/store/store.js';
import { recordBatches } from '../../connectors/sim/ground/batches.js';
import { fitTwin } from '../../src/twin/fit.js';
import { DEFAULT_DESIGN_SPACE, widen } from '../../src/twin/setpoints.js';
import type { TwinModel } from '../../src/twin/simulate.js';
import { perturbParams } from '../../connectors/sim/ground/truth.js';
import { NOMINAL_PARAMS } from '../../src/twin/params.js';

export const SITE = 'site-ravenna';
/** The person and role the tests promote models as (a role in the shipped bundle's approvers.change). */
export const QA = { by: 'q.russo', role: 'qa_reviewer' } as const;
export const APPROVERS = ['qa_reviewer'] as const;

const fitted = new Map<number, TwinModel>();

/** `process-twin-v1` fitted to 16 batches of the simulated plant of `seed` (the test simulator runs seed 1). */
export function plantTwin(seed: number): TwinModel {
  let t = fitted.get(seed);
  if (!t) {
    const fit = fitTwin(recordBatches(perturbParams(NOMINAL_PARAMS, seed), widen(DEFAULT_DESIGN_SPACE, 0.1), 16, createRng(seed), 'T'), { tenant: 'acme-pharma', seed });
    t = { id: 'process-twin-v1', version: 1, params: fit.params, validRanges: fit.card.validRanges };
    fitted.set(seed, t);
  }
  return t;
}

/** A registry status view (what `models(tenant, id)` answers), validated and pinned to the site unless overridden. */
export function view(over: Partial<ModelStatusView> = {}): ModelStatusView {
  return { tenant: 'acme-pharma', id: 'process-twin-v1', analyte: 'process', family: 'twin', version: 1, kind: 'twin', status: 'validated', sites: [SITE], sha256: 'a'.repeat(64), ...over };
}

/** An in-memory registry of views, keyed `<tenant>/<id>`: the writer's `models` option for tests. */
export function viewsOf(...views: ModelStatusView[]): (tenant: string, id: string) => ModelStatusView | null {
  const own = new Map(views.map((v) => [`${v.tenant}/${v.id}`, v]));
  return (tenant, id) => own.get(`${tenant}/${id}`) ?? views.find((v) => v.id === id) ?? null;
}

let golden: Candidate | undefined;

/** The default twin of the golden plant (seed 20261121), fitted once per test file. */
export function goldenPlantTwin(): Candidate {
  golden ??= buildTwin('acme-pharma', 20261121);
  return golden;
}

/** Register the golden-plant twin for `tenant` as a draft and, unless `to` says otherwise, promote it to validated. */
export function registeredTwin(store: Store, dataDir: string, tenant = 'acme-pharma', to: 'draft' | 'shadow' | 'validated' = 'validated'): ModelSummary {
  const c = goldenPlantTwin();
  let m = registerModel(store, dataDir, { ...c, card: { ...c.card, tenant }, tenant, sites: [SITE], by: QA.by });
  for (const step of ['shadow', 'validated'] as const) {
    if (to === 'draft' || (to === 'shadow' && step === 'validated')) break;
    m = changeStatus(store, dataDir, { tenant, id: m.id, to: step, ...QA, changeRef: 'CC-2026-0300', reason: `test: ${step}` }, { approvers: APPROVERS }).model;
  }
  return m;
}
