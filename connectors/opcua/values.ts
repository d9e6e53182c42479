/**
 * OPC UA values in and out: DataValue → Sample (bad values surface as bad
 * quality with value null, never as numbers) and number → Variant of the
 * node's exact DataType (so the server never answers BadTypeMismatch).
 * Array tags (DoubleArray, FloatArray, Int16Array…) arrive as frozen
 * `number[]`, ByteString tags as a copied `Uint8Array` (see TagValue); they are
 * read-only, never encoded for a write. Numbers come in engineering units: the
 * tag's scale/offset and unit alias compiled into one `a·raw + b` by the
 * connector; an enumerated tag reads as the name of its value.
 */
import { DataType, StatusCodes, VariantArrayType, type DataValue, type NodeId } from 'node-opcua-client';
import { LkError } from '../../src/errors.js';
import type { Quality, Sample, TagValue } from '../types.js';
import type { OpcUaTag } from './tags.js';
import { IDENTITY, type Linear } from './units.js';

/** Status of a value that arrived Good but is NaN or ±Infinity. */
export const STATUS_NOT_FINITE = 'LK_VALUE_INVALID';
/** Status of a value that arrived Good but is not of the configured type (e.g. a string for a Double tag, a scalar for a DoubleArray tag). */
export const STATUS_TYPE_MISMATCH = 'BadTypeMismatch';
/** Status of a ByteString that arrived Good but null (no frame yet). */
export const STATUS_NO_DATA = 'BadNoData';
/** Status of an enumerated tag whose value has no name in the configuration. */
export const STATUS_NO_NAME = 'BadOutOfRange';

/** OPC UA status code → our quality. Severity bits 31..30: 00 good, 01 uncertain, 1x bad. */
export function qualityOf(statusValue: number): Quality {
  const severity = statusValue >>> 30;
  if (severity === 0) return 'good';
  if (severity === 1) return 'uncertain';
  return 'bad';
}

/** Convert one DataValue of `tag` into a Sample; `receivedAt` is our clock's reading; numbers go through `conv` (raw → engineering). */
export function toSample(tag: OpcUaTag, dv: DataValue, receivedAt: number, conv: Linear = IDENTITY): Sample {
  // Object literals, not spreads: this runs for every value of every read and notification.
  const sourceTime = dv.sourceTimestamp ? dv.sourceTimestamp.getTime() : receivedAt;
  const sc = dv.statusCode ?? StatusCodes.Good;
  const quality = qualityOf(sc.value);
  if (quality !== 'good') return { tag: tag.id, value: null, quality, status: sc.name, unit: tag.unit, sourceTime, receivedAt };
  const checked = checkValue(tag, dv, conv);
  if (typeof checked === 'string') return { tag: tag.id, value: null, quality: 'bad', status: checked, unit: tag.unit, sourceTime, receivedAt };
  return { tag: tag.id, value: checked.value, quality: 'good', status: 'Good', unit: tag.unit, sourceTime, receivedAt };
}

/** A bad sample for a tag whose value could not be obtained at all (no session, timeout, unit mismatch). */
export function badSample(tag: OpcUaTag, status: string, at: number): Sample {
  return { tag: tag.id, value: null, quality: 'bad', status, unit: tag.unit, sourceTime: at, receivedAt: at };
}

