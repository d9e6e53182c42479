/**
 * The golden datasets (config/golden) and the demo site's models: the
 * committed files are exactly what the seeded generators give, and
 * `ensureDemoModels` takes each tenant's default models draft → shadow →
 * validated through the same gated, signed promotions a person makes —
 * idempotent, and resumable after a crash between two steps.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadSitePublicKey, queryAudit, verifyStore } from '../../src/audit/index.js';
import { verifyModelChange } from '../../src/models/change.js';
import { DEMO_CHANGE_REF, ensureDemoModels, type DemoResult } from '../../src/models/demo.js';
import { buildGoldenDatasets, defaultGoldenDir, GOLDEN_FILES, goldenText } from '../../src/models/golden-data.js';
import { listModels, loadValidated, MODEL_KINDS, registerModel } from '../../src/models/registry.js';
import { buildDefaultModels, trainDefaultVision, trainedVisionFile } from '../../src/models/seed.js';
import { type Store, openStore } from '../../src/store/store.js';
import { APPROVERS, SITE } from '../helpers/models.js';

const TENANTS = ['acme-pharma', 'borealis-bio'];
const dirs: string[] = [];
const fresh = (): { dir: string; store: Store } => {
  const dir = mkdtempSync(join(tmpdir(), 'lk-demo-'));
  dirs.push(dir);
  return { dir, store: openStore({ dataDir: dir }) };
};
const stores: Store[] = [];
afterAll(() => {
  for (const s of stores) s.close();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

describe('golden datasets', () => {
  it('are exactly what the generators give from their fixed seeds, and small (< 1 MB together)', () => {
    const built = buildGoldenDatasets();
    let total = 0;
    for (const kind of MODEL_KINDS) {
      const committed = readFileSync(join(defaultGoldenDir(), GOLDEN_FILES[kind]), 'utf8');
      expect(committed, GOLDEN_FILES[kind]).toBe(goldenText(built[kind]));
      total += Buffer.byteLength(committed);
    }
    expect(total).toBeLessThan(1_000_000);
    expect(built.twin.batches).toHaveLength(10);
    expect(built['nir-pls'].samples).toHaveLength(40);
    expect(built['vision-softmax'].sets).toHaveLength(140);
  });

  it('the committed default classifier is what training from its seed gives, and its card shows those held-out figures (≥ 0.95 per class)', () => {
    const committed = readFileSync(trainedVisionFile(20261121), 'utf8');
    const trained = trainDefaultVision(20261121);
    expect(committed).toBe(`${JSON.stringify(trained, null, 1)}\n`);
    const [vision] = buildDefaultModels('acme-pharma', 20261121, ['defects-softmax']);
    expect(vision!.artefact).toEqual(trained.artefact);
    expect(vision!.card.metrics).toEqual(trained.metrics);
    for (const [k, v] of Object.entries(trained.metrics)) if (k.startsWith('precision.') || k.startsWith('recall.')) expect(v, k).toBeGreaterThanOrEqual(0.95);
  }, 180_000);
});

describe('ensureDemoModels', () => {
  let dir: string;
  let store: Store;
  let first: DemoResult[];

  beforeAll(() => {
    ({ dir, store } = fresh());
    stores.push(store);
    first = ensureDemoModels(store, dir, { site: SITE, tenants: TENANTS, approvers: APPROVERS });
  });

  it('seeds and validates the three default models of every tenant, pinned to the site', () => {
    expect(first).toEqual(TENANTS.map((tenant) => ({ tenant, registered: ['process-twin-v1', 'potency-pls-v1', 'defects-softmax-v1'], validated: ['process-twin-v1', 'potency-pls-v1', 'defects-softmax-v1'] })));
    for (const tenant of TENANTS) {
      const ms = listModels(store, tenant);
      expect(ms.map((m) => [m.id, m.status, m.sites])).toEqual(expect.arrayContaining([['process-twin-v1', 'validated', [SITE]], ['potency-pls-v1', 'validated', [SITE]], ['defects-softmax-v1', 'validated', [SITE]]]));
      expect(ms.every((m) => m.card.tenant === tenant && m.changeRef === DEMO_CHANGE_REF)).toBe(true);
      expect(loadValidated(store, dir, tenant, SITE, 'process', 'twin').model.id).toBe('process-twin-v1');
    }
  });

  it('records each step as the demo site’s signed change event with its golden evaluation', () => {
    const key = loadSitePublicKey(dir);
    const entries = queryAudit(store.db, 'acme-pharma', { kind: 'model_change' }, { limit: 100 }).entries;
    expect(entries.map((e) => e.action)).toEqual(['model.register', 'model.register', 'model.register', ...Array(6).fill('model.promote')]);
    const promotions = entries.filter((e) => e.action === 'model.promote');
    for (const e of promotions) {
      expect(e.actor).toBe('site-setup');
      expect(e.args).toMatchObject({ change_ref: 'DEMO-SETUP', evaluation: { passed: true } });
      expect(verifyModelChange(e, key)).toBe(true);
    }
    const evalOf = (id: string) => (promotions.find((e) => (e.args as { id: string }).id === id && e.new === 'validated')!.args as { evaluation: { metrics: Record<string, number> } }).evaluation.metrics;
    expect(evalOf('potency-pls-v1')['rmsep']).toBeLessThanOrEqual(2);
    expect(evalOf('defects-softmax-v1')['recall.min']).toBeGreaterThanOrEqual(0.85);
    expect(evalOf('process-twin-v1')['rmsep.cappingPct']).toBeLessThanOrEqual(0.5);
    expect(verifyStore(store).ok).toBe(true);
  });

  it('is idempotent: a second call registers, promotes and audits nothing', () => {
    const heads = TENANTS.map((t) => store.audit.head(t).seq);
    expect(ensureDemoModels(store, dir, { site: SITE, tenants: TENANTS, approvers: APPROVERS })).toEqual(TENANTS.map((tenant) => ({ tenant, registered: [], validated: [] })));
    expect(TENANTS.map((t) => store.audit.head(t).seq)).toEqual(heads);
  });

  it('resumes after a crash between two steps, and leaves a family alone that a person looks after', () => {
    const { dir: d2, store: s2 } = fresh();
    stores.push(s2);
    // the set-up registered the twin and died; a person registered their own PLS draft meanwhile
    const [twin, pls] = buildDefaultModels('acme-pharma', 20261121, ['process-twin', 'potency-pls']);
    registerModel(s2, d2, { ...twin!, tenant: 'acme-pharma', sites: [SITE], by: 'site-setup' });
    registerModel(s2, d2, { ...pls!, tenant: 'acme-pharma', sites: [SITE], by: 'p.costa' });
    const r = ensureDemoModels(s2, d2, { site: SITE, tenants: ['acme-pharma'], approvers: APPROVERS });
    expect(r).toEqual([{ tenant: 'acme-pharma', registered: ['defects-softmax-v1'], validated: ['defects-softmax-v1', 'process-twin-v1'] }]);
    expect(listModels(s2, 'acme-pharma').find((m) => m.id === 'potency-pls-v1')).toMatchObject({ status: 'draft', createdBy: 'p.costa' });
    // without a role that may approve a model change the set-up cannot promote, and says so
    const { dir: d3, store: s3 } = fresh();
    stores.push(s3);
    let code: string | undefined;
    try {
      ensureDemoModels(s3, d3, { site: SITE, tenants: ['acme-pharma'], approvers: [] });
    } catch (e) {
      code = (e as { code?: string }).code;
    }
    expect(code).toBe('LK_MODEL_CHANGE');
  });
});
