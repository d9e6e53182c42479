/**
 * The Sparkplug B edge node of the line on the plant's broker, with store-and-forward.
 *
 * One MQTT session at a time, made by us (mqtt.js's own reconnect is off): each session has its own will — the
 * NDEATH (QoS 1, not retained) with the session's `bdSeq`, Int64, one more for every CONNECT packet sent — and
 * starts with NBIRTH (seq 0) and a DBIRTH per equipment carrying the current values. With a primary host
 * configured, the births wait until the host's `spBv1.0/STATE/<host id>` says it is online (a timestamp not older
 * than the last one seen), and a valid offline STATE ends the session: NDEATH, disconnect, connect again and wait.
 * After the births the outbox is drained oldest first with `is_historical` on every metric, and only when it is
 * empty do new messages go straight out ("live"). Births and data are QoS 0, not retained (Sparkplug 3.0): a live
 * message is held in memory until the client has written it, and when the session ends first it goes into the
 * outbox in its original place (its `ord`). What was written to a socket the broker then lost is lost: QoS 0 is
 * at most once on the wire; store-and-forward covers the time no session (or no primary host) is there.
 *
 * Group commit. While the outbox is in use (no session, no primary host, or draining), the messages produced in
 * one turn of the event loop are queued together: one transaction, one durable (synchronous=FULL) commit for the
 * group, at the end of the turn (setImmediate), or at once when the group reaches `groupMax`. A message is
 * ACKNOWLEDGED — counted in `stats().queued` and the outbox metrics, visible to the drain, resolved by
 * {@link SparkplugPublisher.flushed}, kept across a crash or power loss — only once the commit of its group has
 * returned. Until then it is held in memory (`stats().pending`), in its place (its `ord` is taken when it is
 * produced): a crash of the process before that commit loses exactly those messages, never one that was
 * acknowledged. `samples()` and `nodeData()` return nothing to their caller, so nothing upstream relies on a
 * message being stored before its group commits. `stop()` commits what is pending before it returns; a group
 * whose commit fails (a full disk) is counted in `stats().lost` and logged, as a single message was before.
 */
import mqtt, { type IClientOptions, type MqttClient } from 'mqtt';
import type { Clock } from '../../src/clock.js';
import type { Logger } from '../../src/log.js';
import type { Store } from '../../src/store/store.js';
import type { Sample, TagDescription } from '../types.js';
import { Outbox, type OutboxBound } from './outbox.js';
import { bdSeqMetric, decode, devicesOf, encode, metricValue, NAMESPACE, num, tagMetric, topicOf, type SpMessage, type SpMetric } from './sparkplug.js';

/** `spBv1.0/STATE/<host id>`: where a Sparkplug 3.0 host application says whether it is online. */
export function stateTopic(hostId: string): string {
  return `${NAMESPACE}/STATE/${hostId}`;
}

/**
 * stopped; offline (no MQTT session: messages go to the outbox); waiting (a session, but the primary host is not
 * online: no births yet, messages go to the outbox); draining (born, replaying the outbox as historical); live.
 */
export type PublisherState = 'stopped' | 'offline' | 'waiting' | 'draining' | 'live';

export interface PublisherOptions {
  readonly url: string;
  readonly clientId: string;
  readonly group: string;
  readonly node: string;
  readonly username?: string;
  readonly password?: string;
  readonly tls?: { readonly ca?: Buffer; readonly cert?: Buffer; readonly key?: Buffer };
  readonly keepaliveS?: number;
  readonly reconnectMs?: number;
  readonly bound: OutboxBound;
  readonly store: Pick<Store, 'db' | 'tx' | 'clock' | 'audit'>;
  readonly clock: Clock;
  readonly log: Logger;
  /** NBIRTH properties of the edge node. */
  readonly properties: { readonly site: string; readonly line: string; readonly version: string };
  /** The line's tags (the DBIRTH metrics), asked at each birth. */
  readonly tags: () => readonly TagDescription[];
  /** Latest sample of a tag (the DBIRTH values). */
  readonly current: (tag: string) => Sample | undefined;
  /** Sparkplug host id of the primary host application: births wait for its STATE online (none: no waiting). */
  readonly primaryHostId?: string;
  /** Messages sent per round while draining (default 256). */
  readonly drainPage?: number;
  /** Most messages one group commit holds: a larger burst in one turn is committed in groups of this size (default 1024). */
  readonly groupMax?: number;
}

