/**
 * Network faults between linekeeper's connectors and the plant simulator,
 * made by a TCP proxy (test/helpers/tcp-proxy.ts): a black hole on the Modbus
 * link and a reset-then-refused OPC UA link. In both the PLC watchdog must
 * revert the equipment to its last known-good recipe by itself (rule R8: the
 * heartbeats no longer arrive), the connector must say it lost the
 * connection, and data must come back when the network does — while the
 * PLCs stay LOST until a person re-arms them. First, the proxy's own
 * behaviour against an echo server (forwarding with backpressure, pause,
 * drop, refuse), so a failure below is the connector's, not the proxy's.
 *
 * Deadlines are generous and only bound the waits: the test asserts the order
 * of events, never how fast they happened.
 */
import { createHash } from 'node:crypto';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { createConnection, createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createModbusConnector, type ModbusConnector } from '../../connectors/modbus/index.js';
import { createOpcUaConnector, type OpcUaConnector } from '../../connectors/opcua/index.js';
import { SUPERVISED } from '../../connectors/sim/index.js';
import type { ConnectorEvent, Sample } from '../../connectors/types.js';
import type { ModbusConnectionConfig, ModbusEquipmentConfig, OpcUaConnectionConfig, OpcUaEquipmentConfig } from '../../src/config/schema.js';
import { startTestSimulator, waitFor, type Simulator } from '../helpers/sim.js';
import { startTcpProxy, type TcpProxy } from '../helpers/tcp-proxy.js';

const WATCHDOG_MS = 1000;
const HEARTBEAT_MS = 100;
/** Only bounds a wait; nothing asserts on how long anything took. */
const DEADLINE_MS = 20_000;
const TEST_TIMEOUT_MS = 120_000;

let sim: Simulator;
let dataDir: string;
/** What happened, in order: test actions, plant reverts, connector state changes. */
const timeline: string[] = [];
const mark = (what: string): void => {
  timeline.push(what);
};
const at = (what: string): number => {
  const i = timeline.indexOf(what);
  expect(i, `${what} in ${timeline.join(' → ')}`).toBeGreaterThanOrEqual(0);
  return i;
};
/** The first index of `what` after index `from`. */
const after = (from: number, what: string): number => {
  const i = timeline.indexOf(what, from + 1);
  expect(i, `${what} after ${timeline[from]} in ${timeline.join(' → ')}`).toBeGreaterThan(from);
  return i;
};
const stateMarks = (name: string) => (e: ConnectorEvent): void => {
  if (e.type === 'state') mark(`${name}:${e.to}`);
};

beforeAll(async () => {
  sim = await startTestSimulator({ watchdogTimeoutMs: WATCHDOG_MS, scanMs: 20 });
  sim.plant.on((e) => mark(e.type === 'revert' ? `revert:${e.equipment}` : `rearm:${e.equipment}`));
  dataDir = mkdtempSync(join(tmpdir(), 'lk-proxy-'));
});

afterAll(async () => {
  await sim?.close();
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
});

