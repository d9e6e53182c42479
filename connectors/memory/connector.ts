/**
 * An in-memory connector bound directly to the simulated plant (connectors/sim/plant.ts): the same narrow
 * {@link Connector} interface as the OPC UA and Modbus connectors, the same write capability (handed out once),
 * the same read-back verification and the same refusals, with no protocol in between. It is what the core
 * simulator (test/sim) and the logic tests run the guarded writer and the run engine on; the protocol tests keep
 * the real servers, and the connector contract test (test/integration/connector-contract.int.spec.ts) holds all
 * three to the same behaviour.
 *
 * Every call settles in microtasks (no timers, no I/O), so on a ManualClock the order of events is the order of
 * the code: a seed replays identically. Its heartbeat and the subscriptions' polling run on the injected clock.
 *
 * Faults a test or the simulator injects ({@link MemoryFaults}): the connection lost (reads bad, writes refused
 * before sending, state `lost`), a write whose reply is lost after the PLC applied it (LK_CONN_TIMEOUT, outcome
 * unknown), a read-back that differs from what the PLC holds, and a frozen connection (every call under way and
 * to come never settles: a process that died at that await).
 */
import { every, systemClock, type Clock } from '../../src/clock.js';
import type { EquipmentConfig, TagConfig } from '../../src/config/schema.js';
import { LkError } from '../../src/errors.js';
import { LKG_READBACK_TAGS, countOf, lkgResult, rearmResult, recipeOf, STATE_UNKNOWN } from '../lkg.js';
import type { Plant } from '../sim/plant.js';
import { supervisorRegister } from '../sim/register-map.js';
import { assertSupervised, nextBeat, profilesOf, stateOf, type SupervisionProfile } from '../supervision.js';
import type {
  Connector,
  ConnectorEvent,
  ConnectorHealth,
  ConnectorState,
  LkgCommandResult,
  Sample,
  SubscribeOptions,
  Subscription,
  TagDescription,
  TagValue,
  WriteCapability,
  WriteResult,
} from '../types.js';

export interface MemoryConnectorOptions {
  /** Connection id (as in the site configuration). */
  readonly id: string;
  readonly protocol?: 'opcua' | 'modbus';
  /** The equipment this connection serves (their tag tables are the site configuration's). */
  readonly equipment: readonly EquipmentConfig[];
  readonly plant: Plant;
  readonly clock?: Clock;
}

/** Faults injected into one memory connector. */
export interface MemoryFaults {
  /** The connection drops (`lost`: reads bad LK_CONN_UNAVAILABLE, writes refused before sending) or comes back. */
  setConnected(up: boolean): void;
  /** The next `n` setpoint writes reach the PLC, but their replies are lost: LK_CONN_TIMEOUT, outcome unknown. */
  loseWriteReplies(n?: number): void;
  /** Read-backs of `tag` after a write report the PLC's value + `delta` (0 ends it): a write that did not take. */
  skewReadBack(tag: string, delta: number): void;
  /** Every call under way and every later call never settles (the process died at that await). */
  freeze(): void;
  readonly frozen: boolean;
}

const never = <T>(): Promise<T> => new Promise<T>(() => undefined);

export class MemoryConnector implements Connector {
  readonly id: string;
  readonly protocol: 'opcua' | 'modbus';
  private readonly plant: Plant;
  private readonly clock: Clock;
  private readonly tags = new Map<string, { readonly eq: EquipmentConfig; readonly tag: TagConfig }>();
  private readonly profiles: ReadonlyMap<string, SupervisionProfile>;
  private readonly listeners = new Set<(e: ConnectorEvent) => void>();
  private st: ConnectorState = 'closed';
  private up = true;
  private isFrozen = false;
  private lostReplies = 0;
  private readonly readSkew = new Map<string, number>();
  private writerClaimed = false;
  private reconnects = 0;
  private lastDataAt: number | undefined;
  private stopBeats: (() => void) | undefined;
  private readonly subs = new Set<() => void>();
  readonly faults: MemoryFaults;

