/**
 * Sparkplug B 3.0 conformance of the edge node, checked on the aedes broker itself (each PUBLISH and CONNECT as it
 * arrived from the edge node: QoS, retain, will) and decoded with the official Eclipse Tahu `sparkplug_b.proto`
 * through protobufjs (test/integration/sparkplug-tahu.ts), not the product's encoder. The normative statements
 * each test checks are listed by their TCK ids in docs/mqtt.md.
 */
import mqtt from 'mqtt';
import { afterEach, describe, expect, it } from 'vitest';
import type { Sample, TagDescription } from '../../connectors/types.js';
import { newStore, tempDir } from '../unit/audit-helpers.js';
import { aedesBroker, captureEdge, newPublisher, seqBroken, subscriber, until, type EdgePacket } from './mqtt-helpers.js';
import { expectedField, tahuDecode, tahuValue } from './sparkplug-tahu.js';

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

const tag = (name: string, kind: TagDescription['kind'], dataType: string, unit = ''): TagDescription =>
  ({ tag: `press.${name}`, equipment: 'press', name, kind, unit, dataType, writable: kind === 'setpoint', address: `ns=1;s=${name}` });
const TAGS = [
  tag('Hardness', 'measurement', 'Double', 'N'), tag('MainForce', 'setpoint', 'Double', 'kN'), tag('Speed', 'setpoint', 'Float', '{tbl}/h'),
  tag('SupervisorState', 'supervisor', 'String'), tag('RevertCount', 'supervisor', 'UInt32'), tag('ActiveRecipe', 'supervisor', 'Int32'),
  tag('Heartbeat', 'supervisor', 'UInt16'), tag('Offset', 'setpoint', 'Int16'), tag('Running', 'measurement', 'Boolean'),
];
const sample = (name: string, value: Sample['value'], at: number): Sample => ({ tag: `press.${name}`, value, quality: 'good', status: 'Good', unit: '', sourceTime: at, receivedAt: at });

async function setup(extra: Parameters<typeof newPublisher>[3] = {}) {
  const t = tempDir('lk-spb-');
  const { store: s, clock } = newStore(t.dir);
  cleanups.push(t.cleanup, () => s.close());
  const b = await aedesBroker();
  cleanups.push(() => b.close());
  const cap = captureEdge(b.broker);
  const current = new Map<string, Sample>([
    ['press.Hardness', sample('Hardness', 80.5, clock.now())], ['press.MainForce', sample('MainForce', 12.5, clock.now())],
    ['press.Speed', sample('Speed', 1.5, clock.now())], ['press.SupervisorState', sample('SupervisorState', 'ATTENDED', clock.now())],
    ['press.RevertCount', sample('RevertCount', 3_000_000_000, clock.now())], ['press.ActiveRecipe', sample('ActiveRecipe', -7, clock.now())],
    ['press.Heartbeat', sample('Heartbeat', 65_000, clock.now())], ['press.Offset', sample('Offset', -300, clock.now())],
    ['press.Running', sample('Running', true, clock.now())],
  ]);
  const p = newPublisher(s, clock, b.url, { tags: () => TAGS, current: (x) => current.get(x), ...extra });
  cleanups.push(() => p.stop());
  return { b, cap, p, clock, current };
}

const kind = (topic: string): string => topic.split('/')[2]!;
const decoded = (ps: readonly EdgePacket[], k: string) => ps.filter((x) => kind(x.topic) === k).map((x) => tahuDecode(x.payload));

