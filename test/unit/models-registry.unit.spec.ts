import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { nirModelOf, twinModelOf, visionModelOf } from '../../src/models/artefacts.js';
import { listModels, loadLatest, loadModel, registerModel, updateModel, type RegisterInput } from '../../src/models/registry.js';
import type { ModelCard } from '../../src/twin/card.js';
import { DEFAULT_DESIGN_SPACE } from '../../src/twin/setpoints.js';
import { cloneParams, NOMINAL_PARAMS } from '../../src/twin/truth.js';
import { codeOf } from '../helpers/codes.js';

const AT = Date.UTC(2026, 0, 1);
const SITE = 'site-ravenna';
const card = (tenant: string): ModelCard => ({
  analyte: 'process',
  family: 'twin',
  intendedUse: 'test',
  tenant,
  trainingData: { summary: 'test', ids: ['T-001'], samples: 1 },
  metrics: { 'rmse.cappingPct': 0.1 },
  validRanges: {},
  limitations: [],
});
const twin = (tenant: string, over: Partial<RegisterInput> = {}): RegisterInput => ({
  tenant,
  analyte: 'process',
  family: 'twin',
  kind: 'twin',
  artefact: { kind: 'twin', params: cloneParams(NOMINAL_PARAMS), validRanges: DEFAULT_DESIGN_SPACE },
  card: card(tenant),
  sites: [SITE],
  status: 'validated',
  at: AT,
  by: 'qa.reviewer',
  ...over,
});

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'lk-models-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));


