/**
 * The active half of rule R8: `WriteCapability.commandLkg` makes a PLC revert
 * to its last known-good recipe now (SupervisorState := LOST), over OPC UA
 * (press) and Modbus TCP (blender), against the plant simulator's real
 * servers on free loopback ports. The plant's own state is the ground truth.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createModbusConnector, type ModbusConnector } from '../../connectors/modbus/index.js';
import { createOpcUaConnector, type OpcUaConnector } from '../../connectors/opcua/index.js';
import { SUPERVISED } from '../../connectors/sim/index.js';
import type { ConnectorEvent, Sample, WriteCapability } from '../../connectors/types.js';
import type { ModbusConnectionConfig, ModbusEquipmentConfig, OpcUaConnectionConfig, OpcUaEquipmentConfig } from '../../src/config/schema.js';
import { LkError } from '../../src/errors.js';
import { rejectionCode } from '../helpers/codes.js';
import { startTestSimulator, waitFor, type Simulator } from '../helpers/sim.js';

let sim: Simulator;
let dataDir: string;

beforeAll(async () => {
  // A long PLC watchdog: only the commanded revert may put anything back to LKG here.
  sim = await startTestSimulator({ watchdogTimeoutMs: 600_000, scanMs: 20 });
  dataDir = mkdtempSync(join(tmpdir(), 'lk-lkg-'));
});

afterAll(async () => {
  await sim?.close();
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
});

async function rejection(p: Promise<unknown>): Promise<LkError> {
  try {
    await p;
  } catch (e) {
    if (LkError.is(e)) return e;
    throw e;
  }
  throw new Error('expected a rejection');
}

/** A supervised value of every setpoint of `equipment` that differs from its LKG value and lies inside its range. */
function awayFromLkg(equipment: string): Record<string, number> {
  const lkg = sim.plant.supervisor(equipment).lkg.setpoints;
  const out: Record<string, number> = {};
  for (const t of sim.plant.equipment(equipment).tags) {
    if (t.kind !== 'setpoint' || !t.range) continue;
    const v = lkg[t.name]!;
    const step = (t.range.max - t.range.min) / 10;
    out[t.name] = v + step <= t.range.max ? v + step : v - step;
  }
  return out;
}

