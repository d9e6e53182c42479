import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load.js';
import { buildRegisterMap, decodeValue, encodeValue, registerMapMarkdown } from '../../connectors/sim/index.js';
import { commonCodeToUnitId, euInformation, ucumFromEu } from '../../connectors/sim/eu.js';

const config = loadConfig().config;
const codec = (type: 'int16' | 'uint16' | 'int32' | 'uint32' | 'float32' | 'float64', extra: Partial<{ scale: number; offset: number; word_order: 'BE' | 'LE'; byte_order: 'BE' | 'LE' }> = {}) => ({
  type,
  scale: 1,
  offset: 0,
  word_order: 'BE' as const,
  byte_order: 'BE' as const,
  ...extra,
});

describe('Modbus register map', () => {
  it('REGISTER_MAP.md is what the configuration generates', () => {
    const file = fileURLToPath(new URL('../../connectors/sim/REGISTER_MAP.md', import.meta.url));
    expect(readFileSync(file, 'utf8')).toBe(registerMapMarkdown(config));
  });

  it('maps every configured register of both units, nothing else', () => {
    const map = buildRegisterMap(config.equipment);
    expect([...map.keys()].sort()).toEqual([1, 2]);
    const fb = map.get(2)!;
    expect(fb.input.get(2)?.tag.name).toBe('ProductTemp');
    expect(fb.input.get(3)?.tag.name).toBe('Lod');
    expect(fb.input.get(4)).toEqual({ tag: fb.input.get(3)!.tag, word: 1 });
    expect(fb.holding.get(5)).toBeUndefined();
    expect(fb.holdingEnd).toBe(104);
  });

  it('encodes known vectors: float32 BE and LE word order, int16 with scale', () => {
    expect(encodeValue(1, codec('float32'))).toEqual([0x3f80, 0x0000]);
    expect(encodeValue(1, codec('float32', { word_order: 'LE' }))).toEqual([0x0000, 0x3f80]);
    expect(encodeValue(1, codec('float32', { byte_order: 'LE' }))).toEqual([0x803f, 0x0000]);
    expect(encodeValue(-12.3, codec('int16', { scale: 0.1 }))).toEqual([0x10000 - 123]);
    expect(encodeValue(70000, codec('uint32'))).toEqual([1, 70000 - 65536]);
    expect(encodeValue(1e9, codec('int16'))).toEqual([0x7fff]); // saturates like a PLC register
    expect(() => encodeValue(Number.NaN, codec('float32'))).toThrow(expect.objectContaining({ code: 'LK_CODEC' }));
    expect(() => decodeValue([1], codec('float32'))).toThrow(expect.objectContaining({ code: 'LK_CODEC' }));
  });

  it('round-trips any value through every type and order', () => {
    fc.assert(
      fc.property(
        fc.constantFrom('int16', 'uint16', 'int32', 'uint32', 'float32', 'float64' as const),
        fc.constantFrom('BE' as const, 'LE' as const),
        fc.constantFrom('BE' as const, 'LE' as const),
        fc.double({ min: -30000, max: 30000, noNaN: true }),
        (type, wo, bo, v) => {
          const c = codec(type as 'int16', { word_order: wo, byte_order: bo });
          const lo = type.startsWith('uint') ? 0 : -30000;
          const value = Math.max(v, lo);
          const back = decodeValue(encodeValue(value, c), c);
          const tol = type.startsWith('float32') ? Math.abs(value) * 1e-6 + 1e-6 : type === 'float64' ? 0 : 0.5;
          expect(Math.abs(back - value)).toBeLessThanOrEqual(tol);
        },
      ),
    );
  });
});

describe('engineering units', () => {
  it('maps UCUM codes to UNECE unit ids and back', () => {
    expect(euInformation('Cel').unitId).toBe(commonCodeToUnitId('CEL'));
    expect(commonCodeToUnitId('CEL')).toBe(4408652);
    expect(euInformation('kN').displayName.text).toBe('kN');
    expect(euInformation('{tbl}/h').unitId).toBe(-1);
    for (const e of config.equipment) for (const t of e.tags) expect(ucumFromEu(euInformation(t.unit))).toBe(t.unit);
  });
});
