/**
 * Sparkplug B (spBv1.0) for linekeeper: topic names, how a tag and its samples
 * become metrics, and the payload encoding (sparkplug-payload, the Eclipse Tahu
 * protobuf). No sockets here: the publisher decides when a message goes out and
 * gives it its `seq`.
 *
 * Messages are kept as plain JSON ({@link SpMessage}) until they are sent, so the
 * store-and-forward outbox can hold them in SQLite and the publisher can set the
 * `is_historical` flag and the sequence number at send time.
 */
import sparkplug from 'sparkplug-payload';
import type { UMetric, UPayload, TypeStr } from 'sparkplug-payload/lib/sparkplugbpayload.js';
import type { Quality, Sample, TagDescription } from '../types.js';

export const NAMESPACE = 'spBv1.0';

const codec = sparkplug.get(NAMESPACE)!;

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

/** Sparkplug's quality codes (the OPC DA ones Ignition and Tahu use). */
const QUALITY_CODE: Record<Quality, number> = { good: 192, uncertain: 64, bad: 0 };

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
export function encode(m: Pick<SpMessage, 'timestamp' | 'metrics'>, seq: number | undefined, historical: boolean, extra: readonly UMetric[] = []): Uint8Array {
  const payload: UPayload = {
    timestamp: m.timestamp,
    metrics: [...extra, ...m.metrics.map((x) => toUMetric(x, historical))],
    ...(seq !== undefined ? { seq } : {}),
  };
  return codec.encodePayload(payload);
}

function toUMetric(x: SpMetric, historical: boolean): UMetric {
  const properties: NonNullable<UMetric['properties']> = {};
  if (x.unit !== undefined) properties.engUnit = { type: 'String', value: x.unit };
  if (x.quality !== undefined) properties.Quality = { type: 'Int32', value: QUALITY_CODE[x.quality] };
  return {
    name: x.name, type: x.type, timestamp: x.timestamp,
    value: x.value,
    ...(x.value === null ? { isNull: true } : {}),
    ...(historical ? { isHistorical: true } : {}),
    ...(Object.keys(properties).length > 0 ? { properties } : {}),
  };
}

/** The `bdSeq` metric of NBIRTH and NDEATH (0–255: which birth a death certificate belongs to). */
export function bdSeqMetric(bdSeq: number, now: number): UMetric {
  return { name: 'bdSeq', type: 'UInt64', value: bdSeq, timestamp: now };
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
