/**
 * The guarded writer against the plant simulator (real OPC UA and Modbus TCP
 * servers on loopback), a real SQLite audit trail in a temp dir and the
 * shipped policy bundle: every write that reaches equipment goes through
 * arbitration → policy → audit intent → write → read-back → audit outcome.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createConnectors } from '../../connectors/index.js';
import type { Connector, WriteCapability, WriteResult } from '../../connectors/types.js';
import { queryAudit } from '../../src/audit/index.js';
import { ManualClock } from '../../src/clock.js';
import type { Attendance } from '../../src/domain/policy.js';
import { LkError } from '../../src/errors.js';
import { WriterState } from '../../src/engine/writer-state.js';
import { GuardedWriter, type BatchContext, type WriteProposal } from '../../src/engine/guarded-writer.js';
import { type AutonomyState, type PolicyBundle, changeAutonomy, initialAutonomy } from '../../src/policy/index.js';
import { loadPolicyBundle } from '../../src/config/policy-bundle.js';
import { type Store, openStore } from '../../src/store/store.js';
import { type Simulator, startTestSimulator } from '../helpers/sim.js';
import { rejectionCode as codeOf } from '../helpers/codes.js';
import { plantTwin, view, viewsOf } from '../helpers/models.js';

let sim: Simulator;
let store: Store;
let dataDir: string;
let connectors: Connector[];
let bundle: PolicyBundle;
let writer: GuardedWriter;
let autonomy: AutonomyState;
let attendance: Attendance | null;
const clock = new ManualClock(Date.UTC(2026, 2, 3, 8));
const T = 'acme-pharma';
/** What the run engine would report of each batch at call time (tests change it). */
const RUNNING: BatchContext = { state: 'running', reviewer: 'a.bianchi' };
const batches = new Map<string, BatchContext>([['B-2026-0311', RUNNING]]);
const batchOf = (_tenant: string, batch: string): BatchContext | null => batches.get(batch) ?? null;
const qa = { person: 'q.russo', role: 'qa_reviewer' };

/**
 * The model registry as the writer asks it (in memory here; test/integration/writer-models.int.spec.ts runs it on
 * the real registry): the tenant's validated twin pinned to the site — fitted to the test simulator's plant
 * (seed 1), so the capping risks the writer predicts are the plant's — and its status view.
 */
const twin = () => plantTwin(1);
const models = viewsOf(view());
const plant = (eq: string, tag: string): unknown => sim.plant.read(eq, tag);
const entries = (filter: Record<string, string>) => queryAudit(store.db, T, filter, { limit: 1000 }).entries;

let n = 0;
function proposal(over: Partial<WriteProposal> = {}): WriteProposal {
  return {
    id: `prop-${++n}`,
    tenant: T,
    batch: 'B-2026-0311',
    run: 'run_k3x9',
    agent: 'agent.compress_fill',
    product: 'ir-family-a',
    tooling: 'round-10mm-ff',
    moves: [{ setpoint: 'press.MainForce', value: '13 kN' }],
    attribute: 'content_uniformity',
    justification: 'hardness drifting low',
    model: { id: 'process-twin-v1', version: '1' },
    ...over,
  };
}

function raise(agent: string, to: 'L1' | 'L2' | 'L3'): void {
  autonomy = changeAutonomy(autonomy, { target: { agent }, to, by: qa, changeRef: 'CC-2026-0150', at: clock.now() }, bundle).state;
}

/**
 * Run `body` with a second GuardedWriter over a named test double of the REAL OPC UA connector: reads pass
 * through; writes go through `write`, which holds a real capability taken from a second connector to the
 * same simulator (the first one's belongs to the main writer).
 */
async function withPressDouble(
  write: (cap: WriteCapability, tag: string, value: number) => Promise<WriteResult>,
  body: (writer: GuardedWriter) => Promise<void>,
): Promise<void> {
  const real = connectors.find((c) => c.protocol === 'opcua')!;
  const [second] = createConnectors(sim.config.config, { dataDir, sim: { opcuaUrl: sim.opcuaUrl, modbusHost: sim.modbusHost, modbusPort: sim.modbusPort } }).filter((c) => c.protocol === 'opcua');
  await second!.connect();
  try {
    const cap = second!.claimWriter();
    const double = {
      id: real.id,
      protocol: real.protocol,
      read: (tags: readonly string[]) => real.read(tags),
      claimWriter: (): WriteCapability => ({ connectorId: real.id, write: (tag: string, value: number) => write(cap, tag, value), commandLkg: (equipment: string) => cap.commandLkg(equipment), commandRearm: (equipment: string) => cap.commandRearm(equipment) }),
    } as unknown as Connector;
    await body(new GuardedWriter({ batches: batchOf, store, site: sim.config.config, connectors: [double], clock, policy: () => bundle, autonomy: () => autonomy, attendance: () => ({ operator: 'l.verdi', lastPresenceAt: clock.now() }), twin, models }));
  } finally {
    await second!.close();
  }
}