describe('the proxy itself (an echo server behind it)', () => {
  let echo: Server;
  let proxy: TcpProxy;
  let upstreamOpened = 0;
  const upstreamClosed: number[] = [];

  beforeAll(async () => {
    echo = createServer((s) => {
      upstreamOpened++;
      s.on('error', () => undefined);
      s.on('close', () => upstreamClosed.push(Date.now()));
      s.pipe(s);
    });
    echo.listen(0, '127.0.0.1');
    await once(echo, 'listening');
    proxy = await startTcpProxy({ target: { host: '127.0.0.1', port: (echo.address() as AddressInfo).port } });
  });
  afterAll(async () => {
    await proxy?.close();
    await new Promise((r) => echo?.close(r));
  });

  /** Connect to the proxy; `connected` false for a connection the proxy resets at once (it may fail before 'connect'). */
  const dial = async (connected = true): Promise<{ s: Socket; got: Buffer[]; closed: () => boolean; error: () => string | undefined }> => {
    const s = createConnection({ host: '127.0.0.1', port: proxy.port });
    const got: Buffer[] = [];
    let closed = false;
    let error: string | undefined;
    s.on('data', (d: Buffer) => got.push(d));
    s.on('error', (e: NodeJS.ErrnoException) => (error = e.code));
    s.on('close', () => (closed = true));
    if (connected) await once(s, 'connect');
    return { s, got, closed: () => closed, error: () => error };
  };
  const text = (b: Buffer[]): string => Buffer.concat(b).toString();
  /** Wait until the connections of an earlier test are gone at both ends. */
  const settled = async (): Promise<void> => {
    expect(await waitFor(() => proxy.stats().open === 0 && upstreamClosed.length === upstreamOpened, DEADLINE_MS)).toBe(true);
  };

  it('forwards both ways with backpressure: 32 MiB echoed back intact', { timeout: TEST_TIMEOUT_MS }, async () => {
    const { s, got } = await dial();
    const big = Buffer.alloc(32 * 1024 * 1024);
    for (let i = 0; i < big.length; i += 4) big.writeUInt32LE(i, i);
    s.write(big);
    expect(await waitFor(() => got.reduce((n, b) => n + b.length, 0) >= big.length, DEADLINE_MS)).toBe(true);
    expect(createHash('sha256').update(Buffer.concat(got)).digest('hex')).toBe(createHash('sha256').update(big).digest('hex'));
    s.destroy();
  });

  it('pause() holds bytes and closes without closing anything; resume() delivers them', { timeout: TEST_TIMEOUT_MS }, async () => {
    await settled();
    const a = await dial();
    const b = await dial();
    a.s.write('before');
    expect(await waitFor(() => text(a.got) === 'before', DEADLINE_MS)).toBe(true);
    proxy.pause();
    a.s.write('-held');
    const closedBefore = upstreamClosed.length;
    b.s.destroy(); // the peer never hears of it while the link is a black hole
    const c = await dial(); // a new connection is held too
    c.s.write('new');
    await new Promise((r) => setTimeout(r, 300));
    expect(text(a.got)).toBe('before');
    expect(c.got).toEqual([]);
    expect(upstreamClosed.length).toBe(closedBefore);
    expect(proxy.stats().open).toBe(3);
    proxy.resume();
    expect(await waitFor(() => text(a.got) === 'before-held' && text(c.got) === 'new', DEADLINE_MS)).toBe(true);
    expect(await waitFor(() => upstreamClosed.length === closedBefore + 1 && proxy.stats().open === 2, DEADLINE_MS)).toBe(true);
    a.s.destroy();
    c.s.destroy();
  });

  it('drop() resets open connections; refuse(true) resets new ones without reaching the target', { timeout: TEST_TIMEOUT_MS }, async () => {
    await settled();
    const a = await dial();
    proxy.drop();
    expect(await waitFor(() => a.closed(), DEADLINE_MS)).toBe(true);
    expect(a.error()).toBe('ECONNRESET');
    const { accepted, refused } = proxy.stats();
    const reached = upstreamOpened;
    proxy.refuse(true);
    const r = await dial(false);
    expect(await waitFor(() => r.closed(), DEADLINE_MS)).toBe(true);
    expect(r.error()).toBe('ECONNRESET');
    expect(proxy.stats()).toMatchObject({ accepted, refused: refused + 1 });
    expect(upstreamOpened).toBe(reached);
    proxy.refuse(false);
    const ok = await dial();
    ok.s.write('again');
    expect(await waitFor(() => text(ok.got) === 'again', DEADLINE_MS)).toBe(true);
    ok.s.destroy();
  });
});