/** NDATA metrics every NBIRTH declares (run events and checkpoints have fixed names; the content says which). */
const NODE_METRICS: readonly Pick<SpMetric, 'name' | 'type'>[] = [
  { name: 'Run/ToolCall', type: 'String' },
  { name: 'Run/State', type: 'String' },
  { name: 'Audit/Checkpoint/Tenant', type: 'String' },
  { name: 'Audit/Checkpoint/Seq', type: 'UInt64' },
  { name: 'Audit/Checkpoint/HeadHash', type: 'String' },
  { name: 'Audit/Checkpoint/Timestamp', type: 'String' },
  { name: 'Audit/Checkpoint/KeyId', type: 'String' },
  { name: 'Audit/Checkpoint/Signature', type: 'String' },
];

export class SparkplugPublisher {
  private client: MqttClient | undefined;
  private st: PublisherState = 'stopped';
  private seq = 0;
  private bdSeq: number;
  private readonly outbox: Outbox;
  /** Live messages waiting for their PUBACK, by ord. */
  private readonly inflight = new Map<number, SpMessage>();
  /** Messages produced for the outbox and not yet committed (the current group), each with its ord. */
  private pending: { ord: number; message: SpMessage }[] = [];
  private flushScheduled = false;
  /** Waiting for the commit of what is pending now. */
  private flushWaiters: (() => void)[] = [];
  /** Last value and quality sent (or queued) per tag: DDATA carries changes only. */
  private readonly last = new Map<string, string>();
  private readonly listeners = new Set<(s: PublisherState) => void>();
  private timer: NodeJS.Timeout | undefined;
  private publishedCount = 0;
  private lostCount = 0;
  private readonly ndeath: string;
  /** Timestamps of the primary host's last accepted STATE message, and of its last accepted online one. */
  private stateTs: number | undefined;
  private onlineTs: number | undefined;

  constructor(private readonly o: PublisherOptions) {
    this.outbox = new Outbox(o.store, o.bound);
    this.bdSeq = this.outbox.state('bdSeq') ?? 0;
    this.ndeath = topicOf(o.group, o.node, 'NDEATH');
  }

  /** Where the publisher is: offline (broker away: messages go to the outbox), draining, live. */
  get state(): PublisherState {
    return this.st;
  }

  /** Counters for logs and tests. */
  stats(): { state: PublisherState; queued: number; pending: number; queuedBytes: number; dropped: number; published: number; lost: number; bdSeq: number } {
    return {
      state: this.st, queued: this.outbox.size, pending: this.pending.length, queuedBytes: this.outbox.sizeBytes, dropped: this.outbox.dropped,
      published: this.publishedCount, lost: this.lostCount, bdSeq: this.bdSeq,
    };
  }

  /**
   * Resolves once every message produced so far for the outbox has been committed (acknowledged) — or counted
   * lost, if its commit failed. At once when nothing is pending.
   */
  flushed(): Promise<void> {
    if (this.pending.length === 0) return Promise.resolve();
    return new Promise((resolve) => this.flushWaiters.push(resolve));
  }

  /** Be told of every state change. Returns the function that unsubscribes. */
  onState(l: (s: PublisherState) => void): () => void {
    this.listeners.add(l);
    return () => this.listeners.delete(l);
  }

  /** Resolves when the publisher reaches `s`. */
  when(s: PublisherState): Promise<void> {
    if (this.st === s) return Promise.resolve();
    return new Promise((resolve) => {
      const off = this.onState((now) => {
        if (now === s) {
          off();
          resolve();
        }
      });
    });
  }

  /** Start connecting (in the background: a broker that is away only fills the outbox). */
  start(): void {
    if (this.st !== 'stopped') return;
    this.setState('offline');
    this.connect();
  }

  /**
   * Stop: NDEATH published by us (a clean stop is a death too), the session closed. A live message still
   * waiting for its PUBACK goes back into the outbox, so the next start sends it.
   */
  async stop(): Promise<void> {
    if (this.st === 'stopped') return;
    this.setState('stopped');
    this.flush();
    if (this.timer) clearTimeout(this.timer);
    const c = this.client;
    this.client = undefined;
    if (c) {
      // what is in flight gets a moment for its PUBACK (a clean stop should not leave duplicates behind)
      for (let waited = 0; c.connected && this.inflight.size > 0 && waited < 2000; waited += 20) await new Promise((r) => setTimeout(r, 20));
      if (c.connected) {
        await new Promise<void>((r) => c.publish(this.ndeath, Buffer.from(this.deathPayload()), { qos: 1, retain: false }, () => r()));
      }
      this.requeueInflight();
      await c.endAsync(true).catch(() => undefined);
    }
  }

