/**
 * The PLC half of rule R8: when the supervisor's heartbeat stops — the client
 * stops writing, or the supervisor process is killed outright — the simulated
 * equipment reverts to its last known-good recipe by itself, never before the
 * watchdog timeout, and stays there until re-armed.
 *
 * That the revert comes exactly at the timeout is a property of the plant's
 * logic, asserted on a manual clock in test/unit/sim-plant.unit.spec.ts. Here,
 * over real OPC UA / Modbus sockets on a machine that may be loaded, the test
 * asserts what stays true at any speed: heartbeats hold the recipe, no revert
 * before the timeout has passed since the last beat was sent, and a revert
 * that comes (waited for with a hang guard, not a deadline).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import m from 'modbus-serial';
import { AttributeIds, DataType } from 'node-opcua';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rawOpcUaSession, startTestSimulator, waitFor, type RawOpcUaSession, type Simulator } from '../helpers/sim.js';
import { childScript } from '../helpers/bin.js';

// Long enough that a loaded box's event-loop stalls (the simulator shares this process) do not
// trip the watchdog while heartbeats still arrive every 100 ms.
const TIMEOUT_MS = 1500;
const SCAN_MS = 50;
/** Hang guard for the revert: > 10× the timeout; fails only if the watchdog never trips. */
const REVERT_GUARD_MS = 20_000;

let sim: Simulator;

beforeAll(async () => {
  sim = await startTestSimulator({ timeScale: 60, watchdogTimeoutMs: TIMEOUT_MS, scanMs: SCAN_MS });
});

afterAll(async () => {
  await sim?.close();
});

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/**
 * Beat every periodMs until stopped; stop() returns when the last beat was sent. The plant
 * receives it no earlier, so no revert may come before that time + the timeout, at any load.
 */
function heartbeater(beat: (n: number) => Promise<void>, periodMs = 100): { stop(): Promise<number>; acked(): number } {
  let n = 0;
  let acked = 0;
  let lastSent = 0;
  let running = true;
  const loop = (async () => {
    while (running) {
      n += 1;
      lastSent = Date.now();
      await beat(n);
      acked += 1;
      await sleep(periodMs);
    }
  })();
  return {
    acked: () => acked,
    async stop() {
      running = false;
      await loop;
      return lastSent;
    },
  };
}

describe('PLC watchdog over OPC UA (press)', () => {
  let raw: RawOpcUaSession;
  beforeAll(async () => {
    raw = await rawOpcUaSession(sim);
  });
  afterAll(async () => {
    await raw?.close();
  });

  const read = async (id: string): Promise<unknown> => (await raw.session.read({ nodeId: raw.nodeId(id), attributeId: AttributeIds.Value })).value.value;
  const write = async (id: string, dataType: DataType, value: unknown): Promise<string> =>
    (await raw.session.write({ nodeId: raw.nodeId(id), attributeId: AttributeIds.Value, value: { value: { dataType, value } } })).name;
  const beat = async (n: number): Promise<void> => {
    expect(await write('press.Supervisor.Heartbeat', DataType.UInt32, n)).toBe('Good');
  };

  it('holds the supervised recipe while heartbeats arrive, reverts by itself (never before the timeout) when they stop, re-arms only with heartbeats', async () => {
    const hb = heartbeater(beat);
    expect(await waitFor(() => hb.acked() >= 1, REVERT_GUARD_MS)).toBe(true); // hang guard
    expect(await write('press.Setpoints.MainForce', DataType.Double, 20)).toBe('Good');
    await sleep(1.5 * TIMEOUT_MS); // more than one timeout: only the beats can have held it
    expect(await read('press.Supervisor.SupervisorState')).toBe('ATTENDED');
    expect(await read('press.Supervisor.ActiveRecipe')).toBe('SUPERVISED');
    expect(await read('press.Setpoints.MainForce')).toBe(20);

    const lastBeat = await hb.stop();
    expect(await waitFor(() => sim.plant.supervisor('press').state === 'LOST', REVERT_GUARD_MS, 5)).toBe(true);
    expect(Date.now() - lastBeat).toBeGreaterThanOrEqual(TIMEOUT_MS);

    expect(await read('press.Supervisor.SupervisorState')).toBe('LOST');
    expect(await read('press.Supervisor.RevertCount')).toBe(1);
    expect(await read('press.Supervisor.ActiveRecipe')).toBe(await read('press.Supervisor.LkgRecipeId'));
    expect(await read('press.Setpoints.MainForce')).toBe(sim.plant.supervisor('press').lkg.setpoints.MainForce);
    expect(await write('press.Setpoints.MainForce', DataType.Double, 20)).toBe('BadInvalidState');
    expect(await write('press.Supervisor.SupervisorState', DataType.String, 'ATTENDED')).toBe('BadInvalidState');

    const again = heartbeater(beat);
    try {
      expect(await waitFor(() => again.acked() >= 1, REVERT_GUARD_MS)).toBe(true); // hang guard
      expect(await write('press.Supervisor.SupervisorState', DataType.String, 'ATTENDED')).toBe('Good');
      expect(await read('press.Supervisor.SupervisorState')).toBe('ATTENDED');
      expect(await write('press.Setpoints.MainForce', DataType.Double, 15)).toBe('Good');
      expect(await read('press.Supervisor.ActiveRecipe')).toBe('SUPERVISED');
    } finally {
      await again.stop();
    }
  });
});