describe('Sparkplug B 3.0 edge node (aedes, official sparkplug_b.proto)', () => {
  it('births and data: QoS 0, not retained; setpoints and supervisor tags with values and good quality; each datatype in its field', async () => {
    const { cap, p, clock } = await setup();
    p.start();
    await p.when('live');
    clock.advance(1000);
    p.samples([sample('MainForce', 13.0, clock.now()), sample('SupervisorState', 'LOST', clock.now()), sample('RevertCount', 3_000_000_001, clock.now())]);
    p.nodeData([{ name: 'Run/State', type: 'String', value: '{}' }]);
    await until(() => cap.packets.some((x) => kind(x.topic) === 'DDATA') && cap.packets.some((x) => kind(x.topic) === 'NDATA'), 'DDATA and NDATA');

    const data = cap.packets.filter((x) => ['NBIRTH', 'DBIRTH', 'NDATA', 'DDATA'].includes(kind(x.topic)));
    expect(data.length).toBe(4);
    for (const x of data) expect({ topic: x.topic, qos: x.qos, retain: x.retain }).toEqual({ topic: x.topic, qos: 0, retain: false });

    const [nbirth] = decoded(cap.packets, 'NBIRTH');
    expect(nbirth!.seq).toBe(0);
    expect(typeof nbirth!.timestamp).toBe('number');
    const bd = nbirth!.metrics.find((m) => m.name === 'bdSeq')!;
    expect({ datatype: bd.datatype, field: bd.field, value: bd.raw }).toEqual({ datatype: 'Int64', field: 'long_value', value: 0 });
    const rebirth = nbirth!.metrics.find((m) => m.name === 'Node Control/Rebirth')!;
    expect({ datatype: rebirth.datatype, value: tahuValue(rebirth) }).toEqual({ datatype: 'Boolean', value: false });

    const [dbirth] = decoded(cap.packets, 'DBIRTH');
    expect(dbirth!.seq).toBe(1);
    const born = Object.fromEntries(dbirth!.metrics.map((m) => [m.name, { datatype: m.datatype, field: m.field, value: tahuValue(m), quality: m.properties.Quality }]));
    expect(born).toEqual({
      Hardness: { datatype: 'Double', field: 'double_value', value: 80.5, quality: { type: 3, field: 'int_value', value: 192 } },
      MainForce: { datatype: 'Double', field: 'double_value', value: 12.5, quality: { type: 3, field: 'int_value', value: 192 } },
      Speed: { datatype: 'Float', field: 'float_value', value: 1.5, quality: { type: 3, field: 'int_value', value: 192 } },
      SupervisorState: { datatype: 'String', field: 'string_value', value: 'ATTENDED', quality: { type: 3, field: 'int_value', value: 192 } },
      RevertCount: { datatype: 'UInt32', field: 'int_value', value: 3_000_000_000, quality: { type: 3, field: 'int_value', value: 192 } },
      ActiveRecipe: { datatype: 'Int32', field: 'int_value', value: -7, quality: { type: 3, field: 'int_value', value: 192 } },
      Heartbeat: { datatype: 'UInt16', field: 'int_value', value: 65_000, quality: { type: 3, field: 'int_value', value: 192 } },
      Offset: { datatype: 'Int16', field: 'int_value', value: -300, quality: { type: 3, field: 'int_value', value: 192 } },
      Running: { datatype: 'Boolean', field: 'boolean_value', value: true, quality: { type: 3, field: 'int_value', value: 192 } },
    });
    for (const m of dbirth!.metrics) {
      expect(m.field).toBe(expectedField(m.datatype));
      expect(m.is_null).toBe(false);
      expect(typeof m.timestamp).toBe('number');
    }

    const [ddata] = decoded(cap.packets, 'DDATA');
    expect(ddata!.seq).toBe(2);
    expect(Object.fromEntries(ddata!.metrics.map((m) => [m.name, [tahuValue(m), m.properties.Quality?.value, m.is_historical]]))).toEqual({
      MainForce: [13.0, 192, false], SupervisorState: ['LOST', 192, false], RevertCount: [3_000_000_001, 192, false],
    });
    expect(decoded(cap.packets, 'NDATA')[0]!.seq).toBe(3);
  });

  it('a value that is not good is null (is_null, no value field) with Quality 0 (BAD), and uncertain is BAD too', async () => {
    const { cap, p, clock } = await setup();
    p.start();
    await p.when('live');
    clock.advance(1000);
    p.samples([{ ...sample('MainForce', 14, clock.now()), quality: 'uncertain' }, { ...sample('RevertCount', null, clock.now()), quality: 'bad' }]);
    await until(() => cap.packets.some((x) => kind(x.topic) === 'DDATA'), 'DDATA');
    const ms = decoded(cap.packets, 'DDATA')[0]!.metrics;
    for (const m of ms) expect({ is_null: m.is_null, field: m.field, q: m.properties.Quality }).toEqual({ is_null: true, field: undefined, q: { type: 3, field: 'int_value', value: 0 } });
    expect(ms.map((m) => m.name).sort()).toEqual(['MainForce', 'RevertCount']);
  });

  it('bdSeq: Int64 in every will and NBIRTH, the same in both, +1 per CONNECT packet — not per refused attempt', async () => {
    const { b, cap, p } = await setup();
    p.start();
    await p.when('live');
    const births = (n: number) => until(() => decoded(cap.packets, 'NBIRTH').length >= n, `NBIRTH #${n}`);
    await births(1); // on the broker (QoS 0: a socket cut before the broker read it would lose it)
    // the edge node's socket cut: the broker sends the will (QoS 1, not retained) and the edge node connects again
    const clients = (b.broker as unknown as { clients: Record<string, { conn: { destroy(): void } } | undefined> }).clients;
    clients['lk-edge']!.conn.destroy();
    await until(() => cap.connects.length >= 2 && p.state === 'live', 'the second session');
    await births(2);
    // the listener closed: attempts are refused before any CONNECT is sent
    await b.killEdge();
    await p.when('offline');
    const refusedFrom = cap.connects.length;
    await new Promise((r) => setTimeout(r, 600)); // several reconnect attempts (100 ms apart) find no listener
    expect(cap.connects.length).toBe(refusedFrom);
    await b.restartEdge();
    await until(() => cap.connects.length >= 3 && p.state === 'live', 'the third session');
    await births(3);

    const wills = cap.connects.map((x) => {
      expect(x.will).toMatchObject({ topic: 'spBv1.0/plant/NDEATH/line-3', qos: 1, retain: false });
      const m = tahuDecode(x.will!.payload).metrics;
      expect(m).toHaveLength(1);
      expect({ name: m[0]!.name, datatype: m[0]!.datatype, field: m[0]!.field }).toEqual({ name: 'bdSeq', datatype: 'Int64', field: 'long_value' });
      return m[0]!.raw as number;
    });
    expect(wills).toEqual([0, 1, 2]);
    const born = decoded(cap.packets, 'NBIRTH').map((x) => x.metrics.find((m) => m.name === 'bdSeq')!);
    expect(born.map((m) => [m.datatype, m.raw])).toEqual([['Int64', 0], ['Int64', 1], ['Int64', 2]]);
    // the will the broker published for the cut session: QoS 1, not retained, bdSeq 0
    const deaths = cap.packets.filter((x) => kind(x.topic) === 'NDEATH');
    expect(deaths.length).toBeGreaterThanOrEqual(1);
    expect({ qos: deaths[0]!.qos, retain: deaths[0]!.retain, bdSeq: tahuDecode(deaths[0]!.payload).metrics[0]!.raw }).toEqual({ qos: 1, retain: false, bdSeq: 0 });
  });

  it('primary host STATE: no birth until it is online; offline ends the session (NDEATH) and data is held; back online: new birth, then the held data as historical', async () => {
    const { b, cap, p, clock } = await setup({ primaryHostId: 'scada-1' });
    const host = mqtt.connect(b.hostUrl, { clientId: 'scada-1', reconnectPeriod: 0 });
    cleanups.push(() => host.endAsync(true));
    await new Promise<void>((r) => host.once('connect', () => r()));
    const sub = await subscriber(b.hostUrl, 'scada-1-sub', 'spBv1.0/plant/#');
    cleanups.push(() => sub.client.endAsync(true));
    const state = (online: boolean, timestamp: number) => host.publishAsync('spBv1.0/STATE/scada-1', JSON.stringify({ online, timestamp }), { qos: 1, retain: true });

    p.start();
    await p.when('waiting');
    clock.advance(100);
    p.samples([sample('MainForce', 20, clock.now())]); // held: no primary host yet
    await state(true, 1000);
    await p.when('live');
    await until(() => cap.packets.some((x) => kind(x.topic) === 'DBIRTH'), 'the first births on the broker');
    await until(() => sub.seen.some((x) => kind(x.topic) === 'DBIRTH'), 'the first births at the host');

    // the host goes offline: NDEATH, disconnect, a new CONNECT (bdSeq 1) that waits
    await state(false, 2000);
    await until(() => cap.connects.length >= 2 && p.state === 'waiting', 'the edge node waiting again');
    expect(cap.packets.filter((x) => kind(x.topic) === 'NDEATH').map((x) => tahuDecode(x.payload).metrics[0]!.raw)).toEqual([0]);
    for (let i = 1; i <= 5; i++) {
      clock.advance(100);
      p.samples([sample('MainForce', 20 + i, clock.now())]);
    }
    await p.flushed(); // queued = committed (the turn's group)
    expect(p.stats().queued).toBe(5);
    // an online STATE older than the last one is stale: still waiting
    await state(true, 1500);
    await new Promise((r) => setTimeout(r, 300));
    expect(p.state).toBe('waiting');
    expect(cap.packets.filter((x) => kind(x.topic) === 'NBIRTH')).toHaveLength(1);

    await state(true, 3000);
    await p.when('live');
    clock.advance(100);
    p.samples([sample('MainForce', 30, clock.now())]);
    await until(() => sub.seen.some((x) => x.metrics.some((m) => m.name === 'MainForce' && m.value === 30)), 'the live value');

    const nbirths = decoded(cap.packets, 'NBIRTH');
    expect(nbirths.map((x) => x.metrics.find((m) => m.name === 'bdSeq')!.raw)).toEqual([0, 1]);
    const order = sub.seen.filter((x) => !x.topic.includes('/NDEATH/')).map((x) => `${kind(x.topic)}${x.metrics.filter((m) => m.name === 'MainForce').map((m) => `:${m.value as number}${m.historical ? 'h' : ''}`).join('')}`);
    // each session: births with the current value (12.5 here, the test's `current`), then what was held while
    // waiting, replayed as historical in order, then live data
    expect(order).toEqual(['NBIRTH', 'DBIRTH:12.5', 'DDATA:20h', 'NBIRTH', 'DBIRTH:12.5', 'DDATA:21h', 'DDATA:22h', 'DDATA:23h', 'DDATA:24h', 'DDATA:25h', 'DDATA:30']);
    expect(seqBroken(sub.seen)).toBeUndefined();
    expect(sub.errors).toEqual([]);
    for (const x of cap.packets.filter((y) => kind(y.topic) !== 'NDEATH')) expect([x.qos, x.retain]).toEqual([0, false]);
  });
});