  /** New samples of the line's tags: a DDATA per equipment with the tags whose value or quality changed. */
  samples(samples: readonly Sample[]): void {
    if (this.st === 'stopped') return;
    const byDevice = new Map<string, SpMetric[]>();
    const devices = devicesOf(this.o.tags());
    for (const s of samples) {
      const equipment = s.tag.slice(0, s.tag.indexOf('.'));
      const t = devices.get(equipment)?.get(s.tag);
      if (!t) continue;
      const key = `${s.quality}|${JSON.stringify(metricValue(s, t.type))}`;
      if (this.last.get(s.tag) === key) continue;
      this.last.set(s.tag, key);
      let list = byDevice.get(equipment);
      if (!list) byDevice.set(equipment, (list = []));
      list.push(tagMetric(t.desc, t.type, s, this.o.clock.now()));
    }
    for (const [device, metrics] of byDevice) this.enqueue({ topic: topicOf(this.o.group, this.o.node, 'DDATA', device), timestamp: this.o.clock.now(), metrics });
  }

  /** Node-level metrics (run events, checkpoints): one NDATA. */
  nodeData(metrics: readonly Omit<SpMetric, 'timestamp'>[]): void {
    if (this.st === 'stopped') return;
    const now = this.o.clock.now();
    this.enqueue({ topic: topicOf(this.o.group, this.o.node, 'NDATA'), timestamp: now, metrics: metrics.map((m) => ({ ...m, timestamp: now })) });
  }

  private enqueue(m: SpMessage): void {
    // (nothing is pending while live: the drain commits the group before it finds the outbox empty and goes live)
    if (this.st === 'live' && this.client?.connected) {
      this.sendLive(m);
      return;
    }
    // into the current group, in its place; committed at the end of this turn (or now, when the group is full)
    this.pending.push({ ord: this.outbox.takeOrd(), message: m });
    if (this.pending.length >= (this.o.groupMax ?? 1024)) this.flush();
    else if (!this.flushScheduled) {
      this.flushScheduled = true;
      setImmediate(() => {
        this.flushScheduled = false;
        this.flush();
      });
    }
  }

  /** Commit the pending group (one transaction): from its commit on, those messages are acknowledged. */
  private flush(): void {
    const group = this.pending;
    if (group.length > 0) {
      this.pending = [];
      this.append(group);
    }
    if (this.pending.length === 0 && this.flushWaiters.length > 0) for (const w of this.flushWaiters.splice(0)) w();
  }

  private append(group: { ord: number; message: SpMessage }[]): void {
    try {
      const dropped = this.outbox.appendMany(group);
      if (dropped) this.o.log.warn({ dropped: dropped.messages, bytes: dropped.bytes }, 'MQTT outbox full: oldest messages dropped (audited)');
    } catch (err) {
      this.lostCount += group.length;
      this.o.log.error({ err, messages: group.length, topic: group[0]!.message.topic }, 'MQTT messages could not be queued');
    }
  }

  private sendLive(m: SpMessage): void {
    const ord = this.outbox.takeOrd();
    this.inflight.set(ord, m);
    const c = this.client!;
    this.publish(c, m, false).then(
      () => this.inflight.delete(ord),
      (err: unknown) => {
        // refused while the session still stands: back into the outbox in its place, and drain from there
        if (this.client !== c || !this.inflight.has(ord)) return;
        this.o.log.warn({ err, topic: m.topic }, 'MQTT publish failed; queued');
        this.requeueInflight();
        this.setState('draining');
        void this.drain(c);
      },
    );
  }

  private publish(c: MqttClient, m: SpMessage, historical: boolean): Promise<void> {
    const buf = encode(m, this.nextSeq(), historical);
    return new Promise((resolve, reject) => {
      c.publish(m.topic, Buffer.from(buf), { qos: 0, retain: false }, (err) => {
        if (err) reject(err);
        else {
          this.publishedCount++;
          resolve();
        }
      });
    });
  }

  private nextSeq(): number {
    const s = this.seq;
    this.seq = (this.seq + 1) % 256;
    return s;
  }

  private deathPayload(): Uint8Array {
    return encode({ timestamp: this.o.clock.now(), metrics: [] }, undefined, false, [bdSeqMetric(this.bdSeq, this.o.clock.now())]);
  }

