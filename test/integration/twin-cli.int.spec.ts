import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli as cli, spawnCli as spawnWithInput } from '../helpers/cli.js';
import { Identity } from '../../src/api/identity.js';
import { loadConfig } from '../../src/config/load.js';
import { changeStatus } from '../../src/models/change.js';
import type { ModelSummary } from '../../src/models/registry.js';
import { loadPolicyBundle } from '../../src/config/policy-bundle.js';
import { openStore } from '../../src/store/store.js';
import type { SimulationResult } from '../../src/twin/simulate.js';
import { addUser } from '../helpers/users.js';
import { LINEKEEPER_BIN } from '../helpers/bin.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
let data: string;

/** Run the real binary in a child process (start-up of the whole CLI included). */
function spawnCli(...args: string[]): { code: number | null; out: string; err: string } {
  const r = spawnSync(process.execPath, [...LINEKEEPER_BIN, ...args], { cwd: root, encoding: 'utf8', timeout: 150_000 }); // hang guard: a CLI start took 20–90 s on a loaded 2-core box
  return { code: r.status, out: r.stdout, err: r.stderr };
}


const IDS = ['defects-softmax-v1', 'potency-pls-v1', 'process-twin-v1'];
const PASSWORD = 'a process engineer password';
let seeded: ModelSummary[];

beforeAll(async () => {
  data = mkdtempSync(join(tmpdir(), 'lk-twin-cli-'));
  // the registrant is a local user whose password the CLI checks: no name is taken on trust
  const store = openStore({ dataDir: data });
  try {
    await addUser(new Identity({ store, clock: store.clock, scryptLog2N: 10 }), { id: 'p.verdi', name: 'Piero Verdi', role: 'process_engineer', tenants: ['acme-pharma'], password: PASSWORD }, 'system', 'test user');
  } finally {
    store.close();
  }
  const r = await spawnWithInput(['models', 'seed', '--tenant', 'acme-pharma', '--data', data, '--as', 'p.verdi'], { input: `${PASSWORD}\n` });
  expect(r.code, r.err).toBe(0);
  seeded = JSON.parse((await cli('models', 'list', '--data', data, '--json')).out) as ModelSummary[];
  // promotions go through the daemon (api-models, cli-identity); here the registry's own change control suffices
  const loaded = loadConfig(undefined, { dataDir: data });
  const s = openStore({ dataDir: data });
  try {
    const { approvers } = loadPolicyBundle(loaded.policyDir, { site: loaded.config }).bundle.content;
    for (const id of IDS) {
      for (const to of ['shadow', 'validated'] as const) {
        changeStatus(s, data, { tenant: 'acme-pharma', id, to, by: 'q.russo', role: 'qa_reviewer', changeRef: 'CC-2026-0310', reason: 'golden evaluation passed' }, { approvers: approvers.change });
      }
    }
  } finally {
    s.close();
  }
}, 300_000);
afterAll(() => rmSync(data, { recursive: true, force: true }));

