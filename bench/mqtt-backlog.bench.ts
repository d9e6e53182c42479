/**
 * Store-and-forward after a long outage: 1,000,000 Sparkplug messages queued in the outbox while the broker was
 * away for 8 hours (one changed sample every 28.8 ms of the queue's clock), then the broker back and the backlog
 * drained. Reported: the time to drain (start → births → every row sent oldest first as historical and deleted →
 * live) and the drain process's peak RSS and heap while draining — the drain reads a page at a time, it never
 * holds the backlog in memory.
 *
 * Each phase runs in its own process so its memory is its own: the fill goes through the product's enqueue path
 * (`SparkplugPublisher.samples` with the broker away: change detection, DDATA, group commits of one turn's
 * messages, 1,024 per turn); the drain is a fresh publisher on the same store, as after a restart; the peer is
 * raw mqtt.js publishing the same number of encoded DDATA payloads at QoS 0, a page at a time (encoded on the
 * fly, no store). The aedes broker runs in this, the parent process, on loopback.
 *
 * Run: npx tsx bench/mqtt-backlog.bench.ts   (MESSAGES=… to change the backlog)
 */
import { fork } from 'node:child_process';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import mqtt from 'mqtt';
import { encode, SparkplugPublisher, topicOf } from '../connectors/mqtt/index.js';
import type { Sample, TagDescription } from '../connectors/types.js';
import { systemClock, type Clock } from '../src/clock.js';
import { silentLogger } from '../src/log.js';
import { openStore } from '../src/store/store.js';
import { report } from './lib.js';

const MESSAGES = Number(process.env.MESSAGES ?? 1_000_000);
const OUTAGE_MS = 8 * 3600 * 1000;
const PER_TURN = 1024;
const TAG: TagDescription = { tag: 'press.Count', equipment: 'press', name: 'Count', kind: 'measurement', unit: '{tbl}', dataType: 'Double', writable: false, address: 'x' };

interface Job { readonly role: 'fill' | 'drain' | 'raw'; readonly dir: string; readonly url: string; readonly n: number }
interface Result { readonly seconds: number; readonly peakRssMb: number; readonly peakHeapMb: number; readonly startRssMb: number; readonly count: number }

function publisher(dir: string, url: string, clock: Clock): { p: SparkplugPublisher; close: () => void } {
  const store = openStore({ dataDir: dir, clock });
  const p = new SparkplugPublisher({
    url, clientId: 'lk-backlog', group: 'bench', node: 'line-3', reconnectMs: 50, store, clock, log: silentLogger,
    bound: { maxMessages: 10_000_000, maxBytes: 2 ** 40 }, properties: { site: 's', line: 'l', version: 'bench' }, tags: () => [TAG], current: () => undefined,
  });
  return { p, close: () => store.close() };
}

/** Peak RSS and heap, sampled every 50 ms while `fn` runs (the drain yields to the event loop between pages). */
async function measured(fn: () => Promise<number>): Promise<Result> {
  const mb = (b: number): number => b / 2 ** 20;
  const startRss = process.memoryUsage().rss;
  let peakRss = startRss;
  let peakHeap = process.memoryUsage().heapUsed;
  const t = setInterval(() => {
    const m = process.memoryUsage();
    peakRss = Math.max(peakRss, m.rss);
    peakHeap = Math.max(peakHeap, m.heapUsed);
  }, 50);
  const t0 = performance.now();
  const count = await fn();
  const seconds = (performance.now() - t0) / 1000;
  clearInterval(t);
  const m = process.memoryUsage();
  return { seconds, peakRssMb: mb(Math.max(peakRss, m.rss)), peakHeapMb: mb(Math.max(peakHeap, m.heapUsed)), startRssMb: mb(startRss), count };
}

