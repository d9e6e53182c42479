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
 */
import { AttributeIds, MessageSecurityMode, OPCUAClient, SecurityPolicy, type ClientSession, type DataValue, type NodeId } from 'node-opcua';
import { LkError, type ErrorCode } from '../../src/errors.js';
import { systemClock, type Clock } from '../../src/clock.js';
import { silentLogger, type Logger } from '../../src/log.js';
import type { OpcUaConnectionConfig, OpcUaEquipmentConfig } from '../../src/config/schema.js';
import type { Connector, ConnectorEvent, ConnectorHealth, ConnectorState, Sample, SubscribeOptions, TagDescription, WriteCapability } from '../types.js';
import { fetchMetadata, readNamespaces, unitMismatches, type TagMeta } from './metadata.js';
import { acquireClientPki, pkiFolder } from './pki.js';
import { ManagedSubscription, type SubscriptionHost } from './subscription.js';
import { buildTagTable, lookupTags, resolveNodeId, type OpcUaTag } from './tags.js';
import { badSample, toSample } from './values.js';
import { Heartbeats, writeCapability, type WriteHost } from './writer.js';

export interface OpcUaConnectorOptions {
  readonly connection: OpcUaConnectionConfig;
  /** The equipment of the site configuration that uses this connection. */
  readonly equipment: readonly OpcUaEquipmentConfig[];
  /** The actual endpoint URL (the caller resolves `sim` to the simulator's URL). */
  readonly url: string;
  /** Data directory: the client PKI lives in `<dataDir>/pki`. */
  readonly dataDir: string;
  /** Stamps Sample.receivedAt and WriteResult.at; watchdog timing uses the monotonic clock. */
  readonly clock?: Clock;
  readonly logger?: Logger;
  /** Retry delays of the initial connection and of session re-creation (node-opcua's reconnection uses the same bounds). */
  readonly backoff?: { readonly initialMs?: number; readonly maxMs?: number };
}

/** A subscription of this connector; `serverSubscriptionId` is for diagnostics and fault tests. */
export interface OpcUaSubscription {
  readonly tags: readonly string[];
  readonly serverSubscriptionId: number | undefined;
  close(): Promise<void>;
}

export interface OpcUaConnector extends Connector {
  readonly protocol: 'opcua';
  subscribe(tags: readonly string[], options: SubscribeOptions, onSamples: (samples: Sample[]) => void): Promise<OpcUaSubscription>;
}

/** Errors that need a human (trust a certificate, fix a unit): retrying would only hide them. */
const FATAL: readonly ErrorCode[] = ['LK_CERT_UNTRUSTED', 'LK_TAG_UNIT_MISMATCH', 'LK_CONFIG_INVALID'];

function withTimeout<T>(p: Promise<T>, ms: number): Promise<T | undefined> {
  let t: NodeJS.Timeout | undefined;
  return Promise.race([p, new Promise<undefined>((resolve) => (t = setTimeout(() => resolve(undefined), ms)))]).finally(() => clearTimeout(t));
}

