/**
 * The OPC UA connector: one OPC UA connection (config `connections[]` entry)
 * and the equipment that uses it, behind the narrow {@link Connector}
 * interface.
 *
 * Connection management, deliberately configured rather than left to
 * node-opcua's defaults (which can take 40 s to notice a dead peer, node-opcua
 * issue 1194): the session keep-alive reads every keepalive_ms, requests time
 * out after request_timeout_ms, the socket is declared dead after a few
 * silent keep-alive periods, and node-opcua's own reconnection (secure
 * channel, session reactivation or re-creation, subscription transfer or
 * re-creation) runs with our backoff bounds. On top of it: the initial
 * connection retries with backoff until close(); a session the server closes
 * is replaced by a fresh client and session; after every (re)connect the
 * NamespaceArray, DataTypes and EngineeringUnits are read again; and each
 * subscription has a data-age watchdog (subscription.ts).
 *
 * A tag whose server EngineeringUnits differ from its configured unit (and no
 * unit alias maps them) is that tag's problem, not the connection's: it reads
 * bad (LK_TAG_UNIT_MISMATCH), refuses every write, and is named in health()
 * and the log; the equipment's other tags are read and supervised as usual.
 */
import { AttributeIds, OPCUAClient, type ClientSession, type DataValue, type NodeId } from 'node-opcua-client';
import { LkError, type ErrorCode } from '../../src/errors.js';
import { systemClock, type Clock } from '../../src/clock.js';
import { silentLogger, type Logger } from '../../src/log.js';
import { ConnectorEvents } from '../events.js';
import type { OpcUaConnectionConfig } from '../../src/config/schema.js';
import type { ConnectorEvent, ConnectorHealth, ConnectorState, Sample, SubscribeOptions, TagDescription, WriteCapability } from '../types.js';
import type { OpcUaConnector, OpcUaConnectorOptions, OpcUaSubscription } from './api.js';
import { describeTags, fetchMetadata, rangeMismatches, readNamespaces, unitConversions, type TagMeta } from './metadata.js';
import { classifyError, clientOptions, disposeClient } from './link.js';
import { acquireClientPki } from './pki.js';
import { ManagedSubscription, type SubscriptionHost } from './subscription.js';
import { buildTagTable, lookupTags, resolveNodeId, type OpcUaTag } from './tags.js';
import { badSample, toSample } from './values.js';
import { Heartbeats, writeCapability, type WriteHost } from './writer.js';
import { profilesOf } from '../supervision.js';
import type { Linear } from './units.js';

/** Errors that need a human (trust a certificate, fix the configuration): retrying would only hide them. */
const FATAL: readonly ErrorCode[] = ['LK_CERT_UNTRUSTED', 'LK_CONFIG_INVALID'];

export class OpcUaConnectorImpl implements OpcUaConnector {
  readonly id: string;
  readonly protocol = 'opcua' as const;
  private readonly cfg: OpcUaConnectionConfig;
  private readonly tags: ReadonlyMap<string, OpcUaTag>;
  private readonly clock: Clock;
  private readonly log: Logger;
  private readonly backoff: { initialMs: number; maxMs: number };
  private state: ConnectorState = 'closed';
  private readonly events: ConnectorEvents;
  private client: OPCUAClient | undefined;
  private session: ClientSession | undefined;
  private pki: Awaited<ReturnType<typeof acquireClientPki>> | undefined;
  private nsIndex = -1;
  private namespaces: readonly string[] = [];
  private readonly nodes = new Map<string, NodeId>();
  private meta = new Map<string, TagMeta>();
  private unitBad = new Map<string, string>();
  private conversions = new Map<string, Linear>();
  private readonly subs = new Map<number, ManagedSubscription>();
  private nextSubId = 1;
  private writerClaimed = false;
  private readonly heartbeats: Heartbeats;
  private readonly writeHost: WriteHost;
  private readonly subHost: SubscriptionHost;
  private connecting: Promise<void> | undefined;
  private recovering: Promise<void> | undefined;
  private closing = false;
  private wakeups = new Set<() => void>();
  private reconnects = 0;
  private staleRecoveries = 0;
  private lastDataAt: number | undefined;
  private lastError: string | undefined;

