/**
 * The Modbus TCP connector: the {@link Connector} of one Modbus connection of
 * the site configuration (one endpoint, one or more unit ids behind it).
 *
 * Transport is in lane.ts (a socket and queue per unit, see there why),
 * register layout in codec.ts, read coalescing in plan.ts, polling in
 * poller.ts. This file ties them to the Connector contract: bad values become
 * bad-quality samples, writes are refused before anything is sent when the
 * tag or value is wrong, and every write is read back.
 */
import { systemClock, type Clock } from '../../src/clock.js';
import type { ModbusConnectionConfig, ModbusEquipmentConfig } from '../../src/config/schema.js';
import { LkError, type ErrorCode } from '../../src/errors.js';
import { silentLogger, type Logger } from '../../src/log.js';
import { ConnectorEvents } from '../events.js';
import type {
  Connector, ConnectorEvent, ConnectorHealth, ConnectorState, Sample, SubscribeOptions, Subscription, TagDescription, WriteCapability, WriteResult,
} from '../types.js';
import { decode, encode } from './codec.js';
import { UnitLane, type Backoff } from './lane.js';
import { buildTagTable, describeTag, isWritable, planReads, type ReadBlock, type TagEntry } from './plan.js';
import { PollGroup } from './poller.js';
import { startHeartbeats } from './heartbeat.js';
import { commandLkg, commandRearm } from './lkg.js';
import { assertSupervised, profilesOf, type SupervisionProfile } from '../supervision.js';

export interface ModbusConnectorOptions {
  readonly connection: ModbusConnectionConfig;
  /** Equipment of the site; those whose `connection` is not this one are ignored. */
  readonly equipment: readonly ModbusEquipmentConfig[];
  /** Actual endpoint (the caller resolves `sim`). */
  readonly host: string;
  readonly port: number;
  readonly clock?: Clock;
  readonly logger?: Logger;
  /** Reconnect backoff; default 200 ms doubling to 5 s, reset only after a connection stayed open 30 s. */
  readonly backoff?: Partial<Backoff>;
  /** Largest unread register gap bridged when coalescing reads; default 0 (see plan.ts). */
  readonly maxGap?: number;
}

export interface ModbusConnector extends Connector {
  readonly protocol: 'modbus';
}

/**
 * Create the connector (no I/O until `connect()`).
 *
 * @throws LkError LK_CONFIG_INVALID when two tags share an id.
 */
export function createModbusConnector(o: ModbusConnectorOptions): ModbusConnector {
  return new ModbusTcpConnector(o);
}

const errorCode = (e: unknown): ErrorCode => (LkError.is(e) ? (e as LkError).code : 'LK_INTERNAL');

class ModbusTcpConnector implements ModbusConnector {
  readonly id: string;
  readonly protocol = 'modbus' as const;
  private readonly clock: Clock;
  private readonly log: Logger;
  private readonly equipment: readonly ModbusEquipmentConfig[];
  private readonly profiles: ReadonlyMap<string, SupervisionProfile>;
  private readonly tags: Map<string, TagEntry>;
  private readonly lanes = new Map<number, UnitLane>();
  private readonly events: ConnectorEvents;
  private readonly subscriptions = new Set<{ groups: PollGroup[] }>();
  private readonly plans = new Map<string, ReadBlock[]>();
  private state: ConnectorState = 'connecting';
  private closed = false;
  private lastDataAt: number | undefined;
  private lastError: string | undefined;
  private staleRecoveries = 0;
  private subscriptionSeq = 0;
  private writerClaimed = false;
  private stopHeartbeats: (() => void) | undefined;