describe('Modbus TCP through a proxy that becomes a black hole', () => {
  let proxy: TcpProxy;
  let c: ModbusConnector;

  beforeAll(async () => {
    proxy = await startTcpProxy({ target: { host: sim.modbusHost, port: sim.modbusPort } });
    const cfg = sim.config.config;
    const connection = { ...(cfg.connections.find((k) => k.protocol === 'modbus') as ModbusConnectionConfig), timeout_ms: 300 };
    const equipment = cfg.equipment.filter((e): e is ModbusEquipmentConfig => e.protocol === 'modbus').map((e) => ({ ...e, heartbeat: { period_ms: HEARTBEAT_MS } }));
    c = createModbusConnector({ connection, equipment, host: '127.0.0.1', port: proxy.port, backoff: { initialMs: 50, maxMs: 400 } });
    c.on(stateMarks('modbus'));
    await c.connect();
  });
  afterAll(async () => {
    await c?.close();
    await proxy?.close();
  });

  it('reads through the proxy; a pause reverts both units to LKG and the connector reports lost; resume brings data back, the PLCs stay LOST', { timeout: TEST_TIMEOUT_MS }, async () => {
    const speed = (await c.read(['blender.Speed']))[0]!;
    expect(speed).toMatchObject({ quality: 'good', value: Math.fround(sim.plant.setpoints('blender').Speed!) });
    expect(await waitFor(() => proxy.stats().accepted >= 2, DEADLINE_MS)).toBe(true); // one socket per unit, both through the proxy

    c.startHeartbeat();
    const polled: Sample[] = [];
    const sub = await c.subscribe(['blender.Heartbeat', 'fluidbed.Heartbeat', 'fluidbed.Lod'], { intervalMs: 100 }, (s) => polled.push(...s));
    try {
      const w = c.claimWriter();
      const lkg = sim.plant.supervisor('blender').lkg.setpoints.Speed!;
      expect((await w.write('blender.Speed', lkg + 5)).verified).toBe(true);
      // heartbeats through the proxy arm both watchdogs and keep them satisfied
      expect(await waitFor(() => sim.plant.supervisor('blender').armed && sim.plant.supervisor('fluidbed').armed, DEADLINE_MS)).toBe(true);
      expect(sim.plant.supervisor('blender')).toMatchObject({ state: 'ATTENDED', activeRecipe: SUPERVISED });
      expect(c.health().state).toBe('connected');

      mark('paused');
      proxy.pause();
      expect(await waitFor(() => sim.plant.supervisor('blender').state === 'LOST' && sim.plant.supervisor('fluidbed').state === 'LOST', DEADLINE_MS)).toBe(true);
      expect(await waitFor(() => c.health().state === 'lost', DEADLINE_MS)).toBe(true);
      const paused = at('paused');
      after(paused, 'revert:blender');
      after(paused, 'revert:fluidbed');
      after(paused, 'modbus:lost');
      expect(sim.plant.setpoints('blender').Speed).toBe(lkg);
      expect(c.health().units).toEqual({ '1': 'timeout', '2': 'timeout' });
      const [down] = await c.read(['fluidbed.Lod']);
      expect(down).toMatchObject({ quality: 'bad', value: null });

      mark('resumed');
      const resumedAt = Date.now();
      proxy.resume();
      expect(await waitFor(async () => (await c.read(['blender.Speed', 'fluidbed.Lod'])).every((s) => s.quality === 'good'), DEADLINE_MS)).toBe(true);
      expect(await waitFor(() => c.health().state === 'connected', DEADLINE_MS)).toBe(true);
      after(at('resumed'), 'modbus:connected');
      expect(await waitFor(() => polled.some((s) => s.tag === 'fluidbed.Lod' && s.quality === 'good' && s.receivedAt > resumedAt), DEADLINE_MS)).toBe(true);
      // heartbeats arrive again, yet nothing re-arms a LOST PLC but a person
      const hb = sim.plant.supervisor('blender').heartbeat;
      expect(await waitFor(() => sim.plant.supervisor('blender').heartbeat !== hb, DEADLINE_MS)).toBe(true);
      expect(sim.plant.supervisor('blender').state).toBe('LOST');
      expect(sim.plant.supervisor('fluidbed').state).toBe('LOST');
      expect(timeline.some((t) => t.startsWith('rearm:'))).toBe(false);
    } finally {
      await sub.close();
      c.stopHeartbeat();
    }
  });
});