  constructor(private readonly opts: OpcUaConnectorOptions) {
    this.cfg = opts.connection;
    this.id = opts.connection.id;
    const { mode, policy } = this.cfg.security;
    if ((mode === 'None') !== (policy === 'None')) {
      throw new LkError('LK_CONFIG_INVALID', `${this.id}: security mode ${mode} needs ${mode === 'None' ? 'policy None' : 'policy Basic256Sha256'}, got ${policy}`, { connection: this.id });
    }
    this.tags = buildTagTable(opts.equipment);
    this.clock = opts.clock ?? systemClock;
    this.log = (opts.logger ?? silentLogger).child({ connector: this.id });
    this.events = new ConnectorEvents(this.log);
    this.backoff = { initialMs: opts.backoff?.initialMs ?? 500, maxMs: opts.backoff?.maxMs ?? 10_000 };
    const self = this;
    this.writeHost = {
      id: this.id,
      clock: this.clock,
      logger: this.log,
      tags: this.tags,
      profiles: profilesOf(opts.equipment),
      requireSession: () => self.requireSession(),
      nodeOf: (t) => self.nodeOf(t),
      cachedDataType: (t) => self.meta.get(t.id)?.dataType,
      rememberDataType: (t, dt) => {
        const m = self.meta.get(t.id);
        self.meta.set(t.id, { ...(m ?? { dataTypeName: t.configType, writable: true, readable: true, status: 'Good' }), dataType: dt });
      },
      conversion: (t) => {
        const why = self.unitBad.get(t.id);
        if (why !== undefined) throw new LkError('LK_TAG_UNIT_MISMATCH', `${t.id}: ${why}; nothing is written to it until the configuration or a unit alias says what it means`, { tag: t.id });
        return self.conversionOf(t);
      },
      toSample: (t, dv) => self.sample(t, dv),
      emit: (e) => self.emit(e),
    };
    this.subHost = {
      maxDataAgeMs: this.cfg.max_data_age_ms,
      keepaliveMs: this.cfg.keepalive_ms,
      requestTimeoutMs: this.cfg.request_timeout_ms,
      logger: this.log,
      session: () => (self.state === 'connected' ? self.session : undefined),
      nodeOf: (t) => self.nodeOf(t),
      toSample: (t, dv) => self.sample(t, dv),
      rawScale: (t) => Math.abs(self.conversionOf(t).a),
      stale: (sub, ageMs) => {
        self.staleRecoveries++;
        self.log.warn({ subscription: sub.id, ageMs }, 'subscription stale: re-creating it');
        self.emit({ type: 'stale', subscription: sub.id, ageMs });
      },
      closed: (sub) => self.subs.delete(sub.id),
    };
    this.heartbeats = new Heartbeats(this.writeHost, opts.equipment);
  }

  /**
   * Connect, retrying with backoff until it works or close() is called.
   * Rejects with LK_CERT_UNTRUSTED (the server certificate is now in
   * `<dataDir>/pki/rejected`; trust it with `linekeeper certs trust`),
   * LK_CONFIG_INVALID or LK_CONN_UNAVAILABLE (closed while connecting):
   * those are not retried. A tag whose unit differs from the server's does
   * not fail the connection: that tag reads bad and refuses writes.
   */
  connect(): Promise<void> {
    if (this.state === 'connected') return Promise.resolve();
    // Already connected once and now repairing (node-opcua's reconnection or our recovery): wait for it, do not race it.
    if (!this.connecting && (this.client || this.recovering) && !this.closing) return this.waitConnected();
    this.closing = false;
    this.connecting ??= this.connectLoop(true).finally(() => {
      this.connecting = undefined;
    });
    return this.connecting;
  }

  private waitConnected(): Promise<void> {
    return new Promise((resolve, reject) => {
      const off = this.on((e) => {
        if (e.type !== 'state') return;
        if (e.to === 'connected') {
          off();
          resolve();
        } else if (e.to === 'closed') {
          off();
          reject(new LkError('LK_CONN_UNAVAILABLE', `${this.id}: closed before the connection was restored`));
        }
      });
    });
  }