  constructor(private readonly o: ModbusConnectorOptions) {
    this.id = o.connection.id;
    this.clock = o.clock ?? systemClock;
    this.log = (o.logger ?? silentLogger).child({ connector: this.id });
    this.events = new ConnectorEvents(this.log);
    this.equipment = o.equipment.filter((e) => e.connection === o.connection.id);
    this.profiles = profilesOf(this.equipment);
    this.tags = buildTagTable(this.equipment);
    const count = this.equipment.reduce((n, e) => n + e.tags.length, 0);
    if (this.tags.size !== count) throw new LkError('LK_CONFIG_INVALID', `connection ${this.id}: duplicate tag ids`);
    const backoff: Backoff = { initialMs: o.backoff?.initialMs ?? 200, maxMs: o.backoff?.maxMs ?? 5000, ...(o.backoff?.healthyMs !== undefined ? { healthyMs: o.backoff.healthyMs } : {}) };
    for (const eq of this.equipment) {
      if (this.lanes.has(eq.unit_id)) continue;
      this.lanes.set(eq.unit_id, new UnitLane({
        host: o.host, port: o.port, unitId: eq.unit_id, timeoutMs: o.connection.timeout_ms, backoff,
        logger: this.log, onChange: () => this.refreshState(), now: () => this.clock.now(),
      }));
    }
  }