  private connect(): void {
    if (this.st === 'stopped') return;
    const o = this.o;
    const opts: IClientOptions = {
      clientId: o.clientId, clean: true, reconnectPeriod: 0, keepalive: o.keepaliveS ?? 30, connectTimeout: 10_000,
      protocolVersion: 4,
      will: { topic: this.ndeath, payload: Buffer.from(this.deathPayload()), qos: 1, retain: false },
      ...(o.username !== undefined ? { username: o.username } : {}),
      ...(o.password !== undefined ? { password: o.password } : {}),
      ...(o.tls?.ca ? { ca: o.tls.ca } : {}),
      ...(o.tls?.cert ? { cert: o.tls.cert } : {}),
      ...(o.tls?.key ? { key: o.tls.key } : {}),
    };
    const c = mqtt.connect(o.url, opts);
    this.client = c;
    // bdSeq counts CONNECT packets. mqtt.js writes CONNECT into the socket before it is open; it is on the wire when
    // the TCP (mqtts: TLS) connection is made. From then on the next CONNECT names the next birth (kept at once, so
    // a crash does not reuse it); an attempt refused before that sent no CONNECT and leaves bdSeq where it is.
    let connectSent = false;
    const sent = (): void => {
      if (connectSent || this.client !== c) return;
      connectSent = true;
      try {
        this.outbox.setState('bdSeq', (this.bdSeq + 1) % 256);
      } catch (err) {
        this.o.log.error({ err }, 'could not keep the MQTT bdSeq');
      }
    };
    const stream = (c as unknown as { stream?: { encrypted?: boolean; once(e: string, l: () => void): unknown } }).stream;
    stream?.once(stream.encrypted ? 'secureConnect' : 'connect', sent);
    c.on('connect', () => {
      if (this.client !== c) return;
      sent();
      void c.subscribeAsync(topicOf(o.group, o.node, 'NCMD'), { qos: 0 }).catch(() => undefined);
      if (o.primaryHostId !== undefined) {
        this.o.log.info({ url: o.url, bdSeq: this.bdSeq, queued: this.outbox.size, primaryHost: o.primaryHostId }, 'MQTT broker connected: waiting for the primary host to be online');
        this.setState('waiting');
        void c.subscribeAsync(stateTopic(o.primaryHostId), { qos: 1 }).catch(() => undefined);
        return;
      }
      this.o.log.info({ url: o.url, bdSeq: this.bdSeq, queued: this.outbox.size }, 'MQTT broker connected: births, then the outbox');
      this.born(c);
    });
    c.on('message', (topic, payload) => {
      if (o.primaryHostId !== undefined && topic === stateTopic(o.primaryHostId)) this.hostState(c, payload);
      else this.command(c, topic, payload);
    });
    c.on('error', (err) => this.o.log.debug({ err: err.message }, 'MQTT client error'));
    c.on('close', () => this.closed(c, connectSent));
  }

  /** Births, then the outbox. */
  private born(c: MqttClient): void {
    this.setState('draining');
    try {
      this.births(c);
    } catch (err) {
      this.o.log.error({ err }, 'MQTT birth failed');
    }
    void this.drain(c);
  }

  /**
   * The primary host's STATE (Sparkplug 3.0 JSON `{ online, timestamp }`). Online, with a timestamp not older than
   * the last STATE seen: births and the replay start. Offline, with a timestamp not older than the last online
   * one, while born: NDEATH, disconnect, and the session starts over (it waits for the host again).
   */
  private hostState(c: MqttClient, payload: Buffer): void {
    if (this.client !== c) return;
    let online: unknown;
    let ts: unknown;
    try {
      ({ online, timestamp: ts } = JSON.parse(payload.toString('utf8')) as { online?: unknown; timestamp?: unknown });
    } catch {
      this.o.log.warn('primary host STATE is not JSON: ignored');
      return;
    }
    if (typeof online !== 'boolean' || typeof ts !== 'number' || !Number.isFinite(ts)) {
      this.o.log.warn({ online, timestamp: ts }, 'primary host STATE without a boolean online and a numeric timestamp: ignored');
      return;
    }
    if (online) {
      if (this.stateTs !== undefined && ts < this.stateTs) return; // older than what we know: stale
      this.stateTs = ts;
      this.onlineTs = ts;
      if (this.st === 'waiting') {
        this.o.log.info({ primaryHost: this.o.primaryHostId, timestamp: ts }, 'primary host online: births, then the outbox');
        this.born(c);
      }
      return;
    }
    if (this.onlineTs !== undefined && ts < this.onlineTs) return; // an old death: the host came back since
    this.stateTs = Math.max(this.stateTs ?? ts, ts);
    if (this.st === 'draining' || this.st === 'live') {
      this.o.log.warn({ primaryHost: this.o.primaryHostId, timestamp: ts }, 'primary host offline: NDEATH, disconnect, hold data until it is back');
      this.setState('waiting');
      c.publish(this.ndeath, Buffer.from(this.deathPayload()), { qos: 1, retain: false }, () => {
        void c.endAsync(false).catch(() => undefined);
      });
    }
  }