describe('PLC watchdog over Modbus (blender, unit 1)', () => {
  const ModbusRTU = m.default;
  let client: InstanceType<typeof ModbusRTU>;
  beforeAll(async () => {
    client = new ModbusRTU();
    client.setTimeout(1000);
    await client.connectTCP(sim.modbusHost, { port: sim.modbusPort });
    client.setID(1);
  });
  afterAll(async () => {
    await new Promise<void>((r) => (client?.isOpen ? client.close(() => r()) : r()));
  });
  const f32regs = (v: number): number[] => {
    const b = Buffer.alloc(4);
    b.writeFloatBE(v, 0);
    return [b.readUInt16BE(0), b.readUInt16BE(2)];
  };
  const f32 = (r: number[]): number => {
    const b = Buffer.alloc(4);
    b.writeUInt16BE(r[0]!, 0);
    b.writeUInt16BE(r[1]!, 2);
    return b.readFloatBE(0);
  };
  const code = async (p: Promise<unknown>): Promise<number | undefined> => p.then(() => undefined, (e: { modbusCode?: number }) => e.modbusCode);
  const beat = async (n: number): Promise<void> => {
    await client.writeRegisters(0, [Math.floor(n / 65536), n % 65536]);
  };

  it('holds, reverts by itself (never before the timeout), refuses writes while LOST (exception 4), re-arms with 0', async () => {
    const hb = heartbeater(beat);
    expect(await waitFor(() => hb.acked() >= 1, REVERT_GUARD_MS)).toBe(true); // hang guard
    await client.writeRegisters(100, f32regs(30));
    await sleep(1.5 * TIMEOUT_MS); // more than one timeout: only the beats can have held it
    let h = (await client.readHoldingRegisters(0, 12)).data;
    expect(h[4]).toBe(0);
    expect(h[8]! * 65536 + h[9]!).toBe(0); // SUPERVISED
    expect(f32((await client.readHoldingRegisters(100, 2)).data)).toBe(30);

    const lastBeat = await hb.stop();
    expect(await waitFor(() => sim.plant.supervisor('blender').state === 'LOST', REVERT_GUARD_MS, 5)).toBe(true);
    expect(Date.now() - lastBeat).toBeGreaterThanOrEqual(TIMEOUT_MS);

    h = (await client.readHoldingRegisters(0, 12)).data;
    expect(h[4]).toBe(1);
    expect(h[6]! * 65536 + h[7]!).toBe(1);
    expect(h[8]! * 65536 + h[9]!).toBe(h[10]! * 65536 + h[11]!);
    expect(f32((await client.readHoldingRegisters(100, 2)).data)).toBe(sim.plant.supervisor('blender').lkg.setpoints.Speed);
    expect(await code(client.writeRegisters(100, f32regs(30)))).toBe(4);
    expect(await code(client.writeRegister(4, 0))).toBe(4);

    const again = heartbeater(beat);
    try {
      expect(await waitFor(() => again.acked() >= 1, REVERT_GUARD_MS)).toBe(true); // hang guard
      await client.writeRegister(4, 0);
      expect((await client.readHoldingRegisters(4, 1)).data[0]).toBe(0);
      await client.writeRegisters(100, f32regs(25));
      expect(sim.plant.read('blender', 'Speed')).toBe(25);
    } finally {
      await again.stop();
    }
  });
});

describe('PLC watchdog when the supervisor process is killed (SIGKILL)', () => {
  const children: ChildProcess[] = [];
  const pki = mkdtempSync(join(tmpdir(), 'lk-hb-writer-pki-'));
  afterAll(() => {
    for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
    rmSync(pki, { recursive: true, force: true });
  });

  const spawnWriter = async (args: string[]): Promise<ChildProcess> => {
    const child = spawn(process.execPath, [...childScript('test/fault/heartbeat-writer.ts'), ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    children.push(child);
    let err = '';
    child.stderr?.on('data', (d: Buffer) => (err += d.toString()));
    await new Promise<void>((resolve, reject) => {
      child.stdout?.on('data', (d: Buffer) => d.toString().includes('ready') && resolve());
      child.once('exit', (c) => reject(new Error(`heartbeat writer exited ${c}: ${err}`)));
    });
    return child;
  };

  const killAndRevert = async (child: ChildProcess, equipment: string): Promise<void> => {
    child.kill('SIGKILL');
    const lost = await waitFor(() => sim.plant.supervisor(equipment).state === 'LOST', REVERT_GUARD_MS, 5);
    expect(lost, `${equipment} reverted`).toBe(true);
  };

  it('reverts an OPC UA equipment (coater) and a Modbus equipment (fluid bed) by themselves after the kill', async () => {
    const [opc, mb] = await Promise.all([
      spawnWriter(['opcua', sim.opcuaUrl, sim.namespaceUri, 'coater', pki, '100']),
      spawnWriter(['modbus', sim.modbusEndpoint, '2', '100']),
    ]);
    sim.plant.writeSetpoint('coater', 'SprayRate', 200);
    sim.plant.writeSetpoint('fluidbed', 'InletAirTemp', 70);
    await sleep(2 * TIMEOUT_MS);
    expect(sim.plant.supervisor('coater').state).toBe('ATTENDED');
    expect(sim.plant.supervisor('fluidbed').state).toBe('ATTENDED');
    const revertsBefore = sim.plant.supervisor('coater').revertCount;

    await Promise.all([killAndRevert(opc, 'coater'), killAndRevert(mb, 'fluidbed')]);
    expect(sim.plant.supervisor('coater').revertCount).toBe(revertsBefore + 1);
    expect(sim.plant.read('coater', 'SprayRate')).toBe(sim.plant.supervisor('coater').lkg.setpoints.SprayRate);
    expect(sim.plant.read('fluidbed', 'InletAirTemp')).toBe(sim.plant.supervisor('fluidbed').lkg.setpoints.InletAirTemp);
    expect(sim.plant.read('coater', 'ActiveRecipe')).toBe('LKG-coater-0007');
  });
});