describe('commandLkg over OPC UA (press)', () => {
  let c: OpcUaConnector;
  let w: WriteCapability;
  const opcua = (): { connection: OpcUaConnectionConfig; equipment: OpcUaEquipmentConfig[] } => {
    const cfg = sim.config.config;
    return {
      connection: { ...(cfg.connections.find((k) => k.protocol === 'opcua') as OpcUaConnectionConfig), keepalive_ms: 500, request_timeout_ms: 2000 },
      equipment: cfg.equipment.filter((e): e is OpcUaEquipmentConfig => e.protocol === 'opcua'),
    };
  };

  beforeAll(async () => {
    const { connection, equipment } = opcua();
    c = createOpcUaConnector({ connection, equipment, url: sim.opcuaUrl, dataDir, backoff: { initialMs: 100, maxMs: 500 } });
    await c.connect();
    w = c.claimWriter();
  });
  afterAll(async () => {
    await c?.close();
  });

  it('[ERR-LKG] [INV-LKG-REVERT] after a supervisory write, reverts the press to its LKG recipe, counts one revert and proves it by read-back', async () => {
    const away = awayFromLkg('press');
    for (const [name, v] of Object.entries(away)) expect((await w.write(`press.${name}`, v)).verified).toBe(true);
    const before = sim.plant.supervisor('press');
    expect(before).toMatchObject({ state: 'ATTENDED', activeRecipe: SUPERVISED });
    expect(sim.plant.setpoints('press')).toMatchObject(away);

    const r = await w.commandLkg('press');
    const lkg = before.lkg;
    expect(r).toMatchObject({ equipment: 'press', state: 'LOST', activeRecipe: lkg.id, lkgRecipe: lkg.id, revertCount: before.revertCount + 1, verified: true });
    expect(typeof r.at).toBe('number');
    expect(sim.plant.setpoints('press')).toEqual(lkg.setpoints);
    expect(sim.plant.supervisor('press')).toMatchObject({ state: 'LOST', activeRecipe: lkg.id, revertCount: before.revertCount + 1 });
    // one equipment only: the coater on the same connection still runs supervised
    expect(sim.plant.supervisor('coater').state).toBe('ATTENDED');
  });

  it('a second command while LOST is harmless: no second revert is counted', async () => {
    const count = sim.plant.supervisor('press').revertCount;
    const r = await w.commandLkg('press');
    expect(r).toMatchObject({ state: 'LOST', revertCount: count, verified: true });
    expect(sim.plant.supervisor('press').revertCount).toBe(count);
  });

  it('the PLC then refuses setpoint writes (LK_PLC_LOST at the PLC → LK_WRITE_FAILED BadInvalidState) until re-armed', async () => {
    const e = await rejection(w.write('press.MainForce', awayFromLkg('press').MainForce!));
    expect(e.code).toBe('LK_WRITE_FAILED');
    expect(e.detail).toMatchObject({ tag: 'press.MainForce', status: 'BadInvalidState' });
    expect(sim.plant.setpoints('press')).toEqual(sim.plant.supervisor('press').lkg.setpoints);
  });

  it('refuses unknown equipment and equipment of another connection (LK_TAG_UNKNOWN); supervisor tags stay out of write()', async () => {
    expect(await rejectionCode(w.commandLkg('nosuch'))).toBe('LK_TAG_UNKNOWN');
    expect(await rejectionCode(w.commandLkg('blender'))).toBe('LK_TAG_UNKNOWN');
    expect(await rejectionCode(w.write('coater.SupervisorState', 1))).toBe('LK_TAG_NOT_WRITABLE');
    expect(sim.plant.supervisor('coater').state).toBe('ATTENDED');
  });

  it('a SupervisorState node the server refuses is LK_WRITE_FAILED with its status; a node that is not a String is never written', async () => {
    const { connection, equipment } = opcua();
    const retag = (node: string): OpcUaEquipmentConfig[] =>
      equipment.map((e) => (e.id !== 'coater' ? e : { ...e, tags: e.tags.map((t) => (t.name === 'SupervisorState' ? { ...t, node_id: node } : t)) }));
    // LkgRecipeId is a read-only String of the PLC; RevertCount a UInt32
    const refused = createOpcUaConnector({ connection, equipment: retag('s=coater.Supervisor.LkgRecipeId'), url: sim.opcuaUrl, dataDir });
    const wrongType = createOpcUaConnector({ connection, equipment: retag('s=coater.Supervisor.RevertCount'), url: sim.opcuaUrl, dataDir });
    try {
      await Promise.all([refused.connect(), wrongType.connect()]);
      const e1 = await rejection(refused.claimWriter().commandLkg('coater'));
      expect(e1.code).toBe('LK_WRITE_FAILED');
      expect(e1.detail).toMatchObject({ status: 'BadNotWritable' });
      const e2 = await rejection(wrongType.claimWriter().commandLkg('coater'));
      expect(e2.code).toBe('LK_WRITE_FAILED');
      expect(e2.detail).toMatchObject({ status: 'BadTypeMismatch', sent: false });
      expect(sim.plant.supervisor('coater')).toMatchObject({ state: 'ATTENDED', revertCount: 0 });
    } finally {
      await Promise.all([refused.close(), wrongType.close()]);
    }
  });

  it('without a connection it is LK_CONN_UNAVAILABLE', async () => {
    const { connection, equipment } = opcua();
    const closed = createOpcUaConnector({ connection, equipment, url: sim.opcuaUrl, dataDir });
    expect(await rejectionCode(closed.claimWriter().commandLkg('coater'))).toBe('LK_CONN_UNAVAILABLE');
    await closed.close();
    expect(sim.plant.supervisor('coater').state).toBe('ATTENDED');
  });

  it('re-arm (commandRearm) while heartbeats arrive: ATTENDED, verified by read-back', async () => {
    // (whether a PLC refuses a re-arm without heartbeats is the PLC's rule, tested with the simulator's watchdog in
    // sim-watchdog; this simulator's watchdog is 10 min long, and a supervisory write gave the press its grace)
    expect(sim.plant.supervisor('press').state).toBe('LOST');
    const beat = sim.plant.supervisor('press').heartbeat;
    c.startHeartbeat();
    try {
      await waitFor(() => sim.plant.supervisor('press').heartbeat !== beat, 30_000);
      expect(await w.commandRearm('press')).toMatchObject({ equipment: 'press', state: 'ATTENDED', verified: true });
      expect(sim.plant.supervisor('press').state).toBe('ATTENDED');
      expect(await rejectionCode(w.commandRearm('nosuch'))).toBe('LK_TAG_UNKNOWN');
    } finally {
      c.stopHeartbeat();
    }
  });
});

