/**
 * Register codec for Modbus: engineering value ⇄ 16-bit registers.
 *
 * Pure (no I/O). Multi-register types are laid out from the big-endian bytes
 * of the raw value ("ABCD"); `word_order: LE` reverses the registers ("CDAB"),
 * `byte_order: LE` swaps the two bytes inside each register ("BADC"); both LE
 * gives "DCBA". engineering = raw × scale + offset.
 */
import { LkError } from '../../src/errors.js';

export type ModbusCodecType = 'int16' | 'uint16' | 'int32' | 'uint32' | 'float32' | 'float64';
export type Endianness = 'BE' | 'LE';

/** The part of a tag's configuration the codec needs. */
export interface CodecSpec {
  readonly type: ModbusCodecType;
  readonly byte_order?: Endianness;
  readonly word_order?: Endianness;
  readonly scale?: number;
  readonly offset?: number;
}

/** A decoded register value: a finite number, or the reason it is not one (becomes a bad-quality sample). */
export type Decoded = { readonly ok: true; readonly value: number } | { readonly ok: false; readonly status: 'LK_VALUE_INVALID' | 'LK_CODEC' };

const WIDTH: Record<ModbusCodecType, number> = { int16: 1, uint16: 1, int32: 2, uint32: 2, float32: 2, float64: 4 };

const INT_RANGE: Partial<Record<ModbusCodecType, readonly [number, number]>> = {
  int16: [-0x8000, 0x7fff],
  uint16: [0, 0xffff],
  int32: [-0x80000000, 0x7fffffff],
  uint32: [0, 0xffffffff],
};

/** Number of 16-bit registers a value of `type` occupies. */
export function registerCount(type: ModbusCodecType): number {
  return WIDTH[type];
}

export function isIntegerType(type: ModbusCodecType): boolean {
  return INT_RANGE[type] !== undefined;
}

function writeRaw(type: ModbusCodecType, raw: number, buf: Buffer): void {
  switch (type) {
    case 'int16': buf.writeInt16BE(raw, 0); break;
    case 'uint16': buf.writeUInt16BE(raw, 0); break;
    case 'int32': buf.writeInt32BE(raw, 0); break;
    case 'uint32': buf.writeUInt32BE(raw, 0); break;
    case 'float32': buf.writeFloatBE(raw, 0); break;
    case 'float64': buf.writeDoubleBE(raw, 0); break;
  }
}

function readRaw(type: ModbusCodecType, buf: Buffer): number {
  switch (type) {
    case 'int16': return buf.readInt16BE(0);
    case 'uint16': return buf.readUInt16BE(0);
    case 'int32': return buf.readInt32BE(0);
    case 'uint32': return buf.readUInt32BE(0);
    case 'float32': return buf.readFloatBE(0);
    case 'float64': return buf.readDoubleBE(0);
  }
}

/** One-register types without a Buffer: the hot path of polling. */
function readRaw16(spec: CodecSpec, reg: number): number {
  const r = spec.byte_order === 'LE' ? ((reg & 0xff) << 8) | ((reg >> 8) & 0xff) : reg & 0xffff;
  return spec.type === 'int16' && r >= 0x8000 ? r - 0x10000 : r;
}

function toRegisters(buf: Buffer, spec: CodecSpec): number[] {
  const regs: number[] = [];
  for (let i = 0; i < buf.length; i += 2) {
    const hi = buf[i]!;
    const lo = buf[i + 1]!;
    regs.push(spec.byte_order === 'LE' ? (lo << 8) | hi : (hi << 8) | lo);
  }
  if (spec.word_order === 'LE') regs.reverse();
  return regs;
}

function fromRegisters(regs: readonly number[], spec: CodecSpec): Buffer {
  const ordered = spec.word_order === 'LE' ? [...regs].reverse() : regs;
  const buf = Buffer.alloc(ordered.length * 2);
  ordered.forEach((r, i) => {
    const hi = (r >> 8) & 0xff;
    const lo = r & 0xff;
    buf[2 * i] = spec.byte_order === 'LE' ? lo : hi;
    buf[2 * i + 1] = spec.byte_order === 'LE' ? hi : lo;
  });
  return buf;
}

