/**
 * Every Modbus data type of the site configuration (int16, uint16, int32,
 * uint32, float32, float64; scales; word order LE and byte order LE) through
 * our connector's codec against the simulator's real Modbus TCP server, and
 * the same registers read with raw modbus-serial and decoded by hand with
 * Buffer, as a differential check of the codec against the wire.
 *
 * The plant runs on a ManualClock: it stands still between a protocol read and
 * the ground truth `sim.plant.read()`, so a value must match within the
 * quantisation of its type and scale, not within a guessed drift.
 */
import m from 'modbus-serial';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createModbusConnector, type ModbusConnector } from '../../connectors/modbus/index.js';
import { SUPERVISOR_STATE_CODES } from '../../connectors/sim/index.js';
import type { Sample } from '../../connectors/types.js';
import { ManualClock } from '../../src/clock.js';
import type { ModbusConnectionConfig, ModbusEquipmentConfig, ModbusTagConfig } from '../../src/config/schema.js';
import { startTestSimulator, type Simulator } from '../helpers/sim.js';

const ModbusRTU = m.default;
type Client = InstanceType<typeof ModbusRTU>;

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const TIME_SCALE = 60;

let sim: Simulator;
let clock: ManualClock;
let conn: ModbusConnector;
let raw: Client;
let equipment: ModbusEquipmentConfig[];

/** Advance the plant by `wallMs` of its clock in PLC-scan-sized steps (so lags and integrals stay fine-grained). */
function run(wallMs: number, stepMs = 50): void {
  for (let t = 0; t < wallMs; t += stepMs) {
    clock.advance(Math.min(stepMs, wallMs - t));
    sim.plant.step();
  }
}

/** What the simulated PLC holds for a tag, as a number (REGISTER_MAP.md: supervisor states and recipes as numbers). */
function truthOf(eq: string, t: ModbusTagConfig): number {
  if (t.kind === 'supervisor') {
    const s = sim.plant.supervisor(eq);
    if (t.name === 'SupervisorState') return SUPERVISOR_STATE_CODES[s.state];
    if (t.name === 'ActiveRecipe') return s.activeRecipeNumber;
    if (t.name === 'LkgRecipeId') return s.lkg.number;
  }
  const v = sim.plant.read(eq, t.name);
  if (typeof v !== 'number') throw new Error(`${eq}.${t.name} is not numeric in the plant`);
  return v;
}

/** The value the register can hold for `truth`: float32 rounds, integers round to a multiple of the scale. */
function withinQuantisation(t: ModbusTagConfig, got: number, truth: number): boolean {
  switch (t.type) {
    case 'float64':
      return got === ((truth - t.offset) / t.scale) * t.scale + t.offset;
    case 'float32':
      return got === Math.fround((truth - t.offset) / t.scale) * t.scale + t.offset;
    default:
      // half a step of the scale, plus the last bits of the decimal scaling
      return Math.abs(got - truth) <= Math.abs(t.scale) / 2 + 1e-9 * Math.max(1, Math.abs(truth));
  }
}

/** Big-endian bytes of registers as they came off the wire. */
function wireBytes(regs: readonly number[]): Buffer {
  const b = Buffer.alloc(regs.length * 2);
  regs.forEach((r, i) => b.writeUInt16BE(r, i * 2));
  return b;
}

const byTag = (samples: readonly Sample[]): Record<string, Sample> => Object.fromEntries(samples.map((s) => [s.tag, s]));

beforeAll(async () => {
  clock = new ManualClock();
  sim = await startTestSimulator({ clock, timeScale: TIME_SCALE, seed: 5, watchdogTimeoutMs: 60_000 });
  const cfg = sim.config.config;
  const connection = cfg.connections.find((c): c is ModbusConnectionConfig => c.protocol === 'modbus');
  if (!connection) throw new Error('no modbus connection in site.yaml');
  equipment = cfg.equipment.filter((e): e is ModbusEquipmentConfig => e.protocol === 'modbus');
  conn = createModbusConnector({ connection: { ...connection, timeout_ms: 1000, poll_ms: 50 }, equipment, host: sim.modbusHost, port: sim.modbusPort });
  await conn.connect();
  raw = new ModbusRTU();
  raw.setTimeout(1000);
  await raw.connectTCP(sim.modbusHost, { port: sim.modbusPort });
  // 5 process minutes: the blender turns at its LKG speed, the fluid bed dries, the meters have counted something
  run(5_000);
});