function checkValue(tag: OpcUaTag, dv: DataValue, conv: Linear): { value: TagValue } | string {
  const v = dv.value;
  if (!v || v.dataType === DataType.Null) return STATUS_TYPE_MISMATCH;
  const raw: unknown = v.value;
  if (tag.element !== undefined) {
    if (v.arrayType !== VariantArrayType.Array || !(tag.element === 'Double' || tag.element === 'Float' ? FLOAT_TYPES : INTEGER_TYPES).has(v.dataType)) return STATUS_TYPE_MISMATCH;
    return numberArray(raw, conv, tag.element !== 'Double' && tag.element !== 'Float');
  }
  if (v.arrayType !== VariantArrayType.Scalar) return STATUS_TYPE_MISMATCH;
  switch (tag.configType) {
    case 'Boolean':
      return typeof raw === 'boolean' ? { value: raw } : STATUS_TYPE_MISMATCH;
    case 'String':
      return typeof raw === 'string' ? { value: raw } : STATUS_TYPE_MISMATCH;
    case 'ByteString':
      if (v.dataType !== DataType.ByteString) return STATUS_TYPE_MISMATCH;
      if (raw === null || raw === undefined) return STATUS_NO_DATA;
      // a copy: node-opcua may hand out a view into its receive buffer
      return raw instanceof Uint8Array ? { value: new Uint8Array(raw) } : STATUS_TYPE_MISMATCH;
    default: {
      if (typeof raw !== 'number' || !NUMBER_TYPES.has(v.dataType)) return STATUS_TYPE_MISMATCH;
      if (!Number.isFinite(raw)) return STATUS_NOT_FINITE;
      if (tag.enumNames) {
        const name = tag.enumNames.get(raw);
        return name === undefined ? STATUS_NO_NAME : { value: name };
      }
      const value = engineering(raw, conv, INTEGER_TYPES.has(v.dataType));
      return Number.isFinite(value) ? { value } : STATUS_NOT_FINITE;
    }
  }
}

/**
 * a·raw + b. From an integer, 15 significant digits (an Int32 has 10) so that
 * 123 × 0.1 is 12.3 and not 12.300000000000001; floats keep every digit.
 */
export function engineering(raw: number, conv: Linear, integer: boolean): number {
  if (conv.a === 1 && conv.b === 0) return raw;
  const v = conv.a * raw + conv.b;
  return integer ? Number(v.toPrecision(15)) : v;
}

/** A number array as a frozen plain array in engineering units; one NaN/Infinity makes the whole sample bad (a spectrum with a hole is not a spectrum). */
function numberArray(raw: unknown, conv: Linear, integer: boolean): { value: readonly number[] } | string {
  if (!((ArrayBuffer.isView(raw) && !(raw instanceof DataView)) || Array.isArray(raw))) return STATUS_TYPE_MISMATCH;
  const src = raw as unknown as ArrayLike<unknown>;
  const out = new Array<number>(src.length);
  for (let i = 0; i < src.length; i++) {
    const x = src[i];
    if (typeof x !== 'number') return STATUS_TYPE_MISMATCH;
    if (!Number.isFinite(x)) return STATUS_NOT_FINITE;
    out[i] = engineering(x, conv, integer);
  }
  return { value: Object.freeze(out) };
}

const FLOAT_TYPES = new Set<DataType>([DataType.Float, DataType.Double]);
const INTEGER_TYPES = new Set<DataType>([DataType.SByte, DataType.Byte, DataType.Int16, DataType.UInt16, DataType.Int32, DataType.UInt32]);

const NUMBER_TYPES = new Set<DataType>([
  DataType.SByte,
  DataType.Byte,
  DataType.Int16,
  DataType.UInt16,
  DataType.Int32,
  DataType.UInt32,
  DataType.Float,
  DataType.Double,
]);

const INTEGER_RANGE: Partial<Record<DataType, readonly [number, number]>> = {
  [DataType.SByte]: [-128, 127],
  [DataType.Byte]: [0, 255],
  [DataType.Int16]: [-32768, 32767],
  [DataType.UInt16]: [0, 65535],
  [DataType.Int32]: [-2147483648, 2147483647],
  [DataType.UInt32]: [0, 4294967295],
  [DataType.Int64]: [Number.MIN_SAFE_INTEGER, Number.MAX_SAFE_INTEGER],
  [DataType.UInt64]: [0, Number.MAX_SAFE_INTEGER],
};

const FLOAT_MAX = 3.4028234663852886e38;

