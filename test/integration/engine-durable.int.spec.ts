/**
 * The guarded writer's state survives a restart: a real plant simulator (OPC UA
 * and Modbus TCP on loopback), a real SQLite data directory, and a "restart"
 * that is exactly what the daemon does — close connectors and store, open a
 * new Store, new connectors and a new GuardedWriter on the same directory,
 * then `recover()` once connected. Autonomy changes go through the real CLI
 * (PUT /autonomy or a second process: its own SQLite connection) and change the
 * next decision of the running writer.
 */
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createConnectors } from '../../connectors/index.js';
import type { Connector } from '../../connectors/types.js';
import { SITE_TENANT, queryAudit, verifyStore } from '../../src/audit/index.js';
import { main } from '../../src/cli/main.js';
import { ManualClock } from '../../src/clock.js';
import { autonomyRows, setAutonomy } from '../../src/store/autonomy-store.js';
import { runCli as cli } from '../helpers/cli.js';
import { GuardedWriter, type BatchContext, type WriteProposal } from '../../src/engine/guarded-writer.js';
import { WriterState } from '../../src/engine/writer-state.js';
import { type PolicyBundle } from '../../src/policy/index.js';
import { loadPolicyBundle } from '../../src/config/policy-bundle.js';
import { type Store, type TxContext, openStore } from '../../src/store/store.js';
import { plantTwin, view, viewsOf } from '../helpers/models.js';
import { type Simulator, startTestSimulator } from '../helpers/sim.js';

const T = 'acme-pharma';
const clock = new ManualClock(Date.UTC(2026, 2, 3, 8));
const later = (): number => clock.advance(10 * 60_000);
let sim: Simulator;
let bundle: PolicyBundle;
const dirs: string[] = [];

interface Node {
  readonly store: Store;
  readonly connectors: Connector[];
  readonly writer: GuardedWriter;
}

/** The run engine's view of the one batch these tests run. */
const batchOf = (): BatchContext => ({ state: 'running', reviewer: 'a.bianchi' });

/** Start as the daemon does: store, connectors (connected unless left out), the one writer, recover(). */
async function boot(dataDir: string, opts: { skip?: 'modbus' } = {}): Promise<Node & { recovered: Awaited<ReturnType<GuardedWriter['recover']>> }> {
  const store = openStore({ dataDir, clock });
  const connectors = createConnectors(sim.config.config, { dataDir, sim: { opcuaUrl: sim.opcuaUrl, modbusHost: sim.modbusHost, modbusPort: sim.modbusPort } });
  await Promise.all(connectors.filter((c) => c.protocol !== opts.skip).map((c) => c.connect()));
  // the registry as the writer asks it: the validated twin fitted to the test simulator's plant (seed 1)
  const writer = new GuardedWriter({ batches: batchOf, store, site: sim.config.config, connectors, clock, policy: () => bundle, attendance: () => ({ operator: 'l.verdi', lastPresenceAt: clock.now() }), twin: () => plantTwin(1), models: viewsOf(view()) });
  const recovered = await writer.recover();
  return { store, connectors, writer, recovered };
}

async function shutdown(n: Node): Promise<void> {
  await Promise.all(n.connectors.map((c) => c.close()));
  n.store.close();
}

function freshDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'lk-engine-'));
  dirs.push(d);
  return d;
}

const plant = (eq: string, tag: string): unknown => sim.plant.read(eq, tag);
const entries = (store: Store, filter: Record<string, string>, tenant = T) => queryAudit(store.db, tenant, filter, { limit: 1000 }).entries;
const qa = { by: 'q.russo', role: 'qa_reviewer', kind: 'qa' as const };

let n = 0;
function proposal(over: Partial<WriteProposal> = {}): WriteProposal {
  return {
    id: `dur-${++n}`,
    tenant: T,
    batch: 'B-2026-0312',
    agent: 'agent.compress_fill',
    product: 'ir-family-a',
    tooling: 'round-10mm-ff',
    moves: [{ setpoint: 'press.MainForce', value: '13 kN' }],
    attribute: 'content_uniformity',
    justification: 'hardness drifting',
    model: { id: 'process-twin-v1', version: '1' },
    ...over,
  };
}