describe('model registry', () => {
  it('registers versions <analyte>-<family>-v<n> with the artefact hash, and loads them back', () => {
    const m1 = registerModel(dir, twin('acme-pharma'));
    const m2 = registerModel(dir, twin('acme-pharma'));
    expect([m1.id, m2.id]).toEqual(['process-twin-v1', 'process-twin-v2']);
    expect(m1.sha256).toMatch(/^[0-9a-f]{64}$/);
    const loaded = loadModel(dir, 'process-twin-v2', { tenant: 'acme-pharma', site: SITE });
    const t = twinModelOf(loaded);
    expect(t.version).toBe(2);
    expect(t.params.press.capForce).toBe(NOMINAL_PARAMS.press.capForce);
    expect(loadLatest(dir, 'process', 'twin', { tenant: 'acme-pharma', site: SITE }).manifest.id).toBe('process-twin-v2');
    expect(listModels(dir).map((m) => m.id)).toEqual(['process-twin-v2', 'process-twin-v1']);
  });

  it('never gives tenant A’s model to tenant B (R9): not loadable, not listed', () => {
    registerModel(dir, twin('acme-pharma'));
    expect(codeOf(() => loadModel(dir, 'process-twin-v1', { tenant: 'borealis-bio', site: SITE }))).toBe('LK_MODEL_TENANT');
    expect(listModels(dir, 'borealis-bio')).toEqual([]);
    expect(codeOf(() => loadLatest(dir, 'process', 'twin', { tenant: 'borealis-bio', site: SITE }))).toBe('LK_MODEL_MISSING');
    // B's own model with the same id is B's, and A still gets A's
    registerModel(dir, twin('borealis-bio', { artefact: { kind: 'twin', params: { ...cloneParams(NOMINAL_PARAMS), blend: { rsd0: 9, rsdInf: 1, kPerRev: 0.02 } }, validRanges: {} } }));
    expect(twinModelOf(loadModel(dir, 'process-twin-v1', { tenant: 'borealis-bio', site: SITE })).params.blend.rsd0).toBe(9);
    expect(twinModelOf(loadModel(dir, 'process-twin-v1', { tenant: 'acme-pharma', site: SITE })).params.blend.rsd0).toBe(NOMINAL_PARAMS.blend.rsd0);
    expect(listModels(dir, 'acme-pharma').every((m) => m.tenant === 'acme-pharma')).toBe(true);
    // a manifest copied into another tenant's folder is refused too
    const bDir = join(dir, 'models', 'borealis-bio', 'process-twin-v1', 'manifest.json');
    const aManifest = readFileSync(join(dir, 'models', 'acme-pharma', 'process-twin-v1', 'manifest.json'), 'utf8');
    writeFileSync(bDir, aManifest);
    expect(codeOf(() => loadModel(dir, 'process-twin-v1', { tenant: 'borealis-bio', site: SITE }))).toBe('LK_MODEL_TENANT');
    expect(codeOf(() => registerModel(dir, { ...twin('acme-pharma'), card: card('borealis-bio') }))).toBe('LK_VALIDATION');
  });

  it('gives typed errors for missing, corrupt, unvalidated, retired and unpinned models', () => {
    expect(codeOf(() => loadModel(dir, 'process-twin-v1', { tenant: 'acme-pharma', site: SITE }))).toBe('LK_MODEL_MISSING');
    registerModel(dir, twin('acme-pharma'));
    const art = join(dir, 'models', 'acme-pharma', 'process-twin-v1', 'artefact.json');
    const good = readFileSync(art, 'utf8');
    writeFileSync(art, good.replace('"capForce":0.25', '"capForce":0.15'));
    expect(codeOf(() => loadModel(dir, 'process-twin-v1', { tenant: 'acme-pharma', site: SITE }))).toBe('LK_MODEL_CORRUPT');
    writeFileSync(art, good);
    expect(codeOf(() => loadModel(dir, 'process-twin-v1', { tenant: 'acme-pharma', site: 'site-elsewhere' }))).toBe('LK_MODEL_NOT_PINNED');

    registerModel(dir, twin('acme-pharma', { status: 'draft' }));
    expect(codeOf(() => loadModel(dir, 'process-twin-v2', { tenant: 'acme-pharma', site: SITE }))).toBe('LK_MODEL_NOT_VALIDATED');
    expect(loadModel(dir, 'process-twin-v2', { tenant: 'acme-pharma', site: SITE, allowDraft: true }).manifest.status).toBe('draft');
    // the newest validated version is used, not the newer draft
    expect(loadLatest(dir, 'process', 'twin', { tenant: 'acme-pharma', site: SITE }).manifest.id).toBe('process-twin-v1');

    updateModel(dir, 'process-twin-v1', { tenant: 'acme-pharma', status: 'retired', at: AT + 1, by: 'qa.reviewer', reason: 'superseded' });
    expect(codeOf(() => loadModel(dir, 'process-twin-v1', { tenant: 'acme-pharma', site: SITE }))).toBe('LK_MODEL_NOT_VALIDATED');
    expect(codeOf(() => updateModel(dir, 'process-twin-v1', { tenant: 'acme-pharma', status: 'validated', at: AT + 2, by: 'x', reason: 'y' }))).toBe('LK_CONFLICT');
    const m = updateModel(dir, 'process-twin-v2', { tenant: 'acme-pharma', status: 'validated', sites: [SITE, 'site-b'], at: AT + 3, by: 'qa.reviewer', reason: 'PQ passed' });
    expect(m.statusHistory.map((h) => h.status)).toEqual(['draft', 'validated']);
    expect(loadModel(dir, 'process-twin-v2', { tenant: 'acme-pharma', site: 'site-b' }).manifest.sites).toEqual(['site-b', SITE]);

    writeFileSync(join(dir, 'models', 'acme-pharma', 'process-twin-v2', 'manifest.json'), '{ not json');
    expect(codeOf(() => loadModel(dir, 'process-twin-v2', { tenant: 'acme-pharma', site: SITE }))).toBe('LK_MODEL_CORRUPT');
  });

  it('refuses an artefact that does not have the shape of its kind', () => {
    registerModel(dir, twin('acme-pharma', { artefact: { kind: 'twin', params: { press: { capForce: 'high' } }, validRanges: {} } }));
    const loaded = loadModel(dir, 'process-twin-v1', { tenant: 'acme-pharma', site: SITE });
    expect(codeOf(() => twinModelOf(loaded))).toBe('LK_MODEL_CORRUPT');
    expect(codeOf(() => nirModelOf(loaded))).toBe('LK_MODEL_CORRUPT');
    expect(codeOf(() => visionModelOf(loaded))).toBe('LK_MODEL_CORRUPT');
  });

  it('refuses malformed ids and tenants', () => {
    expect(codeOf(() => loadModel(dir, '../etc-twin-v1', { tenant: 'acme-pharma', site: SITE }))).toBe('LK_VALIDATION');
    expect(codeOf(() => loadModel(dir, 'process-twin-v1', { tenant: '../acme', site: SITE }))).toBe('LK_VALIDATION');
    expect(codeOf(() => listModels(dir, 'Acme Pharma'))).toBe('LK_VALIDATION');
    expect(listModels(dir)).toEqual([]);
  });
});
