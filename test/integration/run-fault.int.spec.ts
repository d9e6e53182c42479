/**
 * Rule R8 with the run engine: linekeeper in a child process (test/fault/run-daemon.ts) supervises a plant
 * simulator that runs HERE, so killing the daemon leaves the PLCs running, as on a real line. This process
 * also plays the people at the line: it starts phases at the HMI, re-arms PLCs, and (through the daemon's
 * own API, by the harness) resumes runs and signs pending writes.
 *
 * (a) SIGKILL while step 03 runs, right after a supervised write: every PLC reverts to its LKG recipe by
 *     itself, the audit trail still verifies, and the next daemon records the run INTERRUPTED in that step;
 *     resumed by a person, the step runs again from its start with fresh policy decisions — nothing replayed.
 * (b) The Modbus link cut by a black-hole proxy during the run: the blender and the fluid bed revert, the
 *     OPC UA equipment does not; the daemon records the reverts once it can read the PLCs again.
 * Deadlines are generous and only bound waiting; no assertion is about speed.
 */
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SUPERVISED, type Simulator } from '../../connectors/sim/index.js';
import { queryAudit, verifyStore, type AuditEntry } from '../../src/audit/index.js';
import { loadConfig } from '../../src/config/load.js';
import { setAutonomy } from '../../src/store/autonomy-store.js';
import { loadPolicyBundle } from '../../src/config/policy-bundle.js';
import { RunStore } from '../../src/store/run-store.js';
import { openStore } from '../../src/store/store.js';
import { DaemonChild, rearmAll, recordReverts, startPlant, writeSiteConfig } from '../fault/daemon-child.js';
import { waitFor } from '../helpers/sim.js';
import { startTcpProxy, type TcpProxy } from '../helpers/tcp-proxy.js';

const T = 'acme-pharma';
const WATCHDOG_MS = 3000;
/** Hang guard per test: it starts two or three daemon children, each 20–90 s to start on a loaded machine (when they ran under tsx). */
const FAULT_TEST_MS = 600_000;
/** Only bounds waiting: a watchdog timeout and a scan, with a wide margin for a loaded two-core machine. */
const REVERT_DEADLINE_MS = WATCHDOG_MS + 50 + 20_000;
/** Hang guard per awaited line: a daemon child's start took 20–90 s on a loaded two-core machine (under tsx). */
const STEP_MS = 150_000;

let sim: Simulator;
let root: string;
let template: string;
const children: DaemonChild[] = [];

/** A data directory with the models seeded and agent.blend_dispense raised to L2 (its moves then wait for a signature instead of being recommendations). */
function dataDir(name: string): string {
  const d = join(root, name);
  cpSync(template, d, { recursive: true });
  return d;
}

function daemon(config: string, data: string, args: string[] = []): DaemonChild {
  const c = DaemonChild.spawn(config, data, args);
  children.push(c);
  return c;
}

function entries(data: string, tenant: string): AuditEntry[] {
  const store = openStore({ dataDir: data, readonly: true });
  try {
    const out: AuditEntry[] = [];
    let cursor: string | undefined;
    do {
      const page = queryAudit(store.db, tenant, {}, { limit: 1000, ...(cursor ? { cursor } : {}) });
      out.push(...page.entries);
      cursor = page.next;
    } while (cursor);
    return out;
  } finally {
    store.close();
  }
}

function runEvents(data: string, run: string): ReturnType<RunStore['events']> {
  const store = openStore({ dataDir: data, readonly: true });
  try {
    return new RunStore(store.db).events(run);
  } finally {
    store.close();
  }
}

function verified(data: string): boolean {
  const store = openStore({ dataDir: data, readonly: true });
  try {
    return verifyStore(store).ok;
  } finally {
    store.close();
  }
}

beforeAll(async () => {
  sim = await startPlant({ timeScale: 60, watchdogTimeoutMs: WATCHDOG_MS });
  root = mkdtempSync(join(tmpdir(), 'lk-run-fault-'));
  template = join(root, 'template');
  const config = writeSiteConfig(root, { opcua: sim.opcuaUrl, modbus: sim.modbusEndpoint });
  const seed = daemon(config, template, ['--seed-only']);
  expect(await seed.exited).toEqual({ code: 0, signal: null });
  // what PUT /autonomy does for a signed-in QA reviewer, on the template's database before any daemon runs on it
  const loaded = loadConfig(config);
  const store = openStore({ dataDir: template });
  try {
    const raised = setAutonomy(store, loadPolicyBundle(loaded.policyDir, { site: loaded.config }).bundle, {
      tenant: T, agent: 'agent.blend_dispense', to: 'L2', by: { person: 'm.rossi', role: 'qa_reviewer' }, changeRef: 'CR-FAULT-TEST', reason: 'fault test: blend moves are signed, then written',
    });
    expect(raised.type).toBe('autonomy_raised');
  } finally {
    store.close();
  }
}, 300_000); // hang guard: a seed-only daemon child, then the autonomy change