  constructor(o: MemoryConnectorOptions) {
    this.id = o.id;
    this.protocol = o.protocol ?? 'opcua';
    this.plant = o.plant;
    this.clock = o.clock ?? systemClock;
    for (const eq of o.equipment) for (const tag of eq.tags) this.tags.set(`${eq.id}.${tag.name}`, { eq, tag });
    this.profiles = profilesOf(o.equipment);
    const self = this;
    this.faults = {
      setConnected(up: boolean) {
        self.up = up;
        if (self.st === 'closed') return;
        if (!up) self.setState('lost', 'connection lost (injected)');
        else {
          self.reconnects++;
          self.setState('connected');
        }
      },
      loseWriteReplies(n = 1) {
        self.lostReplies = n;
      },
      skewReadBack(tag: string, delta: number) {
        if (delta === 0) self.readSkew.delete(tag);
        else self.readSkew.set(tag, delta);
      },
      freeze() {
        self.isFrozen = true;
        self.stopBeats?.();
        for (const s of self.subs) s();
      },
      get frozen() {
        return self.isFrozen;
      },
    };
  }

  async connect(): Promise<void> {
    if (this.isFrozen) return never();
    this.setState(this.up ? 'connected' : 'lost');
  }

  async close(): Promise<void> {
    this.stopHeartbeat();
    for (const s of this.subs) s();
    this.subs.clear();
    this.setState('closed');
  }

  async describe(): Promise<TagDescription[]> {
    return [...this.tags].map(([id, { eq, tag }]) => ({
      tag: id,
      equipment: eq.id,
      name: tag.name,
      kind: tag.kind,
      unit: tag.unit,
      dataType: 'data_type' in tag ? String(tag.data_type) : 'Double',
      writable: tag.kind === 'setpoint',
      ...(tag.range ? { range: { min: tag.range.min, max: tag.range.max } } : {}),
      address: `memory:${id}`,
    }));
  }

  async read(tags: readonly string[]): Promise<Sample[]> {
    if (this.isFrozen) return never();
    const at = this.clock.now();
    const out = tags.map((t) => this.sample(t, at));
    if (out.some((s) => s.quality === 'good')) this.lastDataAt = at;
    return out;
  }

  async subscribe(tags: readonly string[], options: SubscribeOptions, onSamples: (samples: Sample[]) => void): Promise<Subscription> {
    if (this.isFrozen) return never();
    const stop = every(this.clock, options.intervalMs, async () => onSamples(await this.read(tags)));
    this.subs.add(stop);
    return {
      tags: [...tags],
      close: async () => {
        stop();
        this.subs.delete(stop);
      },
    };
  }

  health(): ConnectorHealth {
    return {
      id: this.id,
      protocol: this.protocol,
      state: this.st,
      endpoint: `memory:${this.id}`,
      ...(this.lastDataAt !== undefined ? { lastDataAt: this.lastDataAt } : {}),
      reconnects: this.reconnects,
      staleRecoveries: 0,
    };
  }

