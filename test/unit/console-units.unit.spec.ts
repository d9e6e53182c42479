/**
 * The console's units (console/units.js): every UCUM code the product's roles and the shipped site's tags use is
 * in its table (so a new unit is not shown as a raw code), written as people write it, at a sensible precision.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ROLES } from '../../src/domain/roles.js';
// @ts-expect-error a browser ES module of the console (plain JavaScript, no types)
import { numberIn, quantity, unitLabel, UNITS } from '../../console/units.js';

const siteUnits = [...readFileSync(new URL('../../config/site.yaml', import.meta.url), 'utf8').matchAll(/unit: "([^"]*)"/g)].map((m) => m[1]!);

describe('console units', () => {
  it('knows every unit of the roles and of the shipped site', () => {
    const codes = new Set([...Object.values(ROLES).map((r) => r.unit), ...siteUnits]);
    expect(codes.size).toBeGreaterThan(10);
    expect([...codes].filter((c) => !Object.hasOwn(UNITS, c))).toEqual([]);
  });

  it('writes units as people do, readings at their precision', () => {
    expect([unitLabel('Cel'), unitLabel('m3/h'), unitLabel('{rev}/min'), unitLabel('{tbl}/h'), unitLabel('1'), unitLabel('{widget}/s')]).toEqual(['°C', 'm³/h', 'rpm', 'tablets/h', '', 'widget/s']);
    expect(quantity(59.80123, 'Cel')).toBe('59.8 °C');
    expect(quantity(1234.56, 'm3/h')).toBe('1235 m³/h');
    expect(quantity(0.016966, '{rev}/min')).toBe('0.017 rpm');
    expect(quantity(293.974, 'mg')).toBe('294.0 mg');
    expect(quantity(-0.001, 'Cel')).toBe('-0.001 °C');
    expect(numberIn(-0.04, 'Cel')).toBe('-0.04');
    expect(numberIn(0, 'Cel')).toBe('0.0');
    expect(quantity(true, '1')).toBe('true');
    expect(quantity(1.234567, 'x/y')).toBe('1.2346 x/y');
    expect(quantity('COMPRESS', '1')).toBe('COMPRESS');
  });
});