async function child(job: Job): Promise<Result> {
  if (job.role === 'fill') {
    // the queue's clock runs through the 8-hour outage as the samples come in
    const t0 = systemClock.now() - OUTAGE_MS;
    let i = 0;
    const clock: Clock = { now: () => t0 + Math.floor((i * OUTAGE_MS) / job.n) };
    const { p, close } = publisher(job.dir, job.url, clock);
    p.start(); // the broker is away: every message goes to the outbox
    const r = await measured(async () => {
      while (i < job.n) {
        const end = Math.min(job.n, i + PER_TURN);
        for (; i < end; i++) p.samples([{ tag: TAG.tag, value: i, quality: 'good', status: 'Good', unit: '{tbl}', sourceTime: clock.now(), receivedAt: clock.now() }]);
        await new Promise((r2) => setImmediate(r2)); // the next turn: this one's group commits
      }
      await p.flushed();
      return p.stats().queued;
    });
    await p.stop();
    close();
    return r;
  }
  if (job.role === 'drain') {
    const { p, close } = publisher(job.dir, job.url, systemClock); // a fresh process on the same store, as after a restart
    const before = p.stats().queued;
    const r = await measured(async () => {
      p.start();
      await p.when('live');
      return before - p.stats().queued;
    });
    await p.stop();
    close();
    return r;
  }
  // the peer: raw mqtt.js, the same number of DDATA payloads encoded on the fly, a page at a time
  const c = await mqtt.connectAsync(job.url, { clientId: 'raw-backlog' });
  const topic = topicOf('bench', 'line-3', 'DDATA', 'press');
  const r = await measured(async () => {
    let sent = 0;
    for (let i = 0; i < job.n; i += 256) {
      const page = Math.min(256, job.n - i);
      await Promise.all(Array.from({ length: page }, (_, k) => new Promise<void>((resolve, reject) => {
        const now = Date.now();
        const buf = encode({ timestamp: now, metrics: [{ name: 'Count', type: 'Double', value: i + k, timestamp: now, unit: '{tbl}', quality: 'good' }] }, (i + k) % 256, true);
        c.publish(topic, Buffer.from(buf), { qos: 0 }, (err) => (err ? reject(err) : (sent++, resolve())));
      })));
    }
    return sent;
  });
  await c.endAsync();
  return r;
}

function run(job: Job): Promise<Result> {
  return new Promise((resolve, reject) => {
    const cp = fork(fileURLToPath(import.meta.url), [], { execArgv: ['--import', 'tsx'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    cp.once('message', (m) => resolve(m as Result));
    cp.once('exit', (code) => code !== 0 && reject(new Error(`${job.role} exited ${code}`)));
    cp.send(job);
  });
}

if (process.send) {
  const job = await new Promise<Job>((resolve) => process.once('message', (m) => resolve(m as Job)));
  const r = await child(job);
  process.send(r, () => process.disconnect());
} else {
  const { aedesBroker } = await import('../test/integration/mqtt-helpers.js');
  const b = await aedesBroker();
  const dir = mkdtempSync(join(tmpdir(), 'lk-bench-backlog-'));
  await b.killEdge(); // the outage
  const fill = await run({ role: 'fill', dir, url: b.url, n: MESSAGES });
  if (fill.count !== MESSAGES) throw new Error(`${fill.count} of ${MESSAGES} queued`);
  const dbMb = statSync(join(dir, 'linekeeper.db')).size / 2 ** 20;
  await b.restartEdge(); // the broker is back
  const drain = await run({ role: 'drain', dir, url: b.url, n: MESSAGES });
  if (drain.count !== MESSAGES) throw new Error(`${drain.count} of ${MESSAGES} drained`);
  const peer = await run({ role: 'raw', dir, url: b.url, n: MESSAGES });
  const f = (x: number): string => x.toFixed(1);
  report({
    name: `mqtt outbox backlog, ${MESSAGES.toLocaleString('en')} messages after an 8-hour outage`, unit: 's to drain', higherIsBetter: false,
    ours: { label: 'SparkplugPublisher drain (fresh process, births, historical, rows deleted)', value: drain.seconds },
    peer: { label: 'raw mqtt.js publishing as many encoded payloads, a page at a time, no store', value: peer.seconds },
    extra: {
      'drain msg/s': Math.round(MESSAGES / drain.seconds), 'drain peak RSS MB': f(drain.peakRssMb), 'drain RSS at start MB': f(drain.startRssMb), 'drain peak heap MB': f(drain.peakHeapMb),
      'peer peak RSS MB': f(peer.peakRssMb), 'fill s': f(fill.seconds), 'fill msg/s': Math.round(MESSAGES / fill.seconds), 'fill peak RSS MB': f(fill.peakRssMb), 'outbox db MB': f(dbMb),
    },
  });
  await b.close();
  rmSync(dir, { recursive: true, force: true });
}
