/**
 * One subscription of the OPC UA connector, with its data-age watchdog.
 *
 * node-opcua repairs subscriptions after a reconnection (transfer, else
 * re-create), but its users keep reporting subscriptions that look alive and
 * deliver nothing (node-opcua issues 474, 1059, 1450; the maintainer's
 * answer in 1334 is that a healthy subscription never dies and publishes a
 * keep-alive every publishingInterval × maxKeepAliveCount). So we do not
 * trust "alive", we verify delivery:
 *
 * 1. Liveness: every publish response (data or keep-alive) stamps
 *    `lastAliveAt`. We ask for a keep-alive at least every keepalive_ms; no
 *    publish response for max(max_data_age_ms, 2 keep-alive periods) means
 *    the server no longer publishes this subscription.
 * 2. Delivery: a rotating batch of the subscribed nodes is read (one Read)
 *    every max_data_age_ms/4. An item whose server value differs from the
 *    last value it notified (beyond the deadband) and that gets no
 *    notification within a grace period (max(max_data_age_ms/2, 3 publishing
 *    intervals + sampling)) is not being delivered: the server changed and
 *    told us nothing.
 *
 * Either is "stale": the subscription is terminated (best effort) and
 * created anew on the current session; the connector counts it and emits
 * {type:'stale'}. The watchdog sleeps while the connection is lost (that is
 * the reconnection's job, not the watchdog's) and restarts its clocks on
 * restore, giving node-opcua's own repair the first chance.
 */
import { performance } from 'node:perf_hooks';
import {
  AttributeIds,
  ClientMonitoredItemGroup,
  DataChangeFilter,
  DataChangeTrigger,
  DeadbandType,
  TimestampsToReturn,
  type ClientSession,
  type ClientSubscription,
  type DataValue,
  type NodeId,
} from 'node-opcua-client';
import type { Logger } from '../../src/log.js';
import type { Sample, SubscribeOptions, Subscription, TagValue } from '../types.js';
import type { OpcUaTag } from './tags.js';
import { sameValue } from './values.js';

export interface SubscriptionHost {
  readonly maxDataAgeMs: number;
  readonly keepaliveMs: number;
  readonly requestTimeoutMs: number;
  readonly logger: Logger;
  /** The current session when the connection is up, else undefined. */
  session(): ClientSession | undefined;
  nodeOf(tag: OpcUaTag): NodeId;
  toSample(tag: OpcUaTag, dv: DataValue): Sample;
  /** Engineering units per raw unit of a tag (|a| of its scale and unit alias): the server's deadband is in raw units. */
  rawScale(tag: OpcUaTag): number;
  /** The watchdog found the subscription stale (before it re-creates it). */
  stale(sub: ManagedSubscription, ageMs: number): void;
  closed(sub: ManagedSubscription): void;
}

interface Item {
  readonly tag: OpcUaTag;
  value: TagValue | null;
  status: string | undefined;
  /** Monotonic ms of the last notification; undefined before the first. */
  notifiedAt: number | undefined;
  suspectSince: number | undefined;
  /** Creation of the monitored item failed: reported as a bad sample, not watched. */
  failed: boolean;
}

const now = (): number => performance.now();
const VERIFY_BATCH = 200;

export class ManagedSubscription implements Subscription {
  readonly tags: readonly string[];
  private readonly items: Item[];
  private sub: ClientSubscription | undefined;
  private generation = 0;
  private creating: Promise<void> | undefined;
  private lastAliveAt = now();
  private lastDataAt = now();
  private timer: NodeJS.Timeout | undefined;
  private verifying = false;
  private cursor = 0;
  private isClosed = false;
  private pending: Sample[] = [];

  constructor(
    readonly id: number,
    tags: readonly OpcUaTag[],
    private readonly options: SubscribeOptions,
    private readonly onSamples: (samples: Sample[]) => void,
    private readonly host: SubscriptionHost,
  ) {
    this.tags = tags.map((t) => t.id);
    this.items = tags.map((tag) => ({ tag, value: null, status: undefined, notifiedAt: undefined, suspectSince: undefined, failed: false }));
    const checkMs = Math.min(2000, Math.max(50, Math.floor(host.maxDataAgeMs / 4)));
    this.timer = setInterval(() => void this.check(), checkMs);
    this.timer.unref();
  }

  /** Server-side subscription id (diagnostics and fault tests); undefined while not created. */
  get serverSubscriptionId(): number | undefined {
    return this.sub?.subscriptionId;
  }

