/**
 * Engineering units as UCUM codes (the standard of lab and health systems),
 * through @lhncbc/ucum-lhc. Validation and conversion here; hot paths compile
 * a conversion once (see {@link linearConversion}) instead of calling UCUM per value.
 */
import ucum from '@lhncbc/ucum-lhc';

type UcumUtils = {
  validateUnitString(unit: string, suggest?: boolean): { status: 'valid' | 'invalid' | 'error'; msg?: string[] };
  convertUnitTo(from: string, value: number, to: string): { status: 'succeeded' | 'failed' | 'error'; toVal: number | null; msg: string[] };
};

let utils: UcumUtils | undefined;
function ucumUtils(): UcumUtils {
  utils ??= (ucum as unknown as { UcumLhcUtils: { getInstance(): UcumUtils } }).UcumLhcUtils.getInstance();
  return utils;
}

/** True when `unit` is a valid UCUM code. */
export function isValidUnit(unit: string): boolean {
  return ucumUtils().validateUnitString(unit, false).status === 'valid';
}

/** Convert `value` from one UCUM unit to another; undefined when the units are incompatible or unknown. */
export function convertUnit(value: number, from: string, to: string): number | undefined {
  if (from === to) return value;
  const r = ucumUtils().convertUnitTo(from, value, to);
  return r.status === 'succeeded' && typeof r.toVal === 'number' ? r.toVal : undefined;
}

/**
 * Compile a conversion `from → to` into `y = a·x + b` (UCUM conversions between
 * commensurable units, including °F/°C/K, are affine). Undefined when incompatible.
 */
export function linearConversion(from: string, to: string): { a: number; b: number } | undefined {
  if (from === to) return { a: 1, b: 0 };
  const y0 = convertUnit(0, from, to);
  const y1 = convertUnit(1, from, to);
  if (y0 === undefined || y1 === undefined) return undefined;
  return { a: y1 - y0, b: y0 };
}
