/**
 * Sparkplug B (spBv1.0) for linekeeper: topic names, how a tag and its samples
 * become metrics, and the payload encoding: the Eclipse Tahu protobuf classes that
 * sparkplug-payload ships (generated from `sparkplug_b.proto`), filled here with the
 * value field the Sparkplug 3.0 datatype table names (UInt32 in `int_value`, Int64 and
 * UInt64 in `long_value`: sparkplug-payload's own encoder puts UInt32 in `long_value`).
 * No sockets here: the publisher decides when a message goes out and gives it its `seq`.
 *
 * Messages are kept as plain JSON ({@link SpMessage}) until they are sent, so the
 * store-and-forward outbox can hold them in SQLite and the publisher can set the
 * `is_historical` flag and the sequence number at send time.
 */
import sparkplug from 'sparkplug-payload';
import type { UMetric, UPayload, TypeStr } from 'sparkplug-payload/lib/sparkplugbpayload.js';
import tahu from 'sparkplug-payload/lib/sparkplugPayloadProto.js';
import type { Quality, Sample, TagDescription } from '../types.js';

export const NAMESPACE = 'spBv1.0';

const codec = sparkplug.get(NAMESPACE)!;
const pb = tahu.org.eclipse.tahu.protobuf;

export type MessageType = 'NBIRTH' | 'NDEATH' | 'NDATA' | 'DBIRTH' | 'DDATA' | 'DDEATH' | 'NCMD';

/** `spBv1.0/<group>/<type>/<edge node>[/<device>]` */
export function topicOf(group: string, node: string, type: MessageType, device?: string): string {
  return `${NAMESPACE}/${group}/${type}/${node}${device !== undefined ? `/${device}` : ''}`;
}

export type MetricValue = number | string | boolean | null;

/** One metric as kept in the outbox: JSON only (no Long, no bytes). */
export interface SpMetric {
  readonly name: string;
  readonly type: TypeStr;
  readonly value: MetricValue;
  /** Epoch ms of the value (source time for tags). */
  readonly timestamp: number;
  /** Engineering unit and OPC-style quality, as Sparkplug properties. */
  readonly unit?: string;
  readonly quality?: Quality;
}

/** A Sparkplug message before its `seq` is known. */
export interface SpMessage {
  readonly topic: string;
  readonly timestamp: number;
  readonly metrics: readonly SpMetric[];
}

/**
 * Sparkplug 3.0's quality codes (0 BAD, 192 GOOD, 500 STALE are the only valid ones): an uncertain sample is
 * published as BAD — a host never takes it as good, and its value is null anyway.
 */
const QUALITY_CODE: Record<Quality, number> = { good: 192, uncertain: 0, bad: 0 };

/** Sparkplug datatype numbers (the `DataType` enum of sparkplug_b.proto). */
export const DATATYPE = {
  Int8: 1, Int16: 2, Int32: 3, Int64: 4, UInt8: 5, UInt16: 6, UInt32: 7, UInt64: 8,
  Float: 9, Double: 10, Boolean: 11, String: 12, DateTime: 13, Text: 14, UUID: 15,
} as const satisfies Partial<Record<TypeStr, number>>;
type ScalarType = keyof typeof DATATYPE;

/**
 * The `oneof value` field of a datatype, as the Sparkplug 3.0 datatype table says: every integer type of 32 bits
 * or fewer (signed ones as two's complement) in `int_value` (uint32), Int64, UInt64 and DateTime in `long_value`
 * (uint64), Float in `float_value`, Double in `double_value`, Boolean in `boolean_value`, String, Text and UUID in
 * `string_value`.
 */
export function valueField(type: ScalarType): 'intValue' | 'longValue' | 'floatValue' | 'doubleValue' | 'booleanValue' | 'stringValue' {
  switch (type) {
    case 'Int8': case 'Int16': case 'Int32': case 'UInt8': case 'UInt16': case 'UInt32': return 'intValue';
    case 'Int64': case 'UInt64': case 'DateTime': return 'longValue';
    case 'Float': return 'floatValue';
    case 'Double': return 'doubleValue';
    case 'Boolean': return 'booleanValue';
    case 'String': case 'Text': case 'UUID': return 'stringValue';
  }
}

/** The Sparkplug datatype of a tag, or undefined for arrays and bytes (spectra, frames: not published). */
export function sparkplugType(dataType: string): TypeStr | undefined {
  switch (dataType) {
    case 'Boolean': return 'Boolean';
    case 'Int16': case 'int16': return 'Int16';
    case 'UInt16': case 'uint16': return 'UInt16';
    case 'Int32': case 'int32': return 'Int32';
    case 'UInt32': case 'uint32': return 'UInt32';
    case 'Float': case 'float32': return 'Float';
    case 'Double': case 'float64': return 'Double';
    case 'String': return 'String';
    default: return undefined;
  }
}

