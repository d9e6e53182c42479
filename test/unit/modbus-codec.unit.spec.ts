import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { decode, encode, quantise, registerCount, type CodecSpec, type Endianness, type ModbusCodecType } from '../../connectors/modbus/codec.js';
import { codeOf } from '../helpers/codes.js';

const TYPES: ModbusCodecType[] = ['int16', 'uint16', 'int32', 'uint32', 'float32', 'float64'];
const ORDERS: Endianness[] = ['BE', 'LE'];
const INT: Record<string, [number, number]> = {
  int16: [-0x8000, 0x7fff],
  uint16: [0, 0xffff],
  int32: [-0x80000000, 0x7fffffff],
  uint32: [0, 0xffffffff],
};


function mustDecode(spec: CodecSpec, regs: number[]): number {
  const d = decode(spec, regs);
  if (!d.ok) throw new Error(`decode failed: ${d.status}`);
  return d.value;
}

describe('modbus codec: known vectors', () => {
  it('float32 123.456 in all four layouts', () => {
    expect(encode({ type: 'float32' }, 123.456)).toEqual([0x42f6, 0xe979]);
    expect(encode({ type: 'float32', word_order: 'LE' }, 123.456)).toEqual([0xe979, 0x42f6]);
    expect(encode({ type: 'float32', byte_order: 'LE' }, 123.456)).toEqual([0xf642, 0x79e9]);
    expect(encode({ type: 'float32', byte_order: 'LE', word_order: 'LE' }, 123.456)).toEqual([0x79e9, 0xf642]);
    expect(mustDecode({ type: 'float32' }, [0x42f6, 0xe979])).toBeCloseTo(123.456, 4);
  });

  it('agrees with Buffer.writeFloatBE / writeDoubleBE / writeInt32BE', () => {
    for (const v of [0, -1.5, 3.14159, 1e-20, -6.02e23, 65504.25]) {
      const b = Buffer.alloc(4);
      b.writeFloatBE(v);
      expect(encode({ type: 'float32' }, v)).toEqual([b.readUInt16BE(0), b.readUInt16BE(2)]);
      const d = Buffer.alloc(8);
      d.writeDoubleBE(v);
      expect(encode({ type: 'float64' }, v)).toEqual([d.readUInt16BE(0), d.readUInt16BE(2), d.readUInt16BE(4), d.readUInt16BE(6)]);
      expect(encode({ type: 'float64', word_order: 'LE' }, v)).toEqual([d.readUInt16BE(6), d.readUInt16BE(4), d.readUInt16BE(2), d.readUInt16BE(0)]);
    }
    for (const v of [-2, 0x12345678, -0x80000000]) {
      const b = Buffer.alloc(4);
      b.writeInt32BE(v);
      expect(encode({ type: 'int32' }, v)).toEqual([b.readUInt16BE(0), b.readUInt16BE(2)]);
    }
  });

  it('integers, word order and scale', () => {
    expect(encode({ type: 'int16' }, -1)).toEqual([0xffff]);
    expect(encode({ type: 'uint32', word_order: 'LE' }, 0x12345678)).toEqual([0x5678, 0x1234]);
    expect(encode({ type: 'uint16', byte_order: 'LE' }, 0x1234)).toEqual([0x3412]);
    expect(encode({ type: 'float64' }, 1)).toEqual([0x3ff0, 0, 0, 0]);
    // fluidbed ProductTemp: int16, scale 0.1
    expect(encode({ type: 'int16', scale: 0.1 }, 23.4)).toEqual([234]);
    expect(mustDecode({ type: 'int16', scale: 0.1 }, [234])).toBe(23.4);
    expect(mustDecode({ type: 'int16', scale: 0.1 }, [0xfff6])).toBe(-1);
    expect(mustDecode({ type: 'uint16', scale: 2, offset: -10 }, [5])).toBe(0);
    expect(quantise({ type: 'int16', scale: 0.5 }, 1.3)).toBe(1.5);
    expect(registerCount('float64')).toBe(4);
  });
});

