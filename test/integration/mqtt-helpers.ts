/**
 * Real brokers for the MQTT tests — aedes in-process, Debian's mosquitto as a child process — that can be
 * killed and restarted on the same port, a Sparkplug subscriber that decodes what it sees, and a publisher
 * on a store in a temp dir.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { writeFileSync } from 'node:fs';
import { createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { join } from 'node:path';
import { Aedes } from 'aedes';
import mqtt, { type MqttClient } from 'mqtt';
import { SparkplugPublisher, type PublisherOptions } from '../../connectors/mqtt/index.js';
import type { Sample, TagDescription } from '../../connectors/types.js';
import type { ManualClock } from '../../src/clock.js';
import { silentLogger } from '../../src/log.js';
import type { Store } from '../../src/store/store.js';
import { tahuDecode, tahuValue, type TahuMetric } from './sparkplug-tahu.js';

export interface TestBroker {
  readonly port: number;
  readonly url: string;
  /** Kill the broker (every connection cut, no goodbye). */
  kill(): Promise<void>;
  /** Start it again on the same port (sessions of clean:false clients kept where the broker persists them). */
  restart(): Promise<void>;
  close(): Promise<void>;
}

/**
 * aedes in-process with two listeners on the one broker: `url` for the edge node, `hostUrl` for host applications
 * (subscribers). A kill closes both and destroys every socket; the broker (and its sessions) stays. The listeners
 * restart separately, so a test can let the host application back in first: aedes interleaves a returning
 * persistent session's backlog with new traffic, which is aedes's ordering, not ours.
 */
export async function aedesBroker(): Promise<TestBroker & { broker: Aedes; hostUrl: string; restartHost(): Promise<void>; restartEdge(): Promise<void>; killEdge(): Promise<void> }> {
  const broker = await Aedes.createBroker();
  const sockets = new Set<Socket>();
  const edgeSockets = new Set<Socket>();
  const servers: { edge?: Server; host?: Server } = {};
  const listen = async (which: 'edge' | 'host', port: number): Promise<number> => {
    const server = createServer((s) => {
      sockets.add(s);
      if (which === 'edge') edgeSockets.add(s);
      s.on('close', () => {
        sockets.delete(s);
        edgeSockets.delete(s);
      });
      broker.handle(s);
    });
    servers[which] = server;
    server.listen(port, '127.0.0.1');
    await once(server, 'listening');
    return (server.address() as AddressInfo).port;
  };
  const port = await listen('edge', 0);
  const hostPort = await listen('host', 0);
  const kill = async (): Promise<void> => {
    const closed = [servers.edge, servers.host].filter((x): x is Server => x?.listening === true).map((x) => new Promise<void>((r) => x.close(() => r())));
    for (const s of sockets) s.destroy();
    await Promise.all(closed);
  };
  return {
    broker, port, url: `mqtt://127.0.0.1:${port}`, hostUrl: `mqtt://127.0.0.1:${hostPort}`, kill,
    restart: async () => {
      await listen('host', hostPort);
      await listen('edge', port);
    },
    restartHost: async () => void (await listen('host', hostPort)),
    killEdge: async () => {
      const e = servers.edge!;
      const closed = new Promise<void>((r) => e.close(() => r()));
      for (const s of edgeSockets) s.destroy();
      await closed;
    },
    restartEdge: async () => void (await listen('edge', port)),
    close: async () => {
      await kill();
      await new Promise<void>((r) => broker.close(() => r()));
    },
  };
}