/** Tags that can be published, by equipment (the Sparkplug device) then tag id. */
export function devicesOf(tags: readonly TagDescription[]): Map<string, Map<string, { desc: TagDescription; type: TypeStr }>> {
  const out = new Map<string, Map<string, { desc: TagDescription; type: TypeStr }>>();
  for (const t of tags) {
    const type = sparkplugType(t.dataType);
    if (!type) continue;
    let d = out.get(t.equipment);
    if (!d) out.set(t.equipment, (d = new Map()));
    d.set(t.tag, { desc: t, type });
  }
  return out;
}

/** A sample's value as a metric value of `type`, or null when it is not good or does not fit. */
export function metricValue(s: Pick<Sample, 'value' | 'quality'> | undefined, type: TypeStr): MetricValue {
  if (!s || s.quality !== 'good' || s.value === null) return null;
  const v = s.value;
  if (type === 'Boolean') return typeof v === 'boolean' ? v : typeof v === 'number' ? v !== 0 : null;
  if (type === 'String') return typeof v === 'string' ? v : typeof v === 'number' || typeof v === 'boolean' ? String(v) : null;
  if (typeof v === 'boolean') return v ? 1 : 0;
  return typeof v === 'number' && Number.isFinite(v) ? v : null;
}

/** The metric of one tag: named by the tag's name within its device (`Hardness` of device `press`). */
export function tagMetric(desc: TagDescription, type: TypeStr, s: Sample | undefined, now: number): SpMetric {
  return { name: desc.name, type, value: metricValue(s, type), timestamp: s?.sourceTime ?? now, unit: desc.unit, quality: s?.quality ?? 'bad' };
}

/**
 * Encode `m` with its sequence number. Historical messages (replayed from the outbox) carry `is_historical` on
 * every metric, so a host application stores them without taking them as the current value.
 */
export function encode(m: Pick<SpMessage, 'timestamp' | 'metrics'>, seq: number | undefined, historical: boolean, extra: readonly SpMetric[] = []): Uint8Array {
  const payload = pb.Payload.create({
    timestamp: m.timestamp,
    metrics: [...extra.map((x) => toProtoMetric(x, false)), ...m.metrics.map((x) => toProtoMetric(x, historical))],
    ...(seq !== undefined ? { seq } : {}),
  });
  return pb.Payload.encode(payload).finish();
}

function scalar(type: TypeStr): ScalarType {
  if (!(type in DATATYPE)) throw new Error(`Sparkplug datatype ${type} is not published`);
  return type as ScalarType;
}

function toProtoMetric(x: SpMetric, historical: boolean): InstanceType<typeof pb.Payload.Metric> {
  const type = scalar(x.type);
  const keys: string[] = [];
  const values: InstanceType<typeof pb.Payload.PropertyValue>[] = [];
  if (x.unit !== undefined) {
    keys.push('engUnit');
    values.push(pb.Payload.PropertyValue.create({ type: DATATYPE.String, stringValue: x.unit }));
  }
  if (x.quality !== undefined) {
    keys.push('Quality');
    values.push(pb.Payload.PropertyValue.create({ type: DATATYPE.Int32, intValue: QUALITY_CODE[x.quality] }));
  }
  const metric = pb.Payload.Metric.create({
    name: x.name, datatype: DATATYPE[type], timestamp: x.timestamp,
    ...(historical ? { isHistorical: true } : {}),
    ...(keys.length > 0 ? { properties: pb.Payload.PropertySet.create({ keys, values }) } : {}),
  });
  if (x.value === null) metric.isNull = true;
  else (metric as unknown as Record<string, unknown>)[valueField(type)] = fieldValue(type, x.value);
  return metric;
}

/** A value for its field: an integer of 32 bits or fewer as uint32 (two's complement), the rest as they are. */
function fieldValue(type: ScalarType, v: number | string | boolean): number | string | boolean {
  if (valueField(type) === 'intValue') return (typeof v === 'number' ? Math.trunc(v) : Number(v)) >>> 0;
  return v;
}

/** The `bdSeq` metric of NBIRTH and NDEATH (Int64, 0–255: which birth a death certificate belongs to). */
export function bdSeqMetric(bdSeq: number, now: number): SpMetric {
  return { name: 'bdSeq', type: 'Int64', value: bdSeq, timestamp: now };
}

/** Decode a payload (tests, the rebirth command). */
export function decode(buf: Uint8Array): UPayload {
  return codec.decodePayload(buf);
}

/** A Long or number from a decoded payload as a number. */
export function num(v: unknown): number {
  if (typeof v === 'number') return v;
  if (v && typeof v === 'object' && 'toNumber' in v && typeof (v as { toNumber: unknown }).toNumber === 'function') return (v as { toNumber(): number }).toNumber();
  return Number(v);
}