  /** Resolves once any unit's socket is open; keeps reconnecting in the background until close(). */
  async connect(): Promise<void> {
    if (this.closed) throw new LkError('LK_CONN_UNAVAILABLE', `connector ${this.id} is closed`);
    if (this.lanes.size === 0) return this.setState('connected');
    for (const l of this.lanes.values()) l.start();
    try {
      await Promise.any([...this.lanes.values()].map((l) => l.whenOpen()));
    } catch {
      throw new LkError('LK_CONN_UNAVAILABLE', `connector ${this.id} closed before it connected`);
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.stopHeartbeat();
    for (const s of this.subscriptions) for (const g of s.groups) g.stop();
    this.subscriptions.clear();
    this.closed = true;
    for (const l of this.lanes.values()) l.close();
    this.setState('closed');
  }

  describe(): Promise<TagDescription[]> {
    return Promise.resolve([...this.tags.values()].map(describeTag));
  }

  /** Batched read; unknown tags, timeouts, exceptions and NaN registers come back as bad-quality samples. */
  async read(tags: readonly string[]): Promise<Sample[]> {
    const out = new Map<string, Sample>();
    await Promise.all(this.planFor(tags).map((b) => this.readBlock(b, out)));
    const now = this.clock.now();
    return tags.map((t) => out.get(t) ?? { tag: t, value: null, quality: 'bad', status: 'LK_TAG_UNKNOWN', unit: '', sourceTime: now, receivedAt: now });
  }

  /** Polling groups read the same tag list over and over: plan it once. */
  private planFor(tags: readonly string[]): ReadBlock[] {
    const key = tags.join('\n');
    let plan = this.plans.get(key);
    if (!plan) {
      const entries = new Map<string, TagEntry>();
      for (const t of tags) {
        const e = this.tags.get(t);
        if (e) entries.set(t, e);
      }
      plan = planReads([...entries.values()], this.o.maxGap ?? 0);
      if (this.plans.size >= 256) this.plans.clear();
      this.plans.set(key, plan);
    }
    return plan;
  }

  private async readBlock(b: ReadBlock, out: Map<string, Sample>): Promise<void> {
    const lane = this.lanes.get(b.unitId)!;
    try {
      const regs = await lane.readRegisters(b.table, b.start, b.count);
      const at = this.clock.now();
      this.lastDataAt = at;
      for (const e of b.tags) {
        const d = decode(e.config, regs.slice(e.address - b.start, e.address - b.start + e.count));
        out.set(e.id, d.ok
          ? { tag: e.id, value: d.value, quality: 'good', status: 'Good', unit: e.config.unit, sourceTime: at, receivedAt: at }
          : this.bad(e, d.status));
      }
    } catch (err) {
      const code = errorCode(err);
      this.lastError = LkError.is(err) ? (err as LkError).message : String(err);
      if (code === 'LK_MODBUS_ILLEGAL_ADDRESS' && b.tags.length > 1) {
        // One unmapped register must not black out its neighbours: read each tag on its own.
        await Promise.all(b.tags.map((e) => this.readBlock({ unitId: b.unitId, table: b.table, start: e.address, count: e.count, tags: [e] }, out)));
        return;
      }
      for (const e of b.tags) out.set(e.id, this.bad(e, code));
    }
  }

  private bad(e: TagEntry, status: string): Sample {
    const now = this.clock.now();
    return { tag: e.id, value: null, quality: 'bad', status, unit: e.config.unit, sourceTime: now, receivedAt: now };
  }

  /**
   * Poll the tags every `intervalMs`, one polling group per unit so a silent
   * unit delays only its own tags; reports first values and changes beyond the deadband.
   *
   * @throws LkError LK_TAG_UNKNOWN for a tag not on this connection, LK_VALIDATION for a bad interval or deadband.
   */
  async subscribe(tags: readonly string[], options: SubscribeOptions, onSamples: (samples: Sample[]) => void): Promise<Subscription> {
    if (this.closed) throw new LkError('LK_CONN_UNAVAILABLE', `connector ${this.id} is closed`);
    if (!Number.isFinite(options.intervalMs) || options.intervalMs <= 0) throw new LkError('LK_VALIDATION', 'intervalMs must be a positive number');
    if (options.deadband !== undefined && !(Number.isFinite(options.deadband) && options.deadband >= 0)) {
      throw new LkError('LK_VALIDATION', 'deadband must be a finite number ≥ 0');
    }
    const byUnit = new Map<number, string[]>();
    for (const t of new Set(tags)) {
      const e = this.tags.get(t);
      if (!e) throw new LkError('LK_TAG_UNKNOWN', `tag ${t} is not on connection ${this.id}`, { tag: t });
      byUnit.set(e.unitId, [...(byUnit.get(e.unitId) ?? []), t]);
    }
    const subId = ++this.subscriptionSeq;
    const timeoutMs = this.o.connection.timeout_ms;
    const groups = [...byUnit.values()].map((unitTags) => new PollGroup({
      tags: unitTags,
      intervalMs: options.intervalMs,
      deadband: options.deadband,
      read: (ts) => this.read(ts),
      emit: onSamples,
      stallMs: Math.max(10 * options.intervalMs, 10 * timeoutMs),
      onStall: (ageMs) => {
        this.staleRecoveries++;
        this.emit({ type: 'stale', subscription: subId, ageMs });
      },
      onError: (e) => this.log.warn({ err: e }, 'modbus: subscriber callback failed'),
    }));
    const sub = { groups };
    this.subscriptions.add(sub);
    for (const g of groups) g.start();
    return {
      tags: [...new Set(tags)],
      close: () => {
        for (const g of groups) g.stop();
        this.subscriptions.delete(sub);
        return Promise.resolve();
      },
    };
  }

  health(): ConnectorHealth {
    const units: Record<string, 'ok' | 'timeout' | 'error'> = {};
    let reconnects = 0;
    for (const [id, l] of this.lanes) {
      units[String(id)] = l.health;
      reconnects += l.reconnects;
    }
    return {
      id: this.id,
      protocol: 'modbus',
      state: this.state,
      endpoint: `${this.o.host}:${this.o.port}`,
      ...(this.lastDataAt !== undefined ? { lastDataAt: this.lastDataAt } : {}),
      reconnects,
      staleRecoveries: this.staleRecoveries,
      ...(this.lastError !== undefined ? { lastError: this.lastError } : {}),
      units,
    };
  }

  on(listener: (e: ConnectorEvent) => void): () => void {
    return this.events.on(listener);
  }

  startHeartbeat(skip?: ReadonlySet<string>): void {
    if (this.stopHeartbeats || this.closed) return;
    this.stopHeartbeats = startHeartbeats({
      // a monitor-only unit is never beaten: linekeeper only reads it
      equipment: this.equipment.filter((e) => !skip?.has(e.id) && this.profiles.get(e.id)?.mode !== 'monitor_only'),
      profiles: this.profiles,
      tags: this.tags,
      lane: (unitId) => this.lanes.get(unitId)!,
      onFailure: (equipment, error) => this.emit({ type: 'heartbeat_failed', equipment, error }),
    });
  }

  stopHeartbeat(): void {
    this.stopHeartbeats?.();
    this.stopHeartbeats = undefined;
  }

  /** @throws LkError LK_WRITER_CLAIMED on the second call. */
  claimWriter(): WriteCapability {
    if (this.writerClaimed) throw new LkError('LK_WRITER_CLAIMED', `write capability of ${this.id} already claimed`);
    this.writerClaimed = true;
    const lkgHost = { tags: this.tags, profiles: this.profiles, clock: this.clock, lane: (unitId: number) => this.lanes.get(unitId)!, read: (tags: readonly string[]) => this.read(tags) };
    return { connectorId: this.id, write: (tag, value) => this.write(tag, value), commandLkg: (equipment) => commandLkg(lkgHost, equipment), commandRearm: (equipment) => commandRearm(lkgHost, equipment) };
  }

  /**
   * FC16 write of a setpoint, then an FC3 read-back compared within the tag's readback_tolerance.
   * Refusals happen before anything is sent.
   *
   * @throws LkError LK_TAG_UNKNOWN, LK_TAG_NOT_WRITABLE, LK_VALUE_INVALID, LK_CODEC (refused, nothing sent);
   *   LK_MODBUS_* (the device refused it), LK_CONN_TIMEOUT (outcome unknown), LK_CONN_UNAVAILABLE.
   */
  private async write(tag: string, value: number): Promise<WriteResult> {
    const e = this.tags.get(tag);
    if (!e) throw new LkError('LK_TAG_UNKNOWN', `tag ${tag} is not on connection ${this.id}`, { tag });
    if (!isWritable(e)) throw new LkError('LK_TAG_NOT_WRITABLE', `tag ${tag} is a ${e.config.kind} in ${e.table} registers`, { tag });
    assertSupervised(this.profiles, tag);
    const regs = encode(e.config, value);
    const q = decode(e.config, regs);
    if (!q.ok) throw new LkError('LK_CODEC', `${value} is not representable as ${e.config.type}`, { tag });
    const written = q.value;
    const lane = this.lanes.get(e.unitId)!;
    await lane.writeRegisters(e.address, regs);
    let readBack: number | null = null;
    let status: string | undefined;
    try {
      const d = decode(e.config, await lane.readRegisters('holding', e.address, e.count));
      if (d.ok) readBack = d.value;
      else status = d.status;
    } catch (err) {
      status = errorCode(err);
    }
    const verified = readBack !== null && Math.abs(readBack - written) <= (e.config.readback_tolerance ?? 0);
    if (readBack !== null) this.lastDataAt = this.clock.now();
    return {
      tag,
      written,
      readBack,
      readBackQuality: readBack === null ? 'bad' : 'good',
      verified,
      status: verified ? 'Good' : status ?? 'LK_READBACK_MISMATCH',
      at: this.clock.now(),
    };
  }

  private emit(e: ConnectorEvent): void {
    this.events.emit(e);
  }

  private refreshState(): void {
    if (this.closed) return;
    const lanes = [...this.lanes.values()];
    // A unit whose socket opens but whose requests all time out delivers nothing: behind a black-holed link
    // or a dead gateway every unit looks like that, and the connection is lost. One silent unit among
    // answering ones is that unit's own health (`units`), not a lost connection.
    const open = lanes.some((l) => l.reachable && l.health !== 'timeout');
    const everConnected = this.state !== 'connecting';
    const errs = lanes.map((l) => l.lastError).filter((x): x is string => x !== undefined);
    if (errs.length > 0 && !open) this.lastError = errs[0];
    this.setState(open ? 'connected' : everConnected ? 'lost' : 'connecting');
  }

  private setState(to: ConnectorState): void {
    const from = this.state;
    if (from === to) return;
    this.state = to;
    this.emit({ type: 'state', from, to, ...(this.lastError && to !== 'connected' ? { reason: this.lastError } : {}) });
  }
}
