/**
 * OPC UA throughput of linekeeper's connector against raw node-opcua, both
 * on their own connection to the same in-process plant simulator (real
 * node-opcua server on loopback, SecurityMode None):
 *
 * 1. Batched read of 100 tags: `connector.read(100 tags)` (samples with
 *    unit, quality, timestamps) vs raw `session.read(100 ReadValueIds)` of the
 *    same node ids. The 100 are the simulator's scalar OPC UA tags (spectra and
 *    camera frames are left out: one 351-value array would not be "a value"),
 *    repeated in order up to 100 (repeats allowed, one Read request either way).
 * 2. Notifications per second of one subscription of 1,000 monitored items at
 *    a 100 ms publishing and sampling interval: the simulator's continuously
 *    changing measurements (found by reading twice), repeated up to 1,000
 *    items, through `connector.subscribe` (with its data-age watchdog running)
 *    vs a raw ClientSubscription + ClientMonitoredItemGroup of the same items.
 *
 * Rounds alternate ours/raw so drift on a noisy two-core box hits both alike.
 * Run: npx tsx bench/opcua.bench.ts
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  AttributeIds,
  ClientMonitoredItemGroup,
  OPCUACertificateManager,
  OPCUAClient,
  TimestampsToReturn,
  type ClientSession,
  type ReadValueIdOptions,
} from 'node-opcua';
import { createOpcUaConnector } from '../connectors/opcua/index.js';
import { startSimulator } from '../connectors/sim/index.js';
import type { OpcUaConnectionConfig, OpcUaEquipmentConfig } from '../src/config/schema.js';
import { opsPerSecond, report } from './lib.js';

const READ_SLICES = 20;
const READ_SLICE_MS = 400;
const SUB_ROUNDS = 2;
const SUB_MS = 4000;
const ITEMS = 1000;

const dir = mkdtempSync(join(tmpdir(), 'lk-bench-opcua-'));
const sim = await startSimulator({ timeScale: 60, seed: 7, watchdogTimeoutMs: 600_000, dataDir: join(dir, 'sim') });
const cfg = sim.config.config;
const connection = { ...(cfg.connections.find((c) => c.protocol === 'opcua') as OpcUaConnectionConfig) };
const equipment = cfg.equipment.filter((e): e is OpcUaEquipmentConfig => e.protocol === 'opcua');
const ours = createOpcUaConnector({ connection, equipment, url: sim.opcuaUrl, dataDir: join(dir, 'lk') });
await ours.connect();

const rawClient = OPCUAClient.create({
  endpointMustExist: false,
  connectionStrategy: { maxRetry: 1, initialDelay: 100, maxDelay: 500 },
  clientCertificateManager: new OPCUACertificateManager({ rootFolder: join(dir, 'raw-pki'), automaticallyAcceptUnknownCertificate: true }),
});
await rawClient.connect(sim.opcuaUrl);
const raw: ClientSession = await rawClient.createSession();
const ns = (await raw.readNamespaceArray()).indexOf(connection.namespace_uri);

const allTags = equipment.flatMap((e) => e.tags.filter((t) => t.data_type !== 'DoubleArray' && t.data_type !== 'ByteString').map((t) => ({ id: `${e.id}.${t.name}`, nodeId: `ns=${ns};${t.node_id}`, numeric: t.data_type === 'Double' })));
const hundred = Array.from({ length: 100 }, (_, i) => allTags[i % allTags.length]!);
const ids = hundred.map((t) => t.id);
const readIds: ReadValueIdOptions[] = hundred.map((t) => ({ nodeId: t.nodeId, attributeId: AttributeIds.Value }));

// Sanity: both read the same 100 nodes and get good values.
const [a, b] = [await ours.read(ids), await raw.read(readIds, 0)];
if (a.length !== 100 || b.length !== 100 || a.some((s) => s.quality !== 'good') || b.some((d) => !d.statusCode.isGood())) throw new Error('sanity read failed');

let bad = 0;
const oursRead = async (): Promise<void> => {
  const s = await ours.read(ids);
  if (s[99]?.quality !== 'good') bad++;
};
const rawRead = async (): Promise<void> => {
  const d = await raw.read(readIds, 0);
  if (!d[99]?.statusCode.isGood()) bad++;
};
// Many short alternating slices, summed: a burst of load from elsewhere on the box lands on both sides.
let oursOps = 0;
let rawOps = 0;
let oursTime = 0;
let rawTime = 0;
const slice = async (fn: () => Promise<void>): Promise<[number, number]> => {
  const t0 = performance.now();
  let n = 0;
  while (performance.now() - t0 < READ_SLICE_MS) {
    await fn();
    n++;
  }
  return [n, performance.now() - t0];
};
await opsPerSecond(oursRead, 300);
await opsPerSecond(rawRead, 300);
for (let r = 0; r < READ_SLICES; r++) {
  const [n1, t1] = await slice(oursRead);
  const [n2, t2] = await slice(rawRead);
  oursOps += n1;
  oursTime += t1;
  rawOps += n2;
  rawTime += t2;
}
report({
  name: 'opcua batched read, 100 tags',
  unit: 'values/s',
  ours: { label: 'OpcUaConnector.read(100 tags) → samples', value: (oursOps * 100) / (oursTime / 1000) },
  peer: { label: 'raw node-opcua session.read(100 nodes)', value: (rawOps * 100) / (rawTime / 1000) },
  higherIsBetter: true,
  target: 'ours ≥ 0.85 × raw',
  extra: { slices: READ_SLICES, sliceMs: READ_SLICE_MS, oursReads: oursOps, rawReads: rawOps, failures: bad },
});

// Which measurements keep changing: read twice, keep those that moved.
const numeric = allTags.filter((t) => t.numeric);
const r1 = await ours.read(numeric.map((t) => t.id));
await new Promise((r) => setTimeout(r, 400));
const r2 = await ours.read(numeric.map((t) => t.id));
const changing = numeric.filter((_, i) => r1[i]?.value !== r2[i]?.value);
if (changing.length === 0) throw new Error('no changing nodes in the simulator');
const items = Array.from({ length: ITEMS }, (_, i) => changing[i % changing.length]!);

async function oursNotifications(): Promise<number> {
  let n = 0;
  let counting = false;
  const sub = await ours.subscribe(items.map((t) => t.id), { intervalMs: 100 }, (s) => {
    if (counting) n += s.length;
  });
  await new Promise((r) => setTimeout(r, 1000)); // initial values and ramp-up out of the measurement
  counting = true;
  const t0 = performance.now();
  await new Promise((r) => setTimeout(r, SUB_MS));
  counting = false;
  const rate = n / ((performance.now() - t0) / 1000);
  await sub.close();
  return rate;
}

async function rawNotifications(): Promise<number> {
  let n = 0;
  let counting = false;
  const sub = await raw.createSubscription2({ requestedPublishingInterval: 100, requestedMaxKeepAliveCount: 20, requestedLifetimeCount: 200, maxNotificationsPerPublish: 0, publishingEnabled: true, priority: 10 });
  const group = ClientMonitoredItemGroup.create(
    sub,
    items.map((t) => ({ nodeId: t.nodeId, attributeId: AttributeIds.Value })),
    { samplingInterval: 100, queueSize: 1, discardOldest: true },
    TimestampsToReturn.Both,
  );
  group.on('changed', () => {
    if (counting) n++;
  });
  await new Promise((r) => setTimeout(r, 1000));
  counting = true;
  const t0 = performance.now();
  await new Promise((r) => setTimeout(r, SUB_MS));
  counting = false;
  const rate = n / ((performance.now() - t0) / 1000);
  await sub.terminate();
  return rate;
}

const oursN: number[] = [];
const rawN: number[] = [];
for (let r = 0; r < SUB_ROUNDS; r++) {
  oursN.push(await oursNotifications());
  rawN.push(await rawNotifications());
}
report({
  name: 'opcua subscription, 1000 monitored items @100 ms',
  unit: 'notifications/s',
  ours: { label: 'OpcUaConnector.subscribe (watchdog on)', value: oursN.reduce((x, y) => x + y, 0) / oursN.length },
  peer: { label: 'raw node-opcua ClientSubscription + ClientMonitoredItemGroup', value: rawN.reduce((x, y) => x + y, 0) / rawN.length },
  higherIsBetter: true,
  target: 'ours ≥ 0.85 × raw',
  extra: { changingNodes: changing.length, items: ITEMS, rounds: SUB_ROUNDS, mean: 'of rounds', staleRecoveries: ours.health().staleRecoveries },
});

await ours.close();
await raw.close().catch(() => undefined);
await rawClient.disconnect();
await sim.close();
rmSync(dir, { recursive: true, force: true });