/** Debian's mosquitto on loopback with persistence in `dir`: a SIGTERM kill saves sessions, a restart loads them. */
export async function mosquittoBroker(dir: string): Promise<TestBroker> {
  const probe = createServer();
  probe.listen(0, '127.0.0.1');
  await once(probe, 'listening');
  const port = (probe.address() as AddressInfo).port;
  await new Promise<void>((r) => probe.close(() => r()));
  const conf = join(dir, 'mosquitto.conf');
  writeFileSync(conf, [
    `listener ${port} 127.0.0.1`, 'allow_anonymous true', 'persistence true', `persistence_location ${dir}/`,
    'log_type error', 'log_dest stderr', 'max_queued_messages 100000',
    // Sparkplug births and data are QoS 0: a host's persistent session keeps them while it reconnects
    'queue_qos0_messages true',
    // started as root, mosquitto drops to the `mosquitto` user, who cannot write the persistence file in our temp dir
    ...(process.getuid?.() === 0 ? ['user root'] : []), '',
  ].join('\n'));
  let child: ChildProcess | undefined;
  const start = async (): Promise<void> => {
    child = spawn('/usr/sbin/mosquitto', ['-c', conf], { stdio: ['ignore', 'ignore', 'pipe'] });
    // ready when it accepts a connection
    for (let i = 0; i < 200; i++) {
      const ok = await new Promise<boolean>((r) => {
        const c = mqtt.connect(`mqtt://127.0.0.1:${port}`, { reconnectPeriod: 0, connectTimeout: 1000 });
        c.once('connect', () => { c.end(true); r(true); });
        c.once('error', () => { c.end(true); r(false); });
        c.once('close', () => r(false));
      });
      if (ok) return;
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error('mosquitto did not start');
  };
  const kill = async (): Promise<void> => {
    const c = child;
    child = undefined;
    if (!c || c.exitCode !== null) return;
    const exited = once(c, 'exit');
    c.kill('SIGTERM');
    await exited;
  };
  await start();
  return { port, url: `mqtt://127.0.0.1:${port}`, kill, restart: start, close: kill };
}

export interface Seen {
  readonly topic: string;
  readonly seq: number | undefined;
  /** Payload timestamp (epoch ms). */
  readonly timestamp: number;
  /** Decoded with the official sparkplug_b.proto (protobufjs): value read from the field the datatype names. */
  readonly metrics: { name: string; value: unknown; historical: boolean; type: string; quality: unknown; raw: TahuMetric }[];
  /** MQTT QoS of the delivery (the smaller of the publisher's and the subscription's). */
  readonly qos: number;
}

/**
 * A host application: persistent session (clean:false, QoS 1 subscription). Every payload is decoded with the
 * official `sparkplug_b.proto` through protobufjs, independently of the product's encoder; a value in a field
 * other than the one its datatype names throws (and the message is recorded as undecodable in `errors`).
 */
export async function subscriber(url: string, clientId: string, filter: string): Promise<{ client: MqttClient; seen: Seen[]; errors: string[] }> {
  const seen: Seen[] = [];
  const errors: string[] = [];
  const client = mqtt.connect(url, { clientId, clean: false, reconnectPeriod: 100, connectTimeout: 2000 });
  client.on('message', (topic, payload, packet) => {
    if (topic.startsWith('spBv1.0/STATE/')) return; // JSON, the host's own
    try {
      const p = tahuDecode(payload);
      seen.push({
        topic, seq: p.seq, timestamp: p.timestamp ?? Number.NaN, qos: packet.qos,
        metrics: p.metrics.map((m) => ({ name: m.name ?? '', value: tahuValue(m), historical: m.is_historical, type: m.datatype ?? '', quality: m.properties.Quality?.value, raw: m })),
      });
    } catch (err) {
      errors.push(`${topic}: ${(err as Error).message}`);
    }
  });
  client.on('error', () => undefined);
  await new Promise<void>((r) => client.once('connect', () => r()));
  await client.subscribeAsync(filter, { qos: 1 });
  return { client, seen, errors };
}

export const COUNTER: TagDescription = { tag: 'press.Count', equipment: 'press', name: 'Count', kind: 'measurement', unit: '{tbl}', dataType: 'Double', writable: false, address: 'ns=1;s=Count' };

export function counterSample(v: number, at: number): Sample {
  return { tag: COUNTER.tag, value: v, quality: 'good', status: 'Good', unit: '{tbl}', sourceTime: at, receivedAt: at };
}

/** A sender of the counter's next `n` values, 100 ms of the manual clock apart (the stream both broker tests cut). */
export function counterSender(p: SparkplugPublisher, clock: ManualClock): (n: number) => void {
  let v = 0;
  return (n) => {
    for (let i = 0; i < n; i++) {
      clock.advance(100);
      p.samples([counterSample(++v, clock.now())]);
    }
  };
}

export function newPublisher(store: Store, clock: ManualClock, url: string, extra: Partial<PublisherOptions> = {}): SparkplugPublisher {
  const current = new Map<string, Sample>();
  return new SparkplugPublisher({
    url, clientId: 'lk-edge', group: 'plant', node: 'line-3', reconnectMs: 100, keepaliveS: 5,
    bound: { maxMessages: 100_000, maxBytes: 64 * 1024 * 1024 }, store, clock, log: silentLogger,
    properties: { site: 'site-ravenna', line: 'line-3', version: 'test' },
    tags: () => [COUNTER], current: (t) => current.get(t), ...extra,
  });
}

/** Wait until `pred` holds (polling); fails after `ms` with `what` — a bound on waiting, not a speed assertion. */
export async function until(pred: () => boolean, what: string, ms = 30_000): Promise<void> {
  const end = Date.now() + ms;
  while (!pred()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** The counter values of the DDATA messages seen, with their historical flag, in arrival order. */
export function counterValues(seen: readonly Seen[]): { value: number; historical: boolean }[] {
  return seen.filter((s) => s.topic.endsWith('/DDATA/line-3/press')).flatMap((s) => s.metrics.filter((m) => m.name === 'Count').map((m) => ({ value: m.value as number, historical: m.historical })));
}

/**
 * Check that nothing was lost and order was kept: the first occurrence of each value is 1..n in order (a
 * message whose PUBACK was lost with the connection may come twice: at-least-once).
 */
export function firstOccurrences(values: readonly { value: number }[]): number[] {
  const firsts: number[] = [];
  const had = new Set<number>();
  for (const v of values) {
    if (had.has(v.value)) continue;
    had.add(v.value);
    firsts.push(v.value);
  }
  return firsts;
}

/**
 * Seq of each message after each NBIRTH: 0 at the birth, +1 per message, wrapping at 256. A message seen before
 * (same topic, seq and metrics: a QoS 1 redelivery from the broker to the subscriber) is skipped.
 */
export function seqBroken(seen: readonly Seen[]): string | undefined {
  let expect: number | undefined;
  const had = new Set<string>();
  for (const [i, s] of seen.entries()) {
    if (s.topic.includes('/NDEATH/')) continue;
    const key = `${s.topic}|${s.seq}|${s.timestamp}|${JSON.stringify(s.metrics)}`;
    if (had.has(key)) continue;
    had.add(key);
    if (s.topic.includes('/NBIRTH/')) {
      if (s.seq !== 0) return `NBIRTH #${i} has seq ${s.seq}`;
      expect = 1;
      continue;
    }
    if (expect === undefined) continue; // before the first birth we saw
    if (s.seq !== expect) return `message #${i} (${s.topic}) has seq ${s.seq}, expected ${expect}`;
    expect = (expect + 1) % 256;
  }
  return undefined;
}

/** A PUBLISH the broker received from the edge node, as it arrived (QoS and retain flag of the sender). */
export interface EdgePacket {
  readonly topic: string;
  readonly qos: number;
  readonly retain: boolean;
  readonly payload: Buffer;
}

/** A CONNECT packet the broker received from the edge node: its will, as sent. */
export interface EdgeConnect {
  readonly will: { topic: string; qos: number; retain: boolean; payload: Buffer } | undefined;
}

/**
 * Record, on the aedes broker itself, every PUBLISH and every CONNECT packet of client `clientId` (wills the broker
 * sends on its behalf included, with the will's QoS and retain flag).
 */
export function captureEdge(broker: Aedes, clientId = 'lk-edge'): { packets: EdgePacket[]; connects: EdgeConnect[] } {
  const packets: EdgePacket[] = [];
  const connects: EdgeConnect[] = [];
  broker.on('publish', (packet, client) => {
    if (client?.id !== clientId || packet.topic.startsWith('$SYS')) return;
    packets.push({ topic: packet.topic, qos: packet.qos, retain: packet.retain, payload: Buffer.from(packet.payload as Buffer) });
  });
  broker.preConnect = (client, packet, done) => {
    if (packet.clientId === clientId) {
      const w = packet.will as { topic: string; qos: number; retain: boolean; payload: Buffer } | undefined;
      connects.push({ will: w ? { topic: w.topic, qos: w.qos, retain: w.retain, payload: Buffer.from(w.payload) } : undefined });
    }
    done(null, true);
  };
  return { packets, connects };
}