  private closed(c: MqttClient, connectSent: boolean): void {
    if (this.client !== c) return;
    this.client = undefined;
    this.requeueInflight();
    c.removeAllListeners('connect');
    void c.endAsync(true).catch(() => undefined);
    if (this.st === 'stopped') return;
    const was = this.st;
    this.setState('offline');
    if (was !== 'offline') this.o.log.warn({ queued: this.outbox.size }, 'MQTT broker lost: messages go to the outbox');
    // the next session's will names the next birth, if this attempt's CONNECT went out (kept at packetsend)
    if (connectSent) this.bdSeq = (this.bdSeq + 1) % 256;
    this.timer = setTimeout(() => this.connect(), this.o.reconnectMs ?? 2000);
    this.timer.unref();
  }

  /** Live messages without their PUBACK go back into the outbox, each in its own place (oldest first). */
  private requeueInflight(): void {
    const held = [...this.inflight.entries()].sort((a, b) => a[0] - b[0]);
    this.inflight.clear();
    if (held.length > 0) this.append(held.map(([ord, message]) => ({ ord, message })));
  }

  private births(c: MqttClient): void {
    const now = this.o.clock.now();
    this.seq = 0;
    const p = this.o.properties;
    const node: SpMetric[] = [
      { name: 'Node Control/Rebirth', type: 'Boolean', value: false, timestamp: now },
      { name: 'Properties/Site', type: 'String', value: p.site, timestamp: now },
      { name: 'Properties/Line', type: 'String', value: p.line, timestamp: now },
      { name: 'Properties/Version', type: 'String', value: p.version, timestamp: now },
      ...NODE_METRICS.map((m) => ({ ...m, value: null, timestamp: now })),
    ];
    const raw = (topic: string, buf: Uint8Array): void => {
      c.publish(topic, Buffer.from(buf), { qos: 0, retain: false }, (err) => {
        if (!err) this.publishedCount++;
      });
    };
    raw(topicOf(this.o.group, this.o.node, 'NBIRTH'), encode({ timestamp: now, metrics: node }, this.nextSeq(), false, [bdSeqMetric(this.bdSeq, now)]));
    for (const [device, tags] of devicesOf(this.o.tags())) {
      const metrics: SpMetric[] = [];
      for (const [tag, t] of tags) {
        const s = this.o.current(tag);
        metrics.push(tagMetric(t.desc, t.type, s, now));
        this.last.set(tag, `${s?.quality ?? 'bad'}|${JSON.stringify(metricValue(s, t.type))}`);
      }
      raw(topicOf(this.o.group, this.o.node, 'DBIRTH', device), encode({ timestamp: now, metrics }, this.nextSeq(), false));
    }
  }

  /** Send the outbox oldest first, a page at a time, each row removed once the broker acknowledged it. */
  private async drain(c: MqttClient): Promise<void> {
    const page = this.o.drainPage ?? 256;
    while (this.client === c && c.connected && this.st === 'draining') {
      this.flush(); // what was produced meanwhile joins the outbox in its place first: nothing overtakes it
      const rows = this.outbox.page(0, page);
      if (rows.length === 0) {
        this.setState('live');
        return;
      }
      const results = await Promise.allSettled(rows.map((r) => this.publish(c, r.message, true)));
      const acked = rows.filter((_, i) => results[i]!.status === 'fulfilled').map((r) => r.ord);
      try {
        this.outbox.remove(acked);
      } catch (err) {
        this.o.log.error({ err }, 'MQTT outbox: acknowledged messages could not be removed (they will be sent again)');
      }
      if (acked.length < rows.length) return; // the session ended mid-page: the rest waits for the next one
    }
  }

  /** NCMD `Node Control/Rebirth` = true: births again (a host application that lost track asks for it). */
  private command(c: MqttClient, topic: string, payload: Buffer): void {
    if (this.client !== c || topic !== topicOf(this.o.group, this.o.node, 'NCMD') || (this.st !== 'draining' && this.st !== 'live')) return;
    try {
      const p = decode(payload);
      if ((p.metrics ?? []).some((m) => m.name === 'Node Control/Rebirth' && m.value === true)) {
        this.o.log.info({ seq: num(p.seq) }, 'MQTT rebirth requested');
        this.births(c);
      }
    } catch (err) {
      this.o.log.warn({ err }, 'MQTT command not understood');
    }
  }

  private setState(s: PublisherState): void {
    if (this.st === s) return;
    this.st = s;
    for (const l of [...this.listeners]) l(s);
  }
}
