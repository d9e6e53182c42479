/**
 * Writes to OPC UA equipment: the setpoint write capability (handed to the
 * guarded writer alone) and the supervisor heartbeat (the connector's own
 * write; the PLC watchdog reverts to LKG when it stops, rule R8).
 *
 * A write is encoded with the node's own DataType (read from the server and
 * cached), checked before anything is sent, and read back: WriteResult.verified
 * says whether the equipment holds what we wrote, within the tag's
 * readback_tolerance. Values are in engineering units: the tag's
 * scale/offset and unit alias are undone before encoding and the raw value
 * the PLC got is reported back in engineering units.
 */
import { AttributeIds, DataType, type ClientSession, type DataValue, type NodeId, type StatusCode } from 'node-opcua-client';
import { LkError } from '../../src/errors.js';
import type { Clock } from '../../src/clock.js';
import type { Logger } from '../../src/log.js';
import type { OpcUaEquipmentConfig } from '../../src/config/schema.js';
import type { ConnectorEvent, LkgCommandResult, Sample, WriteCapability, WriteResult } from '../types.js';
import { countOf, LKG_READBACK_TAGS, lkgResult, rearmResult, recipeOf, STATE_UNKNOWN, SUPERVISOR_STATE_TAG } from '../lkg.js';
import type { OpcUaTag } from './tags.js';
import { builtInDataType, encodeForWrite, numericValue } from './values.js';
import { assertSupervised, commandValue, counterMax, nextBeat, stateOf, type StateValue, type SupervisionProfile } from '../supervision.js';
import type { Linear } from './units.js';

export interface WriteHost {
  readonly id: string;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly tags: ReadonlyMap<string, OpcUaTag>;
  /** Each equipment's supervision profile: its mode, heartbeat and state encoding (connectors/supervision.ts). */
  readonly profiles: ReadonlyMap<string, SupervisionProfile>;
  /** The current session, or throws LK_CONN_UNAVAILABLE. */
  requireSession(): ClientSession;
  nodeOf(tag: OpcUaTag): NodeId;
  /** DataType from the connect-time metadata, if known. */
  cachedDataType(tag: OpcUaTag): DataType | undefined;
  rememberDataType(tag: OpcUaTag, dt: DataType): void;
  /**
   * The tag's raw → engineering conversion (scale/offset and unit alias); throws LK_TAG_UNIT_MISMATCH when the
   * server's unit for the tag differs from the configuration and no alias maps it (nothing is then written).
   */
  conversion(tag: OpcUaTag): Linear;
  toSample(tag: OpcUaTag, dv: DataValue): Sample;
  emit(e: ConnectorEvent): void;
}

async function dataTypeOf(host: WriteHost, session: ClientSession, tag: OpcUaTag, nodeId: NodeId): Promise<DataType> {
  const cached = host.cachedDataType(tag);
  if (cached !== undefined) return cached;
  const dv = await session.read({ nodeId, attributeId: AttributeIds.DataType });
  const dt = dv.statusCode.isGood() ? builtInDataType(dv.value?.value as NodeId) : undefined;
  if (dt === undefined) {
    throw new LkError('LK_WRITE_FAILED', `${tag.id}: cannot determine the node's DataType (${dv.statusCode.name})`, { tag: tag.id, status: dv.statusCode.name });
  }
  host.rememberDataType(tag, dt);
  return dt;
}

/**
 * Write `value` to `tag` with its exact DataType and verify it by reading it
 * back. Throws LK_TAG_UNKNOWN, LK_TAG_NOT_WRITABLE (not a setpoint),
 * LK_VALUE_INVALID (NaN/Infinity/not a number/does not fit the type, before
 * sending), LK_TAG_UNIT_MISMATCH, LK_CONN_UNAVAILABLE, or LK_WRITE_FAILED
 * with detail.status when the server refuses.
 */
