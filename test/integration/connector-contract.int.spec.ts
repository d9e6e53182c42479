/**
 * The connector contract: the OPC UA connector and the Modbus TCP connector (each against the plant simulator's
 * real server on loopback) and the in-memory connector (bound to a plant directly, what the core simulator and
 * the logic tests run on) behave the same way where the guarded writer and the run engine depend on it: reads,
 * a verified write and its read-back, every refusal before sending with the plant unchanged, the PLC's own
 * refusals, the commanded revert to LKG and the re-arm (refused without heartbeats), the capability handed out once.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createConnectors } from '../../connectors/index.js';
import { createMemoryConnectors } from '../../connectors/memory/connector.js';
import { Plant } from '../../connectors/sim/plant.js';
import type { Connector, WriteCapability } from '../../connectors/types.js';
import { loadConfig } from '../../src/config/load.js';
import { LkError } from '../../src/errors.js';
import { startTestSimulator, waitFor, type Simulator } from '../helpers/sim.js';

interface Subject {
  readonly name: string;
  connector: () => Connector;
  plant: () => Plant;
  readonly eq: string;
  readonly setpoint: string;
  readonly measurement: string;
  /** A value inside the tag's configured range. */
  readonly good: number;
  cap?: WriteCapability;
}

/** A refusal before anything reached the PLC, or by the PLC itself: the code, and no unknown outcome. */
async function refusal(p: Promise<unknown>): Promise<string> {
  try {
    await p;
  } catch (err) {
    expect(LkError.is(err)).toBe(true);
    const e = err as LkError;
    expect((e.detail as { outcome?: string } | undefined)?.outcome).toBeUndefined();
    return e.code;
  }
  throw new Error('expected a refusal, the call succeeded');
}

let sim: Simulator;
let dataDir: string;
let real: Connector[] = [];
let memory: Connector[] = [];
let memPlant: Plant;
const loaded = loadConfig();

const subjects: Subject[] = [
  { name: 'OPC UA (press)', connector: () => real.find((c) => c.protocol === 'opcua')!, plant: () => sim.plant, eq: 'press', setpoint: 'MainForce', measurement: 'Hardness', good: 13.5 },
  { name: 'Modbus TCP (blender)', connector: () => real.find((c) => c.protocol === 'modbus')!, plant: () => sim.plant, eq: 'blender', setpoint: 'Speed', measurement: 'SpeedActual', good: 21.5 },
  { name: 'memory (press)', connector: () => memory.find((c) => c.protocol === 'opcua')!, plant: () => memPlant, eq: 'press', setpoint: 'MainForce', measurement: 'Hardness', good: 13.5 },
  { name: 'memory (blender)', connector: () => memory.find((c) => c.protocol === 'modbus')!, plant: () => memPlant, eq: 'blender', setpoint: 'Speed', measurement: 'SpeedActual', good: 21.5 },
];

beforeAll(async () => {
  // a long watchdog: the re-arm case starts heartbeats; nothing here waits on a revert
  sim = await startTestSimulator({ watchdogTimeoutMs: 600_000, scanMs: 20, config: loaded });
  dataDir = mkdtempSync(join(tmpdir(), 'lk-contract-'));
  real = createConnectors(loaded.config, { dataDir, sim: { opcuaUrl: sim.opcuaUrl, modbusHost: sim.modbusHost, modbusPort: sim.modbusPort } });
  memPlant = new Plant({ equipment: loaded.config.equipment, clock: { now: () => Date.now() }, seed: 1, watchdogTimeoutMs: 600_000, timeScale: 60 });
  memory = createMemoryConnectors(loaded.config, memPlant);
  await Promise.all([...real, ...memory].map((c) => c.connect()));
});

afterAll(async () => {
  await Promise.all([...real, ...memory].map((c) => c.close()));
  await sim?.close();
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
});

