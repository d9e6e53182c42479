/**
 * The OPC UA connector against the plant simulator (a real node-opcua server
 * on a free loopback port): reads, subscriptions with deadband, writes with
 * read-back and refusals, heartbeats, unit check, and a server restart under
 * a connected client.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createOpcUaConnector, type OpcUaConnector } from '../../connectors/opcua/index.js';
import type { ConnectorEvent, Sample, WriteCapability } from '../../connectors/types.js';
import type { OpcUaConnectionConfig, OpcUaEquipmentConfig } from '../../src/config/schema.js';
import { LkError } from '../../src/errors.js';
import { rawOpcUaSession, startTestSimulator, waitFor, type RawOpcUaSession, type Simulator } from '../helpers/sim.js';
import { rejectionCode as codeOf } from '../helpers/codes.js';

let sim: Simulator;
let raw: RawOpcUaSession;
let dataDir: string;
let c: OpcUaConnector;
let writer: WriteCapability;
const events: ConnectorEvent[] = [];

function opcua(s: Simulator): { connection: OpcUaConnectionConfig; equipment: OpcUaEquipmentConfig[] } {
  const cfg = s.config.config;
  const conn = cfg.connections.find((k) => k.protocol === 'opcua') as OpcUaConnectionConfig;
  return {
    connection: { ...conn, keepalive_ms: 500, request_timeout_ms: 2000, max_data_age_ms: 2000 },
    equipment: cfg.equipment.filter((e): e is OpcUaEquipmentConfig => e.protocol === 'opcua'),
  };
}

const rawValue = async (id: string): Promise<unknown> => (await raw.session.read({ nodeId: raw.nodeId(id), attributeId: 13 })).value.value;

beforeAll(async () => {
  // A long PLC watchdog: these tests write setpoints without always running heartbeats.
  sim = await startTestSimulator({ watchdogTimeoutMs: 60_000, scanMs: 20 });
  raw = await rawOpcUaSession(sim);
  dataDir = mkdtempSync(join(tmpdir(), 'lk-opcua-'));
  const { connection, equipment } = opcua(sim);
  c = createOpcUaConnector({ connection, equipment, url: sim.opcuaUrl, dataDir, backoff: { initialMs: 100, maxMs: 500 } });
  c.on((e) => events.push(e));
  await c.connect();
  writer = c.claimWriter();
});

afterAll(async () => {
  await c?.close();
  await raw?.close();
  await sim?.close();
  rmSync(dataDir, { recursive: true, force: true });
});

describe('OPC UA connector on the simulator', () => {
  it('describes tags with what the server reports (DataType, EURange, node id in the resolved namespace)', async () => {
    expect(c.health().state).toBe('connected');
    const d = await c.describe();
    const force = d.find((t) => t.tag === 'press.MainForce');
    expect(force).toMatchObject({ kind: 'setpoint', unit: 'kN', dataType: 'Double', writable: true, range: { min: 0, max: 40 }, address: raw.nodeId('press.Setpoints.MainForce') });
    expect(d.find((t) => t.tag === 'press.RevertCount')).toMatchObject({ dataType: 'UInt32', writable: false });
    expect(d.find((t) => t.tag === 'press.Hardness')?.writable).toBe(false);
  });

  it('reads many tags at once, each with unit, quality and source time', async () => {
    const tags = ['press.MainForce', 'press.Hardness', 'press.SupervisorState', 'plc.LineRunning', 'vision.Inspected', 'nir.Potency'];
    const s = await c.read(tags);
    expect(s.map((x) => x.tag)).toEqual(tags);
    expect(s.every((x) => x.quality === 'good' && x.status === 'Good')).toBe(true);
    expect(s[0]).toMatchObject({ unit: 'kN', value: sim.plant.read('press', 'MainForce') });
    expect(typeof s[1]!.value).toBe('number');
    expect(s[2]!.value).toBe('ATTENDED');
    expect(typeof s[3]!.value).toBe('boolean');
    // a tag the connection does not serve comes back bad in its place, as on every connector; the others are read
    const mixed = await c.read(['press.MainForce', 'press.NoSuchTag', 'press.Hardness']);
    expect(mixed.map((x) => [x.tag, x.quality, x.status])).toEqual([['press.MainForce', 'good', 'Good'], ['press.NoSuchTag', 'bad', 'LK_TAG_UNKNOWN'], ['press.Hardness', 'good', 'Good']]);
  });

  it('subscription delivers changes of a measurement', async () => {
    const got: Sample[] = [];
    const sub = await c.subscribe(['press.Hardness'], { intervalMs: 50 }, (s) => got.push(...s));
    expect(await waitFor(() => new Set(got.map((x) => x.value)).size >= 4, 30_000)).toBe(true);
    await sub.close();
    expect(got.every((x) => x.tag === 'press.Hardness' && x.quality === 'good' && x.unit === 'N')).toBe(true);
  });

  it('absolute deadband suppresses changes smaller than it (DataChangeFilter on the server)', async () => {
    await writer.write('coater.PanSpeed', 10);
    const plain: number[] = [];
    const banded: number[] = [];
    const subPlain = await c.subscribe(['coater.PanSpeed'], { intervalMs: 50 }, (s) => plain.push(...s.map((x) => x.value as number)));
    const subBand = await c.subscribe(['coater.PanSpeed'], { intervalMs: 50, deadband: 1 }, (s) => banded.push(...s.map((x) => x.value as number)));
    expect(await waitFor(() => plain.length >= 1 && banded.length >= 1, 30_000)).toBe(true);
    await writer.write('coater.PanSpeed', 10.4); // inside the deadband
    expect(await waitFor(() => plain.includes(10.4), 30_000)).toBe(true);
    await writer.write('coater.PanSpeed', 12); // outside
    expect(await waitFor(() => banded.includes(12) && plain.includes(12), 30_000)).toBe(true);
    await Promise.all([subPlain.close(), subBand.close()]);
    expect(banded).toEqual([10, 12]);
    expect(plain).toEqual([10, 10.4, 12]);
  });

  it('writes with the exact DataType and verifies by reading back', async () => {
    const r = await writer.write('press.MainForce', 13.25);
    expect(r).toMatchObject({ tag: 'press.MainForce', written: 13.25, readBack: 13.25, readBackQuality: 'good', verified: true, status: 'Good' });
    expect(sim.plant.read('press', 'MainForce')).toBe(13.25);
    expect(await rawValue('press.Setpoints.MainForce')).toBe(13.25);
  });

  it('a write the equipment refuses is LK_WRITE_FAILED with the status (out of range, LOST)', async () => {
    let err: unknown;
    try {
      await writer.write('press.MainForce', 41);
    } catch (e) {
      err = e;
    }
    expect(LkError.is(err, 'LK_WRITE_FAILED')).toBe(true);
    expect((err as LkError).detail).toMatchObject({ status: 'BadOutOfRange', tag: 'press.MainForce' });
    expect(sim.plant.read('press', 'MainForce')).toBe(13.25);

    sim.plant.setSupervisorState('vision', 'LOST');
    try {
      await writer.write('vision.RejectThreshold', 5);
      err = undefined;
    } catch (e) {
      err = e;
    }
    expect(LkError.is(err, 'LK_WRITE_FAILED')).toBe(true);
    expect((err as LkError).detail).toMatchObject({ status: 'BadInvalidState' });
  });

  it('refuses bad values, non-setpoints and unknown tags before anything is sent', async () => {
    const before = await rawValue('press.Setpoints.PreForce');
    for (const v of [Number.NaN, Number.POSITIVE_INFINITY, '3', null, undefined]) {
      expect(await codeOf(writer.write('press.PreForce', v as number))).toBe('LK_VALUE_INVALID');
    }
    expect(await rawValue('press.Setpoints.PreForce')).toBe(before);
    expect(await codeOf(writer.write('press.Hardness', 1))).toBe('LK_TAG_NOT_WRITABLE');
    expect(await codeOf(writer.write('press.Heartbeat', 1))).toBe('LK_TAG_NOT_WRITABLE');
    expect(await codeOf(writer.write('press.Nope', 1))).toBe('LK_TAG_UNKNOWN');
    expect(() => c.claimWriter()).toThrowError(expect.objectContaining({ code: 'LK_WRITER_CLAIMED' }) as Error);
  });

  it('heartbeat increments <equipment>.Heartbeat on the server every period, and stops when told', async () => {
    const h0 = sim.plant.supervisor('nir').heartbeat;
    c.startHeartbeat();
    c.startHeartbeat(); // idempotent
    expect(await waitFor(() => sim.plant.supervisor('nir').heartbeat >= h0 + 2, 30_000)).toBe(true);
    const plc0 = Number(await rawValue('plc.Supervisor.Heartbeat'));
    await new Promise((r) => setTimeout(r, 1100));
    expect(Number(await rawValue('plc.Supervisor.Heartbeat'))).toBeGreaterThan(plc0);
    c.stopHeartbeat();
    await new Promise((r) => setTimeout(r, 150));
    const stopped = sim.plant.supervisor('nir').heartbeat;
    await new Promise((r) => setTimeout(r, 1200));
    expect(sim.plant.supervisor('nir').heartbeat).toBe(stopped);
    expect(events.some((e) => e.type === 'heartbeat_failed')).toBe(false);
  });

  it('connects when one server unit differs from the configuration: that tag reads bad and refuses writes, the others are served', async () => {
    const { connection, equipment } = opcua(sim);
    const wrong = equipment.map((e) => (e.id !== 'press' ? e : { ...e, tags: e.tags.map((t) => (t.name === 'MainForce' ? { ...t, unit: 'N' } : t)) }));
    const bad = createOpcUaConnector({ connection, equipment: wrong, url: sim.opcuaUrl, dataDir });
    try {
      await bad.connect();
      expect(bad.health().state).toBe('connected');
      expect(Object.keys(bad.health().badTags ?? {})).toEqual(['press.MainForce']);
      const [force, pre] = await bad.read(['press.MainForce', 'press.PreForce']);
      expect(force).toMatchObject({ quality: 'bad', status: 'LK_TAG_UNIT_MISMATCH', value: null });
      expect(pre!.quality).toBe('good');
      expect(await codeOf(bad.claimWriter().write('press.MainForce', 12))).toBe('LK_TAG_UNIT_MISMATCH');
    } finally {
      await bad.close();
    }
  });

  it('reconnects after the server restarts and the subscription delivers new values again', async () => {
    const got: Sample[] = [];
    await c.subscribe(['press.Hardness', 'coater.BedTemp'], { intervalMs: 50 }, (s) => got.push(...s));
    expect(await waitFor(() => got.length >= 2, 30_000)).toBe(true);
    const reconnects = c.health().reconnects;
    const from = events.length;
    await sim.faults.restartOpcUa({ downtimeMs: 300 });
    const restartedAt = Date.now();
    expect(await waitFor(() => c.health().state === 'connected' && c.health().reconnects > reconnects, 15_000)).toBe(true);
    expect(await waitFor(() => got.some((x) => x.tag === 'press.Hardness' && x.receivedAt > restartedAt && x.sourceTime > restartedAt), 30_000)).toBe(true);
    const states = events.slice(from).filter((e) => e.type === 'state');
    expect(states.map((e) => (e.type === 'state' ? e.to : ''))).toEqual(expect.arrayContaining(['lost', 'connected']));
    expect((await c.read(['press.MainForce']))[0]?.quality).toBe('good');
  });

  it('keeps trying to connect until the server is up; close() ends a pending connect with LK_CONN_UNAVAILABLE', async () => {
    const { connection, equipment } = opcua(sim);
    await sim.faults.stopOpcUa();
    const late = createOpcUaConnector({ connection, equipment, url: sim.opcuaUrl, dataDir, backoff: { initialMs: 100, maxMs: 300 } });
    const never = createOpcUaConnector({ connection, equipment, url: sim.opcuaUrl, dataDir, backoff: { initialMs: 100, maxMs: 300 } });
    try {
      const pending = late.connect();
      const abandoned = codeOf(never.connect());
      await new Promise((r) => setTimeout(r, 700));
      expect(late.health().state).toBe('connecting');
      expect(late.health().lastError).toMatch(/^LK_CONN_/);
      await never.close();
      expect(await abandoned).toBe('LK_CONN_UNAVAILABLE');
      await sim.faults.startOpcUa();
      await pending;
      expect((await late.read(['press.MainForce']))[0]?.quality).toBe('good');
    } finally {
      await late.close();
      await sim.faults.startOpcUa();
    }
  });
});