export async function writeSetpoint(host: WriteHost, tagId: string, value: unknown): Promise<WriteResult> {
  const tag = host.tags.get(tagId);
  if (!tag) throw new LkError('LK_TAG_UNKNOWN', `tag ${tagId} is not configured on ${host.id}`, { tag: tagId });
  if (tag.kind !== 'setpoint') throw new LkError('LK_TAG_NOT_WRITABLE', `${tagId} is a ${tag.kind}, not a setpoint`, { tag: tagId, kind: tag.kind });
  // the configuration refuses these as setpoints; a connector built from an unvalidated table must refuse them too
  if (tag.configType === 'DoubleArray' || tag.configType === 'ByteString') {
    throw new LkError('LK_TAG_NOT_WRITABLE', `${tagId} is a ${tag.configType}; only numeric scalars are written`, { tag: tagId, dataType: tag.configType });
  }
  if (typeof value !== 'number' || !Number.isFinite(value)) {
    throw new LkError('LK_VALUE_INVALID', `${tagId}: ${String(value)} is not a finite number`, { tag: tagId, value: String(value) });
  }
  assertSupervised(host.profiles, tagId);
  const conv = host.conversion(tag);
  const session = host.requireSession();
  const nodeId = host.nodeOf(tag);
  const dataType = await dataTypeOf(host, session, tag, nodeId);
  const identity = conv.a === 1 && conv.b === 0;
  const raw = identity ? value : (value - conv.b) / conv.a;
  const enc = encodeForWrite(tagId, raw, dataType);
  // what the PLC holds now, in the tag's unit (an Int16 with scale 0.1 holds 12.3 for 12.34)
  const written = identity ? enc.written : Number((conv.a * enc.written + conv.b).toPrecision(15));
  let status;
  try {
    status = await session.write({ nodeId, attributeId: AttributeIds.Value, value: { value: { dataType: enc.dataType, value: enc.value } } });
  } catch (err) {
    // the request may have reached the PLC before the channel failed: the outcome is unknown, not a refusal
    const timedOut = /imeout/.test((err as Error).message);
    throw new LkError(timedOut ? 'LK_CONN_TIMEOUT' : 'LK_CONN_UNAVAILABLE', `${tagId}: write did not complete: ${(err as Error).message}`, { tag: tagId, status: 'BadCommunicationError', outcome: 'unknown' }, { cause: err });
  }
  if (!status.isGood()) {
    throw new LkError('LK_WRITE_FAILED', `${tagId}: equipment refused the write of ${written} (${status.name})`, { tag: tagId, status: status.name, value: written });
  }
  let back: Sample;
  try {
    back = host.toSample(tag, await session.read({ nodeId, attributeId: AttributeIds.Value }));
  } catch (err) {
    const at = host.clock.now();
    back = { tag: tagId, value: null, quality: 'bad', status: (err as Error).message.includes('imeout') ? 'LK_CONN_TIMEOUT' : 'LK_CONN_UNAVAILABLE', unit: tag.unit, sourceTime: at, receivedAt: at };
  }
  const readBack = back.quality === 'good' ? numericValue(back.value) : null;
  const tolerance = tag.readbackTolerance ?? 0;
  return {
    tag: tagId,
    written,
    readBack,
    readBackQuality: back.quality,
    // a scaled value's round trip may differ in the last binary digit: compare at 12 significant digits
    verified: readBack !== null && (Math.abs(readBack - written) <= tolerance || (!identity && Number(readBack.toPrecision(12)) === Number(written.toPrecision(12)))),
    status: status.name,
    at: host.clock.now(),
  };
}

/** A channel failure as an LkError; `sent` says whether the request may have reached the PLC. */
function channelError(err: unknown, tagId: string, what: string, sent: boolean): LkError {
  if (LkError.is(err)) return err;
  const msg = (err as Error)?.message ?? String(err);
  return new LkError(/imeout/.test(msg) ? 'LK_CONN_TIMEOUT' : 'LK_CONN_UNAVAILABLE', `${tagId}: ${what} did not complete: ${msg}`, {
    tag: tagId,
    status: 'BadCommunicationError',
    ...(sent ? { outcome: 'unknown' } : {}),
  }, { cause: err });
}

/**
 * A state value as the node's DataType holds it; throws LK_WRITE_FAILED (nothing sent) when it cannot.
 */
