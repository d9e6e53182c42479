/**
 * An independent Sparkplug B decoder for the MQTT tests: the official Eclipse Tahu `sparkplug_b.proto`
 * (test/fixtures/sparkplug, EPL-2.0) loaded by protobufjs from the .proto text — not the generated classes or
 * the encoder the product uses. Field names are kept as the .proto spells them (`int_value`, `is_null`, …), and
 * each metric says which `oneof value` field carries its value.
 */
import { fileURLToPath } from 'node:url';
import protobuf from 'protobufjs';

const PROTO = fileURLToPath(new URL('../fixtures/sparkplug/sparkplug_b.proto', import.meta.url));
const root = new protobuf.Root().loadSync(PROTO, { keepCase: true });
const Payload = root.lookupType('org.eclipse.tahu.protobuf.Payload');
const DataType = root.lookupEnum('org.eclipse.tahu.protobuf.DataType');

export type ValueField = 'int_value' | 'long_value' | 'float_value' | 'double_value' | 'boolean_value' | 'string_value' | 'bytes_value';

export interface TahuProperty {
  readonly type: number;
  readonly field: string | undefined;
  readonly value: unknown;
}

export interface TahuMetric {
  readonly name: string | undefined;
  /** DataType name (`UInt32`), from the enum of the .proto. */
  readonly datatype: string | undefined;
  readonly timestamp: number | undefined;
  readonly is_historical: boolean;
  readonly is_null: boolean;
  /** Which `oneof value` field is set (undefined: none). */
  readonly field: ValueField | undefined;
  /** The raw field value (uint32 and uint64 as unsigned numbers). */
  readonly raw: unknown;
  readonly properties: Readonly<Record<string, TahuProperty>>;
}

export interface TahuPayload {
  readonly timestamp: number | undefined;
  readonly seq: number | undefined;
  readonly metrics: readonly TahuMetric[];
}

type Obj = Record<string, unknown>;

export function tahuDecode(buf: Uint8Array): TahuPayload {
  const o = Payload.toObject(Payload.decode(buf), { longs: Number, oneofs: true, defaults: false }) as Obj;
  const metrics = ((o.metrics as Obj[] | undefined) ?? []).map((m): TahuMetric => {
    const field = m.value as ValueField | undefined;
    const props: Record<string, TahuProperty> = {};
    const ps = m.properties as { keys?: string[]; values?: Obj[] } | undefined;
    for (const [i, k] of (ps?.keys ?? []).entries()) {
      const v = ps!.values![i]!;
      const f = v.value as string | undefined;
      props[k] = { type: v.type as number, field: f, value: f ? v[f] : undefined };
    }
    return {
      name: m.name as string | undefined,
      datatype: m.datatype === undefined ? undefined : DataType.valuesById[m.datatype as number],
      timestamp: m.timestamp as number | undefined,
      is_historical: m.is_historical === true,
      is_null: m.is_null === true,
      field, raw: field ? m[field] : undefined, properties: props,
    };
  });
  return { timestamp: o.timestamp as number | undefined, seq: o.seq as number | undefined, metrics };
}

/**
 * A metric's value as the Sparkplug 3.0 datatype table reads it: integers of 32 bits or fewer from `int_value`
 * (signed ones from two's complement), 64-bit ones from `long_value`, and so on. Null when `is_null`.
 * Throws when the value sits in another field than the table names — the rule the tests check.
 */
export function tahuValue(m: TahuMetric): unknown {
  if (m.is_null) {
    if (m.field !== undefined) throw new Error(`${m.name}: is_null with a value in ${m.field}`);
    return null;
  }
  const want = expectedField(m.datatype);
  if (m.field !== want) throw new Error(`${m.name}: ${m.datatype} in ${m.field}, the spec says ${want}`);
  const v = m.raw as number;
  switch (m.datatype) {
    case 'Int8': return (v << 24) >> 24;
    case 'Int16': return (v << 16) >> 16;
    case 'Int32': return v | 0;
    default: return m.raw;
  }
}

/** The field the Sparkplug 3.0 datatype table ("Datatype Details") names for a datatype. */
export function expectedField(datatype: string | undefined): ValueField | undefined {
  switch (datatype) {
    case 'Int8': case 'Int16': case 'Int32': case 'UInt8': case 'UInt16': case 'UInt32': return 'int_value';
    case 'Int64': case 'UInt64': case 'DateTime': return 'long_value';
    case 'Float': return 'float_value';
    case 'Double': return 'double_value';
    case 'Boolean': return 'boolean_value';
    case 'String': case 'Text': case 'UUID': return 'string_value';
    case 'Bytes': case 'File': return 'bytes_value';
    default: return undefined;
  }
}