const blend = (value: string): WriteProposal =>
  proposal({ agent: 'agent.blend_dispense', model: undefined, moves: [{ setpoint: 'blender.Speed', value }] });


/** Raise an agent's persisted autonomy one level at a time, by QA under a change reference. */
function raise(store: Store, agent: string, ...levels: ('L1' | 'L2' | 'L3')[]): void {
  for (const to of levels) setAutonomy(store, bundle, { tenant: T, agent, to, by: { person: 'q.russo', role: 'qa_reviewer' }, changeRef: 'CC-2026-0190' });
}

const turret = (agent: string, attribute: WriteProposal['attribute'], value: string): WriteProposal =>
  proposal({ agent, attribute, model: agent === 'agent.compress_fill' ? proposal().model : undefined, moves: [{ setpoint: 'press.TurretSpeed', value }] });

class SimulatedCrash extends Error {}

/**
 * CrashAfterCommit, a test seam on the REAL store (named as such): once `when()` holds after an outermost
 * transaction has committed, the process "dies" right there — that call throws and every later transaction is
 * refused, so nothing after the crash point reaches the file. The caller then drops the store without the
 * clean-stop checkpoints (as a power cut would).
 */
function crashAfterCommit(store: Store, when: () => boolean): void {
  const real = store.tx.bind(store);
  let dead = false;
  store.tx = <R,>(fn: (t: TxContext) => R): R => {
    if (dead) throw new SimulatedCrash('the process is gone');
    const r = real(fn);
    if (!store.inTx() && when()) {
      dead = true;
      throw new SimulatedCrash('the process died right after this commit');
    }
    return r;
  };
}

beforeAll(async () => {
  sim = await startTestSimulator({ watchdogTimeoutMs: 600_000, scanMs: 20 });
  bundle = loadPolicyBundle(sim.config.policyDir, { site: sim.config.config }).bundle;
  plantTwin(1);
});