/**
 * The raw register number for an engineering value (before layout).
 *
 * @throws LkError LK_VALUE_INVALID when `value` is not a finite number;
 *   LK_CODEC when the raw value does not fit the register type (integer out of
 *   range, float32 overflow).
 */
export function toRaw(spec: CodecSpec, value: unknown): number {
  if (typeof value !== 'number' || !Number.isFinite(value)) {
    throw new LkError('LK_VALUE_INVALID', `value must be a finite number, got ${typeof value === 'number' ? String(value) : typeof value}`, { value: String(value) });
  }
  const scale = spec.scale ?? 1;
  const offset = spec.offset ?? 0;
  let raw = (value - offset) / scale;
  const range = INT_RANGE[spec.type];
  if (range) {
    raw = Math.round(raw);
    // -0 must not leak into the buffer writers as a distinct value.
    if (raw === 0) raw = 0;
    if (!(raw >= range[0] && raw <= range[1])) {
      throw new LkError('LK_CODEC', `${value} does not fit ${spec.type} (raw ${raw}, range ${range[0]}..${range[1]})`, { value, type: spec.type });
    }
  } else if (spec.type === 'float32') {
    raw = Math.fround(raw);
  }
  if (!Number.isFinite(raw)) {
    throw new LkError('LK_CODEC', `${value} overflows ${spec.type}`, { value, type: spec.type });
  }
  return raw;
}

/**
 * Encode an engineering value into registers, in the tag's byte and word order.
 *
 * @throws LkError LK_VALUE_INVALID (NaN, Infinity, not a number) or LK_CODEC
 *   (not representable by the type) — before anything could be sent.
 */
export function encode(spec: CodecSpec, value: unknown): number[] {
  const raw = toRaw(spec, value);
  const buf = Buffer.alloc(WIDTH[spec.type] * 2);
  writeRaw(spec.type, raw, buf);
  return toRegisters(buf, spec);
}

function engineering(spec: CodecSpec, raw: number): number {
  const scale = spec.scale ?? 1;
  const offset = spec.offset ?? 0;
  if (scale === 1 && offset === 0) return raw;
  const v = raw * scale + offset;
  // An integer register holds at most ~10 significant digits, so 15 keeps the
  // value exact while removing binary noise such as 12.300000000000001.
  return isIntegerType(spec.type) ? Number(v.toPrecision(15)) : v;
}

/**
 * Decode registers (as read, in wire order) into an engineering value. Never
 * throws for register content: NaN/Infinity floats, or a scaled value that is
 * not finite, come back as `{ ok: false }` so the caller reports bad quality
 * instead of a made-up number.
 *
 * @throws LkError LK_CODEC only for a programming error: the wrong number of registers.
 */
export function decode(spec: CodecSpec, registers: readonly number[]): Decoded {
  if (registers.length !== WIDTH[spec.type]) {
    throw new LkError('LK_CODEC', `${spec.type} needs ${WIDTH[spec.type]} registers, got ${registers.length}`);
  }
  const raw = registers.length === 1 ? readRaw16(spec, registers[0]!) : readRaw(spec.type, fromRegisters(registers, spec));
  if (!Number.isFinite(raw)) return { ok: false, status: 'LK_VALUE_INVALID' };
  const value = engineering(spec, raw);
  if (!Number.isFinite(value)) return { ok: false, status: 'LK_VALUE_INVALID' };
  return { ok: true, value };
}

/**
 * The engineering value the equipment will actually hold after writing
 * `value`: rounding to the integer raw, or to float32, is visible to the caller.
 *
 * @throws LkError as {@link encode}.
 */
export function quantise(spec: CodecSpec, value: unknown): number {
  const d = decode(spec, encode(spec, value));
  if (!d.ok) throw new LkError('LK_CODEC', `${String(value)} is not representable as ${spec.type}`);
  return d.value;
}
