/**
 * MQTT publishing throughput (messages/s, QoS 0 as Sparkplug 3.0 requires for births and data: counted when the
 * client has written each one to the broker's socket) to the same in-process aedes broker
 * on loopback: linekeeper's Sparkplug publisher live (samples → change detection → DDATA, seq, encode, PUBACK
 * tracking), and through the store-and-forward outbox (broker away: each message a durable SQLite row; broker
 * back: drained oldest first, historical), against the peer — the raw mqtt client publishing the same encoded
 * payloads. Rounds alternate so load swings on a shared machine hit both sides alike; the median is reported.
 *
 * Run: npx tsx bench/mqtt.bench.ts
 */
import { rmSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import mqtt from 'mqtt';
import { encode, SparkplugPublisher, topicOf, type SpMessage } from '../connectors/mqtt/index.js';
import type { Sample, TagDescription } from '../connectors/types.js';
import { systemClock } from '../src/clock.js';
import { silentLogger } from '../src/log.js';
import { openStore } from '../src/store/store.js';
import { aedesBroker } from '../test/integration/mqtt-helpers.js';
import { report } from './lib.js';

const N = 10_000;
const ROUNDS = 3;
const TAG: TagDescription = { tag: 'press.Count', equipment: 'press', name: 'Count', kind: 'measurement', unit: '{tbl}', dataType: 'Double', writable: false, address: 'x' };
const sample = (v: number): Sample => ({ tag: TAG.tag, value: v, quality: 'good', status: 'Good', unit: '{tbl}', sourceTime: Date.now(), receivedAt: Date.now() });

const b = await aedesBroker();
const dir = mkdtempSync(join(tmpdir(), 'lk-bench-mqtt-'));
const store = openStore({ dataDir: dir });
let counter = 0;

function publisher(): SparkplugPublisher {
  return new SparkplugPublisher({
    url: b.url, clientId: `lk-bench-${counter++}`, group: 'bench', node: 'line-3', reconnectMs: 50, store, clock: systemClock, log: silentLogger,
    bound: { maxMessages: 10_000_000, maxBytes: 2 ** 40 }, properties: { site: 's', line: 'l', version: 'bench' }, tags: () => [TAG], current: () => undefined,
    drainPage: 512,
  });
}

async function until(pred: () => boolean): Promise<void> {
  while (!pred()) await new Promise((r) => setImmediate(r));
}

/** Ours live: N changed samples, until the broker acknowledged them all. */
async function oursLive(): Promise<number> {
  const p = publisher();
  p.start();
  await p.when('live');
  const base = p.stats().published;
  const t0 = performance.now();
  for (let i = 0; i < N; i++) p.samples([sample(counter * N + i)]);
  await until(() => p.stats().published - base >= N);
  const dt = performance.now() - t0;
  await p.stop();
  return N / (dt / 1000);
}

/** Ours through the outbox: N samples while the broker is away (durable rows), then the drain when it is back. */
async function oursOutbox(): Promise<{ total: number; enqueue: number; drain: number }> {
  await b.killEdge();
  const p = publisher();
  p.start();
  const t0 = performance.now();
  for (let i = 0; i < N; i++) p.samples([sample(counter * N + i)]);
  await p.flushed(); // queued = committed: the writing phase ends when the last group's commit has returned
  const t1 = performance.now();
  if (p.stats().queued !== N) throw new Error(`${p.stats().queued} of ${N} queued`);
  await b.restartEdge();
  const t2 = performance.now();
  await p.when('live');
  const t3 = performance.now();
  await p.stop();
  return { total: N / ((t1 - t0 + t3 - t2) / 1000), enqueue: N / ((t1 - t0) / 1000), drain: N / ((t3 - t2) / 1000) };
}

/** The peer: the raw mqtt client publishing the same encoded DDATA payloads, QoS 0, until every one is written. */
async function raw(): Promise<number> {
  const c = await mqtt.connectAsync(b.url, { clientId: `raw-${counter++}` });
  const topic = topicOf('bench', 'line-3', 'DDATA', 'press');
  const payloads = Array.from({ length: N }, (_, i) => {
    const m: Pick<SpMessage, 'timestamp' | 'metrics'> = { timestamp: Date.now(), metrics: [{ name: 'Count', type: 'Double', value: i, timestamp: Date.now(), unit: '{tbl}', quality: 'good' }] };
    return Buffer.from(encode(m, i % 256, false));
  });
  let acked = 0;
  const t0 = performance.now();
  for (const p of payloads) c.publish(topic, p, { qos: 0 }, (err) => { if (!err) acked++; });
  await until(() => acked >= N);
  const dt = performance.now() - t0;
  await c.endAsync();
  return N / (dt / 1000);
}

const median = (xs: number[]): number => [...xs].sort((a, b2) => a - b2)[Math.floor(xs.length / 2)]!;
const live: number[] = [];
const box: { total: number; enqueue: number; drain: number }[] = [];
const peer: number[] = [];
await raw(); // warm-up
for (let r = 0; r < ROUNDS; r++) {
  peer.push(await raw());
  live.push(await oursLive());
  box.push(await oursOutbox());
}
const peerM = median(peer);
report({
  name: 'mqtt publish live (QoS 0, written)', unit: 'msg/s', higherIsBetter: true,
  ours: { label: 'SparkplugPublisher live (samples → DDATA)', value: median(live) },
  peer: { label: 'raw mqtt.js publish of the same payloads', value: peerM },
  extra: { messages: N, rounds: ROUNDS },
});
report({
  name: 'mqtt publish through the outbox (store-and-forward)', unit: 'msg/s', higherIsBetter: true,
  ours: { label: 'outbox write + drain on reconnect', value: median(box.map((x) => x.total)) },
  peer: { label: 'raw mqtt.js publish of the same payloads', value: peerM },
  extra: { messages: N, rounds: ROUNDS, outbox_write_msg_s: median(box.map((x) => x.enqueue)), drain_msg_s: median(box.map((x) => x.drain)) },
});
store.close();
await b.close();
rmSync(dir, { recursive: true, force: true });
