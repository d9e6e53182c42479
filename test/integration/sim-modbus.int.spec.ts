import m from 'modbus-serial';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { startTestSimulator, waitFor, type Simulator } from '../helpers/sim.js';

const ModbusRTU = m.default;
type Client = InstanceType<typeof ModbusRTU>;

let sim: Simulator;
let client: Client;

// independent decoders, written from the register map rather than imported from the simulator
const f32 = (hi: number, lo: number): number => {
  const b = Buffer.alloc(4);
  b.writeUInt16BE(hi, 0);
  b.writeUInt16BE(lo, 2);
  return b.readFloatBE(0);
};
const f32regs = (v: number): number[] => {
  const b = Buffer.alloc(4);
  b.writeFloatBE(v, 0);
  return [b.readUInt16BE(0), b.readUInt16BE(2)];
};
const i16 = (r: number): number => (r >= 0x8000 ? r - 0x10000 : r);
const u32 = (hi: number, lo: number): number => hi * 65536 + lo;

const exceptionOf = async (p: Promise<unknown>): Promise<number | undefined> => {
  try {
    await p;
  } catch (e) {
    return (e as { modbusCode?: number }).modbusCode;
  }
  return undefined;
};

// The plant runs on a ManualClock, so it stands still between a protocol read and the ground truth it is
// compared with (on wall time a PLC scan with fresh noise can fall in between); tests that need the
// process to move advance the clock themselves.
const clock = new ManualClock();

beforeAll(async () => {
  sim = await startTestSimulator({ clock, timeScale: 60, watchdogTimeoutMs: 60_000 });
  client = new ModbusRTU();
  client.setTimeout(1000);
  await client.connectTCP(sim.modbusHost, { port: sim.modbusPort });
});

afterAll(async () => {
  await new Promise<void>((r) => (client?.isOpen ? client.close(() => r()) : r()));
  await sim?.close();
});