describe('OPC UA through a proxy that resets the connection, then refuses it', () => {
  let proxy: TcpProxy;
  let c: OpcUaConnector;

  beforeAll(async () => {
    proxy = await startTcpProxy({ target: { host: '127.0.0.1', port: sim.opcuaPort } });
    const cfg = sim.config.config;
    const connection = { ...(cfg.connections.find((k) => k.protocol === 'opcua') as OpcUaConnectionConfig), keepalive_ms: 500, request_timeout_ms: 1000, max_data_age_ms: 2000 };
    const equipment = cfg.equipment.filter((e): e is OpcUaEquipmentConfig => e.protocol === 'opcua').map((e) => ({ ...e, heartbeat: { period_ms: HEARTBEAT_MS } }));
    c = createOpcUaConnector({ connection, equipment, url: proxy.via(sim.opcuaUrl), dataDir, backoff: { initialMs: 100, maxMs: 500 } });
    c.on(stateMarks('opcua'));
    await c.connect();
  });
  afterAll(async () => {
    await c?.close();
    await proxy?.close();
  });

  it('drop(): the connector notices, reconnects through the proxy and the subscription delivers again', { timeout: TEST_TIMEOUT_MS }, async () => {
    const got: Sample[] = [];
    const sub = await c.subscribe(['press.Hardness'], { intervalMs: 50 }, (s) => got.push(...s));
    try {
      expect(await waitFor(() => got.some((s) => s.quality === 'good'), DEADLINE_MS)).toBe(true);
      expect((await c.read(['press.MainForce']))[0]).toMatchObject({ quality: 'good', value: sim.plant.setpoints('press').MainForce });
      const accepted = proxy.stats().accepted;

      mark('dropped');
      proxy.drop();
      expect(await waitFor(() => timeline.indexOf('opcua:connected', at('dropped')) > 0, DEADLINE_MS)).toBe(true);
      const dropped = at('dropped');
      after(after(dropped, 'opcua:lost'), 'opcua:connected');
      expect(proxy.stats().accepted).toBeGreaterThan(accepted);
      const back = Date.now();
      expect(await waitFor(() => got.some((s) => s.quality === 'good' && s.receivedAt > back), DEADLINE_MS)).toBe(true);
      expect((await c.read(['press.MainForce']))[0]?.quality).toBe('good');
    } finally {
      await sub.close();
    }
  });

  it('refuse(true) and drop(): the press PLC reverts to LKG and the connector stays lost; refuse(false) brings data back, the PLC stays LOST', { timeout: TEST_TIMEOUT_MS }, async () => {
    c.startHeartbeat();
    try {
      const w = c.claimWriter();
      const lkg = sim.plant.supervisor('press').lkg.setpoints.MainForce!;
      expect((await w.write('press.MainForce', lkg + 2)).verified).toBe(true);
      expect(sim.plant.supervisor('press')).toMatchObject({ state: 'ATTENDED', activeRecipe: SUPERVISED });
      const reverts = sim.plant.supervisor('press').revertCount;

      mark('refusing');
      proxy.refuse(true);
      proxy.drop();
      expect(await waitFor(() => sim.plant.supervisor('press').state === 'LOST', DEADLINE_MS)).toBe(true);
      expect(await waitFor(() => c.health().state === 'lost', DEADLINE_MS)).toBe(true);
      // the connector kept trying, and was refused
      expect(await waitFor(() => proxy.stats().refused > 0, DEADLINE_MS)).toBe(true);
      const refusing = at('refusing');
      after(refusing, 'revert:press');
      after(refusing, 'opcua:lost');
      expect(sim.plant.supervisor('press').revertCount).toBe(reverts + 1);
      expect(sim.plant.setpoints('press').MainForce).toBe(lkg);
      expect((await c.read(['press.MainForce']))[0]).toMatchObject({ quality: 'bad', value: null });

      mark('accepting');
      proxy.refuse(false);
      expect(await waitFor(async () => (await c.read(['press.MainForce']))[0]?.quality === 'good', DEADLINE_MS)).toBe(true);
      after(at('accepting'), 'opcua:connected');
      expect((await c.read(['press.MainForce', 'press.SupervisorState'])).map((s) => s.value)).toEqual([lkg, 'LOST']);
      const hb = sim.plant.supervisor('press').heartbeat;
      expect(await waitFor(() => sim.plant.supervisor('press').heartbeat !== hb, DEADLINE_MS)).toBe(true);
      expect(sim.plant.supervisor('press').state).toBe('LOST');
    } finally {
      c.stopHeartbeat();
    }
  });
});