afterAll(async () => {
  await new Promise<void>((r) => (raw?.isOpen ? raw.close(() => r()) : r()));
  await conn?.close();
  await sim?.close();
});

describe('Modbus data types through the connector against the simulator', () => {
  it('the site configuration exercises every codec type, a scale, word order LE and byte order LE', () => {
    const tags = equipment.flatMap((e) => e.tags);
    expect(new Set(tags.map((t) => t.type))).toEqual(new Set(['int16', 'uint16', 'int32', 'uint32', 'float32', 'float64']));
    expect(tags.some((t) => t.word_order === 'LE' && t.byte_order === 'BE')).toBe(true);
    expect(tags.some((t) => t.byte_order === 'LE')).toBe(true);
    expect(tags.some((t) => t.type === 'int32' && t.scale !== 1)).toBe(true);
    expect(tags.some((t) => t.type === 'int16' && t.scale !== 1)).toBe(true);
  });

  it('reads every configured tag and matches the plant within the quantisation of its type and scale', async () => {
    const all = equipment.flatMap((e) => e.tags.map((t) => ({ eq: e.id, t, tag: `${e.id}.${t.name}` })));
    const s = byTag(await conn.read(all.map((x) => x.tag)));
    for (const { eq, t, tag } of all) {
      const sample = s[tag];
      expect(sample, tag).toMatchObject({ quality: 'good', status: 'Good', unit: t.unit });
      const got = sample!.value as number;
      const truth = truthOf(eq, t);
      expect(withinQuantisation(t, got, truth), `${tag} (${t.type}): read ${got}, plant ${truth}`).toBe(true);
      if (t.type !== 'float32' && t.type !== 'float64') {
        // an integer register: the value is a whole number of scale steps
        const steps = (got - t.offset) / t.scale;
        expect(Math.abs(steps - Math.round(steps)), tag).toBeLessThan(1e-6);
      }
    }
    // the values are not trivial: a negative int32, a float64 that float32 could not hold, a turning drive
    expect(s['fluidbed.InletDewPoint']!.value as number).toBeLessThan(-7);
    expect(s['fluidbed.InletDewPoint']!.value as number).toBeGreaterThan(-9);
    const energy = s['blender.MotorEnergy']!.value as number;
    expect(energy).toBeGreaterThan(0);
    expect(Math.fround(energy)).not.toBe(energy);
    expect(s['blender.MotorPower']!.value as number).toBeGreaterThan(2);
    expect(s['blender.MotorPower']!.value as number).toBeLessThan(4);
  });

  it('energy read over Modbus agrees with the revolutions read over Modbus (P = 0.12 n + 0.0015 n² kW)', async () => {
    const s = byTag(await conn.read(['blender.MotorEnergy', 'blender.Revolutions', 'blender.Speed']));
    const revs = s['blender.Revolutions']!.value as number;
    const energy = s['blender.MotorEnergy']!.value as number;
    const maxRpm = s['blender.Speed']!.value as number;
    // ∫0.12·n dt = 0.12·revs kW·min; the n² term adds at most 0.0015·maxRpm per revolution
    expect(revs).toBeGreaterThan(50);
    expect(energy).toBeGreaterThanOrEqual((0.12 * revs) / 60 - 1e-6);
    expect(energy).toBeLessThanOrEqual(((0.12 + 0.0015 * maxRpm) * revs) / 60 + 1e-6);
  });

  it('raw modbus-serial registers decoded by hand with Buffer agree with the connector', async () => {
    raw.setID(1);
    const b = (await raw.readInputRegisters(0, 12)).data;
    const bh = (await raw.readHoldingRegisters(0, 12)).data;
    raw.setID(2);
    const f = (await raw.readInputRegisters(0, 9)).data;
    const fh = (await raw.readHoldingRegisters(100, 4)).data;
    const s = byTag(await conn.read([
      'blender.SpeedActual', 'blender.MotorPower', 'blender.MotorEnergy', 'blender.WatchdogTimeoutMs', 'blender.SupervisorState', 'blender.LkgRecipeId',
      'fluidbed.InletAirTempActual', 'fluidbed.ProductTemp', 'fluidbed.Lod', 'fluidbed.InletDewPoint', 'fluidbed.Airflow',
    ]));
    const v = (tag: string): number => s[tag]!.value as number;
    // float32 ABCD
    expect(v('blender.SpeedActual')).toBe(wireBytes(b.slice(0, 2)).readFloatBE(0));
    expect(v('fluidbed.InletAirTempActual')).toBe(wireBytes(f.slice(0, 2)).readFloatBE(0));
    expect(v('fluidbed.Airflow')).toBe(wireBytes(fh.slice(2, 4)).readFloatBE(0));
    // int32 DCBA: the four bytes on the wire are the little-endian bytes of the value
    expect(v('blender.MotorPower')).toBeCloseTo(wireBytes(b.slice(6, 8)).readInt32LE(0) * 0.001, 9);
    // float64 ABCDEFGH
    expect(v('blender.MotorEnergy')).toBe(wireBytes(b.slice(8, 12)).readDoubleBE(0));
    // uint32 and uint16 BE
    expect(v('blender.WatchdogTimeoutMs')).toBe(wireBytes(bh.slice(2, 4)).readUInt32BE(0));
    expect(v('blender.SupervisorState')).toBe(wireBytes(bh.slice(4, 5)).readUInt16BE(0));
    expect(v('blender.LkgRecipeId')).toBe(wireBytes(bh.slice(10, 12)).readUInt32BE(0));
    // int16 × 0.1
    expect(v('fluidbed.ProductTemp')).toBeCloseTo(wireBytes(f.slice(2, 3)).readInt16BE(0) * 0.1, 9);
    // float32 CDAB: low word first
    expect(v('fluidbed.Lod')).toBe(wireBytes([f[4]!, f[3]!]).readFloatBE(0));
    // int32 ABCD × 0.01, negative: the sign lives in the high word
    const dewRaw = wireBytes(f.slice(7, 9)).readInt32BE(0);
    expect(dewRaw).toBeLessThan(0);
    expect(f[7]).toBe(0xffff); // a small negative int32: high word all ones
    expect(v('fluidbed.InletDewPoint')).toBeCloseTo(dewRaw * 0.01, 9);
  });

  it('subscribed meters move with the process: energy rises monotonically while the blender turns and holds when it stops', async () => {
    const got: Sample[] = [];
    const tags = ['blender.MotorEnergy', 'blender.MotorPower', 'blender.Revolutions', 'fluidbed.InletDewPoint'];
    const sub = await conn.subscribe(tags, { intervalMs: 50 }, (samples) => got.push(...samples));
    const series = (tag: string): number[] => got.filter((x) => x.tag === tag && x.quality === 'good').map((x) => x.value as number);
    try {
      // 40 polls' worth of process: 4 s of plant clock (4 process minutes) in small steps
      for (let i = 0; i < 40; i++) {
        run(100);
        await sleep(25);
      }
      await sleep(150);
      const energy = series('blender.MotorEnergy');
      expect(energy.length).toBeGreaterThanOrEqual(10);
      for (let i = 1; i < energy.length; i++) expect(energy[i]!, `sample ${i}`).toBeGreaterThan(energy[i - 1]!);
      expect(series('blender.MotorPower').every((p) => p > 2)).toBe(true);
      // the dew point ripples with the desiccant wheel, stays below zero
      const dew = series('fluidbed.InletDewPoint');
      expect(new Set(dew).size).toBeGreaterThan(1);
      expect(dew.every((d) => d < -7 && d > -9)).toBe(true);

      // run past the 300 rev target: the drive stops, power falls to 0, the totaliser holds
      run(20_000, 100);
      expect(sim.plant.read('blender', 'Revolutions') as number).toBeGreaterThanOrEqual(300);
      await sleep(200);
      const stopped = byTag(await conn.read(['blender.MotorPower', 'blender.MotorEnergy']));
      expect(stopped['blender.MotorPower']!.value as number).toBeLessThan(0.01);
      run(5_000, 100);
      const later = byTag(await conn.read(['blender.MotorEnergy']));
      const e0 = stopped['blender.MotorEnergy']!.value as number;
      expect(later['blender.MotorEnergy']!.value as number).toBeGreaterThanOrEqual(e0);
      expect((later['blender.MotorEnergy']!.value as number) - e0).toBeLessThan(1e-4);
      expect(e0).toBeGreaterThan(energy.at(-1)!);
    } finally {
      await sub.close();
    }
  });
});
