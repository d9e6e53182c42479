/**
 * Safety inputs come from the guarded writer, never from the proposer: the
 * writer on the REAL model registry (store + artefact files, `registrySources`)
 * and the plant simulator of the default site (seed 20261121, the plant the
 * golden datasets and the default twin come from). It predicts the capping
 * risk of every press move from the tenant's validated twin, and checks the
 * model a proposal names against the registry at call time — so a proposer
 * that lies about capping, or names a draft, retired, other-tenant or
 * other-version model, moves nothing, and the audit entry says why.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createConnectors } from '../../connectors/index.js';
import type { Connector } from '../../connectors/types.js';
import { queryAudit, type AuditEntry } from '../../src/audit/index.js';
import { ManualClock } from '../../src/clock.js';
import type { CappingRisk, ModelRecord } from '../../src/domain/policy.js';
import { GuardedWriter, type WriteProposal } from '../../src/engine/guarded-writer.js';
import { changeStatus } from '../../src/models/change.js';
import { registrySources } from '../../src/models/sources.js';
import { type AutonomyState, type PolicyBundle, changeAutonomy, initialAutonomy } from '../../src/policy/index.js';
import { loadPolicyBundle } from '../../src/config/policy-bundle.js';
import { type Store, openStore } from '../../src/store/store.js';
import { APPROVERS, QA, registeredTwin } from '../helpers/models.js';
import { type Simulator, startTestSimulator } from '../helpers/sim.js';

const A = 'acme-pharma';
const B = 'borealis-bio';
const clock = new ManualClock(Date.UTC(2026, 10, 24, 8));
const later = (): number => clock.advance(10 * 60_000);
let sim: Simulator;
let store: Store;
let dataDir: string;
let connectors: Connector[];
let bundle: PolicyBundle;
let autonomy: AutonomyState;
let writer: GuardedWriter;
let twinSha: string;

let n = 0;
function proposal(over: Partial<WriteProposal> = {}): WriteProposal {
  return {
    id: `wm-${++n}`,
    tenant: A,
    batch: 'B-2026-1124',
    run: 'run_m0d3l',
    agent: 'agent.compress_fill',
    product: 'ir-family-a',
    tooling: 'round-10mm-ff',
    moves: [{ setpoint: 'press.MainForce', value: '11.5 kN' }],
    attribute: 'content_uniformity',
    justification: 'hardness on target with margin to capping',
    model: { id: 'process-twin-v1', version: '1' },
    ...over,
  };
}

const plant = (tag: string): unknown => sim.plant.read('press', tag);
/** The last policy decision entry on the tenant's chain for a setpoint (each propose() call audits its decisions before returning). */
const lastDecision = (setpoint = 'press.MainForce'): AuditEntry & { args: { context: { capping?: CappingRisk; modelRecord?: ModelRecord | null; [k: string]: unknown } }; result: { reasons: string[]; outcome: string } } =>
  queryAudit(store.db, A, { kind: 'policy_decision', run: 'run_m0d3l', setpoint }, { limit: 1000 }).entries.at(-1) as never;

beforeAll(async () => {
  sim = await startTestSimulator({ seed: 20261121, watchdogTimeoutMs: 600_000, scanMs: 20 });
  dataDir = mkdtempSync(join(tmpdir(), 'lk-wm-'));
  store = openStore({ dataDir, clock });
  const site = sim.config.config;
  bundle = loadPolicyBundle(sim.config.policyDir, { site }).bundle;
  // acme: v1 validated (the twin in force), v2 a draft, v3 retired; borealis: v1…v4 drafts (v4 is only borealis')
  twinSha = registeredTwin(store, dataDir, A, 'validated').sha256;
  registeredTwin(store, dataDir, A, 'draft');
  const v3 = registeredTwin(store, dataDir, A, 'draft');
  changeStatus(store, dataDir, { tenant: A, id: v3.id, to: 'retired', ...QA, changeRef: 'CC-2026-0303', reason: 'withdrawn' }, { approvers: APPROVERS });
  for (let i = 0; i < 4; i++) registeredTwin(store, dataDir, B, 'draft');
  connectors = createConnectors(site, { dataDir, sim: { opcuaUrl: sim.opcuaUrl, modbusHost: sim.modbusHost, modbusPort: sim.modbusPort } });
  await Promise.all(connectors.map((c) => c.connect()));
  autonomy = initialAutonomy(bundle);
  autonomy = changeAutonomy(autonomy, { target: { agent: 'agent.compress_fill' }, to: 'L3', by: { person: QA.by, role: QA.role }, changeRef: 'CC-2026-0304', at: clock.now() }, bundle).state;
  writer = new GuardedWriter({
    store,
    site,
    connectors,
    clock,
    policy: () => bundle,
    autonomy: () => autonomy,
    attendance: () => ({ operator: 'l.verdi', lastPresenceAt: clock.now() }),
    batches: () => ({ state: 'running', reviewer: 'a.bianchi' }),
    ...registrySources(store, dataDir, site.site.id),
  });
});

afterAll(async () => {
  await Promise.all((connectors ?? []).map((c) => c.close()));
  store?.close();
  await sim?.close();
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
});

