/**
 * The Modbus connector against the plant simulator's real Modbus TCP server
 * (connectors/sim, unit 1 blender, unit 2 fluid bed, register map of
 * config/site.yaml) on a free loopback port.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createModbusConnector, type ModbusConnector } from '../../connectors/modbus/index.js';
import { startSimulator, type Simulator } from '../../connectors/sim/index.js';
import type { ConnectorEvent, Sample } from '../../connectors/types.js';
import type { ModbusConnectionConfig, ModbusEquipmentConfig } from '../../src/config/schema.js';

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const TIMEOUT = 500;

/** Wait for `fn` to return a value; `ms` is a hang guard (it returns as soon as the value is there). */
async function until<T>(what: string, fn: () => Promise<T | undefined> | T | undefined, ms = 30_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(25);
  }
}

function modbusSetup(sim: Simulator, heartbeatMs = 1000): { connection: ModbusConnectionConfig; equipment: ModbusEquipmentConfig[] } {
  const cfg = sim.config.config;
  const connection = cfg.connections.find((c) => c.protocol === 'modbus');
  if (!connection || connection.protocol !== 'modbus') throw new Error('no modbus connection in site.yaml');
  const equipment = cfg.equipment.filter((e): e is ModbusEquipmentConfig => e.protocol === 'modbus').map((e) => ({ ...e, heartbeat: { period_ms: heartbeatMs } }));
  return { connection: { ...connection, timeout_ms: TIMEOUT, poll_ms: 100 }, equipment };
}

const byTag = (samples: readonly Sample[]): Record<string, Sample> => Object.fromEntries(samples.map((s) => [s.tag, s]));

