/**
 * Sparkplug B publishing and store-and-forward against an in-process aedes broker: births, DDATA on changes,
 * the will, a broker killed and restarted mid-stream (nothing lost, order kept, replayed messages historical,
 * seq continuous per session), the outbox bound with its audited drop, and the air-gapped default.
 */
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { checkpointMetrics, Outbox, startLineMqtt } from '../../connectors/mqtt/index.js';
import { loadConfig } from '../../src/config/load.js';
import { silentLogger } from '../../src/log.js';
import type { Store } from '../../src/store/store.js';
import { newStore, tempDir } from '../unit/audit-helpers.js';
import {
  aedesBroker, COUNTER, counterSample, counterSender, counterValues, firstOccurrences, newPublisher, seqBroken, subscriber, until,
} from './mqtt-helpers.js';

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

function store(): ReturnType<typeof newStore> {
  const t = tempDir('lk-mqtt-');
  const s = newStore(t.dir);
  cleanups.push(t.cleanup, () => s.store.close());
  return s;
}

async function broker(): Promise<Awaited<ReturnType<typeof aedesBroker>>> {
  const b = await aedesBroker();
  cleanups.push(() => b.close());
  return b;
}

describe('Sparkplug B publisher on aedes', () => {
  it('births with bdSeq, units and current values; DDATA only on change; seq from 0 per birth', async () => {
    const b = await broker();
    const { store: s, clock } = store();
    const sub = await subscriber(b.hostUrl, 'host-1', 'spBv1.0/plant/#');
    cleanups.push(() => sub.client.endAsync(true));
    const p = newPublisher(s, clock, b.url);
    cleanups.push(() => p.stop());
    p.start();
    await p.when('live');
    p.samples([counterSample(1, clock.now())]);
    p.samples([counterSample(1, clock.now())]); // no change: nothing sent
    p.samples([counterSample(2, clock.now())]);
    p.nodeData(checkpointMetrics({ v: 1, tenant: 'acme-pharma', seq: 12, head_hash: 'ab'.repeat(32), ts: '2026-01-01T06:00:00.000Z', key_id: 'k1', sig: 'c2ln' }));
    await until(() => counterValues(sub.seen).length >= 2 && sub.seen.some((x) => x.topic.endsWith('/NDATA/line-3')), 'DDATA and NDATA');

    const nbirth = sub.seen.find((x) => x.topic === 'spBv1.0/plant/NBIRTH/line-3')!;
    expect(nbirth.seq).toBe(0);
    expect(nbirth.metrics.find((m) => m.name === 'bdSeq')?.value).toBe(0);
    expect(nbirth.metrics.map((m) => m.name)).toEqual(expect.arrayContaining(['Node Control/Rebirth', 'Run/ToolCall', 'Run/State', 'Audit/Checkpoint/Signature']));
    const dbirth = sub.seen.find((x) => x.topic === 'spBv1.0/plant/DBIRTH/line-3/press')!;
    expect(dbirth.metrics.map((m) => [m.name, m.type])).toEqual([['Count', 'Double']]);
    expect(counterValues(sub.seen)).toEqual([{ value: 1, historical: false }, { value: 2, historical: false }]);
    const ndata = sub.seen.find((x) => x.topic.endsWith('/NDATA/line-3'))!;
    expect(Object.fromEntries(ndata.metrics.map((m) => [m.name, m.value]))).toMatchObject({ 'Audit/Checkpoint/Tenant': 'acme-pharma', 'Audit/Checkpoint/Seq': 12, 'Audit/Checkpoint/KeyId': 'k1' });
    expect(seqBroken(sub.seen)).toBeUndefined();
  });

  // The broker goes away for the edge node (its listener closed, its socket cut) while a host application stays
  // subscribed: what reaches the host is exactly what the edge node delivered. (A full kill with the host cut too is
  // the mosquitto test; aedes interleaves a returning session's backlog with new traffic, which is not ours to test.)
  // Births and data are QoS 0 (Sparkplug 3.0): what was already written to the socket the broker dropped is gone
  // (at most once on the wire); everything the edge node still held, or made while the broker was away, arrives.
  it('the broker gone mid-stream and back: order kept, everything held replayed as historical before live data', async () => {
    const b = await broker();
    const { store: s, clock } = store();
    const sub = await subscriber(b.hostUrl, 'host-2', 'spBv1.0/plant/#');
    cleanups.push(() => sub.client.endAsync(true));
    const p = newPublisher(s, clock, b.url);
    cleanups.push(() => p.stop());
    p.start();
    await p.when('live');
    const send = counterSender(p, clock);
    send(200);
    await until(() => counterValues(sub.seen).length >= 20, 'the first values through');
    await b.killEdge(); // mid-stream: most of these are still waiting for their PUBACK
    await p.when('offline');
    send(300); // the broker is away: all into the outbox
    await p.flushed(); // queued = committed (the turn's group)
    expect(p.stats().queued).toBeGreaterThanOrEqual(300);
    await b.restartEdge();
    await p.when('live');
    expect(p.stats().queued).toBe(0);
    send(200);
    await until(() => counterValues(sub.seen).some((x) => x.value === 700), 'the last live value', 60_000);

    const values = counterValues(sub.seen);
    const firsts = firstOccurrences(values);
    expect(firsts).toEqual([...firsts].sort((a, x) => a - x)); // order kept
    expect(firsts.length).toBe(values.length); // nothing twice
    expect(firsts.filter((v) => v > 200)).toEqual(Array.from({ length: 500 }, (_, i) => i + 201)); // nothing held was lost
    expect(firsts.filter((v) => v <= 20)).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
    expect(sub.errors).toEqual([]);
    // what was queued in the outage came back flagged historical; what came after the drain is live
    for (const x of values.filter((y) => y.value > 200 && y.value <= 500)) expect(x.historical).toBe(true);
    for (const x of values.filter((y) => y.value > 500)) expect(x.historical).toBe(false);
    // the second session: a new birth with the next bdSeq, seq from 0 and continuous
    const births = sub.seen.filter((x) => x.topic === 'spBv1.0/plant/NBIRTH/line-3');
    // (attempts refused while the listener was closed sent no CONNECT packet: bdSeq moves by one)
    const bdSeqs = births.map((x) => x.metrics.find((m) => m.name === 'bdSeq')?.value as number);
    expect(bdSeqs).toEqual([0, 1]);
    expect(seqBroken(sub.seen)).toBeUndefined();
    // the historical replay comes after the second birth and before the first live value of the new session
    const at = (pred: (i: number) => boolean): number => sub.seen.findIndex((_, i) => pred(i));
    const birth2 = at((i) => sub.seen[i] === births[1]);
    const firstLive = at((i) => sub.seen[i]!.metrics.some((m) => m.name === 'Count' && (m.value as number) > 500));
    const lastHistorical = sub.seen.findLastIndex((x) => x.metrics.some((m) => m.name === 'Count' && m.historical));
    expect(birth2).toBeLessThan(lastHistorical);
    expect(lastHistorical).toBeLessThan(firstLive);
  });

  it('the will is the NDEATH with the session bdSeq: the broker publishes it when the edge node vanishes', async () => {
    const b = await broker();
    const { store: s, clock } = store();
    const sub = await subscriber(b.hostUrl, 'host-3', 'spBv1.0/plant/NDEATH/#');
    cleanups.push(() => sub.client.endAsync(true));
    const p = newPublisher(s, clock, b.url);
    p.start();
    await p.when('live');
    // cut the edge node's socket only (the broker lives): aedes sends the will
    const clients = (b.broker as unknown as { clients: Record<string, { conn: { destroy(): void } } | undefined> }).clients;
    expect(clients['lk-edge']).toBeDefined();
    clients['lk-edge']!.conn.destroy();
    await until(() => sub.seen.length > 0, 'NDEATH');
    expect(sub.seen[0]!.metrics).toEqual([expect.objectContaining({ name: 'bdSeq', value: 0 })]);
    await p.when('live'); // reconnected with bdSeq 1
    expect(p.stats().bdSeq).toBe(1);
    await p.stop();
    await until(() => sub.seen.length > 1, 'the NDEATH of the clean stop');
    expect(sub.seen[1]!.metrics).toEqual([expect.objectContaining({ name: 'bdSeq', value: 1 })]);
  });
});