  private async connectLoop(initial: boolean): Promise<void> {
    this.setState(initial ? 'connecting' : 'lost');
    for (let attempt = 0; ; attempt++) {
      if (this.closing) throw new LkError('LK_CONN_UNAVAILABLE', `${this.id}: closed before a connection was made`);
      try {
        await this.open(initial);
        this.setState('connected', initial ? undefined : 'restored');
        for (const s of this.subs.values()) await s.recreate().catch((err: unknown) => this.log.warn({ err, subscription: s.id }, 'subscription create failed; the watchdog retries'));
        return;
      } catch (err) {
        const e = this.classify(err);
        this.lastError = `${e.code}: ${e.message}`;
        if (FATAL.includes(e.code) && initial) {
          this.setState('closed', e.code);
          throw e;
        }
        const delay = Math.min(this.backoff.maxMs, this.backoff.initialMs * 2 ** Math.min(attempt, 16));
        this.log.warn({ code: e.code, err: e.message, attempt, delay }, 'OPC UA connection attempt failed');
        await this.sleep(delay);
      }
    }
  }

  private async open(initial: boolean): Promise<void> {
    this.pki ??= await acquireClientPki(this.opts.dataDir);
    // An operator may have run `linekeeper certs trust` since the last attempt.
    await this.pki.cm.reloadCertificates();
    const client = OPCUAClient.create(clientOptions(this.cfg, this.backoff, this.pki.cm));
    this.client = client;
    client.on('connection_lost', () => {
      if (this.client === client && !this.closing) this.setState('lost', 'connection lost');
    });
    client.on('reconnection_attempt_has_failed', (_err, message) => {
      if (this.client === client) this.lastError = `LK_CONN_UNAVAILABLE: ${message}`;
    });
    client.on('connection_reestablished', () => {
      if (this.client === client && !this.closing) void this.onRestored();
    });
    try {
      await client.connect(this.opts.url);
      const session = await client.createSession();
      session.on('session_closed', () => {
        if (this.session === session && !this.closing) this.recover('session closed by the server');
      });
      // node-opcua re-creates a session the server dropped while the channel stayed up (BadSessionIdInvalid):
      // no connection loss, but a new session on the server — re-validate as after a reconnection.
      session.on('session_restored', () => {
        if (this.session === session && !this.closing && this.state === 'connected') void this.onRestored();
      });
      await this.prepare(session, initial);
      if (this.closing) {
        await this.dispose(undefined, session);
        throw new LkError('LK_CONN_UNAVAILABLE', `${this.id}: closed while connecting`);
      }
      this.session = session;
    } catch (err) {
      if (this.client === client) this.client = undefined;
      await this.dispose(client, undefined);
      throw err;
    }
  }

  /** Namespace, DataTypes and units on a (re)connected session. Returns whether the namespace index moved. */
  private async prepare(session: ClientSession, initial: boolean): Promise<boolean> {
    const namespaces = await readNamespaces(session);
    const idx = namespaces.indexOf(this.cfg.namespace_uri);
    if (idx < 0) throw new LkError('LK_CONN_UNAVAILABLE', `${this.id}: the server has no namespace ${this.cfg.namespace_uri}`, { namespaces });
    const moved = idx !== this.nsIndex || namespaces.join('\n') !== this.namespaces.join('\n');
    this.nsIndex = idx;
    this.namespaces = namespaces;
    if (moved) this.nodes.clear();
    const all = [...this.tags.values()];
    this.meta = await fetchMetadata(session, all, (t) => this.nodeOf(t));
    const { conversions, mismatches } = unitConversions(all, this.meta, this.opts.unitAliases ?? {});
    const before = this.unitBad;
    this.conversions = conversions;
    this.unitBad = new Map(mismatches.map((m) => [m.tag, `server unit ${m.reported}, configured ${m.configured}`]));
    if (mismatches.length > 0) {
      const text = mismatches.map((m) => `${m.tag}: server ${m.reported}, configured ${m.configured}`).join('; ');
      this.lastError = `LK_TAG_UNIT_MISMATCH: ${text}`;
      const fresh = mismatches.filter((m) => !before.has(m.tag));
      if (initial || fresh.length > 0) {
        this.log.error({ code: 'LK_TAG_UNIT_MISMATCH', mismatches }, 'engineering units differ from the configuration: those tags read bad and refuse writes (add a unit alias or fix the unit); the other tags are served');
      }
    }
    for (const r of rangeMismatches(all, this.meta, conversions)) {
      if (initial) this.log.warn({ tag: r.tag, configured: r.configured, server: r.reported }, 'configured range differs from the server EURange (in engineering units)');
    }
    return moved;
  }