/**
 * The built-in DataType of a node, from its DataType attribute (a NodeId in
 * namespace 0). Well-known subtypes map to their base type (Duration → Double,
 * UtcTime → DateTime, IntegerId/Counter → UInt32); anything else is undefined.
 */
export function builtInDataType(dataTypeId: NodeId | null | undefined): DataType | undefined {
  if (!dataTypeId || dataTypeId.namespace !== 0 || typeof dataTypeId.value !== 'number') return undefined;
  const n = dataTypeId.value;
  if (n >= 1 && n <= 25) return n as DataType;
  return SUBTYPES[n];
}

const SUBTYPES: Record<number, DataType> = { 290: DataType.Double, 294: DataType.DateTime, 288: DataType.UInt32, 289: DataType.UInt32 };

/**
 * Encode `value` for a node of `dataType`. Integers are rounded to the
 * nearest and range-checked, Float is rounded to single precision.
 * Throws LK_VALUE_INVALID for a non-finite or non-number value, a value the
 * type cannot hold, or a type a number cannot be written to (String, ...).
 * Nothing has been sent when it throws.
 */
export function encodeForWrite(tagId: string, value: unknown, dataType: DataType): { dataType: DataType; value: number | boolean | bigint | number[]; written: number } {
  if (typeof value !== 'number' || !Number.isFinite(value)) {
    throw new LkError('LK_VALUE_INVALID', `${tagId}: ${String(value)} is not a finite number`, { tag: tagId, value: String(value) });
  }
  const range = INTEGER_RANGE[dataType];
  if (range) {
    const r = Math.round(value);
    if (r < range[0] || r > range[1]) {
      throw new LkError('LK_VALUE_INVALID', `${tagId}: ${value} does not fit ${DataType[dataType]} [${range[0]}, ${range[1]}]`, {
        tag: tagId,
        value,
        dataType: DataType[dataType],
      });
    }
    // node-opcua encodes (U)Int64 as [high, low] 32-bit words.
    if (dataType === DataType.Int64 || dataType === DataType.UInt64) return { dataType, value: [Math.floor(r / 2 ** 32), r >>> 0], written: r };
    return { dataType, value: r, written: r };
  }
  switch (dataType) {
    case DataType.Double:
      return { dataType, value, written: value };
    case DataType.Float: {
      if (Math.abs(value) > FLOAT_MAX) throw new LkError('LK_VALUE_INVALID', `${tagId}: ${value} does not fit Float`, { tag: tagId, value, dataType: 'Float' });
      const f = Math.fround(value);
      return { dataType, value: f, written: f };
    }
    case DataType.Boolean:
      if (value !== 0 && value !== 1) throw new LkError('LK_VALUE_INVALID', `${tagId}: a Boolean setpoint takes 0 or 1, got ${value}`, { tag: tagId, value });
      return { dataType, value: value === 1, written: value };
    default:
      throw new LkError('LK_VALUE_INVALID', `${tagId}: a number cannot be written to a node of DataType ${DataType[dataType] ?? dataType}`, {
        tag: tagId,
        dataType: DataType[dataType] ?? String(dataType),
      });
  }
}

/** Numeric view of a read-back sample for comparison (booleans as 0/1). */
export function numericValue(v: TagValue | null): number | null {
  if (typeof v === 'number') return v;
  if (typeof v === 'boolean') return v ? 1 : 0;
  return null;
}

/**
 * Equality used by the data-age watchdog: numbers within the deadband,
 * arrays and byte strings element by element (each read yields a new array,
 * so identity would call every unchanged spectrum "changed" and the
 * watchdog would re-create the subscription), everything else exactly.
 */
export function sameValue(a: TagValue | null, b: TagValue | null, deadband: number): boolean {
  if (typeof a === 'number' && typeof b === 'number') return Math.abs(a - b) <= deadband;
  if (typeof a === 'object' && typeof b === 'object' && a !== null && b !== null) {
    if (a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
    return true;
  }
  return a === b;
}