afterAll(async () => {
  await sim?.close();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

describe('guarded writer state across a restart', () => {
  it('a pending write survives a restart and is written when a named QA reviewer approves it afterwards', async () => {
    const dir = freshDir();
    later();
    sim.plant.writeSetpoint('press', 'MainForce', 17.5); // the operator moved it at the HMI
    const a = await boot(dir);
    const out = await a.writer.propose(proposal({ moves: [{ setpoint: 'press.MainForce', value: '18.4 kN' }] }));
    expect(out).toMatchObject({ status: 'pending', pending: { needs: 'qa' } });
    const before = a.writer.pending();
    await shutdown(a);

    const b = await boot(dir);
    try {
      expect(b.writer.pending()).toEqual(before);
      expect(b.writer.pending()[0]).toMatchObject({ id: out.pending!.id, vectorHash: out.vectorHash, needs: 'qa', bundleVersion: bundle.version });
      const done = await b.writer.approve(out.pending!.id, { ...qa, vectorHash: out.vectorHash! });
      expect(done.status).toBe('written');
      expect(plant('press', 'MainForce')).toBe(18.4);
      expect(b.writer.pending()).toEqual([]);
      expect(entries(b.store, { kind: 'state_change' }).map((e) => e.action)).toEqual(['setpoint.pending', 'setpoint.pending_closed']);
    } finally {
      await shutdown(b);
    }
    const c = await boot(dir);
    try {
      expect(c.writer.pending()).toEqual([]); // closed means closed: it does not come back
      expect(verifyStore(c.store).ok).toBe(true);
    } finally {
      await shutdown(c);
    }
  });

  it('rejected and superseded pending writes are gone after a restart, each audited; the one left waiting is kept', async () => {
    const dir = freshDir();
    later();
    sim.plant.writeSetpoint('press', 'MainForce', 17.5);
    const a = await boot(dir);
    const first = await a.writer.propose(proposal({ moves: [{ setpoint: 'press.MainForce', value: '18.3 kN' }] }));
    const second = await a.writer.propose(proposal({ moves: [{ setpoint: 'press.MainForce', value: '18.6 kN' }] }));
    await a.writer.reject(second.pending!.id, { person: 'q.russo', role: 'qa_reviewer' }, 'not during this batch');
    const third = await a.writer.propose(proposal({ moves: [{ setpoint: 'press.MainForce', value: '18.2 kN' }] }));
    expect([first.status, second.status, third.status]).toEqual(['pending', 'pending', 'pending']);
    await shutdown(a);

    const b = await boot(dir);
    try {
      expect(b.writer.pending().map((w) => w.id)).toEqual([third.pending!.id]);
      const changes = entries(b.store, { kind: 'state_change' });
      expect(changes.find((e) => e.action === 'setpoint.superseded')?.args).toMatchObject({ pendingId: first.pending!.id, supersededBy: second.proposalId });
      expect(entries(b.store, { kind: 'approval' }).find((e) => e.action === 'setpoint.reject')?.args).toMatchObject({ pendingId: second.pending!.id });
      for (const gone of [first, second]) expect(b.store.db.prepare('SELECT COUNT(*) FROM pending_write WHERE id = ?').pluck().get(gone.pending!.id)).toBe(0);
      expect(plant('press', 'MainForce')).toBe(17.5);
    } finally {
      await shutdown(b);
    }
  });

  it('the rate-of-change check still applies after a restart', async () => {
    const dir = freshDir();
    later();
    sim.plant.writeSetpoint('press', 'MainForce', 12);
    const a = await boot(dir);
    setAutonomy(a.store, bundle, { tenant: T, agent: 'agent.compress_fill', to: 'L3', by: { person: 'q.russo', role: 'qa_reviewer' }, changeRef: 'CC-2026-0160' });
    expect((await a.writer.propose(proposal({ moves: [{ setpoint: 'press.MainForce', value: '13 kN' }] }))).status).toBe('written');
    await shutdown(a);

    const b = await boot(dir);
    try {
      const fast = await b.writer.propose(proposal({ moves: [{ setpoint: 'press.MainForce', value: '13.5 kN' }] }));
      expect(fast.status).toBe('denied');
      expect(fast.decisions[0]!.reasons).toContain('RATE_TOO_HIGH');
      expect(plant('press', 'MainForce')).toBe(13);
      clock.advance(60_000); // 0.5 kN in a minute is within 3 kN/min
      expect((await b.writer.propose(proposal({ moves: [{ setpoint: 'press.MainForce', value: '13.5 kN' }] }))).status).toBe('written');
      expect(plant('press', 'MainForce')).toBe(13.5);
    } finally {
      await shutdown(b);
    }
  });

  it('[INV-AUDIT-TX] an intent a crash left without outcome is closed as interrupted with what the equipment holds (unknown when it cannot be read)', async () => {
    const dir = freshDir();
    later();
    sim.plant.writeSetpoint('press', 'MainForce', 14);
    sim.plant.writeSetpoint('press', 'PreForce', 2.5);
    const crashed = openStore({ dataDir: dir, clock });
    const subject = { batch: 'B-2026-0312', agent: 'agent.compress_fill' };
    // three writes announced, then the process died: one never reached the PLC, one did, one is on a unit we cannot reach
    const never = crashed.audit.intent({ tenant: T, actor: 'agent.compress_fill', action: 'setpoint.write', subject: { ...subject, setpoint: 'press.MainForce' }, old: 14, new: 14.6 });
    const reached = crashed.audit.intent({ tenant: T, actor: 'agent.compress_fill', action: 'setpoint.write', subject: { ...subject, setpoint: 'press.PreForce' }, old: 2.5, new: 2.8 });
    const dark = crashed.audit.intent({ tenant: T, actor: 'agent.blend_dispense', action: 'setpoint.write', subject: { batch: 'B-2026-0312', agent: 'agent.blend_dispense', setpoint: 'blender.Speed' }, old: 20, new: 21 });
    sim.plant.writeSetpoint('press', 'PreForce', 2.8);
    crashed.close();

    const b = await boot(dir, { skip: 'modbus' });
    try {
      expect(b.store.audit.openIntents(T)).toEqual([]);
      expect(b.recovered.interrupted.map((i) => [i.setpoint, i.equipment])).toEqual([['press.MainForce', 14], ['press.PreForce', 2.8], ['blender.Speed', null]]);
      const outcomes = entries(b.store, { kind: 'outcome' });
      const of = (seq: number) => outcomes.find((e) => e.intent === seq)!;
      expect(of(never.seq).result).toMatchObject({ status: 'interrupted', equipment: 14, held: 'previous' });
      expect(of(reached.seq).result).toMatchObject({ status: 'interrupted', equipment: 2.8, held: 'intended' });
      expect(of(dark.seq).result).toMatchObject({ status: 'interrupted', equipment: 'unknown', held: 'unknown' });
      expect(of(dark.seq).new).toBe('unknown');
      expect(entries(b.store, { kind: 'alarm' }).at(-1)).toMatchObject({ action: 'setpoint.interrupted', actor: 'system' });
      // the move that did reach the press counts for the rate check
      setAutonomy(b.store, bundle, { tenant: T, agent: 'agent.compress_fill', to: 'L3', by: { person: 'q.russo', role: 'qa_reviewer' }, changeRef: 'CC-2026-0161' });
      const next = await b.writer.propose(proposal({ moves: [{ setpoint: 'press.PreForce', value: '3.1 kN' }] }));
      expect(next.decisions[0]!.reasons).toContain('RATE_TOO_HIGH');
      expect(verifyStore(b.store).ok).toBe(true);
    } finally {
      await shutdown(b);
    }
    const c = await boot(dir);
    try {
      expect(c.recovered.interrupted).toEqual([]); // each intent is closed once
    } finally {
      await shutdown(c);
    }
  });
});

describe('approvals across a restart', () => {
  it('a pending write queued under one bundle is re-evaluated with the bundle in force when approved after a restart', async () => {
    const dir = freshDir();
    const policyCopy = freshDir();
    cpSync(sim.config.policyDir, policyCopy, { recursive: true });
    const f = join(policyCopy, 'design-space.yaml');
    // the new bundle widens MainForce for ir-family-a: the move is inside it now
    writeFileSync(f, readFileSync(f, 'utf8').replace('press.MainForce:          { min: 8,    max: 18,', 'press.MainForce:          { min: 8,    max: 19,'));
    const wider = loadPolicyBundle(policyCopy, { site: sim.config.config }).bundle;
    expect(wider.version).not.toBe(bundle.version);
    later();
    sim.plant.writeSetpoint('press', 'MainForce', 17.5);
    const a = await boot(dir);
    const out = await a.writer.propose(proposal({ moves: [{ setpoint: 'press.MainForce', value: '18.3 kN' }] }));
    expect(out.decisions[0]!.reasons).toContain('OUTSIDE_DESIGN_SPACE');
    await shutdown(a);
    const saved = bundle;
    bundle = wider;
    const b = await boot(dir);
    try {
      expect(b.writer.pending()[0]).toMatchObject({ id: out.pending!.id, bundleVersion: saved.version });
      const done = await b.writer.approve(out.pending!.id, { ...qa, vectorHash: out.vectorHash! });
      expect(done.status).toBe('written');
      expect(done.decisions[0]).toMatchObject({ bundleVersion: wider.version });
      expect(done.decisions[0]!.reasons).not.toContain('OUTSIDE_DESIGN_SPACE');
      expect(entries(b.store, { kind: 'approval' }).at(-1)!.args).toMatchObject({ queuedUnder: saved.version, bundleInForce: wider.version, vectorHash: out.vectorHash });
      expect(plant('press', 'MainForce')).toBe(18.3);
    } finally {
      bundle = saved;
      await shutdown(b);
    }
  });

  it('an approval a stop interrupted puts the pending write back to waiting (audited); it needs a new approval', async () => {
    const dir = freshDir();
    later();
    sim.plant.writeSetpoint('press', 'MainForce', 17.5);
    const a = await boot(dir);
    const out = await a.writer.propose(proposal({ moves: [{ setpoint: 'press.MainForce', value: '18.2 kN' }] }));
    // what approve() commits before the equipment write, then the process dies
    a.store.tx((t) => {
      t.audit.append({ tenant: T, actor: 'q.russo', kind: 'approval', action: 'setpoint.approve', subject: { reviewer: 'q.russo' }, args: { pendingId: out.pending!.id } });
      new WriterState(a.store).setApproving(t, out.pending!.id, { ...qa, vectorHash: out.vectorHash! });
    });
    await shutdown(a);
    const b = await boot(dir);
    try {
      expect(b.recovered.approvalsInterrupted).toEqual([out.pending!.id]);
      expect(b.store.db.prepare('SELECT approving FROM pending_write WHERE id = ?').pluck().get(out.pending!.id)).toBeNull();
      expect(entries(b.store, { kind: 'state_change' }).at(-1)).toMatchObject({ action: 'setpoint.approval_interrupted', actor: 'system' });
      expect(b.writer.pending().map((w) => w.id)).toEqual([out.pending!.id]);
      expect(plant('press', 'MainForce')).toBe(17.5);
      expect((await b.writer.approve(out.pending!.id, { ...qa, vectorHash: out.vectorHash! })).status).toBe('written');
    } finally {
      await shutdown(b);
    }
  });
});

describe('integrity at the crash points of an approved write', () => {
  it('a crash right after the commit of an approved vector’s final outcome leaves it closed, not pending again', async () => {
    const dir = freshDir();
    later();
    sim.plant.writeSetpoint('press', 'MainForce', 17.5);
    const a = await boot(dir);
    const out = await a.writer.propose(proposal({ moves: [{ setpoint: 'press.MainForce', value: '18.4 kN' }] }));
    expect(out.status).toBe('pending');
    const writeOutcomes = (): number => a.store.db.prepare("SELECT COUNT(*) FROM audit_entry WHERE kind = 'outcome' AND action = 'setpoint.write'").pluck().get() as number;
    const before = writeOutcomes();
    crashAfterCommit(a.store, () => writeOutcomes() > before);
    await expect(a.writer.approve(out.pending!.id, { ...qa, vectorHash: out.vectorHash! })).rejects.toBeInstanceOf(SimulatedCrash);
    expect(plant('press', 'MainForce')).toBe(18.4);
    await Promise.all(a.connectors.map((c) => c.close()));
    a.store.db.close(); // no clean stop

    const b = await boot(dir);
    try {
      expect(b.recovered).toEqual({ interrupted: [], approvalsInterrupted: [] });
      expect(b.writer.pending()).toEqual([]);
      expect(b.store.db.prepare('SELECT COUNT(*) FROM pending_write').pluck().get()).toBe(0);
      const closed = entries(b.store, { kind: 'state_change' });
      expect(closed.map((e) => e.action)).toEqual(['setpoint.pending', 'setpoint.pending_closed']);
      // the closing is in the very commit of the final outcome: it directly follows it on the chain
      const outcome = entries(b.store, { kind: 'outcome' }).at(-1)!;
      expect(closed[1]!.seq).toBe(outcome.seq + 1);
      expect(closed[1]!.args).toMatchObject({ pendingId: out.pending!.id, status: 'written' });
      expect(verifyStore(b.store).ok).toBe(true);
    } finally {
      await shutdown(b);
    }
  });
});

describe('arbitration state across a restart', () => {
  it('[LIM-OWNERSHIP] a quality agent that won press.TurretSpeed still owns it after a restart: a takt request inside the window is declined', async () => {
    const dir = freshDir();
    later();
    sim.plant.writeSetpoint('press', 'TurretSpeed', 40);
    const a = await boot(dir);
    raise(a.store, 'agent.quality_conf', 'L1', 'L2', 'L3');
    raise(a.store, 'agent.yield_takt', 'L2', 'L3');
    expect((await a.writer.propose(turret('agent.quality_conf', 'content_uniformity', '42 {rev}/min'))).status).toBe('written');
    const owner = a.writer.arbitration().owners['press.TurretSpeed']!;
    expect(owner).toMatchObject({ agent: 'agent.quality_conf' });
    await shutdown(a);

    const b = await boot(dir);
    try {
      expect(b.writer.arbitration().owners['press.TurretSpeed']).toEqual(owner);
      clock.advance(30_000);
      const takt = await b.writer.propose(turret('agent.yield_takt', 'takt', '44 {rev}/min'));
      expect(takt.status).toBe('declined');
      expect(takt.declined![0]).toMatchObject({ reason: 'OUTRANKED', replan: true, winner: { agent: 'agent.quality_conf' }, ownedUntil: owner.expiresAt });
      expect(plant('press', 'TurretSpeed')).toBe(42);
      // the ownership is time-boxed: once the window has run out the takt agent may move it
      clock.advance(owner.expiresAt - clock.now());
      expect((await b.writer.propose(turret('agent.yield_takt', 'takt', '44 {rev}/min'))).status).toBe('written');
      expect(plant('press', 'TurretSpeed')).toBe(44);
    } finally {
      await shutdown(b);
    }
  });

  it('[ERR-DEADLOCK] a deadlock escalation survives a restart and stays pending, however long, until a named person resolves it', async () => {
    const dir = freshDir();
    later();
    sim.plant.writeSetpoint('press', 'TurretSpeed', 40);
    const a = await boot(dir);
    raise(a.store, 'agent.quality_conf', 'L1', 'L2', 'L3');
    expect((await a.writer.propose(turret('agent.quality_conf', 'content_uniformity', '42 {rev}/min'))).status).toBe('written');
    clock.advance(20_000);
    const rival = await a.writer.propose(turret('agent.compress_fill', 'dissolution', '38 {rev}/min'));
    expect(rival.status).toBe('escalated');
    const esc = a.writer.arbitration().escalations['press.TurretSpeed']!;
    expect(esc.requests.map((r) => r.agent).sort()).toEqual(['agent.compress_fill', 'agent.quality_conf']);
    await shutdown(a);

    clock.advance(3_600_000); // an hour: far past any ownership window
    const b = await boot(dir);
    const rivalRequest = `${rival.proposalId}:press.TurretSpeed`;
    try {
      expect(b.writer.arbitration().escalations['press.TurretSpeed']).toEqual(esc);
      expect(b.writer.arbitration().owners['press.TurretSpeed']).toBeUndefined();
      const again = await b.writer.propose(turret('agent.quality_conf', 'content_uniformity', '43 {rev}/min'));
      expect(again.status).toBe('escalated'); // equal rank joins the deadlock; time did not resolve it
      expect(plant('press', 'TurretSpeed')).toBe(42);
      const decide = (person: string, role: string) => b.writer.resolve(T, 'press.TurretSpeed', { requestId: rivalRequest, by: { person, role }, reason: 'dissolution first on this batch' });
      await expect(decide('l.verdi', 'operator')).rejects.toMatchObject({ code: 'LK_POLICY_DENIED' });
      expect(b.writer.arbitration().escalations['press.TurretSpeed']).toBeDefined();
      const r = await decide('q.russo', 'qa_reviewer');
      expect(r.winners.map((w) => w.request.id)).toEqual([rivalRequest]);
    } finally {
      await shutdown(b);
    }
    const c = await boot(dir);
    try {
      expect(c.writer.arbitration().escalations).toEqual({});
      expect(c.writer.arbitration().owners['press.TurretSpeed']).toMatchObject({ agent: 'agent.compress_fill', requestId: rivalRequest });
      const resolved = entries(c.store, { kind: 'arbitration' }).at(-1)!;
      expect(resolved).toMatchObject({ action: 'arbitration.resolve', actor: 'q.russo' });
      expect(c.store.db.prepare('SELECT audit_seq FROM arbitration_owner WHERE setpoint = ?').pluck().get('press.TurretSpeed')).toBe(resolved.seq);
      expect(verifyStore(c.store).ok).toBe(true);
    } finally {
      await shutdown(c);
    }
  });
});

describe('an autonomy change made on another connection changes the running writer’s next decision', () => {
  // what PUT /autonomy does (its own route test signs in; here the writer's side): setAutonomy on a second
  // connection to the same database, with the person the API authenticated
  it('L1 recommends; an unpermitted raise changes nothing; a QA raise with a change ref makes it wait for a reviewer; lowering always works', async () => {
    const dir = freshDir();
    later();
    const node = await boot(dir);
    const set = (to: 'L0' | 'L1' | 'L2' | 'L3', person: string, role: string, extra: { changeRef?: string; reason?: string } = {}): { code: number; err: string } => {
      const other = openStore({ dataDir: dir });
      try {
        setAutonomy(other, bundle, { tenant: T, agent: 'agent.blend_dispense', to, by: { person, role }, ...extra });
        return { code: 0, err: '' };
      } catch (err) {
        return { code: 1, err: `[${(err as { code?: string }).code}]` };
      } finally {
        other.close();
      }
    };
    const chainHead = () => node.store.audit.head(T).seq;
    try {
      const r1 = await node.writer.propose(blend('21 {rev}/min'));
      expect(r1.status).toBe('recommended');
      expect(r1.decisions[0]!.reasons).toContain('AUTONOMY_RECOMMEND_ONLY');

      const head = chainHead();
      const byOperator = set('L2', 'l.verdi', 'operator', { changeRef: 'CC-2026-0170' });
      const noRef = set('L2', 'q.russo', 'qa_reviewer');
      const jump = set('L3', 'q.russo', 'qa_reviewer', { changeRef: 'CC-2026-0170' });
      for (const r of [byOperator, noRef, jump]) {
        expect(r.code).toBe(1);
        expect(r.err).toContain('[LK_AUTONOMY_CHANGE]');
      }
      expect(chainHead()).toBe(head);
      expect(autonomyRows(node.store.db, T)).toEqual([]);
      later();
      expect((await node.writer.propose(blend('21 {rev}/min'))).status).toBe('recommended');

      const up = set('L2', 'q.russo', 'qa_reviewer', { changeRef: 'CC-2026-0171', reason: 'validated on 3 batches' });
      expect(up.code).toBe(0);
      later();
      const r2 = await node.writer.propose(blend('21 {rev}/min'));
      expect(r2).toMatchObject({ status: 'pending', pending: { needs: 'reviewer' } });
      expect(plant('blender', 'Speed')).toBe(20);

      const down = set('L0', 'l.verdi', 'operator', { reason: 'drift seen on NIR' });
      expect(down.code).toBe(0);
      later();
      const r3 = await node.writer.propose(blend('21.5 {rev}/min'));
      expect(r3.status).toBe('recommended');
      expect(r3.decisions[0]!.autonomy).toBe('L0');

      const trail = entries(node.store, { kind: 'autonomy_change' }, T);
      expect(trail.map((e) => [e.actor, e.action, e.old, e.new])).toEqual([
        ['q.russo', 'autonomy.raise', 'L1', 'L2'],
        ['l.verdi', 'autonomy.lower', 'L2', 'L0'],
      ]);
      expect(trail[0]!.args).toMatchObject({ change_ref: 'CC-2026-0171', role: 'qa_reviewer' });
      const shown = JSON.parse((await cli('policy', 'autonomy', 'show', '--tenant', T, '--json', '--data', dir)).out) as { agents: Record<string, { level: string; by?: string }> };
      expect(shown.agents['agent.blend_dispense']).toMatchObject({ level: 'L0', by: 'l.verdi' });
      expect(verifyStore(node.store).ok).toBe(true);
    } finally {
      await shutdown(node);
    }
  });
});