/** Advance the writer's clock past any rate-of-change window. */
const later = (): number => clock.advance(10 * 60_000);

beforeAll(async () => {
  sim = await startTestSimulator({ watchdogTimeoutMs: 600_000, scanMs: 20 });
  dataDir = mkdtempSync(join(tmpdir(), 'lk-gw-'));
  store = openStore({ dataDir });
  const site = sim.config.config;
  bundle = loadPolicyBundle(sim.config.policyDir, { site }).bundle;
  connectors = createConnectors(site, { dataDir, sim: { opcuaUrl: sim.opcuaUrl, modbusHost: sim.modbusHost, modbusPort: sim.modbusPort } });
  await Promise.all(connectors.map((c) => c.connect()));
  autonomy = initialAutonomy(bundle);
  attendance = { operator: 'l.verdi', lastPresenceAt: clock.now() };
  plantTwin(1); // fitted once, before the clock-driven tests
  writer = new GuardedWriter({ batches: batchOf, store, site, connectors, clock, policy: () => bundle, autonomy: () => autonomy, attendance: () => (attendance ? { ...attendance, lastPresenceAt: clock.now() } : null), twin, models });
});

afterAll(async () => {
  await Promise.all((connectors ?? []).map((c) => c.close()));
  store?.close();
  await sim?.close();
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
});

