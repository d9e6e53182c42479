/**
 * Engineering units between linekeeper (UCUM codes, as in config/site.yaml)
 * and OPC UA (EUInformation of AnalogItems: a UNECE Recommendation 20 common
 * code packed into `unitId`, plus a display name and a description).
 *
 * Shared by the OPC UA connector (which checks the server's EngineeringUnits
 * against the configuration on every connect) and the plant simulator
 * (connectors/sim builds its EUInformation with {@link euInformationFor}), so
 * both sides speak from one table. Add a row here when a new unit appears in
 * the configuration; a UCUM code without a row still works, with unitId −1
 * (OPC UA Part 8: "no unit id") and the UCUM code as its display name.
 *
 * A vendor's own label (`kp`, `Tabl./h`) is understood through the site's
 * `unit_aliases` ({@link conversionFor}).
 *
 * Pure data and functions: no I/O.
 */
import { linearConversion } from '../../src/domain/units.js';

/** UNECE namespace of EUInformation.namespaceUri (OPC UA Part 8, 5.6.3). */
export const UNECE_NAMESPACE_URI = 'http://www.opcfoundation.org/UA/units/un/cefact';

export interface UnitRow {
  /** UCUM code, as written in the site configuration. */
  readonly ucum: string;
  /** UNECE Rec. 20 common code; undefined when the unit has none (e.g. annotations such as `{tbl}/h`). */
  readonly unece?: string;
  /** Symbol an OPC UA server typically shows as EUInformation.displayName. */
  readonly symbol: string;
  readonly description: string;
}

/**
 * The units of the default site. UNECE codes from Recommendation 20 (the same
 * codes node-opcua's `standardUnits` uses where it has them).
 */
export const UNIT_TABLE: readonly UnitRow[] = [
  { ucum: 'mm', unece: 'MMT', symbol: 'mm', description: 'millimetre' },
  { ucum: 'nm', unece: 'C45', symbol: 'nm', description: 'nanometre' },
  { ucum: 'kN', unece: 'B47', symbol: 'kN', description: 'kilonewton' },
  { ucum: 'N', unece: 'NEW', symbol: 'N', description: 'newton' },
  { ucum: 'mg', unece: 'MGM', symbol: 'mg', description: 'milligram' },
  { ucum: 'g', unece: 'GRM', symbol: 'g', description: 'gram' },
  { ucum: 'kg', unece: 'KGM', symbol: 'kg', description: 'kilogram' },
  { ucum: '%', unece: 'P1', symbol: '%', description: 'percent' },
  { ucum: '{rev}/min', unece: 'RPM', symbol: 'r/min', description: 'revolutions per minute' },
  { ucum: 'ms', unece: 'C26', symbol: 'ms', description: 'millisecond' },
  { ucum: 's', unece: 'SEC', symbol: 's', description: 'second' },
  { ucum: 'min', unece: 'MIN', symbol: 'min', description: 'minute' },
  { ucum: 'h', unece: 'HUR', symbol: 'h', description: 'hour' },
  { ucum: 'Cel', unece: 'CEL', symbol: '°C', description: 'degree Celsius' },
  { ucum: 'K', unece: 'KEL', symbol: 'K', description: 'kelvin' },
  { ucum: 'm3/h', unece: 'MQH', symbol: 'm³/h', description: 'cubic metre per hour' },
  { ucum: 'kPa', unece: 'KPA', symbol: 'kPa', description: 'kilopascal' },
  { ucum: 'MPa', unece: 'MPA', symbol: 'MPa', description: 'megapascal' },
  { ucum: '1', unece: 'C62', symbol: '1', description: 'one (dimensionless)' },
  { ucum: 'kW', unece: 'KWT', symbol: 'kW', description: 'kilowatt' },
  { ucum: 'kW.h', unece: 'KWH', symbol: 'kW·h', description: 'kilowatt hour' },
  // No UNECE common code that we can vouch for: matched by display name (the UCUM code itself).
  { ucum: 'g/min', symbol: 'g/min', description: 'gram per minute' },
  { ucum: '{tbl}/h', symbol: '{tbl}/h', description: 'tablets per hour' },
  { ucum: '{rev}', symbol: '{rev}', description: 'revolutions' },
];

const byUcum = new Map(UNIT_TABLE.map((r) => [r.ucum, r]));
const byUnitId = new Map(UNIT_TABLE.filter((r) => r.unece).map((r) => [unitIdOf(r.unece!), r]));