describe('outbox bound', () => {
  it('drops the oldest first past the bound, with one audit entry per drop counting what went', () => {
    const { store: s, clock } = store();
    const box = new Outbox(s, { maxMessages: 20, maxBytes: 64 * 1024 * 1024 });
    for (let i = 1; i <= 45; i++) {
      clock.advance(1000);
      box.append({ topic: 't', timestamp: clock.now(), metrics: [{ name: 'Count', type: 'Double', value: i, timestamp: clock.now() }] });
    }
    expect(box.size).toBeLessThanOrEqual(20);
    const left = box.page(0, 100).map((r) => r.message.metrics[0]!.value);
    expect(left).toEqual(Array.from({ length: left.length }, (_, i) => 45 - left.length + 1 + i)); // the newest, in order
    const drops = s.db.prepare("SELECT args FROM audit_entry WHERE tenant = 'site' AND action = 'connector.mqtt_outbox_dropped' ORDER BY seq").pluck().all() as string[];
    expect(drops.length).toBeGreaterThan(0);
    expect(drops.length).toBeLessThan(45 - 20); // batches, not one entry per message
    const total = drops.map((d) => JSON.parse(d) as { dropped_messages: number }).reduce((a, d) => a + d.dropped_messages, 0);
    expect(total).toBe(45 - left.length);
    expect(box.dropped).toBe(total);
  });

  it('keeps what it holds across a restart of the daemon (same store), in order', () => {
    const t = tempDir('lk-mqtt-');
    cleanups.push(t.cleanup);
    const a = newStore(t.dir);
    const box = new Outbox(a.store, { maxMessages: 100, maxBytes: 1 << 20 });
    for (let i = 1; i <= 5; i++) box.append({ topic: 't', timestamp: i, metrics: [{ name: 'Count', type: 'Double', value: i, timestamp: i }] });
    box.setState('bdSeq', 7);
    a.store.close();
    const b = newStore(t.dir);
    cleanups.push(() => b.store.close());
    const again = new Outbox(b.store, { maxMessages: 100, maxBytes: 1 << 20 });
    expect(again.size).toBe(5);
    expect(again.page(0, 10).map((r) => r.message.metrics[0]!.value)).toEqual([1, 2, 3, 4, 5]);
    expect(again.state('bdSeq')).toBe(7);
    expect(again.takeOrd()).toBe(6);
  });
});