describe('guarded writer on the simulator', () => {
  it('[INV-WRITE-PATH] claims each write capability once: nobody else can obtain it afterwards', () => {
    for (const c of connectors) {
      let code: string | undefined;
      try {
        c.claimWriter();
      } catch (e) {
        code = LkError.is(e) ? e.code : undefined;
      }
      expect(code).toBe('LK_WRITER_CLAIMED');
    }
  });

  it('[R2] [R10] L3 attended, inside the design space: written in another unit, read back, and audited decision → intent → outcome', async () => {
    raise('agent.compress_fill', 'L3');
    const out = await writer.propose(proposal({ moves: [{ setpoint: 'press.MainForce', value: '13000 N' }] }));
    expect(out.status).toBe('written');
    expect(out.results![0]).toMatchObject({ tag: 'press.MainForce', written: 13, verified: true });
    expect(plant('press', 'MainForce')).toBe(13);
    const trail = entries({ setpoint: 'press.MainForce' });
    const kinds = trail.map((e) => e.kind);
    expect(kinds.slice(-3)).toEqual(['policy_decision', 'intent', 'outcome']);
    const [decision, intent, outcome] = trail.slice(-3);
    expect(decision!.result).toMatchObject({ outcome: 'allow', bundleVersion: bundle.version });
    expect(intent!.args).toMatchObject({ decision: (decision!.result as { id: string }).id, bundleVersion: bundle.version });
    expect(intent!).toMatchObject({ old: 12, new: 13 });
    expect(outcome!.intent).toBe(intent!.seq);
  });

  it('[ERR-ALLOW-LIST] [R7] a setpoint outside the allow-list is denied and never reaches the equipment', async () => {
    later();
    const out = await writer.propose(proposal({ agent: 'agent.yield_takt', attribute: 'takt', model: undefined }));
    expect(out.status).toBe('denied');
    expect(out.decisions[0]!.reasons).toContain('NOT_IN_ALLOW_LIST');
    expect(plant('press', 'MainForce')).toBe(13);
  });

  it('[R6] batch state and model version are checked before any move', async () => {
    later();
    batches.set('B-2026-0311', { ...RUNNING, state: 'hold' });
    try {
      expect((await writer.propose(proposal({ moves: [{ setpoint: 'press.MainForce', value: '14 kN' }] }))).status).toBe('denied');
    } finally {
      batches.set('B-2026-0311', RUNNING);
    }
    // a batch the run engine does not know moves nothing
    const unknown = await writer.propose(proposal({ batch: 'B-NOT-RUNNING', moves: [{ setpoint: 'press.MainForce', value: '14 kN' }] }));
    expect(unknown.status).toBe('denied');
    expect(unknown.decisions[0]!.reasons).toContain('BATCH_STATE_FORBIDS');
    const m = await writer.propose(proposal({ model: { id: 'process-twin-v1', version: '2' }, moves: [{ setpoint: 'press.MainForce', value: '14 kN' }] }));
    expect(m.decisions[0]!.reasons).toContain('MODEL_NOT_VALIDATED');
    expect(plant('press', 'MainForce')).toBe(13);
  });

  it('[R5] without an attended operator an L3 move is only recommended', async () => {
    later();
    const saved = attendance;
    attendance = null;
    try {
      const out = await writer.propose(proposal({ moves: [{ setpoint: 'press.MainForce', value: '14 kN' }] }));
      expect(out.status).toBe('recommended');
      expect(out.decisions[0]!.reasons).toEqual(['UNATTENDED']);
      expect(plant('press', 'MainForce')).toBe(13);
    } finally {
      attendance = saved;
    }
  });

  it('[ERR-OUTSIDE-DESIGN-SPACE] [R4] outside the design space waits for QA; the approval binds to the exact vector', async () => {
    later();
    sim.plant.writeSetpoint('press', 'MainForce', 18); // the operator moved it at the HMI
    const out = await writer.propose(proposal({ moves: [{ setpoint: 'press.MainForce', value: '18.5 kN' }] }));
    expect(out.status).toBe('pending');
    expect(out.pending!.needs).toBe('qa');
    expect(plant('press', 'MainForce')).toBe(18);
    const id = out.pending!.id;
    expect(await codeOf(writer.approve(id, { by: 'q.russo', role: 'qa_reviewer', kind: 'qa', vectorHash: '0'.repeat(64) }))).toBe('LK_APPROVAL_STALE');
    expect(await codeOf(writer.approve(id, { by: 'p.costa', role: 'process_engineer', kind: 'reviewer', vectorHash: out.vectorHash! }))).toBe('LK_NEEDS_QA');
    const done = await writer.approve(id, { by: 'q.russo', role: 'qa_reviewer', kind: 'qa', vectorHash: out.vectorHash! });
    expect(done.status).toBe('written');
    expect(done.decisions[0]!.reasons).toContain('QA_APPROVED');
    expect(plant('press', 'MainForce')).toBe(18.5);
    expect(writer.pending()).toEqual([]);
    expect(entries({ kind: 'approval', reviewer: 'q.russo' }).length).toBeGreaterThan(0);
  });

  it('a changed vector supersedes the pending one (declined and audited) and needs a new approval', async () => {
    later();
    const first = await writer.propose(proposal({ moves: [{ setpoint: 'press.MainForce', value: '18.8 kN' }] }));
    expect(first.status).toBe('pending');
    const second = await writer.propose(proposal({ moves: [{ setpoint: 'press.MainForce', value: '18.9 kN' }] }));
    expect(second.status).toBe('pending');
    expect(second.vectorHash).not.toBe(first.vectorHash);
    expect(writer.pending().map((w) => w.id)).toEqual([second.pending!.id]);
    expect(entries({ kind: 'state_change' }).some((e) => e.action === 'setpoint.superseded' && (e.args as { pendingId: string }).pendingId === first.pending!.id)).toBe(true);
    // the superseded write is withdrawn: an approval of it is refused with the stable code and the reason
    expect(await codeOf(writer.approve(first.pending!.id, { by: 'q.russo', role: 'qa_reviewer', kind: 'qa', vectorHash: first.vectorHash! }))).toBe('LK_MOVE_WITHDRAWN');
    expect(writer.withdrawn(T, first.pending!.id)).toMatch(/^superseded by proposal /);
    // after a restart the writer knows it from the audit trail (the row is gone), and only for its tenant
    expect(new WriterState(store).withdrawnReason(T, first.pending!.id)).toMatch(/^superseded by proposal /);
    expect(new WriterState(store).withdrawnReason('borealis-bio', first.pending!.id)).toBeNull();
    expect(new WriterState(store).withdrawnReason(T, second.pending!.id)).toBeNull();
    expect(await codeOf(writer.approve('pw_nosuchwrite', { by: 'q.russo', role: 'qa_reviewer', kind: 'qa', vectorHash: first.vectorHash! }))).toBe('LK_NOT_FOUND');
    await writer.reject(second.pending!.id, qa, 'not now');
    expect(plant('press', 'MainForce')).toBe(18.5);
  });

  it('L2 over Modbus: the proposal waits for a named reviewer, then executes on approval', async () => {
    later();
    raise('agent.blend_dispense', 'L2');
    const out = await writer.propose(proposal({ agent: 'agent.blend_dispense', model: undefined, moves: [{ setpoint: 'blender.Speed', value: '22 {rev}/min' }] }));
    expect(out).toMatchObject({ status: 'pending', pending: { needs: 'reviewer' } });
    expect(plant('blender', 'Speed')).toBe(20);
    const done = await writer.approve(out.pending!.id, { by: 'a.bianchi', role: 'process_engineer', kind: 'reviewer', vectorHash: out.vectorHash! });
    expect(done.status).toBe('written');
    expect(plant('blender', 'Speed')).toBeCloseTo(22, 5);
  });

  it('an approval is checked against the batch as it is at approval time [R6], not as it was when proposed', async () => {
    const l2 = (value: string) => proposal({ agent: 'agent.blend_dispense', model: undefined, moves: [{ setpoint: 'blender.Speed', value }] });
    const approveBy = (out: { pending?: { id: string }; vectorHash: string | null }, by: string) =>
      writer.approve(out.pending!.id, { by, role: 'process_engineer', kind: 'reviewer', vectorHash: out.vectorHash! });
    const speed = plant('blender', 'Speed');
    try {
      later();
      const held = await writer.propose(l2('23 {rev}/min'));
      expect(held.status).toBe('pending');
      batches.set('B-2026-0311', { ...RUNNING, state: 'hold' });
      const onHold = await approveBy(held, 'a.bianchi');
      expect(onHold.status).toBe('denied');
      expect(onHold.decisions[0]!.reasons).toContain('BATCH_STATE_FORBIDS');
      expect(plant('blender', 'Speed')).toBe(speed);

      batches.set('B-2026-0311', { ...RUNNING, reviewer: 'm.ferri' });
      later();
      const reassigned = await writer.propose(l2('23 {rev}/min'));
      expect(reassigned.status).toBe('pending');
      const byFormer = await approveBy(reassigned, 'a.bianchi');
      expect(byFormer.status).toBe('denied');
      expect(byFormer.decisions[0]!.reasons).toContain('APPROVER_NOT_ASSIGNED');
      expect(plant('blender', 'Speed')).toBe(speed);
    } finally {
      batches.set('B-2026-0311', RUNNING);
    }
  });

  it('a proposal naming no attribute arbitration knows is refused before anything moves (it could not be outranked)', async () => {
    later();
    const before = plant('press', 'TurretSpeed');
    expect(await codeOf(writer.propose(proposal({ attribute: 'zzz' as never, moves: [{ setpoint: 'press.TurretSpeed', value: '41 {rev}/min' }] })))).toBe('LK_VALIDATION');
    expect(plant('press', 'TurretSpeed')).toBe(before);
  });

  it('[ERR-ARBITRATION] [LIM-OWNERSHIP] arbitration: the quality request wins the turret speed; the takt request inside the window is declined and recorded', async () => {
    later();
    for (const l of ['L1', 'L2', 'L3'] as const) raise('agent.quality_conf', l);
    for (const l of ['L2', 'L3'] as const) raise('agent.yield_takt', l);
    const takt = (v: string) => proposal({ agent: 'agent.yield_takt', attribute: 'takt', model: undefined, moves: [{ setpoint: 'press.TurretSpeed', value: v }] });
    expect((await writer.propose(takt('44 {rev}/min'))).status).toBe('written');
    later();
    const hold = await writer.propose(proposal({ agent: 'agent.quality_conf', attribute: 'content_uniformity', model: undefined, moves: [{ setpoint: 'press.TurretSpeed', value: '40 {rev}/min' }] }));
    expect(hold.status).toBe('written');
    clock.advance(30_000);
    const again = await writer.propose(takt('45 {rev}/min'));
    expect(again.status).toBe('declined');
    expect(again.declined![0]).toMatchObject({ reason: 'OUTRANKED', score: 1, replan: true, winner: { agent: 'agent.quality_conf' } });
    expect(plant('press', 'TurretSpeed')).toBe(40);
    expect(entries({ kind: 'arbitration', agent: 'agent.yield_takt' }).length).toBeGreaterThan(0);
  });

  it('[INV-LKG-REVERT] a read-back mismatch raises an alarm entry and reverts the setpoint', async () => {
    later();
    // DriftingPress: the simulator cannot make equipment hold another value than it accepted, so after the
    // real write this double moves the simulated press off target, as a PLC clamping the setpoint would.
    await withPressDouble(
      async (cap, tag, value) => {
        const r = await cap.write(tag, value);
        if (tag !== 'press.PreForce' || value === 2.5) return r;
        sim.plant.writeSetpoint('press', 'PreForce', value - 0.4);
        const [s] = await connectors.find((c) => c.protocol === 'opcua')!.read([tag]);
        return { ...r, readBack: s!.value as number, verified: false };
      },
      async (w2) => {
        const out = await w2.propose(proposal({ moves: [{ setpoint: 'press.PreForce', value: '3 kN' }] }));
        expect(out.status).toBe('reverted');
        expect(out.error!.code).toBe('LK_READBACK_MISMATCH');
        expect(plant('press', 'PreForce')).toBe(2.5);
        const alarms = entries({ kind: 'alarm' });
        expect(alarms.at(-1)).toMatchObject({ action: 'setpoint.readback_mismatch', actor: 'system' });
        expect(entries({ setpoint: 'press.PreForce' }).some((e) => e.kind === 'intent' && e.action === 'setpoint.revert')).toBe(true);
      },
    );
  });

  it('a write whose outcome is unknown (reply lost after the PLC applied it) is put back with the rest of the vector', async () => {
    later();
    const force = plant('press', 'MainForce') as number;
    const depth = plant('press', 'FillDepth') as number;
    let lost = false;
    // LostReply: the real write reaches the simulator, then its reply is "lost" (once)
    await withPressDouble(
      async (cap, tag, value) => {
        const r = await cap.write(tag, value);
        if (tag === 'press.FillDepth' && !lost) {
          lost = true;
          throw new LkError('LK_CONN_UNAVAILABLE', 'channel lost before the reply', { outcome: 'unknown' });
        }
        return r;
      },
      async (w2) => {
        const out = await w2.propose(proposal({ moves: [{ setpoint: 'press.MainForce', value: `${force - 0.5} kN` }, { setpoint: 'press.FillDepth', value: `${depth + 0.2} mm` }] }));
        expect(out.status, JSON.stringify(out.decisions.map((d) => d.reasons))).toBe('reverted');
        expect(plant('press', 'MainForce')).toBeCloseTo(force, 9);
        expect(plant('press', 'FillDepth')).toBeCloseTo(depth, 9);
      },
    );
  });

  it('idle() resolves only once a write under way has its outcome audited (the daemon drains writes before it stops)', async () => {
    later();
    const outcomes = (): number => entries({ kind: 'outcome' }).length;
    const before = outcomes();
    const depth = plant('press', 'FillDepth') as number;
    const pending = writer.propose(proposal({ moves: [{ setpoint: 'press.FillDepth', value: `${depth + 0.1} mm` }] }));
    await writer.idle();
    expect(store.audit.openIntents(T)).toEqual([]);
    expect(outcomes()).toBe(before + 1);
    const done = await pending;
    expect(done.status, JSON.stringify(done.error)).toBe('written');
  });

  it('a revert is the setpoint’s last move: the next move is checked against it, not against the move before the failed vector', async () => {
    later();
    sim.plant.writeSetpoint('press', 'MainForce', 14);
    const depth = plant('press', 'FillDepth') as number;
    let refused = false;
    // RefusingPress: the PLC refuses the fill depth once (before writing it); every other write is real
    await withPressDouble(
      async (cap, tag, value) => {
        if (tag === 'press.FillDepth' && !refused) {
          refused = true;
          throw new LkError('LK_WRITE_FAILED', 'the PLC refused the setpoint');
        }
        return cap.write(tag, value);
      },
      async (w2) => {
        const failed = await w2.propose(proposal({ moves: [{ setpoint: 'press.MainForce', value: '14.5 kN' }, { setpoint: 'press.FillDepth', value: `${depth > 10 ? depth - 0.2 : depth + 0.2} mm` }] }));
        expect(failed.status).toBe('reverted');
        expect(plant('press', 'MainForce')).toBe(14);
        const revertedAt = clock.now();
        const revert = entries({ setpoint: 'press.MainForce' }).filter((e) => e.kind === 'outcome' && e.action === 'setpoint.revert').at(-1)!;
        expect(store.db.prepare('SELECT value, at, audit_seq AS seq FROM setpoint_last_move WHERE setpoint = ?').get('press.MainForce')).toEqual({ value: 14, at: revertedAt, seq: revert.seq });
        // 0.5 kN is within the step (1.5 kN) and slow against the move before the failed vector (over 10 min
        // ago), but 5 s after the revert it is 6 kN/min, over the 3 kN/min of max_rate_per_min
        clock.advance(5_000);
        const fast = await w2.propose(proposal({ moves: [{ setpoint: 'press.MainForce', value: '14.5 kN' }] }));
        expect(fast.status).toBe('denied');
        expect(fast.decisions[0]!.reasons).toEqual(['RATE_TOO_HIGH']);
        expect(plant('press', 'MainForce')).toBe(14);
        clock.advance(60_000); // 0.5 kN in 65 s is under 3 kN/min
        expect((await w2.propose(proposal({ moves: [{ setpoint: 'press.MainForce', value: '14.5 kN' }] }))).status).toBe('written');
        expect(plant('press', 'MainForce')).toBe(14.5);
      },
    );
  });

  it('when a revert fails too, the forward move that stays on the equipment is the last move the rate check sees', async () => {
    later();
    sim.plant.writeSetpoint('press', 'MainForce', 14);
    const depth = plant('press', 'FillDepth') as number;
    // StuckPress: the PLC refuses the fill depth, then refuses the revert of the main force as well
    await withPressDouble(
      async (cap, tag, value) => {
        if (tag === 'press.FillDepth') throw new LkError('LK_WRITE_FAILED', 'the PLC refused the setpoint');
        if (tag === 'press.MainForce' && value === 14) throw new LkError('LK_WRITE_FAILED', 'the PLC refused the revert');
        return cap.write(tag, value);
      },
      async (w2) => {
        const failed = await w2.propose(proposal({ moves: [{ setpoint: 'press.MainForce', value: '14.5 kN' }, { setpoint: 'press.FillDepth', value: `${depth > 10 ? depth - 0.2 : depth + 0.2} mm` }] }));
        expect(failed.status).toBe('failed');
        expect(plant('press', 'MainForce')).toBe(14.5);
        expect(store.db.prepare('SELECT value FROM setpoint_last_move WHERE setpoint = ?').pluck().get('press.MainForce')).toBe(14.5);
        // 0.5 kN more 5 s later is 6 kN/min from where the equipment actually is: too fast
        clock.advance(5_000);
        const fast = await w2.propose(proposal({ moves: [{ setpoint: 'press.MainForce', value: '15 kN' }] }));
        expect(fast.decisions[0]!.reasons).toEqual(['RATE_TOO_HIGH']);
        expect(plant('press', 'MainForce')).toBe(14.5);
      },
    );
  });

  it('a vector is all or nothing: when a later move is refused, the earlier ones are put back', async () => {
    later();
    const dir = mkdtempSync(join(tmpdir(), 'lk-gw-bundle-'));
    try {
      const { cpSync, readFileSync, writeFileSync } = await import('node:fs');
      cpSync(sim.config.policyDir, dir, { recursive: true });
      const f = join(dir, 'agents.yaml');
      writeFileSync(f, readFileSync(f, 'utf8').replace('allow: [press.FillDepth, press.MainForce', 'allow: [coater.SprayRate, press.FillDepth, press.MainForce'));
      const wide = loadPolicyBundle(dir, { site: sim.config.config }).bundle;
      const before = plant('coater', 'SprayRate') as number;
      sim.plant.setSupervisorState('press', 'LOST'); // the press PLC reverts to LKG and refuses setpoints
      const saved = bundle;
      bundle = wide;
      try {
        const out = await writer.propose(proposal({ moves: [{ setpoint: 'coater.SprayRate', value: `${before + 10} g/min` }, { setpoint: 'press.MainForce', value: '13 kN' }] }));
        expect(out.status).toBe('reverted');
        expect(out.error!.code).toBe('LK_WRITE_FAILED');
        expect(plant('coater', 'SprayRate')).toBe(before);
        expect(entries({ kind: 'alarm' }).at(-1)!.action).toBe('setpoint.write_failed');
      } finally {
        bundle = saved;
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('[INV-AUDIT-TX] [P11.10(f)] every intent has its outcome (no write of unknown result)', () => {
    expect(store.audit.openIntents(T)).toEqual([]);
  });
});