  on(listener: (e: ConnectorEvent) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** One beat per equipment's heartbeat period of the injected clock (a counter, or a toggled life bit, as its profile says). */
  startHeartbeat(skip: ReadonlySet<string> = new Set()): void {
    if (this.stopBeats || this.isFrozen) return;
    const stops: (() => void)[] = [];
    for (const [eqId, profile] of this.profiles) {
      if (skip.has(eqId) || profile.mode === 'monitor_only' || !this.tags.has(`${eqId}.Heartbeat`)) continue;
      const eq = this.tags.get(`${eqId}.Heartbeat`)!.eq;
      const beat = (): void => {
        if (!this.up || this.isFrozen) return;
        try {
          const cur = this.plant.read(eqId, 'Heartbeat');
          this.plant.heartbeat(eqId, nextBeat(typeof cur === 'number' ? cur : 0, profile.heartbeat));
        } catch (err) {
          this.emit({ type: 'heartbeat_failed', equipment: eqId, error: LkError.is(err) ? `${err.code}: ${err.message}` : String(err) });
        }
      };
      beat();
      stops.push(every(this.clock, eq.heartbeat.period_ms, beat));
    }
    this.stopBeats = () => stops.forEach((s) => s());
  }

  stopHeartbeat(): void {
    this.stopBeats?.();
    this.stopBeats = undefined;
  }

  claimWriter(): WriteCapability {
    if (this.writerClaimed) throw new LkError('LK_WRITER_CLAIMED', `the write capability of ${this.id} is already claimed`, { connector: this.id });
    this.writerClaimed = true;
    return Object.freeze({
      connectorId: this.id,
      write: (tag: string, value: number) => this.write(tag, value),
      commandLkg: (equipment: string) => this.command(equipment, 'LOST'),
      commandRearm: (equipment: string) => this.command(equipment, 'ATTENDED'),
    });
  }

  private async write(tagId: string, value: number): Promise<WriteResult> {
    if (this.isFrozen) return never();
    const t = this.tags.get(tagId);
    if (!t) throw new LkError('LK_TAG_UNKNOWN', `tag ${tagId} is not configured on ${this.id}`, { tag: tagId });
    if (t.tag.kind !== 'setpoint') throw new LkError('LK_TAG_NOT_WRITABLE', `${tagId} is a ${t.tag.kind}, not a setpoint`, { tag: tagId, kind: t.tag.kind });
    if (typeof value !== 'number' || !Number.isFinite(value)) throw new LkError('LK_VALUE_INVALID', `${tagId}: ${String(value)} is not a finite number`, { tag: tagId, value: String(value) });
    assertSupervised(this.profiles, tagId);
    this.requireUp(tagId);
    try {
      this.plant.writeSetpoint(t.eq.id, t.tag.name, value);
    } catch (err) {
      throw this.refusal(err, tagId, `equipment refused the write of ${value}`);
    }
    if (this.lostReplies > 0) {
      this.lostReplies--;
      throw new LkError('LK_CONN_TIMEOUT', `${tagId}: write did not complete: reply lost`, { tag: tagId, status: 'BadTimeout', outcome: 'unknown' });
    }
    await Promise.resolve();
    if (this.isFrozen) return never();
    const back = this.sample(tagId, this.clock.now());
    const raw = back.quality === 'good' && typeof back.value === 'number' ? back.value : null;
    const readBack = raw === null ? null : raw + (this.readSkew.get(tagId) ?? 0);
    return {
      tag: tagId,
      written: value,
      readBack,
      readBackQuality: back.quality,
      verified: readBack !== null && Math.abs(readBack - value) <= (t.tag.readback_tolerance ?? 0),
      status: 'Good',
      at: this.clock.now(),
    };
  }

  private async command(equipment: string, target: 'LOST' | 'ATTENDED'): Promise<LkgCommandResult> {
    if (this.isFrozen) return never();
    const tagId = `${equipment}.SupervisorState`;
    const t = this.tags.get(tagId);
    if (!t || t.tag.kind !== 'supervisor') throw new LkError('LK_TAG_UNKNOWN', `${equipment} has no supervisor tag SupervisorState on ${this.id}`, { tag: tagId, equipment });
    assertSupervised(this.profiles, tagId);
    this.requireUp(tagId);
    try {
      this.plant.setSupervisorState(equipment, target);
    } catch (err) {
      throw this.refusal(err, tagId, `equipment refused the ${target === 'LOST' ? 'LKG' : 're-arm'} command`, equipment);
    }
    await Promise.resolve();
    if (this.isFrozen) return never();
    const values = new Map<string, TagValue | null>();
    for (const name of LKG_READBACK_TAGS) {
      const s = this.tags.has(`${equipment}.${name}`) ? this.sample(`${equipment}.${name}`, this.clock.now()) : undefined;
      if (s?.quality === 'good') values.set(name, s.value);
    }
    const state = stateOf(values.get('SupervisorState') ?? undefined, this.profiles.get(equipment));
    const r = { state: state ?? STATE_UNKNOWN, activeRecipe: recipeOf(values.get('ActiveRecipe')), lkgRecipe: recipeOf(values.get('LkgRecipeId')), revertCount: countOf(values.get('RevertCount')) };
    return (target === 'LOST' ? lkgResult : rearmResult)(equipment, r, this.clock.now());
  }

  /** A refusal by the PLC as the OPC UA connector reports it: LK_WRITE_FAILED with the status the server would give. */
  private refusal(err: unknown, tagId: string, what: string, equipment?: string): LkError {
    if (!LkError.is(err)) return new LkError('LK_WRITE_FAILED', `${tagId}: ${what} (BadInternalError)`, { tag: tagId, status: 'BadInternalError' });
    const status =
      err.code === 'LK_PLC_LOST' || err.code === 'LK_PLC_NO_HEARTBEAT' ? 'BadInvalidState'
        : err.code === 'LK_PLC_OUT_OF_RANGE' ? 'BadOutOfRange'
          : err.code === 'LK_VALUE_INVALID' ? 'BadOutOfRange'
            : err.code === 'LK_TAG_NOT_WRITABLE' ? 'BadNotWritable'
              : 'BadInternalError';
    return new LkError('LK_WRITE_FAILED', `${tagId}: ${what} (${status})`, { tag: tagId, status, ...(equipment ? { equipment } : {}) });
  }

  private requireUp(tagId: string): void {
    if (this.st === 'closed' || !this.up) throw new LkError('LK_CONN_UNAVAILABLE', `${this.id} is not connected (${this.st === 'closed' ? 'closed' : 'lost'}); ${tagId} was not sent`, { tag: tagId, status: 'BadNotConnected' });
  }

  private sample(tagId: string, at: number): Sample {
    const t = this.tags.get(tagId);
    const bad = (status: string, unit = t?.tag.unit ?? ''): Sample => ({ tag: tagId, value: null, quality: 'bad', status, unit, sourceTime: at, receivedAt: at });
    if (!t) return bad('LK_TAG_UNKNOWN');
    if (this.st === 'closed' || !this.up) return bad('LK_CONN_UNAVAILABLE');
    let v: TagValue;
    try {
      v = this.protocol === 'modbus' && t.tag.kind === 'supervisor' ? this.register(t.eq.id, t.tag.name) : (this.plant.read(t.eq.id, t.tag.name) as TagValue);
    } catch {
      return bad('BadNodeIdUnknown');
    }
    if (typeof v === 'number' && !Number.isFinite(v)) return bad('LK_VALUE_INVALID');
    // as the protocol connectors hand them out (connectors/types.ts): a spectrum as a frozen plain array (every element
    // finite, else the sample is bad), a frame as a copy of its bytes, never the plant's own buffer
    if (v instanceof Uint8Array) v = new Uint8Array(v);
    else if (ArrayBuffer.isView(v) || Array.isArray(v)) {
      const xs = Array.from(v as ArrayLike<number>);
      if (!xs.every((x) => typeof x === 'number' && Number.isFinite(x))) return bad('LK_VALUE_INVALID');
      v = Object.freeze(xs);
    }
    return { tag: tagId, value: v, quality: 'good', status: 'Good', unit: t.tag.unit, sourceTime: at, receivedAt: at };
  }

  /** A supervisor tag as a Modbus PLC holds it (connectors/sim/REGISTER_MAP.md). */
  private register(eq: string, name: string): number {
    const code = supervisorRegister(this.plant.supervisor(eq), name);
    if (code !== undefined) return code;
    const v = this.plant.read(eq, name);
    return typeof v === 'number' ? v : Number.NaN;
  }

  private setState(to: ConnectorState, reason?: string): void {
    const from = this.st;
    if (from === to) return;
    this.st = to;
    this.emit({ type: 'state', from, to, ...(reason ? { reason } : {}) });
  }

  private emit(e: ConnectorEvent): void {
    for (const l of this.listeners) l(e);
  }
}

/** One memory connector per configured connection of the site, each serving its equipment on `plant`. */
export function createMemoryConnectors(config: { readonly connections: readonly { readonly id: string; readonly protocol: 'opcua' | 'modbus' }[]; readonly equipment: readonly EquipmentConfig[] }, plant: Plant, clock?: Clock): MemoryConnector[] {
  return config.connections.map(
    (c) => new MemoryConnector({ id: c.id, protocol: c.protocol, equipment: config.equipment.filter((e) => e.connection === c.id), plant, ...(clock ? { clock } : {}) }),
  );
}