  /** Create on the current session; a no-op without one (the connector calls it again on connect). */
  start(): Promise<void> {
    this.creating ??= this.create().finally(() => {
      this.creating = undefined;
    });
    return this.creating;
  }

  /** The connection came back: node-opcua repairs first, the watchdog's clocks restart. */
  restored(): void {
    this.lastAliveAt = now();
    for (const it of this.items) it.suspectSince = undefined;
    if (!this.sub) void this.start().catch((err: unknown) => this.host.logger.warn({ err, sub: this.id }, 'subscription start after restore failed'));
  }

  /** Drop the server-side subscription and make a new one (namespace change, stale, new session). */
  async recreate(): Promise<void> {
    const old = this.sub;
    this.sub = undefined;
    this.generation++;
    if (old) void this.terminateQuietly(old);
    await this.start();
  }

  async close(): Promise<void> {
    if (this.isClosed) return;
    this.isClosed = true;
    clearInterval(this.timer);
    this.generation++;
    const old = this.sub;
    this.sub = undefined;
    this.host.closed(this);
    if (old) await this.terminateQuietly(old);
  }

  private async terminateQuietly(sub: ClientSubscription): Promise<void> {
    let t: NodeJS.Timeout | undefined;
    const timeout = new Promise<void>((resolve) => {
      t = setTimeout(resolve, this.host.requestTimeoutMs);
    });
    await Promise.race([sub.terminate().catch(() => undefined), timeout]);
    clearTimeout(t);
  }

  private async create(): Promise<void> {
    const session = this.host.session();
    if (!session || this.isClosed || this.sub) return;
    const gen = ++this.generation;
    const publishing = Math.max(10, this.options.intervalMs);
    const keepAliveCount = Math.max(1, Math.floor(this.host.keepaliveMs / publishing));
    const sub = await session.createSubscription2({
      requestedPublishingInterval: publishing,
      requestedMaxKeepAliveCount: keepAliveCount,
      // Survive a short outage server-side (so a transfer can succeed) but not forever.
      requestedLifetimeCount: Math.max(3 * keepAliveCount, Math.ceil((4 * this.host.maxDataAgeMs) / publishing)),
      maxNotificationsPerPublish: 0,
      publishingEnabled: true,
      priority: 10,
    });
    if (gen !== this.generation || this.isClosed) {
      void this.terminateQuietly(sub);
      return;
    }
    this.sub = sub;
    this.lastAliveAt = now();
    for (const it of this.items) it.failed = false;
    const alive = (): void => {
      if (gen === this.generation) this.lastAliveAt = now();
    };
    sub.on('keepalive', alive);
    sub.on('received_notifications', alive);
    sub.on('internal_error', (err: Error) => this.host.logger.warn({ err: err.message, sub: this.id }, 'subscription internal error'));

    const deadband = this.options.deadband ?? 0;
    const other = this.items.map((_, i) => i).filter((i) => !(deadband > 0 && this.items[i]!.tag.numeric));
    const base = { samplingInterval: this.options.intervalMs, queueSize: 1, discardOldest: true };
    // the deadband is asked in engineering units; the server applies it to raw values: one group per raw deadband
    const byRaw = new Map<number, number[]>();
    this.items.forEach((it, i) => {
      if (!(deadband > 0 && it.tag.numeric)) return;
      const raw = deadband / this.host.rawScale(it.tag);
      byRaw.set(raw, [...(byRaw.get(raw) ?? []), i]);
    });
    const filtered = [...byRaw].map(([raw, idx]) => this.monitor(sub, gen, idx, { ...base, filter: new DataChangeFilter({ trigger: DataChangeTrigger.StatusValue, deadbandType: DeadbandType.Absolute, deadbandValue: raw }) }));
    await Promise.all([...filtered, this.monitor(sub, gen, other, base)]);
  }