function stateVariant(tagId: string, v: StateValue, dataType: DataType, target: string): { dataType: DataType; value: unknown } {
  const refuse = (): never => {
    throw new LkError('LK_WRITE_FAILED', `${tagId}: the node's DataType is ${DataType[dataType] ?? dataType}, which cannot hold ${JSON.stringify(v)}; ${target} was not sent`, { tag: tagId, status: 'BadTypeMismatch', sent: false });
  };
  if (dataType === DataType.String) return typeof v === 'string' ? { dataType, value: v } : refuse();
  if (typeof v === 'string') return refuse();
  const n = typeof v === 'boolean' ? Number(v) : v;
  try {
    const enc = encodeForWrite(tagId, n, dataType);
    return { dataType: enc.dataType, value: enc.value };
  } catch {
    return refuse();
  }
}

/**
 * Command the equipment's own revert to its LKG recipe: write the profile's revert value (`LOST` by default) to
 * its SupervisorState node, encoded with the node's DataType (a word for a String, an integer, a bit for a
 * Boolean), then read its supervisor tags back in one Read and name the state through the profile. No kind,
 * unit or policy check: this is the fail-safe, and the PLC decides (a command while LOST reverts nothing again).
 *
 * Throws LK_TAG_UNKNOWN (no SupervisorState supervisor tag for `equipment`), LK_MONITOR_ONLY (linekeeper commands
 * nothing on a monitor-only unit), LK_CONN_UNAVAILABLE, LK_CONN_TIMEOUT (detail.outcome 'unknown' once the
 * Write was sent), or LK_WRITE_FAILED: the server refused (detail.status), or the node's DataType cannot hold the
 * profile's value (detail.sent false: nothing was sent).
 */
export function commandLkg(host: WriteHost, equipment: string): Promise<LkgCommandResult> {
  return commandState(host, equipment, 'LOST');
}

/** Re-arm: write `ATTENDED` to the SupervisorState node and read the supervisor tags back; throws as {@link commandLkg}. */
export function commandRearm(host: WriteHost, equipment: string): Promise<LkgCommandResult> {
  return commandState(host, equipment, 'ATTENDED');
}

async function commandState(host: WriteHost, equipment: string, target: 'LOST' | 'ATTENDED'): Promise<LkgCommandResult> {
  const tagId = `${equipment}.${SUPERVISOR_STATE_TAG}`;
  const tag = host.tags.get(tagId);
  if (!tag || tag.kind !== 'supervisor') throw new LkError('LK_TAG_UNKNOWN', `${equipment} has no supervisor tag ${SUPERVISOR_STATE_TAG} on ${host.id}`, { tag: tagId, equipment });
  assertSupervised(host.profiles, tagId);
  const profile = host.profiles.get(equipment);
  const session = host.requireSession();
  const nodeId = host.nodeOf(tag);
  const dataType = await dataTypeOf(host, session, tag, nodeId).catch((err: unknown) => {
    throw channelError(err, tagId, 'reading the DataType', false);
  });
  // the value this PLC's program understands, in the node's own type (read and write agree on it)
  const wanted = profile ? commandValue(profile, target) : target;
  const variant = stateVariant(tagId, wanted, dataType, target);
  let status: StatusCode;
  try {
    status = await session.write({ nodeId, attributeId: AttributeIds.Value, value: { value: variant } });
  } catch (err) {
    throw channelError(err, tagId, target === 'LOST' ? 'the LKG command' : 'the re-arm command', true);
  }
  if (!status.isGood()) {
    throw new LkError('LK_WRITE_FAILED', `${tagId}: equipment refused the ${target === 'LOST' ? 'LKG' : 're-arm'} command (${status.name})`, { tag: tagId, status: status.name, equipment });
  }
  const tags = LKG_READBACK_TAGS.map((n) => host.tags.get(`${equipment}.${n}`));
  const values = new Map<string, Sample['value']>();
  const present = tags.filter((t): t is OpcUaTag => t !== undefined);
  try {
    const dvs = await session.read(present.map((t) => ({ nodeId: host.nodeOf(t), attributeId: AttributeIds.Value })));
    present.forEach((t, i) => {
      const s = dvs[i] ? host.toSample(t, dvs[i]) : undefined;
      if (s?.quality === 'good') values.set(t.name, s.value);
    });
  } catch (err) {
    // the command was accepted: an unreadable state makes the result unverified, not the command failed
    host.logger.warn({ equipment, err: (err as Error)?.message }, 'LKG command sent, read-back failed');
  }
  const state = stateOf(values.get('SupervisorState'), profile);
  return (target === 'LOST' ? lkgResult : rearmResult)(
    equipment,
    {
      state: state ?? STATE_UNKNOWN,
      activeRecipe: recipeOf(values.get('ActiveRecipe')),
      lkgRecipe: recipeOf(values.get('LkgRecipeId')),
      revertCount: countOf(values.get('RevertCount')),
    },
    host.clock.now(),
  );
}