export class OpcUaConnectorImpl implements OpcUaConnector {
  readonly id: string;
  readonly protocol = 'opcua' as const;
  private readonly cfg: OpcUaConnectionConfig;
  private readonly tags: ReadonlyMap<string, OpcUaTag>;
  private readonly clock: Clock;
  private readonly log: Logger;
  private readonly backoff: { initialMs: number; maxMs: number };
  private state: ConnectorState = 'closed';
  private readonly listeners = new Set<(e: ConnectorEvent) => void>();
  private client: OPCUAClient | undefined;
  private session: ClientSession | undefined;
  private pki: Awaited<ReturnType<typeof acquireClientPki>> | undefined;
  private nsIndex = -1;
  private namespaces: readonly string[] = [];
  private readonly nodes = new Map<string, NodeId>();
  private meta = new Map<string, TagMeta>();
  private unitBad = new Set<string>();
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
    this.backoff = { initialMs: opts.backoff?.initialMs ?? 500, maxMs: opts.backoff?.maxMs ?? 10_000 };
    const self = this;
    this.writeHost = {
      id: this.id,
      clock: this.clock,
      logger: this.log,
      tags: this.tags,
      requireSession: () => self.requireSession(),
      nodeOf: (t) => self.nodeOf(t),
      cachedDataType: (t) => self.meta.get(t.id)?.dataType,
      rememberDataType: (t, dt) => {
        const m = self.meta.get(t.id);
        self.meta.set(t.id, { ...(m ?? { dataTypeName: t.configType, writable: true, status: 'Good' }), dataType: dt });
      },
      assertUnit: (t) => {
        if (self.unitBad.has(t.id)) throw new LkError('LK_TAG_UNIT_MISMATCH', `${t.id}: the server's engineering unit differs from ${t.unit}`, { tag: t.id });
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
   * LK_TAG_UNIT_MISMATCH (the server's EngineeringUnits differ from the
   * configuration; detail.tags names them) or LK_CONN_UNAVAILABLE (closed
   * while connecting): those are not retried.
   */
  connect(): Promise<void> {
    if (this.state === 'connected') return Promise.resolve();
    this.closing = false;
    this.connecting ??= this.connectLoop(true).finally(() => {
      this.connecting = undefined;
    });
    return this.connecting;
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
    const { mode, policy } = this.cfg.security;
    const keepalive = this.cfg.keepalive_ms;
    const client = OPCUAClient.create({
      applicationName: 'linekeeper',
      clientName: `linekeeper-${this.id}`,
      endpointMustExist: false,
      securityMode: MessageSecurityMode[mode],
      securityPolicy: policy === 'Basic256Sha256' ? SecurityPolicy.Basic256Sha256 : SecurityPolicy.None,
      clientCertificateManager: this.pki.cm,
      // maxRetry ≥ 1 keeps node-opcua's automatic reconnection on; the initial connection's retries are ours.
      connectionStrategy: { initialDelay: this.backoff.initialMs, maxDelay: this.backoff.maxMs, maxRetry: 1, randomisationFactor: 0 },
      keepSessionAlive: true,
      keepAliveInterval: keepalive,
      requestedSessionTimeout: Math.max(10 * keepalive, 10_000),
      defaultTransactionTimeout: this.cfg.request_timeout_ms,
      // A socket silent for three keep-alive periods is dead (the default waits 60 s).
      transportTimeout: Math.max(3 * keepalive, this.cfg.request_timeout_ms + keepalive),
    });
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
      this.session = session;
    } catch (err) {
      this.client = undefined;
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
    const bad = unitMismatches(all, this.meta);
    this.unitBad = new Set(bad.map((m) => m.tag));
    if (bad.length > 0) {
      const text = bad.map((m) => `${m.tag}: server ${m.reported}, configured ${m.configured}`).join('; ');
      if (initial) throw new LkError('LK_TAG_UNIT_MISMATCH', `${this.id}: engineering units differ: ${text}`, { tags: bad.map((m) => m.tag), mismatches: bad });
      this.lastError = `LK_TAG_UNIT_MISMATCH: ${text}`;
      this.log.error({ mismatches: bad }, 'engineering units changed on the server: those tags now read bad and refuse writes');
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

  private async dispose(client: OPCUAClient | undefined, session: ClientSession | undefined): Promise<void> {
    const ms = this.cfg.request_timeout_ms;
    if (session) await withTimeout(session.close(true).catch(() => undefined), ms);
    if (client) await withTimeout(client.disconnect().catch(() => undefined), ms);
  }

  async close(): Promise<void> {
    this.closing = true;
    for (const w of this.wakeups) w();
    this.heartbeats.stop();
    await Promise.all([...this.subs.values()].map((s) => s.close()));
    await this.connecting?.catch(() => undefined);
    await this.recovering;
    const client = this.client;
    const session = this.session;
    this.client = undefined;
    this.session = undefined;
    await this.dispose(client, session);
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
    if (LkError.is(err)) return err as LkError;
    const msg = err instanceof Error ? err.message : String(err);
    if (/BadCertificateUntrusted|certificate verification failed/i.test(msg)) {
      return new LkError('LK_CERT_UNTRUSTED', `${this.id}: the server certificate of ${this.opts.url} is not trusted; it is in ${pkiFolder(this.opts.dataDir)}/rejected — trust it with \`linekeeper certs trust <thumbprint>\``, { url: this.opts.url }, { cause: err });
    }
    if (/timeout|timed out/i.test(msg)) return new LkError('LK_CONN_TIMEOUT', `${this.id}: ${msg}`, undefined, { cause: err });
    return new LkError('LK_CONN_UNAVAILABLE', `${this.id}: ${msg.split('\n')[0]}`, undefined, { cause: err });
  }

  private setState(to: ConnectorState, reason?: string): void {
    const from = this.state;
    if (from === to) return;
    this.state = to;
    this.log.info({ from, to, reason }, 'connector state');
    this.emit({ type: 'state', from, to, ...(reason ? { reason } : {}) });
  }

  private emit(e: ConnectorEvent): void {
    for (const l of this.listeners) {
      try {
        l(e);
      } catch (err) {
        this.log.error({ err }, 'connector event listener threw');
      }
    }
  }

  on(listener: (e: ConnectorEvent) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
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

  private sample(tag: OpcUaTag, dv: DataValue, at: number = this.clock.now()): Sample {
    if (this.unitBad.size > 0 && this.unitBad.has(tag.id)) return badSample(tag, 'LK_TAG_UNIT_MISMATCH', at);
    const s = toSample(tag, dv, at);
    if (s.quality === 'good') this.lastDataAt = at;
    return s;
  }

  /** Batched read: one Read service call for all `tags` (repeats allowed). Unknown tags throw LK_TAG_UNKNOWN; everything else is a sample. */
  async read(tags: readonly string[]): Promise<Sample[]> {
    const list = lookupTags(this.tags, tags);
    const session = this.state === 'connected' ? this.session : undefined;
    if (!session) return list.map((t) => badSample(t, 'LK_CONN_UNAVAILABLE', this.clock.now()));
    try {
      const dvs = await session.read(list.map((t) => ({ nodeId: this.nodeOf(t), attributeId: AttributeIds.Value })), 0);
      const at = this.clock.now();
      return list.map((t, i) => (dvs[i] ? this.sample(t, dvs[i], at) : badSample(t, 'BadNoData', at)));
    } catch (err) {
      const e = this.classify(err);
      this.lastError = `${e.code}: ${e.message}`;
      return list.map((t) => badSample(t, e.code, this.clock.now()));
    }
  }

  /** Every tag with what the server reported on the last connect (DataType, EURange, access); the configuration where it reported nothing. */
  async describe(): Promise<TagDescription[]> {
    return [...this.tags.values()].map((t) => {
      const m = this.meta.get(t.id);
      const range = m?.range ?? t.range;
      return {
        tag: t.id,
        equipment: t.equipment,
        name: t.name,
        kind: t.kind,
        unit: t.unit,
        dataType: m?.dataTypeName ?? t.configType,
        writable: t.kind === 'setpoint' && (m ? m.writable : true),
        ...(range ? { range } : {}),
        address: this.nsIndex >= 0 ? this.nodeOf(t).toString() : t.nodeId,
      };
    });
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
    };
  }

  startHeartbeat(): void {
    this.heartbeats.start();
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