describe('linekeeper models / twin simulate (real files, real process)', () => {
  it('seeds drafts; promoted under change control they are validated; lists the tenant’s models only', async () => {
    expect(seeded.map((m) => [m.id, m.status]).sort()).toEqual(IDS.map((id) => [id, 'draft']));
    const all = JSON.parse((await cli('models', 'list', '--data', data, '--json')).out) as ModelSummary[];
    expect(all.map((m) => m.id).sort()).toEqual(['defects-softmax-v1', 'potency-pls-v1', 'process-twin-v1']);
    for (const m of all) {
      expect(m.status).toBe('validated');
      expect(m.sites).toEqual(['site-ravenna']);
      expect(m.card.tenant).toBe('acme-pharma');
    }
    const pls = all.find((m) => m.kind === 'nir-pls')!;
    expect(pls.card.metrics['rmsep']).toBeLessThan(1.5);
    const twin = all.find((m) => m.kind === 'twin')!;
    expect(twin.card.metrics['rmsep.cappingPct']).toBeGreaterThan(0);
    expect(JSON.parse((await cli('models', 'list', '--data', data, '--tenant', 'borealis-bio', '--json')).out)).toEqual([]);
    expect((await cli('models', 'list', '--data', data)).out).toMatch(/acme-pharma {2}process-twin-v1 {2}validated/);
  });

  it('rehearses deterministically (the real binary and in-process agree) and prints ranked and discarded candidates', async () => {
    const args = ['twin', 'simulate', '--candidates', '200', '--horizon', 'full batch', '--seed', '5', '--data', data, '--json'];
    const a = spawnCli(...args);
    expect(a.code, a.err).toBe(0);
    const r = JSON.parse(a.out) as SimulationResult;
    expect(r.model).toEqual({ id: 'process-twin-v1', version: 1 });
    expect(r.ranked.length + r.discarded.length).toBe(200);
    expect(r.discarded.some((d) => d.reasons[0]!.code === 'capping_risk')).toBe(true);
    expect(r.ranked[0]!.setpoints['press.MainForce'].unit).toBe('kN');
    expect((await cli(...args)).out).toBe(a.out);
    const text = await cli('twin', 'simulate', '--candidates', '50', '--horizon', 'full batch', '--data', data, '--top', '2');
    expect(text.out).toMatch(/ranked \(best first\):\n {2}#1 /);
    expect(text.out).toMatch(/\[capping_risk\] predicted capping/);
  });

  it('draws candidates from the approved design space of the tenant\'s product and uses the bundle\'s capping threshold', async () => {
    const { loadPolicyBundle } = await import('../../src/config/policy-bundle.js');
    const { loadConfig } = await import('../../src/config/load.js');
    const loaded = loadConfig();
    const limits = loadPolicyBundle(loaded.policyDir, { site: loaded.config }).bundle.designSpace.approved('ir-family-a', 'round-10mm-ff').setpoints;
    const r = JSON.parse((await cli('twin', 'simulate', '--candidates', '300', '--data', data, '--json')).out) as SimulationResult;
    expect(r.cappingThresholdPct).toBeCloseTo(1.5, 10);
    const all = [...r.ranked, ...r.discarded];
    expect(all.length).toBe(300);
    for (const c of all) {
      for (const [id, v] of Object.entries(c.setpoints)) {
        const l = limits[id]!;
        expect(v.value, id).toBeGreaterThanOrEqual(l.min);
        expect(v.value, id).toBeLessThanOrEqual(l.max);
      }
    }
    // the seeded twin was fitted over that space, so nothing is discarded as an extrapolation
    expect(r.discarded.filter((d) => d.reasons.some((x) => x.code === 'outside_valid_range'))).toEqual([]);
  });

  it('fails with a typed error when the tenant has no model, or the request is bad', async () => {
    const r = await cli('twin', 'simulate', '--candidates', '10', '--data', data, '--tenant', 'borealis-bio');
    expect(r.code).toBe(1);
    expect(r.err).toMatch(/\[LK_MODEL_MISSING\]/);
    const bad = await cli('twin', 'simulate', '--candidates', '10', '--horizon', 'forever', '--data', data);
    expect(bad.code).toBe(2);
    expect(bad.err).toMatch(/\[LK_VALIDATION\]/);
    const unknown = await cli('models', 'seed', '--tenant', 'nobody', '--data', data, '--as', 'p.verdi');
    expect(unknown.err).toMatch(/\[LK_VALIDATION\]/);
  });

  it('models seed names a local user whose password is checked; promote/retire take no --by or --role and go through the daemon', async () => {
    const without = await cli('models', 'seed', '--tenant', 'acme-pharma', '--data', data);
    expect(without.code).toBe(2);
    const wrong = await spawnWithInput(['models', 'seed', '--tenant', 'acme-pharma', '--data', data, '--as', 'p.verdi'], { input: 'not the password\n' });
    expect(wrong.code).toBe(1);
    expect(wrong.err).toMatch(/\[LK_REAUTH_FAILED\]/);
    const onTrust = await cli('models', 'retire', 'defects-softmax-v1', '--tenant', 'acme-pharma', '--by', 'q.russo', '--role', 'qa_reviewer', '--change-ref', 'CC-2026-0310', '--reason', 'x');
    expect(onTrust.code).toBe(2);
    const help = (await cli('models', 'promote', '--help')).out;
    expect(help).not.toMatch(/on trust/);
    expect(help).toMatch(/signed-in person/);
  });
});
