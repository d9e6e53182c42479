/**
 * The OPC UA connector against a small real node-opcua server whose values,
 * statuses and subscriptions the test controls (test/helpers/opcua-fixture.ts):
 * one Read per batched read, bad/uncertain/NaN/wrong-type values surfaced as
 * such, integer and Float writes with the node's DataType, and the data-age
 * watchdog re-creating subscriptions that the server silenced or dropped;
 * and the transport: requests sent in chunks of the connection's 64 KiB, a
 * message larger than one chunk split both ways.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AttributeIds, DataType, OPCUACertificateManager, OPCUAClient, StatusCodes } from 'node-opcua';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createOpcUaConnector, type OpcUaConnector } from '../../connectors/opcua/index.js';
import { clientOptions } from '../../connectors/opcua/link.js';
import type { ConnectorEvent, Sample, WriteCapability } from '../../connectors/types.js';
import { LkError } from '../../src/errors.js';
import { bufferAllocations, FIXTURE_NS, startOpcUaFixture, type OpcUaFixture } from '../helpers/opcua-fixture.js';
import { waitFor } from '../helpers/sim.js';

let fx: OpcUaFixture;
let dataDir: string;
let c: OpcUaConnector;
let writer: WriteCapability;
const events: ConnectorEvent[] = [];
const requests: { type: string; nodes: number }[] = [];

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), 'lk-opcua-wd-'));
  fx = await startOpcUaFixture(dataDir);
  fx.server.on('request', (req: { schema: { name: string }; nodesToRead?: unknown[]; nodesToWrite?: unknown[] }) => {
    requests.push({ type: req.schema.name, nodes: (req.nodesToRead ?? req.nodesToWrite ?? []).length });
  });
  c = createOpcUaConnector({ connection: fx.connection(), equipment: [fx.equipment], url: fx.url, dataDir, backoff: { initialMs: 100, maxMs: 400 } });
  c.on((e) => events.push(e));
  await c.connect();
  writer = c.claimWriter();
});

afterAll(async () => {
  await c?.close();
  await fx?.close();
  rmSync(dataDir, { recursive: true, force: true });
});

async function error(p: Promise<unknown>): Promise<LkError | undefined> {
  try {
    await p;
    return undefined;
  } catch (e) {
    if (!LkError.is(e)) throw e;
    return e as LkError;
  }
}

describe('reads', () => {
  it('reads 100 tags (repeats included) with one Read service call', async () => {
    const tags = Array.from({ length: 100 }, (_, i) => ['rig.Value', 'rig.Ramp', 'rig.Level', 'rig.Ratio', 'rig.Heartbeat'][i % 5]!);
    const from = requests.length;
    const s = await c.read(tags);
    // a one-node read may come in between: the client's session keep-alive reads the server state, and on a
    // loaded machine it can fall inside this read (a per-tag fallback would show as 100 one-node reads and no 100)
    const reads = requests.slice(from).filter((r) => r.type === 'ReadRequest' && r.nodes > 1);
    expect(reads).toEqual([{ type: 'ReadRequest', nodes: 100 }]);
    expect(s).toHaveLength(100);
    expect(s.every((x) => x.quality === 'good')).toBe(true);
  });

  it('[P11.10(h)] surfaces Bad and Uncertain statuses as such, never as numbers', async () => {
    fx.set('Value', 42, DataType.Double, StatusCodes.UncertainLastUsableValue);
    expect((await c.read(['rig.Value']))[0]).toMatchObject({ value: null, quality: 'uncertain', status: 'UncertainLastUsableValue' });
    fx.set('Value', 42, DataType.Double, StatusCodes.BadSensorFailure);
    expect((await c.read(['rig.Value']))[0]).toMatchObject({ value: null, quality: 'bad', status: 'BadSensorFailure' });
    fx.set('Value', 42);
    expect((await c.read(['rig.Value']))[0]).toMatchObject({ value: 42, quality: 'good', status: 'Good', unit: 'kN' });
  });

  it('[A11.5] surfaces NaN, Infinity and a value of the wrong type as bad', async () => {
    fx.set('Value', Number.NaN);
    expect((await c.read(['rig.Value']))[0]).toMatchObject({ value: null, quality: 'bad', status: 'LK_VALUE_INVALID' });
    fx.set('Value', Number.NEGATIVE_INFINITY);
    expect((await c.read(['rig.Value']))[0]).toMatchObject({ value: null, quality: 'bad', status: 'LK_VALUE_INVALID' });
    fx.set('Value', 7);
    fx.set('Loose', 'twelve', DataType.String);
    expect((await c.read(['rig.Loose']))[0]).toMatchObject({ value: null, quality: 'bad', status: 'BadTypeMismatch' });
    fx.set('Loose', 12, DataType.Int64);
    expect((await c.read(['rig.Loose']))[0]).toMatchObject({ value: null, quality: 'bad', status: 'BadTypeMismatch' });
    fx.set('Loose', 12, DataType.Double);
    expect((await c.read(['rig.Loose']))[0]).toMatchObject({ value: 12, quality: 'good' });
  });

  it('delivers bad status through a subscription too', async () => {
    const got: Sample[] = [];
    const sub = await c.subscribe(['rig.Value'], { intervalMs: 50 }, (s) => got.push(...s));
    expect(await waitFor(() => got.some((x) => x.value === 7), 30_000)).toBe(true); // hang guard
    fx.set('Value', 7, DataType.Double, StatusCodes.BadDeviceFailure);
    expect(await waitFor(() => got.some((x) => x.status === 'BadDeviceFailure'), 30_000)).toBe(true); // hang guard
    await sub.close();
    expect(got.find((x) => x.status === 'BadDeviceFailure')).toMatchObject({ value: null, quality: 'bad' });
    fx.set('Value', 7);
  });
});

describe('writes with the node DataType', () => {
  it('rounds for an Int16 node and reads back the rounded value', async () => {
    const r = await writer.write('rig.Level', 12.6);
    expect(r).toMatchObject({ written: 13, readBack: 13, verified: true, status: 'Good' });
  });

  it('writes single precision to a Float node and verifies it', async () => {
    const r = await writer.write('rig.Ratio', 0.1);
    expect(r.written).toBe(Math.fround(0.1));
    expect(r).toMatchObject({ readBack: Math.fround(0.1), verified: true });
  });

  it('refuses what the type cannot hold before sending: no WriteRequest reaches the server', async () => {
    const from = requests.length;
    for (const v of [40000, -40000, Number.NaN, Number.POSITIVE_INFINITY]) expect((await error(writer.write('rig.Level', v)))?.code).toBe('LK_VALUE_INVALID');
    expect((await error(writer.write('rig.Level', '5' as unknown as number)))?.code).toBe('LK_VALUE_INVALID');
    expect(requests.slice(from).filter((r) => r.type === 'WriteRequest')).toEqual([]);
    expect((await c.read(['rig.Level']))[0]?.value).toBe(13);
  });

  it('the server refusing (outside InstrumentRange) is LK_WRITE_FAILED with its status', async () => {
    const e = await error(writer.write('rig.Level', 101));
    expect(e?.code).toBe('LK_WRITE_FAILED');
    expect(e?.detail).toMatchObject({ status: 'BadOutOfRange' });
  });
});

describe('session loss', () => {
  it('gets a new session when the server closes ours, and subscriptions deliver again', async () => {
    const got: Sample[] = [];
    const sub = await c.subscribe(['rig.Ramp'], { intervalMs: 50 }, (s) => got.push(...s));
    expect(await waitFor(() => got.length >= 2, 30_000)).toBe(true); // hang guard
    expect(fx.closeSessions()).toBeGreaterThanOrEqual(1);
    const closedAt = Date.now();
    expect(await waitFor(() => got.some((x) => x.receivedAt > closedAt + 200), 30_000)).toBe(true); // hang guard
    expect(await waitFor(async () => (await c.read(['rig.Ramp']))[0]?.quality === 'good', 30_000)).toBe(true); // hang guard
    expect(c.health().state).toBe('connected');
    await sub.close();
  });
});

describe('data-age watchdog', () => {
  it('re-creates a subscription whose monitored items the server silently disabled (alive, keep-alives, no data)', async () => {
    const got: Sample[] = [];
    const sub = await c.subscribe(['rig.Ramp'], { intervalMs: 50 }, (s) => got.push(...s));
    expect(await waitFor(() => got.length >= 3, 30_000)).toBe(true); // hang guard
    const before = c.health().staleRecoveries;
    const oldId = sub.serverSubscriptionId!;
    expect(fx.silenceSubscription(oldId)).toBe(true);
    // max_data_age_ms is 2000 in the fixture's connection; how soon it is detected is the watchdog's
    // timing on a wall clock, so here only that it is (30 s: a hang guard, 15× the data age)
    expect(await waitFor(() => c.health().staleRecoveries > before, 30_000)).toBe(true);
    const detectedAt = Date.now();
    expect(events.some((e) => e.type === 'stale' && e.subscription > 0)).toBe(true);
    expect(await waitFor(() => got.some((x) => x.receivedAt > detectedAt), 30_000)).toBe(true); // data again, after the recovery
    expect(sub.serverSubscriptionId).not.toBe(oldId);
    await sub.close();
  });

  it('re-creates a subscription the server dropped without telling the client (no publish responses at all)', async () => {
    const got: Sample[] = [];
    const sub = await c.subscribe(['rig.Ramp'], { intervalMs: 50 }, (s) => got.push(...s));
    expect(await waitFor(() => got.length >= 3, 30_000)).toBe(true); // hang guard
    const before = c.health().staleRecoveries;
    expect(fx.dropSubscription(sub.serverSubscriptionId!)).toBe(true);
    expect(await waitFor(() => c.health().staleRecoveries > before, 30_000)).toBe(true); // hang guard
    const recoveredAt = Date.now();
    expect(await waitFor(() => got.some((x) => x.receivedAt > recoveredAt), 30_000)).toBe(true); // data again, after the recovery
    await sub.close();
  });

  it('leaves a healthy subscription alone, including one with a deadband that suppresses changes', async () => {
    const got: Sample[] = [];
    const before = c.health().staleRecoveries;
    const a = await c.subscribe(['rig.Ramp', 'rig.Value'], { intervalMs: 50 }, (s) => got.push(...s));
    const b = await c.subscribe(['rig.Ramp'], { intervalMs: 50, deadband: 1e9 }, () => undefined);
    await new Promise((r) => setTimeout(r, 3000));
    expect(c.health().staleRecoveries).toBe(before);
    await Promise.all([a.close(), b.close()]);
    expect(got.length).toBeGreaterThan(20);
  });
});

describe('transport', () => {
  it('sends each request in a chunk of the connection\'s 64 KiB, not the library\'s default 512 KiB', async () => {
    // node-opcua allocates a whole send chunk per request: 512 KiB by default against a node-opcua server, 1.5 MB per
    // guarded write (its Read, Write and Read-back), which kept V8 collecting garbage under external-memory pressure
    const { sizes } = await bufferAllocations(async () => {
      for (let i = 0; i < 5; i++) {
        expect((await c.read(['rig.Value', 'rig.Level'])).every((s) => s.quality === 'good')).toBe(true);
        expect((await writer.write('rig.Level', i)).verified).toBe(true);
      }
    });
    const chunks = sizes.filter((n) => n >= 8192);
    expect(chunks.length).toBeGreaterThanOrEqual(10);
    expect(Math.max(...chunks)).toBe(64 * 1024);
  });

  it('a message larger than one chunk travels in several, both ways', async () => {
    // 20,000 doubles (160 kB) through a client made with the connector's own options: the Write goes out in three
    // chunks, the Read's response comes back in three
    const ns = fx.server.engine.addressSpace!.getNamespace(FIXTURE_NS)!;
    const big = Array.from({ length: 20_000 }, (_, i) => i / 7);
    ns.addVariable({ organizedBy: fx.server.engine.addressSpace!.rootFolder.objects, browseName: 'Big', nodeId: 's=rig.Big', dataType: 'Double', valueRank: 1, accessLevel: 'CurrentRead | CurrentWrite', userAccessLevel: 'CurrentRead | CurrentWrite', value: { dataType: DataType.Double, arrayType: 1, value: new Float64Array(3) } });
    const cm = new OPCUACertificateManager({ rootFolder: join(dataDir, 'big-pki'), automaticallyAcceptUnknownCertificate: true });
    const client = OPCUAClient.create(clientOptions(fx.connection(), { initialMs: 100, maxMs: 400 }, cm));
    await client.connect(fx.url);
    try {
      const session = await client.createSession();
      const nsIndex = (await session.readNamespaceArray()).indexOf(FIXTURE_NS);
      const nodeId = `ns=${nsIndex};s=rig.Big`;
      const { sizes } = await bufferAllocations(async () => {
        const st = await session.write({ nodeId, attributeId: AttributeIds.Value, value: { value: { dataType: DataType.Double, arrayType: 1, value: Float64Array.from(big) } } });
        expect(st.name).toBe('Good');
      });
      // the request's body is encoded whole first (a buffer of its size), then cut into chunks of 64 KiB
      expect(sizes.filter((n) => n === 64 * 1024).length).toBeGreaterThanOrEqual(3);
      expect(sizes).not.toContain(512 * 1024);
      const dv = await session.read({ nodeId, attributeId: AttributeIds.Value });
      expect(Array.from(dv.value.value as Float64Array)).toEqual(big);
      await session.close();
    } finally {
      await client.disconnect();
    }
  });
});
