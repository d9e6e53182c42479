/**
 * `linekeeper replay` on a data directory built from the golden batch: the real CLI, a real SQLite store
 * opened read-only, the real model registry with a second twin version of the tenant and models of another.
 */
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { exportAgentCalls, loadReplayTwin, replayRun, type ExportedAgentCalls, type ReplayReport } from '../../src/engine/run/replay.js';
import { registerModel, type ModelSummary } from '../../src/models/registry.js';
import { DB_FILE, openStore } from '../../src/store/store.js';
import { perturbParams } from '../../connectors/sim/ground/truth.js';
import { runCli as cli } from '../helpers/cli.js';
import { codeOf } from '../helpers/codes.js';
import { buildGoldenDataDir, goldenTwin, goldenTwinInput, promoteToValidated } from '../helpers/golden.js';

const SITE = 'site-ravenna';
let data: string;
let golden: ExportedAgentCalls;
let pls: ModelSummary;

const dbHash = (): string => createHash('sha256').update(readFileSync(join(data, DB_FILE))).digest('hex');

beforeAll(() => {
  data = mkdtempSync(join(tmpdir(), 'lk-replay-'));
  // the golden run and its agent calls, and process-twin-v1 of acme-pharma, validated
  golden = buildGoldenDataDir(data);
  const store = openStore({ dataDir: data });
  try {
    // the candidate twin: a refit that came out different (a draft: replay is how it is judged)
    expect(registerModel(store, data, goldenTwinInput('acme-pharma', perturbParams(goldenTwin().params, 1))).id).toBe('process-twin-v2');
    // a twin of the tenant pinned to another site only
    expect(registerModel(store, data, { ...goldenTwinInput('acme-pharma'), sites: ['site-elsewhere'] }).id).toBe('process-twin-v3');
    // another tenant's twins, validated, up to a version acme-pharma does not have
    for (let i = 1; i <= 4; i++) {
      const m = registerModel(store, data, goldenTwinInput('borealis-bio'));
      expect(promoteToValidated(store, data, 'borealis-bio', m.id).status).toBe('validated');
    }
    // a model of the tenant, pinned to the site, that is not a twin
    pls = registerModel(store, data, {
      ...goldenTwinInput('acme-pharma'), analyte: 'potency', family: 'pls', kind: 'nir-pls', artefact: {}, card: { ...goldenTwinInput('acme-pharma').card, analyte: 'potency', family: 'pls' },
    });
  } finally {
    store.close();
  }
});
afterAll(() => rmSync(data, { recursive: true, force: true }));