describe('modbus connector against the simulator', () => {
  let sim: Simulator;
  let conn: ModbusConnector;
  const events: ConnectorEvent[] = [];

  beforeAll(async () => {
    sim = await startSimulator({ timeScale: 60, seed: 7, watchdogTimeoutMs: 60_000 });
    const { connection, equipment } = modbusSetup(sim, 100);
    conn = createModbusConnector({ connection, equipment, host: sim.modbusHost, port: sim.modbusPort, backoff: { initialMs: 50, maxMs: 400 } });
    conn.on((e) => events.push(e));
    await conn.connect();
  });

  afterAll(async () => {
    await conn?.close();
    await sim?.close();
  });

  it('describes the configured register map', async () => {
    const d = await conn.describe();
    expect(d).toHaveLength(26);
    expect(d.find((t) => t.tag === 'fluidbed.Lod')).toMatchObject({ address: '2/input/3', dataType: 'float32', writable: false, unit: '%' });
    expect(d.find((t) => t.tag === 'blender.Speed')).toMatchObject({ address: '1/holding/100', writable: true, range: { min: 5, max: 35 } });
    expect(d.filter((t) => t.writable).map((t) => t.tag).sort()).toEqual(['blender.Speed', 'blender.TargetRevolutions', 'fluidbed.Airflow', 'fluidbed.InletAirTemp']);
  });

  it('reads every configured type through the codec: uint16/uint32, float32 BE and word-LE, int16 × 0.1', async () => {
    const tags = (await conn.describe()).map((t) => t.tag);
    const s = byTag(await conn.read(tags));
    for (const t of tags) expect(s[t], t).toMatchObject({ quality: 'good', status: 'Good' });
    // supervisor registers hold exact integers the plant knows
    expect(s['blender.WatchdogTimeoutMs']!.value).toBe(60_000);
    expect(s['fluidbed.LkgRecipeId']!.value).toBe(sim.plant.supervisor('fluidbed').lkg.number);
    expect(s['blender.SupervisorState']!.value).toBe(0);
    // setpoints hold still: float32 of the plant's value
    expect(s['blender.Speed']!.value).toBe(Math.fround(sim.plant.setpoints('blender').Speed!));
    expect(s['fluidbed.Airflow']!.value).toBe(Math.fround(sim.plant.setpoints('fluidbed').Airflow!));
    // measurements move with process time: the decoded value is near the plant's
    const lod = s['fluidbed.Lod']!.value as number;
    expect(Math.abs(lod - (sim.plant.read('fluidbed', 'Lod') as number))).toBeLessThan(1);
    expect(lod).toBeGreaterThan(0);
    expect(lod).toBeLessThan(40);
    const pt = s['fluidbed.ProductTemp']!.value as number;
    expect(Number.isInteger(Math.round(pt * 10) * 1) && Math.abs(pt * 10 - Math.round(pt * 10)) < 1e-9).toBe(true);
    expect(Math.abs(pt - (sim.plant.read('fluidbed', 'ProductTemp') as number))).toBeLessThan(1);
    expect(s['fluidbed.ProductTemp']!.unit).toBe('Cel');
  });

  it('reports unknown tags as bad samples, not exceptions', async () => {
    const [a, b] = await conn.read(['blender.Nope', 'blender.Speed']);
    expect(a).toMatchObject({ tag: 'blender.Nope', value: null, quality: 'bad', status: 'LK_TAG_UNKNOWN' });
    expect(b!.quality).toBe('good');
  });

  it('writes a setpoint with FC16 and verifies it by reading it back; refuses bad writes before sending', async () => {
    const w = conn.claimWriter();
    expect(() => conn.claimWriter()).toThrow(expect.objectContaining({ code: 'LK_WRITER_CLAIMED' }));
    const r = await w.write('blender.Speed', 17.25);
    expect(r).toMatchObject({ tag: 'blender.Speed', written: 17.25, readBack: 17.25, readBackQuality: 'good', verified: true, status: 'Good' });
    expect(sim.plant.setpoints('blender').Speed).toBe(17.25);
    const r2 = await w.write('fluidbed.InletAirTemp', 61.3);
    expect(r2.written).toBe(Math.fround(61.3));
    expect(r2.verified).toBe(true);

    const before = sim.plant.setpoints('blender').Speed;
    for (const [tag, value, code] of [
      ['blender.Speed', Number.NaN, 'LK_VALUE_INVALID'],
      ['blender.Speed', Number.POSITIVE_INFINITY, 'LK_VALUE_INVALID'],
      ['blender.Speed', '20' as unknown as number, 'LK_VALUE_INVALID'],
      ['blender.SpeedActual', 20, 'LK_TAG_NOT_WRITABLE'],
      ['blender.Heartbeat', 20, 'LK_TAG_NOT_WRITABLE'],
      ['blender.Warp', 20, 'LK_TAG_UNKNOWN'],
    ] as const) {
      await expect(w.write(tag, value), `${tag}=${String(value)}`).rejects.toMatchObject({ code });
    }
    expect(sim.plant.setpoints('blender').Speed).toBe(before);
  });

  it('maps Modbus exception replies to LK codes', async () => {
    const w2 = createModbusConnector({ ...modbusSetup(sim), host: sim.modbusHost, port: sim.modbusPort }).claimWriter();
    // out of EURange → the PLC answers exception 3
    await expect(w2.write('blender.Speed', 1000)).rejects.toMatchObject({ code: 'LK_MODBUS_ILLEGAL_VALUE' });
    expect(sim.plant.setpoints('blender').Speed).toBe(17.25);

    // a tag configured past the unit's register map → exception 2 (the fallback for a coalesced block is
    // tested against ScriptedModbusServer: modbus-serial's ServerTCP turns errors of multi-register reads into exception 4)
    const { connection, equipment } = modbusSetup(sim);
    const ghost = equipment.map((e) => (e.id === 'blender'
      ? { ...e, tags: [...e.tags, { name: 'Ghost', kind: 'measurement' as const, unit: '1', table: 'input' as const, address: 50, type: 'uint16' as const, byte_order: 'BE' as const, word_order: 'BE' as const, scale: 1, offset: 0 }] }
      : e));
    const c = createModbusConnector({ connection, equipment: ghost, host: sim.modbusHost, port: sim.modbusPort });
    try {
      await c.connect();
      const s = byTag(await c.read(['blender.SpeedActual', 'blender.Ghost']));
      expect(s['blender.Ghost']).toMatchObject({ quality: 'bad', value: null, status: 'LK_MODBUS_ILLEGAL_ADDRESS' });
      expect(s['blender.SpeedActual']!.quality).toBe('good');
      // an exception is an answer: the unit is alive
      expect(c.health().units?.['1']).toBe('ok');
    } finally {
      await c.close();
    }
  });

  it('subscribe polls and delivers changes, with the deadband suppressing small ones', async () => {
    // the plant changes its own setpoint here, as an operator at the HMI would
    const w = { write: (v: number) => sim.plant.writeSetpoint('blender', 'TargetRevolutions', v) };
    w.write(400);
    const got: Sample[] = [];
    const sub = await conn.subscribe(['blender.TargetRevolutions'], { intervalMs: 50, deadband: 1 }, (s) => got.push(...s));
    try {
      await until('first value', () => (got.length > 0 ? true : undefined));
      expect(got[0]).toMatchObject({ value: 400, quality: 'good' });
      w.write(400.5); // within the deadband
      await sleep(250);
      expect(got).toHaveLength(1);
      w.write(402);
      await until('the change', () => (got.length > 1 ? true : undefined));
      expect(got.map((s) => s.value)).toEqual([400, 402]);
    } finally {
      await sub.close();
    }
    const n = got.length;
    w.write(500);
    await sleep(200);
    expect(got).toHaveLength(n);
  });

  it('writes the heartbeat of every equipment while started', async () => {
    const hb0 = { b: sim.plant.supervisor('blender').heartbeat, f: sim.plant.supervisor('fluidbed').heartbeat };
    const startedAt = Date.now();
    conn.startHeartbeat();
    conn.startHeartbeat(); // idempotent
    // beats come (hang guard, not a rate: a loaded box may beat slower) ...
    await until('4 beats of each unit', () => (sim.plant.supervisor('blender').heartbeat - hb0.b >= 4 && sim.plant.supervisor('fluidbed').heartbeat - hb0.f >= 4 ? true : undefined));
    const hb1 = { b: sim.plant.supervisor('blender').heartbeat, f: sim.plant.supervisor('fluidbed').heartbeat };
    // ... but never faster than one per 100 ms, at any load (a second timer would double them, a burst exceed them)
    const periods = Math.floor((Date.now() - startedAt) / 100) + 1;
    expect(hb1.b - hb0.b).toBeLessThanOrEqual(periods);
    expect(hb1.f - hb0.f).toBeLessThanOrEqual(periods);
    conn.stopHeartbeat();
    await sleep(500); // a write already in flight lands
    const hb2 = sim.plant.supervisor('blender').heartbeat;
    await sleep(300);
    expect(sim.plant.supervisor('blender').heartbeat).toBe(hb2);
  });

  it('a muted unit times out on its own: the other unit keeps its polling rate', async () => {
    conn.startHeartbeat(); // heartbeats change both units' Heartbeat register every 100 ms
    const got: Sample[] = [];
    const failures: string[] = [];
    const off = conn.on((e) => e.type === 'heartbeat_failed' && failures.push(e.equipment));
    const sub = await conn.subscribe(['blender.Heartbeat', 'fluidbed.Heartbeat'], { intervalMs: 100 }, (s) => got.push(...s));
    try {
      await sleep(300);
      sim.faults.muteModbusUnit(2, true);
      await sleep(100);
      const from = got.length;
      // Unit 1 keeps delivering while unit 2 times out. How many polls fit in a window is the machine's speed
      // (a loaded box gave 2 in 1.5 s), so wait for 8 (hang guard), with unit 2 timing out meanwhile.
      await until('8 polls of unit 1 during the mute', () => (got.slice(from).filter((s) => s.tag === 'blender.Heartbeat').length >= 8 ? true : undefined), 60_000);
      await until('unit 2 timing out', () => (got.slice(from).some((s) => s.tag === 'fluidbed.Heartbeat' && s.status === 'LK_CONN_TIMEOUT') ? true : undefined));
      await until('a failed heartbeat of unit 2', () => (failures.includes('fluidbed') ? true : undefined));
      const during = got.slice(from);
      const blender = during.filter((s) => s.tag === 'blender.Heartbeat');
      const fluidbed = during.filter((s) => s.tag === 'fluidbed.Heartbeat');
      expect(blender.every((s) => s.quality === 'good')).toBe(true);
      expect(fluidbed.some((s) => s.status === 'LK_CONN_TIMEOUT' && s.value === null)).toBe(true);
      expect(fluidbed.every((s) => s.quality === 'bad')).toBe(true);
      expect(conn.health().units).toEqual({ '1': 'ok', '2': 'timeout' });
      expect(conn.health().state).toBe('connected');
      expect(failures).toContain('fluidbed');
      expect(failures).not.toContain('blender');

      // a write to the muted unit times out (outcome unknown) and says so
      const other = createModbusConnector({ ...modbusSetup(sim), host: sim.modbusHost, port: sim.modbusPort });
      try {
        await expect(other.claimWriter().write('fluidbed.Airflow', 200)).rejects.toMatchObject({ code: 'LK_CONN_TIMEOUT', detail: { outcome: 'unknown' } });
      } finally {
        await other.close();
      }

      // a direct read of unit 1 answers while unit 2 is muted. (Whether it is queued behind unit 2 cannot be
      // told from a 500 ms timeout on a loaded box: a read of unit 1 alone took longer than that there.)
      expect((await conn.read(['blender.Speed']))[0]!.quality).toBe('good');

      sim.faults.muteModbusUnit(2, false);
      await until('fluidbed back', () => (got.some((s, i) => i > from && s.tag === 'fluidbed.Heartbeat' && s.quality === 'good') ? true : undefined));
      await until('unit 2 ok', () => (conn.health().units?.['2'] === 'ok' ? true : undefined));
    } finally {
      off();
      await sub.close();
      conn.stopHeartbeat();
      sim.faults.clear();
    }
  });

  it('a late reply from the simulator does not shift later answers', async () => {
    sim.plant.writeSetpoint('blender', 'Speed', 10);
    sim.faults.delayModbusUnit(1, TIMEOUT + 150);
    expect((await conn.read(['blender.Speed']))[0]!.status).toBe('LK_CONN_TIMEOUT');
    sim.faults.delayModbusUnit(1, 0);
    sim.plant.writeSetpoint('blender', 'Speed', 11);
    const values: unknown[] = [];
    for (let i = 0; i < 5; i++) {
      values.push((await conn.read(['blender.Speed', 'blender.TargetRevolutions']))[0]!.value);
      await sleep(50);
    }
    expect(values).toEqual([11, 11, 11, 11, 11]);
  });

  it('reconnects after the server drops the connections, and after it closes and comes back on the same port', async () => {
    const reconnects = conn.health().reconnects;
    sim.faults.dropModbusConnections();
    await until('reads good again', async () => ((await conn.read(['blender.Speed', 'fluidbed.Lod'])).every((s) => s.quality === 'good') ? true : undefined));
    expect(conn.health().reconnects).toBeGreaterThanOrEqual(reconnects + 2);

    const port = sim.modbusPort;
    events.length = 0;
    await sim.close();
    await until('lost', () => (conn.health().state === 'lost' ? true : undefined));
    const [down] = await conn.read(['blender.Speed']);
    expect(down).toMatchObject({ quality: 'bad', value: null });
    expect(['LK_CONN_UNAVAILABLE', 'LK_CONN_TIMEOUT']).toContain(down!.status);
    await sleep(500); // a few backoff rounds against a closed port
    sim = await startSimulator({ timeScale: 60, seed: 7, watchdogTimeoutMs: 60_000, modbusPort: port });
    await until('reads good after restart', async () => ((await conn.read(['blender.Speed', 'fluidbed.Lod'])).every((s) => s.quality === 'good') ? true : undefined), 8000);
    expect(conn.health().state).toBe('connected');
    expect(events.filter((e) => e.type === 'state').map((e) => (e.type === 'state' ? e.to : ''))).toEqual(['lost', 'connected']);
  });
});