/** UNECE common code → EUInformation.unitId (OPC UA Part 8: the code's ASCII bytes, big-endian, up to 4). */
export function unitIdOf(commonCode: string): number {
  let id = 0;
  for (let i = 0; i < Math.min(4, commonCode.length); i++) id = id * 256 + commonCode.charCodeAt(i);
  return id;
}

/** Plain EUInformation fields for a UCUM code (build a node-opcua `EUInformation` from it). */
export interface EuFields {
  namespaceUri: string;
  unitId: number;
  displayName: { text: string };
  description: { text: string };
}

/** EUInformation fields an OPC UA server should publish for the UCUM `unit` (the simulator uses this). */
export function euInformationFor(unit: string): EuFields {
  const row = byUcum.get(unit);
  return {
    namespaceUri: UNECE_NAMESPACE_URI,
    unitId: row?.unece ? unitIdOf(row.unece) : -1,
    // The UCUM code as display name makes the unit unambiguous for any client that reads it as text.
    displayName: { text: unit },
    description: { text: row?.description ?? unit },
  };
}

/** What a server reported, reduced to what the comparison needs. */
export interface ReportedUnit {
  readonly unitId?: number | null;
  readonly displayName?: string | null;
  readonly description?: string | null;
}

/**
 * The UCUM code a server's EUInformation stands for, or undefined when it
 * names no unit we know. unitId wins (it is the standard's identity); the
 * display name is the fallback (a UCUM code, or a known symbol like `°C`).
 */
export function ucumOf(eu: ReportedUnit): string | undefined {
  if (typeof eu.unitId === 'number' && eu.unitId > 0) {
    const row = byUnitId.get(eu.unitId);
    if (row) return row.ucum;
  }
  const text = eu.displayName?.trim();
  if (!text) return undefined;
  if (byUcum.has(text)) return text;
  return UNIT_TABLE.find((r) => r.symbol === text)?.ucum;
}

/**
 * True when the server's EUInformation denotes the configured UCUM unit.
 * An EUInformation we cannot interpret does not match: a unit that cannot be
 * verified is treated as wrong, because a setpoint in the wrong unit is a
 * quality defect, not a cosmetic one.
 */
export function unitMatches(eu: ReportedUnit, configured: string): boolean {
  const ucum = ucumOf(eu);
  if (ucum !== undefined) return ucum === configured;
  return (eu.displayName?.trim() ?? '') === configured;
}

/** Human-readable form of a reported unit for error messages. */
export function describeReportedUnit(eu: ReportedUnit): string {
  const code = typeof eu.unitId === 'number' && eu.unitId > 0 ? codeOf(eu.unitId) : undefined;
  return `${eu.displayName ?? '?'}${code ? ` (UNECE ${code})` : ''}`;
}

function codeOf(unitId: number): string {
  let s = '';
  for (let v = unitId; v > 0; v = Math.floor(v / 256)) s = String.fromCharCode(v % 256) + s;
  return s;
}

/** A vendor label's meaning: value in `unit` (UCUM) = value in the label × factor + offset. */
export interface UnitAlias {
  readonly unit: string;
  readonly factor: number;
  readonly offset: number;
}

/** y = a·x + b. */
export interface Linear {
  readonly a: number;
  readonly b: number;
}

export const IDENTITY: Linear = { a: 1, b: 0 };

/**
 * How a value in the server's EngineeringUnits becomes a value in the
 * configured UCUM unit: identity when the server reports no unit or the
 * configured one; through the alias of its display name (and a UCUM
 * conversion from the alias's unit to the configured one, e.g. kp → N → kN)
 * otherwise. Undefined when nothing maps the two: the tag's unit is wrong.
 */
export function conversionFor(eu: ReportedUnit | undefined, configured: string, aliases: Readonly<Record<string, UnitAlias>>): Linear | undefined {
  if (!eu || unitMatches(eu, configured)) return IDENTITY;
  const label = eu.displayName?.trim() ?? '';
  const alias = Object.prototype.hasOwnProperty.call(aliases, label) ? aliases[label] : undefined;
  if (!alias) return undefined;
  const c = linearConversion(alias.unit, configured);
  if (!c) return undefined;
  return { a: c.a * alias.factor, b: c.a * alias.offset + c.b };
}