describe('commandLkg over Modbus TCP (blender, unit 1)', () => {
  let c: ModbusConnector;
  let w: WriteCapability;
  const events: ConnectorEvent[] = [];
  const modbus = (): { connection: ModbusConnectionConfig; equipment: ModbusEquipmentConfig[] } => {
    const cfg = sim.config.config;
    return {
      connection: { ...(cfg.connections.find((k) => k.protocol === 'modbus') as ModbusConnectionConfig), timeout_ms: 500 },
      equipment: cfg.equipment.filter((e): e is ModbusEquipmentConfig => e.protocol === 'modbus').map((e) => ({ ...e, heartbeat: { period_ms: 50 } })),
    };
  };

  beforeAll(async () => {
    const { connection, equipment } = modbus();
    c = createModbusConnector({ connection, equipment, host: sim.modbusHost, port: sim.modbusPort, backoff: { initialMs: 50, maxMs: 400 } });
    c.on((e) => events.push(e));
    await c.connect();
    w = c.claimWriter();
  });
  afterAll(async () => {
    await c?.close();
  });

  it('[INV-LKG-REVERT] reverts the blender to its LKG recipe while heartbeats and polls share its lane, and proves it by read-back', async () => {
    const away = awayFromLkg('blender');
    for (const [name, v] of Object.entries(away)) expect((await w.write(`blender.${name}`, v)).verified).toBe(true);
    const before = sim.plant.supervisor('blender');
    expect(before).toMatchObject({ state: 'ATTENDED', activeRecipe: SUPERVISED });
    expect(sim.plant.setpoints('blender')).toMatchObject(away);

    // the same unit busy with heartbeats (every 50 ms) and a fast poll of its supervisor and setpoint registers
    c.startHeartbeat();
    const polled: Sample[] = [];
    const sub = await c.subscribe(['blender.Heartbeat', 'blender.SupervisorState', 'blender.Speed'], { intervalMs: 20 }, (s) => polled.push(...s));
    try {
      await waitFor(() => polled.length >= 3, 30_000);
      const [r, reads] = await Promise.all([w.commandLkg('blender'), Promise.all([c.read(['blender.Speed']), c.read(['blender.ActiveRecipe'])])]);
      const lkg = before.lkg;
      expect(r).toMatchObject({ equipment: 'blender', state: 'LOST', activeRecipe: lkg.number, lkgRecipe: lkg.number, revertCount: before.revertCount + 1, verified: true });
      expect(sim.plant.setpoints('blender')).toEqual(lkg.setpoints);
      expect(sim.plant.supervisor('blender')).toMatchObject({ state: 'LOST', activeRecipe: lkg.id, revertCount: before.revertCount + 1 });
      expect(sim.plant.supervisor('fluidbed').state).toBe('ATTENDED');
      // nothing else on the lane was disturbed: every concurrent read and every poll was good, no heartbeat failed
      expect(reads.flat().every((s) => s.quality === 'good')).toBe(true);
      expect(await waitFor(() => polled.some((s) => s.tag === 'blender.SupervisorState' && s.value === 1), 30_000)).toBe(true);
      expect(polled.every((s) => s.quality === 'good')).toBe(true);
      expect(events.filter((e) => e.type === 'heartbeat_failed')).toEqual([]);
    } finally {
      await sub.close();
      c.stopHeartbeat();
    }
  });

  it('a second command while LOST is harmless: no second revert is counted', async () => {
    const count = sim.plant.supervisor('blender').revertCount;
    expect(await w.commandLkg('blender')).toMatchObject({ state: 'LOST', revertCount: count, verified: true });
    expect(sim.plant.supervisor('blender').revertCount).toBe(count);
  });

  it('the PLC then refuses setpoint writes (LK_PLC_LOST at the PLC → exception 4, LK_MODBUS_DEVICE_FAILURE)', async () => {
    expect(await rejectionCode(w.write('blender.Speed', awayFromLkg('blender').Speed!))).toBe('LK_MODBUS_DEVICE_FAILURE');
    expect(sim.plant.setpoints('blender')).toEqual(sim.plant.supervisor('blender').lkg.setpoints);
  });

  it('refuses unknown equipment and equipment of another connection (LK_TAG_UNKNOWN); supervisor tags stay out of write()', async () => {
    expect(await rejectionCode(w.commandLkg('nosuch'))).toBe('LK_TAG_UNKNOWN');
    expect(await rejectionCode(w.commandLkg('press'))).toBe('LK_TAG_UNKNOWN');
    expect(await rejectionCode(w.write('fluidbed.SupervisorState', 1))).toBe('LK_TAG_NOT_WRITABLE');
    expect(sim.plant.supervisor('fluidbed').state).toBe('ATTENDED');
  });

  it('an exception reply is LK_WRITE_FAILED naming it; a silent unit is LK_CONN_TIMEOUT with an unknown outcome', async () => {
    const { connection, equipment } = modbus();
    // SupervisorState mapped onto an unmapped holding register of the fluid bed: the unit answers exception 2
    const moved = equipment.map((e) => (e.id !== 'fluidbed' ? e : { ...e, tags: e.tags.map((t) => (t.name === 'SupervisorState' ? { ...t, address: 5 } : t)) }));
    const other = createModbusConnector({ connection, equipment: moved, host: sim.modbusHost, port: sim.modbusPort });
    try {
      await other.connect();
      const cap = other.claimWriter();
      const e = await rejection(cap.commandLkg('fluidbed'));
      expect(e.code).toBe('LK_WRITE_FAILED');
      expect(e.detail).toMatchObject({ status: 'LK_MODBUS_ILLEGAL_ADDRESS', modbusCode: 2 });
      sim.faults.muteModbusUnit(2, true);
      const t = await rejection(cap.commandLkg('fluidbed'));
      expect(t.code).toBe('LK_CONN_TIMEOUT');
      expect(t.detail).toMatchObject({ outcome: 'unknown' });
    } finally {
      sim.faults.clear();
      await other.close();
    }
    expect(sim.plant.supervisor('fluidbed')).toMatchObject({ state: 'ATTENDED', revertCount: 0 });
  });

  it('re-arm (commandRearm) while heartbeats arrive: ATTENDED, verified by read-back, on the LKG recipe still', async () => {
    // (the refusal without heartbeats is shown over OPC UA above: this simulator's watchdog is 10 min long, and
    // the blender had heartbeats in the first test)
    expect(sim.plant.supervisor('blender').state).toBe('LOST');
    const beat = sim.plant.supervisor('blender').heartbeat;
    c.startHeartbeat();
    try {
      await waitFor(() => sim.plant.supervisor('blender').heartbeat !== beat, 30_000);
      const r = await w.commandRearm('blender');
      expect(r).toMatchObject({ equipment: 'blender', state: 'ATTENDED', verified: true, activeRecipe: sim.plant.supervisor('blender').lkg.number });
      expect(sim.plant.supervisor('blender').state).toBe('ATTENDED');
      // the LKG recipe stays until a supervisory write moves a setpoint: a re-arm moves nothing
      expect(sim.plant.setpoints('blender')).toEqual(sim.plant.supervisor('blender').lkg.setpoints);
    } finally {
      c.stopHeartbeat();
    }
  });
});