describe('outbox group commit', () => {
  /** The store as the publisher sees it, counting the transactions that changed the outbox's rows. */
  function counting(s: Store): { store: Store; outboxCommits: () => number } {
    let n = 0;
    const rows = s.db.prepare('SELECT COUNT(*) FROM mqtt_outbox').pluck();
    const store = Object.create(s) as Store;
    store.tx = <T>(fn: Parameters<Store['tx']>[0]): T => s.tx((t) => {
      const before = rows.get();
      const r = fn(t) as T;
      if (rows.get() !== before) n++;
      return r;
    });
    return { store, outboxCommits: () => n };
  }

  it("a turn's messages are one durable commit; a message is queued (acknowledged) only once that commit is done", async () => {
    const b = await broker();
    await b.killEdge(); // the broker is away from the start: everything goes to the outbox
    const { store: s, clock } = store();
    const c = counting(s);
    const p = newPublisher(s, clock, b.url, { store: c.store, groupMax: 1024 });
    cleanups.push(() => p.stop());
    p.start();
    // what another process — or this one after a crash — finds in the database file
    const disk = new Database(s.db.name, { readonly: true, fileMustExist: true });
    cleanups.push(() => { disk.close(); });
    const onDisk = (): number[] => (disk.prepare('SELECT message FROM mqtt_outbox ORDER BY ord').pluck().all() as string[])
      .map((m) => (JSON.parse(m) as { metrics: { value: number }[] }).metrics[0]!.value);
    const send = counterSender(p, clock);

    send(50); // one turn
    // not acknowledged yet: held in memory, nothing on disk — a crash now loses these 50 and nothing else
    expect(p.stats()).toMatchObject({ pending: 50, queued: 0 });
    expect(onDisk()).toEqual([]);
    await p.flushed();
    expect(p.stats()).toMatchObject({ pending: 0, queued: 50 });
    expect(c.outboxCommits()).toBe(1); // one commit for the turn, not one per message
    expect(onDisk()).toEqual(Array.from({ length: 50 }, (_, i) => i + 1));

    // a burst larger than a group: committed in groups of groupMax as it is produced, the rest at the end of the turn
    send(2500);
    expect(p.stats()).toMatchObject({ pending: 2500 - 2048, queued: 50 + 2048 });
    expect(onDisk()).toHaveLength(50 + 2048); // what is acknowledged is on disk
    await p.flushed();
    expect(c.outboxCommits()).toBe(1 + 3);
    expect(onDisk()).toEqual(Array.from({ length: 2550 }, (_, i) => i + 1)); // in order across groups

    // a stop commits the group being collected before it returns
    send(7);
    expect(p.stats().pending).toBe(7);
    await p.stop();
    expect(p.stats()).toMatchObject({ pending: 0, queued: 2557 });
    expect(onDisk()).toHaveLength(2557);
  });
});

describe('air-gapped default', () => {
  const tcpHandles = (): number => process.getActiveResourcesInfo().filter((r) => r === 'TCPSocketWrap' || r === 'TCPWRAP').length;

  it('no mqtt section: nothing is created and no socket is opened', async () => {
    const loaded = loadConfig();
    expect(loaded.config.mqtt).toBeUndefined();
    const { store: s, clock } = store();
    const before = tcpHandles();
    const line = startLineMqtt({ loaded, store: s, clock, log: silentLogger, version: 't', tags: () => [COUNTER], current: () => undefined });
    await new Promise((r) => setTimeout(r, 100));
    expect(line).toBeUndefined();
    expect(tcpHandles()).toBe(before);
  });

  it('with an mqtt section a socket is opened (the check above can fail)', async () => {
    const b = await broker();
    const loaded = loadConfig();
    const withMqtt = { ...loaded, config: { ...loaded.config, mqtt: { url: b.url, group_id: 'plant', edge_node_id: 'line-3', keepalive_s: 30, reconnect_ms: 100, outbox: { max_messages: 100, max_bytes: 1 << 20 } } } };
    const { store: s, clock } = store();
    const before = tcpHandles();
    const line = startLineMqtt({ loaded: withMqtt, store: s, clock, log: silentLogger, version: 't', tags: () => [COUNTER], current: () => undefined });
    cleanups.push(() => line?.stop());
    await line!.publisher.when('live');
    expect(tcpHandles()).toBeGreaterThan(before);
  });
});