/** The capability object; `claimWriter()` hands it out once. */
export function writeCapability(host: WriteHost): WriteCapability {
  return Object.freeze({
    connectorId: host.id,
    write: (tag: string, value: number) => writeSetpoint(host, tag, value),
    commandLkg: (equipment: string) => commandLkg(host, equipment),
    commandRearm: (equipment: string) => commandRearm(host, equipment),
  });
}

/**
 * Heartbeats of every supervised equipment with a `Heartbeat` supervisor tag, as its profile says: a counter
 * (read once, then incremented every heartbeat.period_ms, wrapping to 0 past the node's type or `wrap_at`) or a
 * life bit toggled every period (written as the node's type: a Boolean true/false, an integer 1/0). A
 * monitor-only unit gets none. A failed write is reported as {type:'heartbeat_failed'}
 * and retried on the next period; a write still in flight skips a beat rather
 * than queueing (a late burst would fake liveness).
 */
export class Heartbeats {
  private timers: NodeJS.Timeout[] = [];
  private readonly counters = new Map<string, number>();

  constructor(
    private readonly host: WriteHost,
    private readonly equipment: readonly OpcUaEquipmentConfig[],
  ) {}

  get running(): boolean {
    return this.timers.length > 0;
  }

  start(skip?: ReadonlySet<string>): void {
    if (this.running) return;
    for (const e of this.equipment) {
      if (skip?.has(e.id)) continue;
      const profile = this.host.profiles.get(e.id);
      if (profile?.mode === 'monitor_only') continue;
      const tag = this.host.tags.get(`${e.id}.Heartbeat`);
      if (!tag) continue;
      let busy = false;
      const beat = async (): Promise<void> => {
        if (busy) return;
        busy = true;
        try {
          await this.beat(e.id, tag);
        } catch (err) {
          this.host.emit({ type: 'heartbeat_failed', equipment: e.id, error: LkError.is(err) ? `${err.code}: ${err.message}` : String((err as Error).message ?? err) });
        } finally {
          busy = false;
        }
      };
      const t = setInterval(() => void beat(), e.heartbeat.period_ms);
      t.unref();
      this.timers.push(t);
      void beat();
    }
  }

  stop(): void {
    for (const t of this.timers) clearInterval(t);
    this.timers = [];
  }

  private async beat(equipment: string, tag: OpcUaTag): Promise<void> {
    const session = this.host.requireSession();
    const nodeId = this.host.nodeOf(tag);
    let n = this.counters.get(equipment);
    if (n === undefined) {
      const dv = await session.read({ nodeId, attributeId: AttributeIds.Value });
      const raw: unknown = dv.value?.value;
      const v = typeof raw === 'boolean' ? Number(raw) : raw;
      n = dv.statusCode.isGood() && typeof v === 'number' && Number.isInteger(v) && v >= 0 ? v : 0;
    }
    const dataType = await dataTypeOf(this.host, session, tag, nodeId).catch(() => DataType.UInt32);
    const hb = this.host.profiles.get(equipment)?.heartbeat ?? { kind: 'counter' as const, periodMs: 1000, wrapAt: null };
    // a counter wraps inside the node's type even where the profile did not say (an Int16 goes 32767 → 0)
    const typeMax = counterMax(DataType[dataType] ?? '');
    const next = nextBeat(n, { ...hb, wrapAt: Math.min(hb.wrapAt ?? Infinity, typeMax ?? 2 ** 32 - 1) });
    const enc = encodeForWrite(tag.id, next, dataType);
    const status = await session.write({ nodeId, attributeId: AttributeIds.Value, value: { value: { dataType: enc.dataType, value: enc.value } } });
    if (!status.isGood()) throw new LkError('LK_WRITE_FAILED', `${tag.id}: heartbeat refused (${status.name})`, { tag: tag.id, status: status.name });
    this.counters.set(equipment, next);
  }
}