  private async onRestored(): Promise<void> {
    const session = this.session;
    if (!session) return;
    try {
      const moved = await this.prepare(session, false);
      this.reconnects++;
      this.setState('connected', 'restored');
      for (const s of this.subs.values()) {
        if (moved) await s.recreate().catch(() => undefined);
        else s.restored();
      }
    } catch (err) {
      this.recover(`re-validation after reconnection failed: ${(err as Error).message}`);
    }
  }

  /** Replace client and session entirely (the session is gone or unusable); subscriptions are re-created on the new one. */
  private recover(reason: string): void {
    if (this.closing || this.recovering) return;
    this.log.warn({ reason }, 'replacing the OPC UA client and session');
    this.recovering = (async () => {
      const client = this.client;
      const session = this.session;
      this.client = undefined;
      this.session = undefined;
      this.setState('lost', reason);
      await this.dispose(client, session);
      try {
        await this.connectLoop(false);
        this.reconnects++;
      } catch {
        // closed while recovering
      }
    })().finally(() => {
      this.recovering = undefined;
    });
  }

  private dispose(client: OPCUAClient | undefined, session: ClientSession | undefined): Promise<void> {
    return disposeClient(client, session, this.cfg.request_timeout_ms);
  }

  async close(): Promise<void> {
    this.closing = true;
    for (const w of this.wakeups) w();
    this.heartbeats.stop();
    await Promise.all([...this.subs.values()].map((s) => s.close()));
    // Disconnecting first also aborts a connection attempt in flight (it would otherwise run to its own timeout).
    const client = this.client;
    const session = this.session;
    this.client = undefined;
    this.session = undefined;
    await this.dispose(client, session);
    await this.connecting?.catch(() => undefined);
    await this.recovering;
    await this.pki?.release();
    this.pki = undefined;
    this.setState('closed');
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const done = (): void => {
        clearTimeout(t);
        this.wakeups.delete(done);
        resolve();
      };
      const t = setTimeout(done, ms);
      this.wakeups.add(done);
    });
  }

  private classify(err: unknown): LkError {
    return classifyError(err, this.id, this.opts.url, this.opts.dataDir);
  }

  private setState(to: ConnectorState, reason?: string): void {
    const from = this.state;
    if (from === to) return;
    this.state = to;
    this.log.info({ from, to, reason }, 'connector state');
    this.emit({ type: 'state', from, to, ...(reason ? { reason } : {}) });
  }

  private emit(e: ConnectorEvent): void {
    this.events.emit(e);
  }

  on(listener: (e: ConnectorEvent) => void): () => void {
    return this.events.on(listener);
  }

  private requireSession(): ClientSession {
    if (this.state !== 'connected' || !this.session) throw new LkError('LK_CONN_UNAVAILABLE', `${this.id} is ${this.state}`, { connector: this.id, state: this.state });
    return this.session;
  }

  private nodeOf(tag: OpcUaTag): NodeId {
    let n = this.nodes.get(tag.id);
    if (!n) {
      n = resolveNodeId(tag.nodeId, this.nsIndex, this.namespaces);
      this.nodes.set(tag.id, n);
    }
    return n;
  }

  /** raw → engineering of a tag: from the last connect, or the configured scale/offset before one. */
  private conversionOf(tag: OpcUaTag): Linear {
    return this.conversions.get(tag.id) ?? { a: tag.scale, b: tag.offset };
  }

  private sample(tag: OpcUaTag, dv: DataValue, at: number = this.clock.now()): Sample {
    if (this.unitBad.size > 0 && this.unitBad.has(tag.id)) return badSample(tag, 'LK_TAG_UNIT_MISMATCH', at);
    const s = toSample(tag, dv, at, this.conversionOf(tag));
    if (s.quality === 'good') this.lastDataAt = at;
    return s;
  }

  /**
   * Batched read: one Read service call for all `tags` (repeats allowed), in their order. A tag this connection does
   * not serve comes back bad (`LK_TAG_UNKNOWN`), as on every connector: a read never throws for a tag.
   */
  async read(tags: readonly string[]): Promise<Sample[]> {
    const list = tags.map((id) => this.tags.get(id));
    const known = list.filter((t): t is OpcUaTag => t !== undefined);
    const unknown = (id: string, at: number): Sample => ({ tag: id, value: null, quality: 'bad', status: 'LK_TAG_UNKNOWN', unit: '', sourceTime: at, receivedAt: at });
    const session = this.state === 'connected' ? this.session : undefined;
    let got: Sample[];
    if (!session || known.length === 0) got = known.map((t) => badSample(t, 'LK_CONN_UNAVAILABLE', this.clock.now()));
    else {
      try {
        const dvs = await session.read(known.map((t) => ({ nodeId: this.nodeOf(t), attributeId: AttributeIds.Value })), 0);
        const at = this.clock.now();
        got = known.map((t, i) => (dvs[i] ? this.sample(t, dvs[i], at) : badSample(t, 'BadNoData', at)));
      } catch (err) {
        const e = this.classify(err);
        this.lastError = `${e.code}: ${e.message}`;
        got = known.map((t) => badSample(t, e.code, this.clock.now()));
      }
    }
    let k = 0;
    return tags.map((id, i) => (list[i] ? got[k++]! : unknown(id, this.clock.now())));
  }

  /** Every tag with what the server reported on the last connect (DataType, EURange, access); the configuration where it reported nothing. */
  async describe(): Promise<TagDescription[]> {
    return describeTags([...this.tags.values()], this.meta, (t) => (this.nsIndex >= 0 ? this.nodeOf(t).toString() : t.nodeId), this.conversions);
  }

  /**
   * Subscribe with OPC UA monitored items (absolute deadband as a
   * DataChangeFilter on numeric tags). Throws LK_TAG_UNKNOWN or LK_VALIDATION
   * (empty list, bad interval or deadband). Made before the connection is up,
   * it starts on connect.
   */
  async subscribe(tags: readonly string[], options: SubscribeOptions, onSamples: (samples: Sample[]) => void): Promise<OpcUaSubscription> {
    if (!(options.intervalMs > 0) || !Number.isFinite(options.intervalMs)) throw new LkError('LK_VALIDATION', `intervalMs must be a positive number, got ${options.intervalMs}`);
    if (options.deadband !== undefined && !(options.deadband >= 0 && Number.isFinite(options.deadband))) throw new LkError('LK_VALIDATION', `deadband must be ≥ 0, got ${options.deadband}`);
    const list = lookupTags(this.tags, tags);
    if (list.length === 0) throw new LkError('LK_VALIDATION', 'subscribe needs at least one tag');
    if (this.closing) throw new LkError('LK_CONN_UNAVAILABLE', `${this.id} is closed`);
    const sub = new ManagedSubscription(this.nextSubId++, list, options, onSamples, this.subHost);
    this.subs.set(sub.id, sub);
    if (this.state === 'connected') {
      try {
        await sub.start();
      } catch (err) {
        await sub.close();
        throw this.classify(err);
      }
    }
    return sub;
  }

  health(): ConnectorHealth {
    return {
      id: this.id,
      protocol: 'opcua',
      state: this.state,
      endpoint: this.opts.url,
      ...(this.lastDataAt !== undefined ? { lastDataAt: this.lastDataAt } : {}),
      reconnects: this.reconnects,
      staleRecoveries: this.staleRecoveries,
      ...(this.lastError !== undefined ? { lastError: this.lastError } : {}),
      ...(this.unitBad.size > 0 ? { badTags: Object.fromEntries([...this.unitBad].map(([t, why]) => [t, `LK_TAG_UNIT_MISMATCH: ${why}`])) } : {}),
    };
  }

  startHeartbeat(skip?: ReadonlySet<string>): void {
    this.heartbeats.start(skip);
  }

  stopHeartbeat(): void {
    this.heartbeats.stop();
  }

  /** The write capability, once; a second call throws LK_WRITER_CLAIMED. */
  claimWriter(): WriteCapability {
    if (this.writerClaimed) throw new LkError('LK_WRITER_CLAIMED', `the write capability of ${this.id} is already claimed`, { connector: this.id });
    this.writerClaimed = true;
    return writeCapability(this.writeHost);
  }
}