describe('simulator Modbus TCP server', () => {
  it('fluid bed input registers decode per the map: float32 BE, int16 × 0.1, float32 LE word order', async () => {
    client.setID(2);
    const { data } = await client.readInputRegisters(0, 7);
    const [r0, r1, r2, r3, r4, r5, r6] = data as [number, number, number, number, number, number, number];
    const truth = sim.plant.snapshot('fluidbed');
    expect(f32(r0, r1)).toBeCloseTo(truth.InletAirTempActual as number, 1);
    expect(i16(r2) * 0.1).toBeCloseTo(truth.ProductTemp as number, 0);
    // Lod is low word first: decoding it big-endian gives nonsense, little-endian gives a moisture
    const lod = f32(r4, r3);
    expect(lod).toBeGreaterThan(0.5);
    expect(lod).toBeLessThan(30);
    expect(lod).toBeCloseTo(truth.Lod as number, 1);
    expect(f32(r5, r6)).toBeGreaterThanOrEqual(0);
  });

  it('meters: blender int32 power in DCBA order and float64 energy, fluid bed int32 dew point × 0.01 below zero', async () => {
    // two process minutes of blending, so the motor draws power and the energy meter has counted
    for (let t = 0; t < 2000; t += 50) {
      clock.advance(50);
      sim.plant.step();
    }
    client.setID(1);
    const b = (await client.readInputRegisters(6, 6)).data;
    const bt = sim.plant.snapshot('blender');
    client.setID(2);
    const f = (await client.readInputRegisters(7, 2)).data;
    const ft = sim.plant.snapshot('fluidbed');
    const bytes = (regs: readonly number[]): Buffer => Buffer.from(regs.flatMap((r) => [r >> 8, r & 0xff]));
    // the power meter is a little-endian device: the wire bytes are the value's bytes least significant first
    const power = bytes(b.slice(0, 2)).readInt32LE(0) / 1000;
    expect(bytes(b.slice(0, 2)).readInt32BE(0) / 1000).not.toBeCloseTo(power, 0); // so BE decoding is wrong
    // the plant stands still between the read and the snapshot: only the register's quantisation separates them
    expect(power).toBeGreaterThan(2);
    expect(Math.abs(power - (bt.MotorPower as number))).toBeLessThanOrEqual(0.0005 + 1e-9);
    const energy = bytes(b.slice(2, 6)).readDoubleBE(0);
    expect(energy).toBeGreaterThan(0);
    expect(energy).toBe(bt.MotorEnergy);
    const dew = bytes(f).readInt32BE(0) / 100;
    expect(dew).toBeLessThan(0);
    expect(Math.abs(dew - (ft.InletDewPoint as number))).toBeLessThanOrEqual(0.005 + 1e-9);
  });

  it('supervisor holding registers: watchdog timeout, ATTENDED, recipe numbers', async () => {
    client.setID(1);
    const { data } = await client.readHoldingRegisters(0, 12);
    expect(u32(data[2]!, data[3]!)).toBe(60_000);
    expect(data[4]).toBe(0);
    expect(u32(data[8]!, data[9]!)).toBe(7);
    expect(u32(data[10]!, data[11]!)).toBe(7);
  });

  it('writes a float32 setpoint with FC16, reads it back, and the process follows', async () => {
    client.setID(1);
    await client.writeRegisters(100, f32regs(30));
    const back = await client.readHoldingRegisters(100, 2);
    expect(f32(back.data[0]!, back.data[1]!)).toBe(30);
    expect(sim.plant.read('blender', 'Speed')).toBe(30);
    const recipe = await client.readHoldingRegisters(8, 2);
    expect(u32(recipe.data[0]!, recipe.data[1]!)).toBe(0); // SUPERVISED
    expect(
      await waitFor(async () => {
        clock.advance(200);
        sim.plant.step();
        const r = await client.readInputRegisters(0, 2);
        return f32(r.data[0]!, r.data[1]!) > 27;
      }, 3000),
    ).toBe(true);
  });

  it('refuses out-of-range values (exception 3), half a float (3), read-only and unmapped registers (2), unknown units (11)', async () => {
    client.setID(2);
    expect(await exceptionOf(client.writeRegisters(100, f32regs(81)))).toBe(3);
    expect(await exceptionOf(client.writeRegisters(100, f32regs(Number.NaN)))).toBe(3);
    expect(await exceptionOf(client.writeRegister(100, 0x4200))).toBe(3);
    expect(await exceptionOf(client.writeRegisters(6, [0, 0]))).toBe(2); // RevertCount is the PLC's
    expect(await exceptionOf(client.writeRegisters(50, [1]))).toBe(2);
    expect(await exceptionOf(client.readHoldingRegisters(104, 2))).toBe(2);
    expect(await exceptionOf(client.readInputRegisters(0, 10))).toBe(2); // fluid bed inputs end at 8 (InletDewPoint)
    expect(sim.plant.read('fluidbed', 'InletAirTemp')).toBe(60);
    client.setID(9);
    expect(await exceptionOf(client.readHoldingRegisters(0, 2))).toBe(11);
  });

  it('faults: a muted unit never answers, a delayed one answers late, the other unit is unaffected (told by the order of the answers, never by their timing)', async () => {
    // a second connection for the other unit, so that its request is in flight while the faulty unit's is pending
    const other = new ModbusRTU();
    other.setTimeout(5000);
    await other.connectTCP(sim.modbusHost, { port: sim.modbusPort });
    try {
      const order: string[] = [];
      sim.faults.muteModbusUnit(2, true);
      try {
        client.setID(2);
        client.setTimeout(1000);
        const muted = client.readInputRegisters(0, 2).then(
          () => void order.push('unit 2 answered'),
          (e: { errno?: string; message?: string }) => (order.push('unit 2 timed out'), e),
        );
        other.setID(1);
        expect((await other.readHoldingRegisters(0, 2)).data).toHaveLength(2);
        order.push('unit 1 answered');
        const err = await muted;
        expect(err?.errno ?? err?.message).toMatch(/ETIMEDOUT|Timed out/i);
        expect(order).toEqual(['unit 1 answered', 'unit 2 timed out']);
      } finally {
        sim.faults.muteModbusUnit(2, false);
      }
      // a late reply to the timed-out request may still arrive; a fresh connection keeps this test independent of that
      client.close(() => undefined);
      client = new ModbusRTU();
      client.setTimeout(5000);
      await client.connectTCP(sim.modbusHost, { port: sim.modbusPort });
      order.length = 0;
      sim.faults.delayModbusUnit(1, 1000);
      try {
        client.setID(1);
        const delayed = client.readHoldingRegisters(0, 2).then((r) => (order.push('unit 1 answered'), r));
        other.setID(2);
        expect((await other.readHoldingRegisters(0, 2)).data).toHaveLength(2);
        order.push('unit 2 answered');
        // the delayed unit still answers, with its registers, after a request sent after its own was answered
        expect((await delayed).data).toHaveLength(2);
        expect(order).toEqual(['unit 2 answered', 'unit 1 answered']);
      } finally {
        sim.faults.clear();
      }
    } finally {
      await new Promise<void>((r) => (other.isOpen ? other.close(() => r()) : r()));
    }
  });
});