  private monitor(sub: ClientSubscription, gen: number, indexes: number[], params: object): Promise<void> {
    if (indexes.length === 0) return Promise.resolve();
    const group = ClientMonitoredItemGroup.create(
      sub,
      indexes.map((i) => ({ nodeId: this.host.nodeOf(this.items[i]!.tag), attributeId: AttributeIds.Value })),
      params,
      TimestampsToReturn.Both,
    );
    group.on('changed', (_item, dv, k) => {
      const i = indexes[k];
      if (gen === this.generation && i !== undefined) this.notified(i, dv);
    });
    // A creation that never answers (connection lost half-way) must not wedge the watchdog: give up, the next check re-creates.
    let timer: NodeJS.Timeout | undefined;
    return new Promise<void>((resolve, reject) => {
      timer = setTimeout(() => reject(new Error('monitored items were not created in time')), 2 * this.host.requestTimeoutMs);
      group.once('initialized', () => {
        group.monitoredItems.forEach((mi, k) => {
          const it = this.items[indexes[k]!];
          if (!it || mi.statusCode.isGood()) return;
          it.failed = true;
          this.queue({ ...this.host.toSample(it.tag, { statusCode: mi.statusCode } as DataValue), status: mi.statusCode.name });
        });
        resolve();
      });
      group.once('terminated', (err?: Error) => reject(err ?? new Error('monitored item group terminated')));
    }).finally(() => clearTimeout(timer));
  }

  private notified(i: number, dv: DataValue): void {
    const it = this.items[i]!;
    const s = this.host.toSample(it.tag, dv);
    const t = now();
    it.value = s.value;
    it.status = s.status;
    it.notifiedAt = t;
    it.suspectSince = undefined;
    this.lastDataAt = t;
    this.lastAliveAt = t;
    this.queue(s);
  }

  /** Batch the notifications of one publish response into one callback. */
  private queue(s: Sample): void {
    this.pending.push(s);
    if (this.pending.length === 1) {
      queueMicrotask(() => {
        const batch = this.pending;
        this.pending = [];
        if (!this.isClosed && batch.length > 0) this.onSamples(batch);
      });
    }
  }

  private async check(): Promise<void> {
    const session = this.host.session();
    if (this.isClosed || !session || this.creating) return;
    if (!this.sub) {
      await this.start().catch((err: unknown) => this.host.logger.warn({ err, sub: this.id }, 'subscription create failed'));
      return;
    }
    const t = now();
    const publishing = this.sub.publishingInterval || this.options.intervalMs;
    const keepAlivePeriod = publishing * (this.sub.maxKeepAliveCount || 1);
    const silentLimit = Math.max(this.host.maxDataAgeMs, 2 * keepAlivePeriod + publishing);
    if (t - this.lastAliveAt > silentLimit) return this.goStale(t - this.lastAliveAt);
    const grace = Math.max(this.host.maxDataAgeMs / 2, 3 * publishing + this.options.intervalMs);
    const overdue = this.items.find((it) => it.suspectSince !== undefined && t - it.suspectSince > grace);
    if (overdue) return this.goStale(t - (overdue.notifiedAt ?? this.lastDataAt));
    if (!this.verifying) await this.verify(session);
  }

  /** Read a rotating batch of the subscribed nodes and mark items the server changed but did not notify. */
  private async verify(session: ClientSession): Promise<void> {
    const watched = this.items.filter((it) => !it.failed);
    if (watched.length === 0) return;
    const batch: Item[] = [];
    for (let k = 0; k < Math.min(VERIFY_BATCH, watched.length); k++) batch.push(watched[(this.cursor + k) % watched.length]!);
    this.cursor = (this.cursor + batch.length) % watched.length;
    this.verifying = true;
    const gen = this.generation;
    const issuedAt = now();
    try {
      const dvs = await session.read(batch.map((it) => ({ nodeId: this.host.nodeOf(it.tag), attributeId: AttributeIds.Value })));
      if (gen !== this.generation) return;
      const deadband = this.options.deadband ?? 0;
      batch.forEach((it, k) => {
        const dv = dvs[k];
        if (!dv) return;
        const s = this.host.toSample(it.tag, dv);
        // A notification that arrived after the read was issued already answers it.
        if (it.notifiedAt !== undefined && it.notifiedAt >= issuedAt) return;
        const same = it.notifiedAt !== undefined && s.status === it.status && sameValue(s.value, it.value, it.tag.numeric ? deadband : 0);
        if (same) it.suspectSince = undefined;
        else it.suspectSince ??= issuedAt;
      });
    } catch {
      // A failed verification read says nothing about the subscription; the connection's keep-alive handles outages.
    } finally {
      this.verifying = false;
    }
  }

  private async goStale(ageMs: number): Promise<void> {
    this.host.stale(this, Math.round(ageMs));
    try {
      await this.recreate();
    } catch (err) {
      this.host.logger.warn({ err, sub: this.id }, 'subscription re-creation failed; the watchdog retries');
    }
    this.lastAliveAt = now();
    for (const it of this.items) it.suspectSince = undefined;
  }
}