afterAll(async () => {
  for (const c of children) if (c.alive) c.proc.kill('SIGKILL');
  await Promise.all(children.map((c) => c.exited));
  await sim?.close();
  if (root) rmSync(root, { recursive: true, force: true });
});

describe('SIGKILL of the daemon while a step runs', () => {
  it('[R8] [ERR-LKG] [A11.16] PLCs revert to LKG by themselves, the trail verifies, the next daemon records the run INTERRUPTED in that step, and the resumed step decides afresh', { timeout: FAULT_TEST_MS }, async () => {
    const data = dataDir('kill');
    const config = writeSiteConfig(join(root, 'kill'), { opcua: sim.opcuaUrl, modbus: sim.modbusEndpoint });
    await rearmAll(sim, REVERT_DEADLINE_MS);

    const first = daemon(config, data);
    const running = await first.state('03', 'RUNNING', STEP_MS);
    const runId = running['run'] as string;
    sim.plant.startPhase('BLEND'); // the operator at the HMI starts the phase the engine waits for
    await first.line((l) => l.t === 'tool' && l['tool'] === 'plc.write_setpoint' && String(l['summary']).startsWith('pending'), STEP_MS, 'the blend recipe move waiting for QA');
    first.send({ cmd: 'approve' });
    expect(await first.line((l) => l.t === 'approved', STEP_MS, 'the signed move')).toMatchObject({ status: 'written', needs: 'qa' });
    const lkg = Object.fromEntries(sim.plant.equipmentIds.map((eq) => [eq, sim.plant.supervisor(eq).lkg]));
    expect(sim.plant.setpoints('blender')).not.toEqual(lkg['blender']!.setpoints);
    expect(sim.plant.supervisor('blender')).toMatchObject({ state: 'ATTENDED', activeRecipe: SUPERVISED });

    const reverts = recordReverts(sim);
    const killedAt = first.kill();
    expect(await first.exited).toEqual({ code: null, signal: 'SIGKILL' });
    const all = sim.plant.equipmentIds;
    expect(await waitFor(() => all.every((eq) => reverts.events.some((e) => e.equipment === eq)), REVERT_DEADLINE_MS, 50)).toBe(true);
    reverts.stop();
    for (const e of reverts.events) {
      expect(e).toMatchObject({ reason: 'watchdog', recipe: lkg[e.equipment]!.id });
      expect(e.at).toBeGreaterThanOrEqual(killedAt); // the revert follows the kill, never precedes it
    }
    for (const eq of all) {
      expect(sim.plant.supervisor(eq)).toMatchObject({ state: 'LOST', activeRecipe: lkg[eq]!.id });
      expect(sim.plant.setpoints(eq)).toEqual(lkg[eq]!.setpoints);
    }
    expect(verified(data)).toBe(true);
    const boundary = entries(data, T).at(-1)!.seq; // the tenant chain as the killed daemon left it

    const second = daemon(config, data, ['--no-start']);
    const interrupted = await second.state(null, 'INTERRUPTED', STEP_MS);
    expect(interrupted).toMatchObject({ run: runId });
    expect(String(interrupted['reason'])).toContain('03 blend.uniformity');
    expect(await second.state('03', 'INTERRUPTED', STEP_MS)).toMatchObject({ run: runId, attempt: 1 });
    await second.line((l) => l.t === 'ready', STEP_MS, 'ready');
    // nothing moved while the PLCs were LOST: the new daemon wrote nothing by itself
    for (const eq of all) expect(sim.plant.setpoints(eq)).toEqual(lkg[eq]!.setpoints);

    await rearmAll(sim, REVERT_DEADLINE_MS); // a person at the HMI, once the new heartbeats arrive
    const mark = second.lines.length;
    second.send({ cmd: 'resume' });
    expect(await second.state('03', 'RUNNING', STEP_MS, mark)).toMatchObject({ attempt: 2 });
    await second.line((l) => l.t === 'tool' && l['tool'] === 'plc.write_setpoint' && String(l['summary']).startsWith('pending'), STEP_MS, 'the move proposed again', mark);
    second.send({ cmd: 'approve' });
    expect(await second.line((l) => l.t === 'approved', STEP_MS, 'the move signed again', mark)).toMatchObject({ status: 'written' });
    second.send({ cmd: 'stop' });
    expect(await second.exited).toEqual({ code: 0, signal: null });

    // no step lost or duplicated: 01 and 02 ran once, 03 twice (its second attempt by a person's resume), the rest never
    const store = openStore({ dataDir: data, readonly: true });
    try {
      const runs = new RunStore(store.db);
      const steps = runs.steps(runId);
      expect(steps.map((s) => [s.seq, s.status, s.attempt])).toEqual([
        ['01', 'SUCCEEDED', 1], ['02', 'SUCCEEDED', 1], ['03', 'INTERRUPTED', 2],
        ...['04', '05', '06', '07', '08', '09', '10'].map((seq) => [seq, 'PENDING', 0]),
      ]);
      const calls = runs.toolCalls(runId, 0, 10_000).filter((c) => c.kind === 'call');
      expect(calls.filter((c) => c.tool === 'mes.read_batch_record')).toHaveLength(1);
      expect(calls.filter((c) => c.tool === 'twin.simulate')).toHaveLength(1);
      expect(calls.filter((c) => c.tool === 'plc.write_setpoint')).toHaveLength(2);
    } finally {
      store.close();
    }
    const trail = entries(data, T);
    const step03 = trail.filter((e) => e.action === 'step.status' && e.subject.run === runId && e.subject.agent === 'agent.blend_dispense');
    expect(step03.map((e) => [e.old, e.new, e.actor])).toEqual([
      ['PENDING', 'RUNNING', 'system'], ['RUNNING', 'INTERRUPTED', 'system'], ['INTERRUPTED', 'RUNNING', 'o.operator'], ['RUNNING', 'INTERRUPTED', 'system'],
    ]);
    // no write replayed: every equipment write after the kill has its own fresh decision, made after the kill
    const after = trail.filter((e) => e.seq > boundary);
    const intents = after.filter((e) => e.kind === 'intent' && e.action === 'setpoint.write');
    expect(intents.map((e) => e.subject.setpoint).sort()).toEqual(['blender.Speed', 'blender.TargetRevolutions']);
    for (const i of intents) {
      const decision = (i.args as { decision: string }).decision;
      const d = after.find((e) => e.action === 'policy.evaluate' && (e.result as { id?: string }).id === decision);
      expect(d, `decision ${decision} of intent #${i.seq}`).toBeDefined();
      expect(d!.seq).toBeLessThan(i.seq);
    }
    expect(trail.filter((e) => e.kind === 'intent' && e.action === 'setpoint.write' && e.seq <= boundary)).toHaveLength(2);
    expect(verified(data)).toBe(true);
  });
});