describe.each(subjects)('connector contract: $name', (s) => {
  const tag = (): string => `${s.eq}.${s.setpoint}`;
  const held = (): number => s.plant().setpoints(s.eq)[s.setpoint]!;

  it('hands out its write capability once', () => {
    s.cap = s.connector().claimWriter();
    let code = '';
    try {
      s.connector().claimWriter();
    } catch (err) {
      code = (err as LkError).code;
    }
    expect(code).toBe('LK_WRITER_CLAIMED');
  });

  it('reads a setpoint good in its configured unit, and an unknown tag as a bad sample (not thrown)', async () => {
    const [sp, unknown] = await s.connector().read([tag(), `${s.eq}.NoSuchTag`]);
    expect(sp).toMatchObject({ tag: tag(), quality: 'good' });
    expect(sp!.unit).toBe(loaded.config.equipment.find((e) => e.id === s.eq)!.tags.find((t) => t.name === s.setpoint)!.unit);
    expect(sp!.value as number).toBeCloseTo(held(), 4);
    expect(unknown).toMatchObject({ quality: 'bad', value: null });
    expect(s.connector().health().state).toBe('connected');
  });

  it('writes a value and verifies it by read-back; the plant holds it', async () => {
    const r = await s.cap!.write(tag(), s.good);
    expect(r).toMatchObject({ tag: tag(), verified: true, readBackQuality: 'good' });
    expect(r.readBack!).toBeCloseTo(s.good, 4);
    expect(held()).toBeCloseTo(s.good, 4);
  });

  it('refuses before sending: NaN, a measurement, an unknown tag; the plant is unchanged', async () => {
    const before = held();
    expect(await refusal(s.cap!.write(tag(), Number.NaN))).toBe('LK_VALUE_INVALID');
    expect(await refusal(s.cap!.write(`${s.eq}.${s.measurement}`, 1))).toBe('LK_TAG_NOT_WRITABLE');
    expect(await refusal(s.cap!.write(`${s.eq}.NoSuchTag`, 1))).toBe('LK_TAG_UNKNOWN');
    expect(held()).toBe(before);
  });

  it('passes on the PLC refusing a value outside its range (LK_WRITE_FAILED or the Modbus exception), the plant unchanged', async () => {
    const before = held();
    const code = await refusal(s.cap!.write(tag(), 1e6));
    expect(code === 'LK_WRITE_FAILED' || code.startsWith('LK_MODBUS_')).toBe(true);
    expect(held()).toBe(before);
  });

  it('commands the revert to LKG (verified by read-back), is then refused setpoint writes, and cannot re-arm without heartbeats', async () => {
    const lkg = s.plant().supervisor(s.eq).lkg.setpoints[s.setpoint]!;
    const r = await s.cap!.commandLkg(s.eq);
    expect(r).toMatchObject({ equipment: s.eq, state: 'LOST', verified: true });
    expect(r.activeRecipe).toEqual(r.lkgRecipe);
    expect(held()).toBeCloseTo(lkg, 4);
    const code = await refusal(s.cap!.write(tag(), s.good));
    expect(code === 'LK_WRITE_FAILED' || code.startsWith('LK_MODBUS_')).toBe(true);
    expect(held()).toBeCloseTo(lkg, 4);
    // a second command is idempotent at the PLC: still LOST, no second revert counted
    const again = await s.cap!.commandLkg(s.eq);
    expect(again).toMatchObject({ state: 'LOST', verified: true, revertCount: r.revertCount });
    // no heartbeat within the PLC's watchdog timeout (shortened here, since the last write armed it): the re-arm is refused
    s.plant().setWatchdogTimeout(1, s.eq);
    try {
      await new Promise((r) => setTimeout(r, 5));
      expect(await refusal(s.cap!.commandRearm(s.eq))).toBe('LK_WRITE_FAILED');
    } finally {
      s.plant().setWatchdogTimeout(600_000, s.eq);
    }
    expect(s.plant().supervisor(s.eq).state).toBe('LOST');
  });

  it('re-arms once its heartbeats arrive, and then writes again', async () => {
    const c = s.connector();
    c.startHeartbeat();
    try {
      expect(await waitFor(() => s.plant().supervisor(s.eq).lastHeartbeatAt !== undefined, 20_000)).toBe(true);
      const r = await s.cap!.commandRearm(s.eq);
      expect(r).toMatchObject({ equipment: s.eq, state: 'ATTENDED', verified: true });
      expect((await s.cap!.write(tag(), s.good)).verified).toBe(true);
    } finally {
      c.stopHeartbeat();
    }
  });
});

/** The analyser and the cameras are on the OPC UA connection: its connector and the memory one hand out the same shapes. */
describe.each(subjects.filter((x) => x.eq === 'press'))('connector contract, arrays and bytes: $name', (s) => {
  it('reads a spectrum as a frozen plain array of finite numbers, and a camera frame as bytes of its own', async () => {
    const [spectrum, frame] = await s.connector().read(['nir.Spectrum', 'vision.Frame1']);
    expect(spectrum!.quality).toBe('good');
    expect(Array.isArray(spectrum!.value)).toBe(true);
    expect(Object.isFrozen(spectrum!.value)).toBe(true);
    const xs = spectrum!.value as readonly number[];
    expect(xs.length).toBeGreaterThan(100);
    expect(xs.every((x) => Number.isFinite(x))).toBe(true);
    expect(frame!.quality).toBe('good');
    expect(frame!.value).toBeInstanceOf(Uint8Array);
    expect(Buffer.isBuffer(frame!.value)).toBe(false);
  });

});
