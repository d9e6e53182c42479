/**
 * `linekeeper models fit --from FILE`: the process twin fitted on a site's own recorded batches, through the
 * real binary in a child process with a real data directory. The "site" is a plant of another seed than the
 * embedded default's (its own hidden parameters); its batches are written in the documented recorded-batches
 * format, as a historian and LIMS export would be. The model is registered as a draft pinned to the site, with
 * every third batch held out and the held-out residuals on its card; a file that does not fit the format is
 * refused naming the file and the field, before any password is asked, and nothing is registered.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { recordBatches } from '../../connectors/sim/ground/batches.js';
import { perturbParams } from '../../connectors/sim/ground/truth.js';
import { Identity } from '../../src/api/identity.js';
import { createRng } from '../../src/clock.js';
import { SITE_LIMITS } from '../../src/models/golden.js';
import { listModels } from '../../src/models/registry.js';
import { openStore } from '../../src/store/store.js';
import { NOMINAL_PARAMS } from '../../src/twin/params.js';
import { DEFAULT_DESIGN_SPACE } from '../../src/twin/setpoints.js';
import { runCli, spawnCli } from '../helpers/cli.js';
import { addUser } from '../helpers/users.js';

const PASSWORD = 'a process engineer password';
let dir: string;
let data: string;
let file: string;
let batches: ReturnType<typeof recordBatches>;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'lk-models-fit-'));
  data = join(dir, 'data');
  const store = openStore({ dataDir: data });
  try {
    await addUser(new Identity({ store, clock: store.clock, scryptLog2N: 10 }), { id: 'p.verdi', name: 'Piero Verdi', role: 'process_engineer', tenants: ['acme-pharma'], password: PASSWORD }, 'system', 'test user');
  } finally {
    store.close();
  }
  // the site's plant: another seed, so other hidden parameters than the simulator's default
  batches = recordBatches(perturbParams(NOMINAL_PARAMS, 4242), DEFAULT_DESIGN_SPACE, 9, createRng(99), 'SITE');
  file = join(dir, 'line3-2026Q3.json');
  writeFileSync(file, JSON.stringify({ format: 1, kind: 'recorded-batches', description: 'line 3, Q3 2026: historian (press, coater, fluid bed) and LIMS (dissolution) export', batches }));
}, 120_000);
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('linekeeper models fit --from (the site\'s own batches)', () => {
  it('registers a draft twin pinned to the site: two thirds fit it, every third batch by id is held out and measured on its card', async () => {
    const r = await spawnCli(['models', 'fit', '--tenant', 'acme-pharma', '--from', file, '--data', data, '--as', 'p.verdi', '--json'], { input: `${PASSWORD}\n` });
    expect(r.code, r.err).toBe(0);
    // stdout is the JSON document and nothing else (node-opcua's start-up warning, NODE-OPCUA-W27, shared it until
    // patches/ stopped that diagnostic)
    const out = JSON.parse(r.out) as { id: string; status: string; sites: string[]; trained: string[]; heldOut: string[] };
    const ids = batches.map((b) => b.id).sort();
    expect(out).toMatchObject({ id: 'process-twin-v1', status: 'draft', sites: ['site-ravenna'] });
    expect(out.heldOut).toEqual(ids.filter((_, k) => k % 3 === 2));
    expect(out.trained).toEqual(ids.filter((_, k) => k % 3 !== 2));
    const store = openStore({ dataDir: data, readonly: true });
    try {
      const [m] = listModels(store, 'acme-pharma');
      expect(m).toMatchObject({ id: 'process-twin-v1', status: 'draft' });
      const card = m!.card;
      expect(card.trainingData.ids).toEqual(out.trained);
      expect(card.trainingData.summary).toMatch(/^6 recorded batches of site \S+ from line3-2026Q3\.json \(sha256 [0-9a-f]{64}\): line 3, Q3 2026/);
      // the twin learned this plant: its held-out residuals are inside the site's acceptance criteria for the press
      for (const k of ['rmsep.tabletWeightMg', 'rmsep.hardnessN', 'rmsep.thicknessMm'] as const) {
        expect(card.metrics[k], k).toBeLessThanOrEqual(SITE_LIMITS.twin[k]!.max!);
      }
      expect(card.acceptance).toEqual(JSON.parse(JSON.stringify(SITE_LIMITS.twin)));
    } finally {
      store.close();
    }
  }, 180_000);

  it('a file that does not fit the format is refused naming the file and the field, before any password, and nothing is registered', async () => {
    const broken = join(dir, 'broken.json');
    const bad = structuredClone(batches) as unknown as { press: { hardnessN: unknown }[] }[];
    bad[3]!.press[0]!.hardnessN = 'hard';
    writeFileSync(broken, JSON.stringify({ format: 1, kind: 'recorded-batches', description: 'x', batches: bad }));
    const r = await runCli('models', 'fit', '--tenant', 'acme-pharma', '--from', broken, '--data', data, '--as', 'p.verdi');
    expect(r.code).toBe(2);
    expect(r.err).toContain('broken.json: batches.3.press.0.hardnessN:');
    expect(r.err).not.toMatch(/password/);
    const few = join(dir, 'few.json');
    writeFileSync(few, JSON.stringify({ format: 1, kind: 'recorded-batches', description: 'x', batches: batches.slice(0, 4) }));
    const f = await runCli('models', 'fit', '--tenant', 'acme-pharma', '--from', few, '--data', data, '--as', 'p.verdi');
    expect(f.code).toBe(2);
    expect(f.err).toContain('few.json: 4 batch(es); a site fit needs at least 6');
    const store = openStore({ dataDir: data, readonly: true });
    try {
      expect(listModels(store, 'acme-pharma').map((m) => m.id)).toEqual(['process-twin-v1']);
    } finally {
      store.close();
    }
  }, 120_000);
});