describe('modbus codec: refusals and bad register content', () => {
  it('refuses non-finite and non-numbers with LK_VALUE_INVALID', () => {
    for (const t of TYPES) {
      expect(codeOf(() => encode({ type: t }, Number.NaN))).toBe('LK_VALUE_INVALID');
      expect(codeOf(() => encode({ type: t }, Number.POSITIVE_INFINITY))).toBe('LK_VALUE_INVALID');
      expect(codeOf(() => encode({ type: t }, '12'))).toBe('LK_VALUE_INVALID');
      expect(codeOf(() => encode({ type: t }, null))).toBe('LK_VALUE_INVALID');
    }
  });

  it('refuses values that do not fit the register type with LK_CODEC', () => {
    expect(codeOf(() => encode({ type: 'int16' }, 40000))).toBe('LK_CODEC');
    expect(codeOf(() => encode({ type: 'int16', scale: 0.1 }, 3276.8))).toBe('LK_CODEC');
    expect(codeOf(() => encode({ type: 'uint16' }, -1))).toBe('LK_CODEC');
    expect(codeOf(() => encode({ type: 'uint32' }, 2 ** 32))).toBe('LK_CODEC');
    expect(codeOf(() => encode({ type: 'int32' }, -(2 ** 31) - 1))).toBe('LK_CODEC');
    expect(codeOf(() => encode({ type: 'float32' }, 1e39))).toBe('LK_CODEC');
    expect(codeOf(() => encode({ type: 'float64', scale: 1e-300 }, 1e300))).toBe('LK_CODEC');
    // the edges themselves are fine
    expect(encode({ type: 'int16' }, 32767)).toEqual([0x7fff]);
    expect(encode({ type: 'uint32' }, 2 ** 32 - 1)).toEqual([0xffff, 0xffff]);
  });

  it('decodes NaN / Infinity register content as not-ok, never as a number', () => {
    expect(decode({ type: 'float32' }, [0x7fc0, 0])).toEqual({ ok: false, status: 'LK_VALUE_INVALID' });
    expect(decode({ type: 'float32' }, [0x7f80, 0])).toEqual({ ok: false, status: 'LK_VALUE_INVALID' });
    expect(decode({ type: 'float32', word_order: 'LE' }, [0, 0xff80])).toEqual({ ok: false, status: 'LK_VALUE_INVALID' });
    expect(decode({ type: 'float64' }, [0x7ff8, 0, 0, 1])).toEqual({ ok: false, status: 'LK_VALUE_INVALID' });
    // finite raw, but scale pushes it past double range
    expect(decode({ type: 'float64', scale: 1e300 }, [0x7fef, 0xffff, 0xffff, 0xffff]).ok).toBe(false);
    expect(codeOf(() => decode({ type: 'float32' }, [1]))).toBe('LK_CODEC');
  });
});

const layout = fc.record({ byte_order: fc.constantFrom(...ORDERS), word_order: fc.constantFrom(...ORDERS) });
const scaleArb = fc.oneof(fc.constant(1), fc.constantFrom(0.1, 0.01, 2, -0.5), fc.double({ min: 1e-4, max: 1e4, noNaN: true }));
const offsetArb = fc.oneof(fc.constant(0), fc.double({ min: -1e4, max: 1e4, noNaN: true }));

describe('modbus codec: property round trips', () => {
  for (const type of ['int16', 'uint16', 'int32', 'uint32'] as const) {
    it(`${type}: decode(encode(x)) is x within half a scale step`, () => {
      const [lo, hi] = INT[type]!;
      fc.assert(
        fc.property(layout, scaleArb, offsetArb, fc.integer({ min: lo + 1, max: hi - 1 }), fc.double({ min: -0.49, max: 0.49, noNaN: true }), (lay, scale, offset, raw, frac) => {
          const spec: CodecSpec = { type, ...lay, scale, offset };
          const x = (raw + frac) * scale + offset;
          const back = mustDecode(spec, encode(spec, x));
          const tol = Math.abs(scale) / 2 + (Math.abs(x) + Math.abs(offset)) * 1e-12;
          expect(Math.abs(back - x)).toBeLessThanOrEqual(tol);
        }),
        { numRuns: 300 },
      );
    });
  }

  it('float32: decode(encode(x)) is x within float32 precision', () => {
    fc.assert(
      fc.property(layout, scaleArb, offsetArb, fc.double({ min: -1e6, max: 1e6, noNaN: true }), (lay, scale, offset, x) => {
        const spec: CodecSpec = { type: 'float32', ...lay, scale, offset };
        const back = mustDecode(spec, encode(spec, x));
        const tol = Math.abs(x - offset) * 2 ** -23 + Math.abs(offset) * 1e-12 + Math.abs(scale) * 1e-38;
        expect(Math.abs(back - x)).toBeLessThanOrEqual(tol);
      }),
      { numRuns: 500 },
    );
  });

  it('float64: decode(encode(x)) is x within a few ulp', () => {
    fc.assert(
      fc.property(layout, scaleArb, offsetArb, fc.double({ min: -1e12, max: 1e12, noNaN: true }), (lay, scale, offset, x) => {
        const spec: CodecSpec = { type: 'float64', ...lay, scale, offset };
        const back = mustDecode(spec, encode(spec, x));
        expect(Math.abs(back - x)).toBeLessThanOrEqual((Math.abs(x) + Math.abs(offset)) * 1e-15 + 1e-300);
      }),
      { numRuns: 500 },
    );
  });

  it('the register layout is a bijection: encode(decode(regs)) = regs for every type and order', () => {
    for (const type of TYPES) {
      fc.assert(
        fc.property(layout, fc.array(fc.integer({ min: 0, max: 0xffff }), { minLength: registerCount(type), maxLength: registerCount(type) }), (lay, regs) => {
          const spec: CodecSpec = { type, ...lay };
          const d = decode(spec, regs);
          if (!d.ok) {
            // only NaN/Infinity float payloads may fail
            expect(type.startsWith('float')).toBe(true);
            return;
          }
          expect(encode(spec, d.value)).toEqual(regs);
        }),
        { numRuns: 200 },
      );
    }
  });
});