describe('the Modbus link cut during a run (black-hole proxy)', () => {
  let modbusProxy: TcpProxy;
  let opcuaProxy: TcpProxy;
  beforeAll(async () => {
    modbusProxy = await startTcpProxy({ target: { host: sim.modbusHost, port: sim.modbusPort } });
    opcuaProxy = await startTcpProxy({ target: { host: '127.0.0.1', port: sim.opcuaPort } });
  });
  afterAll(async () => {
    await modbusProxy?.close();
    await opcuaProxy?.close();
  });

  it('[R8] [ERR-LKG] the blender and the fluid bed revert to LKG, the OPC UA equipment does not, the daemon records the reverts once it reads them again, and nothing moves a LOST PLC', { timeout: FAULT_TEST_MS }, async () => {
    const data = dataDir('cut');
    const config = writeSiteConfig(join(root, 'cut'), { opcua: opcuaProxy.via(sim.opcuaUrl), modbus: modbusProxy.url() });
    sim.plant.startPhase('IDLE'); // the engine waits in step 03 until the operator starts BLEND
    // every PLC starts LOST (a commanded revert), so the daemon finds them so and sees a person re-arm them
    for (const eq of sim.plant.equipmentIds) sim.plant.setSupervisorState(eq, 'LOST');
    const child = daemon(config, data);
    await child.line((l) => l.t === 'ready', STEP_MS, 'ready');
    await rearmAll(sim, REVERT_DEADLINE_MS);
    const runId = (await child.state('03', 'RUNNING', STEP_MS))['run'] as string;
    const behind = ['blender', 'fluidbed'];
    const siteSince = (action: string, since: number): string[] =>
      entries(data, 'site').filter((e) => e.action === action && Date.parse(e.ts) >= since).map((e) => String((e.args as { equipment?: string }).equipment)).sort();
    // the daemon has seen the re-arm of the Modbus PLCs before the link goes
    expect(await waitFor(() => behind.every((eq) => siteSince('watchdog.rearm', 0).includes(eq)), REVERT_DEADLINE_MS, 100)).toBe(true);

    const reverts = recordReverts(sim);
    const mark = child.lines.length;
    const cutAt = Date.now();
    modbusProxy.pause();
    expect(await waitFor(() => behind.every((eq) => sim.plant.supervisor(eq).state === 'LOST'), REVERT_DEADLINE_MS, 50)).toBe(true);
    for (const eq of behind) {
      const lkg = sim.plant.supervisor(eq).lkg;
      const e = reverts.events.find((x) => x.equipment === eq);
      expect(e).toMatchObject({ reason: 'watchdog', recipe: lkg.id });
      expect(e!.at).toBeGreaterThanOrEqual(cutAt);
      expect(sim.plant.supervisor(eq).activeRecipe).toBe(lkg.id);
      expect(sim.plant.setpoints(eq)).toEqual(lkg.setpoints);
    }
    const duringCut = child.lines.slice(mark);

    const resumedAt = Date.now();
    modbusProxy.resume();
    // the daemon could not read the PLCs behind the cut: it records their reverts once the link is back
    expect(await waitFor(() => siteSince('watchdog.lkg_revert', cutAt).join() === behind.join(), REVERT_DEADLINE_MS, 100)).toBe(true);

    // the operator starts BLEND; the units are still LOST (only a person re-arms them)
    const mark2 = child.lines.length;
    sim.plant.startPhase('BLEND');
    // the engine reads the blender's supervisor state before it proposes: LOST, so no move is sent to it (the
    // genealogy says why) and no plc.write_setpoint call is made while it is LOST
    expect(await waitFor(() => runEvents(data, runId).some((e) => e.kind === 'watchdog' && /blender: PLC is LOST/.test(e.summary)), STEP_MS, 100)).toBe(true);
    expect(child.lines.slice(mark2).filter((l) => l.t === 'tool' && l['tool'] === 'plc.write_setpoint')).toEqual([]);
    for (const eq of behind) {
      const lkg = sim.plant.supervisor(eq).lkg;
      expect(sim.plant.supervisor(eq)).toMatchObject({ state: 'LOST', activeRecipe: lkg.id });
      expect(sim.plant.setpoints(eq)).toEqual(lkg.setpoints);
    }
    // a black hole on one link only: a watchdog period after the cut, the equipment on the other keeps its supervisor
    await new Promise((r) => setTimeout(r, Math.max(0, cutAt + WATCHDOG_MS + 100 - Date.now())));
    for (const eq of sim.plant.equipmentIds.filter((x) => !behind.includes(x))) expect(sim.plant.supervisor(eq).state).toBe('ATTENDED');
    reverts.stop();
    expect(reverts.events.map((e) => e.equipment).sort()).toEqual(behind);
    child.send({ cmd: 'stop' });
    expect(await child.exited).toEqual({ code: 0, signal: null });
    expect(verified(data)).toBe(true);
    // The records around the cut, for a reader: shown with LK_FAULT_VERBOSE=1.
    if (!process.env['LK_FAULT_VERBOSE']) return;
    const show = (e: AuditEntry): unknown[] => [e.seq, e.ts.slice(11, 23), e.kind, e.action, e.subject.setpoint ?? '', e.reason ?? '', JSON.stringify(e.args ?? {}).slice(0, 100)];
    process.stdout.write(`run-fault (b) cut ${new Date(cutAt).toISOString()}, link back ${new Date(resumedAt).toISOString()}\n`);
    process.stdout.write(`run-fault (b) daemon lines during the cut: ${JSON.stringify(duringCut)}\n`);
    process.stdout.write(`run-fault (b) daemon lines after BLEND: ${JSON.stringify(child.lines.slice(mark2))}\n`);
    process.stdout.write(`run-fault (b) site chain from the cut: ${JSON.stringify(entries(data, 'site').filter((e) => Date.parse(e.ts) >= cutAt).map(show))}\n`);
    process.stdout.write(`run-fault (b) tenant chain from the cut: ${JSON.stringify(entries(data, T).filter((e) => Date.parse(e.ts) >= cutAt).map(show))}\n`);
  });
});
