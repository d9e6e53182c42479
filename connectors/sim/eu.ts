/**
 * UCUM (our configuration) → UNECE Recommendation 20 (OPC UA EngineeringUnits).
 *
 * OPC UA clients identify a unit by `EUInformation.unitId`, the UNECE common
 * code packed into an Int32 (Part 8 §5.6.3); the configuration speaks UCUM.
 * This table covers the units of the default site. A unit without a UNECE
 * code (counts of tablets or revolutions) gets unitId −1, which the
 * specification reserves for "no unit id available"; its displayName then
 * carries the UCUM code so a client can still compare it.
 */

export interface UnitEntry {
  /** UCUM code, as in config/site.yaml. */
  readonly ucum: string;
  /** UNECE Rec. 20 common code, or null when none applies. */
  readonly unece: string | null;
  readonly symbol: string;
  readonly name: string;
}

export const UNECE_NAMESPACE = 'http://www.opcfoundation.org/UA/units/un/cefact';

const TABLE: readonly UnitEntry[] = [
  { ucum: '1', unece: 'C62', symbol: '1', name: 'one (dimensionless)' },
  { ucum: '%', unece: 'P1', symbol: '%', name: 'percent' },
  { ucum: 'ms', unece: 'C26', symbol: 'ms', name: 'millisecond' },
  { ucum: 's', unece: 'SEC', symbol: 's', name: 'second' },
  { ucum: 'min', unece: 'MIN', symbol: 'min', name: 'minute' },
  { ucum: 'h', unece: 'HUR', symbol: 'h', name: 'hour' },
  { ucum: 'mm', unece: 'MMT', symbol: 'mm', name: 'millimetre' },
  { ucum: 'kN', unece: 'B47', symbol: 'kN', name: 'kilonewton' },
  { ucum: 'N', unece: 'NEW', symbol: 'N', name: 'newton' },
  { ucum: 'mg', unece: 'MGM', symbol: 'mg', name: 'milligram' },
  { ucum: 'g', unece: 'GRM', symbol: 'g', name: 'gram' },
  { ucum: 'kg', unece: 'KGM', symbol: 'kg', name: 'kilogram' },
  { ucum: 'Cel', unece: 'CEL', symbol: '°C', name: 'degree Celsius' },
  { ucum: 'm3/h', unece: 'MQH', symbol: 'm³/h', name: 'cubic metre per hour' },
  { ucum: 'MPa', unece: 'MPA', symbol: 'MPa', name: 'megapascal' },
  { ucum: '{rev}/min', unece: 'RPM', symbol: 'r/min', name: 'revolutions per minute' },
  { ucum: 'g/min', unece: null, symbol: 'g/min', name: 'gram per minute' },
  { ucum: '{rev}', unece: null, symbol: '{rev}', name: 'revolutions (count)' },
  { ucum: '{tbl}/h', unece: null, symbol: '{tbl}/h', name: 'tablets per hour' },
];

const BY_UCUM = new Map(TABLE.map((e) => [e.ucum, e]));

/** UNECE common code → Int32 unitId (Part 8: characters packed big-endian). */
export function commonCodeToUnitId(code: string): number {
  let id = 0;
  for (let i = 0; i < Math.min(4, code.length); i++) id = id * 256 + code.charCodeAt(i);
  return id;
}

/** The table entry of a UCUM code; units missing from the table get unitId −1 and their UCUM code as symbol. */
export function unitEntry(ucum: string): UnitEntry {
  return BY_UCUM.get(ucum) ?? { ucum, unece: null, symbol: ucum, name: ucum };
}

/** EUInformation fields (plain object, accepted by node-opcua) for a UCUM code. */
export function euInformation(ucum: string): { namespaceUri: string; unitId: number; displayName: { text: string }; description: { text: string } } {
  const e = unitEntry(ucum);
  return {
    namespaceUri: UNECE_NAMESPACE,
    unitId: e.unece ? commonCodeToUnitId(e.unece) : -1,
    displayName: { text: e.symbol },
    description: { text: e.name },
  };
}

/**
 * The UCUM code of an EUInformation read from a server: by unitId when it is
 * in the table, else by displayName (which is the UCUM code for units without
 * a UNECE code). Undefined when neither matches.
 */
export function ucumFromEu(eu: { unitId?: number; displayName?: { text?: string | null } | null }): string | undefined {
  if (eu.unitId !== undefined && eu.unitId !== -1) {
    for (const e of TABLE) if (e.unece && commonCodeToUnitId(e.unece) === eu.unitId) return e.ucum;
  }
  const text = eu.displayName?.text ?? undefined;
  if (text === undefined) return undefined;
  for (const e of TABLE) if (e.symbol === text || e.ucum === text) return e.ucum;
  return undefined;
}

export const UNIT_TABLE = TABLE;