describe('the writer computes the capping risk of every press move from the tenant’s validated twin', () => {
  it('[LIM-CAPPING] a move the twin predicts under the threshold is written; the decision entry shows the risk and the twin that predicted it', async () => {
    later();
    const out = await writer.propose(proposal());
    expect(out.status, JSON.stringify(out.decisions.map((d) => d.reasons))).toBe('written');
    expect(plant('MainForce')).toBe(11.5);
    const d = lastDecision();
    expect(d.result.outcome).toBe('allow');
    expect(d.args.context.capping).toMatchObject({ model: { id: 'process-twin-v1', version: '1', sha256: twinSha }, press: { 'press.MainForce': 11.5, 'press.PreForce': 2.5, 'press.TurretSpeed': 40 } });
    expect(d.args.context.capping!.risk).toBeGreaterThan(0.005);
    expect(d.args.context.capping!.risk).toBeLessThan(0.015);
    expect(d.args.context.modelRecord).toEqual({ owner: 'own', family: 'process-twin', version: 1, status: 'validated', sites: ['site-ravenna'], sha256: twinSha });
  });

  it('[LIM-CAPPING] [R6] a proposer that claims 0.1 % on a move the twin predicts at about 5 % is denied (CAPPING_RISK_TOO_HIGH): its claim is not an input', async () => {
    later();
    sim.plant.writeSetpoint('press', 'MainForce', 15.5); // the operator moved it at the HMI
    const liar = { ...proposal({ moves: [{ setpoint: 'press.MainForce', value: '16 kN' }] }), predictedCappingRisk: 0.001 } as WriteProposal;
    const out = await writer.propose(liar);
    expect(out.status).toBe('denied');
    expect(out.decisions[0]!.reasons).toEqual(['CAPPING_RISK_TOO_HIGH']);
    expect(plant('MainForce')).toBe(15.5);
    const d = lastDecision();
    expect(d.result.reasons).toEqual(['CAPPING_RISK_TOO_HIGH']);
    expect(d.args.context.capping!.risk).toBeGreaterThan(0.04);
    expect(d.args.context.capping!.risk).toBeLessThan(0.06);
    expect(d.args.context.capping!.model!.id).toBe('process-twin-v1');
    expect(d.args.context['predictedCappingRisk']).toBeUndefined();
    // the risk is the whole vector's: the same force with more pre-compression predicts less capping
    later();
    const vector = await writer.propose(proposal({ moves: [{ setpoint: 'press.MainForce', value: '16 kN' }, { setpoint: 'press.PreForce', value: '3 kN' }] }));
    const v = lastDecision().args.context.capping!;
    expect(v.press).toMatchObject({ 'press.MainForce': 16, 'press.PreForce': 3 });
    expect(v.risk).toBeLessThan(d.args.context.capping!.risk! - 0.005);
    expect(plant('PreForce')).toBe(2.5);
    // the operator takes the press back to the recipe at the HMI
    sim.plant.writeSetpoint('press', 'MainForce', 12);
  });
});

describe('the model a proposal names is checked against the registry at call time', () => {
  const cases: [string, WriteProposal['model'], string, Partial<ModelRecord> | null][] = [
    ['a draft', { id: 'process-twin-v2', version: '2' }, 'MODEL_NOT_VALIDATED', { owner: 'own', status: 'draft' }],
    ['a retired model', { id: 'process-twin-v3', version: '3' }, 'MODEL_RETIRED', { owner: 'own', status: 'retired' }],
    ['another tenant’s model', { id: 'process-twin-v4', version: '4' }, 'MODEL_TENANT', { owner: 'other_tenant' }],
    ['another version of the validated model', { id: 'process-twin-v1', version: '2' }, 'MODEL_NOT_VALIDATED', { owner: 'own', status: 'validated', version: 1 }],
    ['a model the registry does not know', { id: 'process-twin-v9', version: '9' }, 'MODEL_MISSING', null],
  ];
  for (const [what, model, reason, record] of cases) {
    it(`[R6] a proposal from ${what} is denied (${reason}) and the decision entry shows the registry’s record`, async () => {
      later();
      const before = plant('MainForce');
      const out = await writer.propose(proposal({ model, moves: [{ setpoint: 'press.MainForce', value: `${(before as number) - 0.5} kN` }] }));
      expect(out.status).toBe('denied');
      expect(out.decisions[0]!.reasons).toEqual([reason]);
      expect(plant('MainForce')).toBe(before);
      const d = lastDecision();
      expect(d.result.reasons).toEqual([reason]);
      if (record === null) expect(d.args.context.modelRecord).toBeNull();
      else expect(d.args.context.modelRecord).toMatchObject(record);
      // R9: of another tenant's model nothing but that is recorded on this tenant's chain
      if (record?.owner === 'other_tenant') expect(d.args.context.modelRecord).toEqual({ owner: 'other_tenant' });
    });
  }

  it('a retirement made on another connection to the store is in force at the running writer’s next decision: no twin, no press move', async () => {
    later();
    // what the daemon's POST /models/{id}/retire does (its own tests cover the route): a separate connection
    const other = openStore({ dataDir });
    try {
      changeStatus(other, dataDir, { tenant: A, id: 'process-twin-v1', to: 'retired', ...QA, changeRef: 'CC-2026-0305', reason: 'capping under-predicted on new tooling' }, { approvers: APPROVERS });
    } finally {
      other.close();
    }
    const before = plant('MainForce');
    const out = await writer.propose(proposal({ moves: [{ setpoint: 'press.MainForce', value: `${(before as number) - 0.5} kN` }] }));
    expect(out.status).toBe('denied');
    expect(out.decisions[0]!.reasons).toEqual(['MODEL_RETIRED', 'CAPPING_RISK_UNKNOWN']);
    expect(lastDecision().args.context.capping).toEqual({ risk: null, model: null, error: 'LK_MODEL_NOT_VALIDATED' });
    expect(plant('MainForce')).toBe(before);
  });
});