describe('linekeeper replay (real store, real registry)', () => {
  it('[R11] replays the golden run byte-identically with its recorded models, and says so', async () => {
    const before = dbHash();
    const j = await cli('replay', golden.run.id, '--tenant', 'acme-pharma', '--data', data, '--json');
    expect(j.code, j.err).toBe(0);
    const r = JSON.parse(j.out) as ReplayReport;
    expect(r.run).toMatchObject({ id: golden.run.id, tenant: 'acme-pharma', batch: 'B-1042' });
    expect(r.summary).toMatchObject({ calls: golden.calls.length, identical: golden.calls.length, differing: 0, errors: 0, nondeterministic: 0 });
    const t = await cli('replay', golden.run.id, '--tenant', 'acme-pharma', '--data', data);
    expect(t.code, t.err).toBe(0);
    expect(t.out).toContain(`${golden.calls.length} agent calls replayed with the models it recorded: ${golden.calls.length} byte-identical, 0 differ`);
    expect(t.out).toMatch(/; deterministic\n$/);
    expect(t.out).not.toContain('NOT DETERMINISTIC');
    // read-only: not a byte of the database changed
    expect(dbHash()).toBe(before);
  });

  it('[R11] against the tenant\'s draft twin v2, prints the changed press moves with both values and their predictions', async () => {
    const j = await cli('replay', golden.run.id, '--tenant', 'acme-pharma', '--data', data, '--model', 'process-twin-v2@2', '--json');
    expect(j.code, j.err).toBe(0);
    const r = JSON.parse(j.out) as ReplayReport;
    expect(r.model).toBe('process-twin-v2@2');
    expect(r.summary.nondeterministic).toBe(0);
    const press = r.calls.filter((c) => c.fn === 'compress_fill.decide');
    expect(press.every((c) => c.replayModel === 'process-twin-v2@2' && c.recordedModel === 'process-twin-v1@1')).toBe(true);
    const moved = press.flatMap((c) => c.proposals).find((p) => p.change === 'value' || p.change === 'withdrawn' || p.change === 'proposed');
    expect(moved).toBeDefined();

    const t = await cli('replay', golden.run.id, '--tenant', 'acme-pharma', '--data', data, '--model', 'process-twin-v2@2');
    expect(t.code, t.err).toBe(0);
    expect(t.out).toContain(`${golden.run.id} (acme-pharma, batch B-1042, ir-family-a × round-10mm-ff, line-3) against process-twin-v2@2`);
    const fmtValue = (v: number | null): string => (v === null ? `no move (stays ${moved!.current} ${moved!.unit})` : `${v} ${moved!.unit}`);
    expect(t.out).toContain(`${moved!.setpoint.padEnd(24)} ${fmtValue(moved!.recorded)} → ${fmtValue(moved!.replayed)}  [`);
    expect(t.out).toMatch(/predicted, recorded +tabletWeightMg [\d.]+, hardnessN [\d.]+, cappingRiskPct/);
    expect(t.out).toMatch(/predicted, new +tabletWeightMg [\d.]+, hardnessN [\d.]+/);
    expect(t.out).toContain(`(${r.summary.substituted} with it): ${r.summary.identical} byte-identical, ${r.summary.differing} differ (${r.summary.movesChanged} with other moves`);
  });

  it('naming the recorded twin explicitly changes no byte: the substitution puts back exactly what the run used', async () => {
    const j = await cli('replay', golden.run.id, '--tenant', 'acme-pharma', '--data', data, '--model', 'process-twin-v1@1', '--json');
    expect(j.code, j.err).toBe(0);
    const r = JSON.parse(j.out) as ReplayReport;
    expect(r.summary.substituted).toBeGreaterThan(0);
    expect(r.summary.identical).toBe(golden.calls.length);
  });

  it('does not find an unknown run, nor the run under another tenant [R1]', async () => {
    for (const args of [['run_doesnotexist', '--tenant', 'acme-pharma'], [golden.run.id, '--tenant', 'borealis-bio']]) {
      const r = await cli('replay', ...args, '--data', data);
      expect(r.code).toBe(1);
      expect(r.err).toMatch(/\[LK_NOT_FOUND\]\n$/);
      expect(r.out).toBe('');
    }
  });

  it('refuses a malformed --model as a usage error, a model of another tenant [R9], a missing one, a non-twin and one not pinned to the site', async () => {
    for (const m of ['process-twin-v2', 'process-twin-v2@3', 'twin@2', 'process-twin-v2@x']) {
      const r = await cli('replay', golden.run.id, '--tenant', 'acme-pharma', '--data', data, '--model', m);
      expect([r.code, r.err.match(/\[(LK_\w+)\]/)?.[1]], m).toEqual([2, 'LK_VALIDATION']);
    }
    const foreign = await cli('replay', golden.run.id, '--tenant', 'acme-pharma', '--data', data, '--model', 'process-twin-v4@4');
    expect([foreign.code, foreign.err.match(/\[(LK_\w+)\]/)?.[1]]).toEqual([1, 'LK_MODEL_TENANT']);
    const missing = await cli('replay', golden.run.id, '--tenant', 'acme-pharma', '--data', data, '--model', 'process-twin-v9@9');
    expect(missing.err).toMatch(/\[LK_MODEL_MISSING\]/);
    const notTwin = await cli('replay', golden.run.id, '--tenant', 'acme-pharma', '--data', data, '--model', `${pls.id}@1`);
    expect([notTwin.code, notTwin.err.match(/\[(LK_\w+)\]/)?.[1]]).toEqual([2, 'LK_VALIDATION']);
    const elsewhere = await cli('replay', golden.run.id, '--tenant', 'acme-pharma', '--data', data, '--model', 'process-twin-v3@3');
    expect([elsewhere.code, elsewhere.err.match(/\[(LK_\w+)\]/)?.[1], elsewhere.out]).toEqual([1, 'LK_MODEL_NOT_PINNED', '']);
  });

  it('is listed in --help', async () => {
    expect((await cli('--help')).out).toMatch(/\n {2}replay \[options\] <run_id> /);
  });
});

describe('replayRun and exportAgentCalls on the store', () => {
  it('export gives back the golden batch byte for byte, and is tenant-scoped', () => {
    const s = openStore({ dataDir: data, readonly: true });
    try {
      expect(JSON.stringify(exportAgentCalls(s, 'acme-pharma', golden.run.id))).toBe(JSON.stringify(golden));
      expect(codeOf(() => exportAgentCalls(s, 'borealis-bio', golden.run.id))).toBe('LK_NOT_FOUND');
      expect(codeOf(() => replayRun(s, data, 'borealis-bio', golden.run.id, { site: SITE }))).toBe('LK_NOT_FOUND');
      // a model pinned elsewhere does not load here, draft or not
      expect(codeOf(() => replayRun(s, data, 'acme-pharma', golden.run.id, { site: 'site-elsewhere', model: { id: 'process-twin-v2', version: 2 } }))).toBe('LK_MODEL_NOT_PINNED');
    } finally {
      s.close();
    }
  });

  it('loads the draft candidate twin for replay with its own parameters, and the validated v1 as the run used it', () => {
    const s = openStore({ dataDir: data, readonly: true });
    try {
      const v2 = loadReplayTwin(s, data, 'acme-pharma', SITE, { id: 'process-twin-v2', version: 2 });
      expect(v2.version).toBe(2);
      expect(v2.params.press.heckelK).not.toBe(goldenTwin().params.press.heckelK);
      expect(loadReplayTwin(s, data, 'acme-pharma', SITE, { id: 'process-twin-v1', version: 1 })).toEqual(goldenTwin());
    } finally {
      s.close();
    }
  });
});
