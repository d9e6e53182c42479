/**
 * What `linekeeper discover opcua` found, as tags of the site configuration
 * (src/config/schema.ts OpcUaTag): node ids in the form the configuration
 * documents (relative to the connection's namespace_uri, `nsu=` for other
 * namespaces, never a namespace index, which a server may renumber), the
 * DataType mapped to `data_type`, a suggested kind from the access level,
 * EngineeringUnits as UCUM, EURange as `range`. What the configuration cannot
 * take is kept as a comment with the reason, never dropped.
 *
 * Pure: a browse result in, tag groups out.
 */
import { DataType, type NodeId } from 'node-opcua-client';
import { NodeIdType } from 'node-opcua-nodeid';
import { isValidUnit } from '../../src/domain/units.js';
import type { OpcUaTagConfig } from '../../src/config/schema.js';
import type { BrowseResult, DiscoveredVariable } from './browse.js';
import { describeReportedUnit, ucumOf } from './units.js';

/** One discovered variable: a tag for the configuration, or only comments when it cannot be one. */
export interface TagEntry {
  readonly tag?: OpcUaTagConfig;
  /** Browse path from the start node, `Setpoints/FillDepth`. */
  readonly path: string;
  /** Points a person must check (a unit without UCUM mapping, a guessed kind), or why it is not a tag. */
  readonly notes: readonly string[];
}

export interface TagGroup {
  /** Suggested equipment id (lower-case, dashes). */
  readonly key: string;
  readonly title: string;
  readonly entries: readonly TagEntry[];
}

export interface MappedDiscovery {
  /** The namespace the relative node ids are in: the connection's namespace_uri. */
  readonly namespaceUri: string | undefined;
  readonly groups: readonly TagGroup[];
  readonly tags: number;
  readonly commented: number;
}

/** The six tags of linekeeper's PLC watchdog: a server that has them gets kind supervisor for them. */
const SUPERVISOR = new Set(['Heartbeat', 'WatchdogTimeoutMs', 'SupervisorState', 'ActiveRecipe', 'LkgRecipeId', 'RevertCount']);
const SCALAR_TYPES: ReadonlyMap<DataType, OpcUaTagConfig['data_type']> = new Map([
  [DataType.Boolean, 'Boolean'],
  [DataType.Int16, 'Int16'],
  [DataType.UInt16, 'UInt16'],
  [DataType.Int32, 'Int32'],
  [DataType.UInt32, 'UInt32'],
  [DataType.Float, 'Float'],
  [DataType.Double, 'Double'],
  [DataType.String, 'String'],
  [DataType.ByteString, 'ByteString'],
]);
const NUMERIC: ReadonlySet<string> = new Set(['Boolean', 'Int16', 'UInt16', 'Int32', 'UInt32', 'Float', 'Double']);
const OBJECTS_FOLDER = 85;

/**
 * The node id as the configuration writes it: `s=…`/`g=…`/`b=…` in the connection's namespace; `nsu=<uri>;…`
 * in another namespace and for numeric ids (a relative `i=N` would be read in namespace 0); `i=N` in namespace 0.
 */
export function configNodeId(id: NodeId, namespaces: readonly string[], connectionUri: string | undefined): string {
  const full = id.toString();
  const ident = full.replace(/^ns=\d+;/, '');
  if (id.namespace === 0) return id.identifierType === NodeIdType.NUMERIC ? ident : `ns=0;${ident}`;
  const uri = namespaces[id.namespace];
  if (uri === undefined) return full;
  if (uri === connectionUri && id.identifierType !== NodeIdType.NUMERIC) return ident;
  return `nsu=${uri};${ident}`;
}

/** A browse name as a configuration tag name (PascalCase letters and digits). */
export function tagNameOf(browseName: string): string {
  const parts = browseName.split(/[^A-Za-z0-9]+/).filter(Boolean);
  const name = parts.map((p) => p[0]!.toUpperCase() + p.slice(1)).join('');
  if (name === '') return 'Tag';
  return /^[0-9]/.test(name) ? `Tag${name}` : name;
}

/** A name as an equipment id (lower-case letters, digits and dashes, starting with a letter). */
export function equipmentIdOf(name: string): string {
  const kebab = name
    .replace(/([a-z0-9])([A-Z])/g, '$1-$2')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '');
  return /^[a-z]/.test(kebab) ? kebab : `eq-${kebab || 'unnamed'}`;
}

/** The namespace most discovered variables are in (outside namespace 0): the connection's namespace_uri. */
export function dominantNamespace(r: BrowseResult): string | undefined {
  const counts = new Map<string, number>();
  for (const v of r.variables) if (v.nodeId.namespace !== 0) counts.set(v.namespaceUri, (counts.get(v.namespaceUri) ?? 0) + 1);
  let best: string | undefined;
  let n = 0;
  for (const [uri, c] of counts) if (c > n) [best, n] = [uri, c];
  return best;
}

/** Why a variable cannot be a configured tag, or its data_type (with a note when it is a subtype or a guess). */
function dataTypeOf(v: DiscoveredVariable): { dataType?: OpcUaTagConfig['data_type']; reason?: string; note?: string } {
  const t = v.dataType;
  if (!v.readable) return { reason: 'not readable by this session (UserAccessLevel has no CurrentRead)' };
  if (t.enumeration) return { reason: `enumeration ${t.name} (Int32 values with names): the configuration has no enumeration data type` };
  if (t.builtIn === undefined) return { reason: `DataType ${t.name} (${t.id}) does not lead to a built-in type` };
  const base = DataType[t.builtIn] ?? String(t.builtIn);
  const subtype = t.name !== base ? `DataType ${t.name} (a ${base})` : undefined;
  if (t.builtIn === DataType.ExtensionObject) return { reason: `structure ${t.name}: structured types cannot be configured (members the server shows as variables are listed on their own)` };
  const rank = v.valueRank;
  if (rank === 1 || rank === 0 || rank > 1) {
    if (rank === 1 && t.builtIn === DataType.Double) return { dataType: 'DoubleArray', ...(subtype ? { note: subtype } : {}) };
    const shape = rank === 1 ? 'array' : rank === 0 ? 'array (one or more dimensions)' : `${rank}-dimensional array`;
    return { reason: `${t.name} ${shape}: the configuration takes arrays of Double only (DoubleArray)` };
  }
  const dt = SCALAR_TYPES.get(t.builtIn);
  if (!dt) return { reason: `${subtype ?? base}: not a data_type the configuration takes (${[...SCALAR_TYPES.values(), 'DoubleArray'].join(', ')})` };
  const notes = [subtype, rank === -2 || rank === -3 ? `ValueRank ${rank === -2 ? 'Any' : 'ScalarOrOneDimension'}: taken as a scalar` : undefined].filter(Boolean);
  return { dataType: dt, ...(notes.length ? { note: notes.join('; ') } : {}) };
}

/** UCUM unit of a variable, with a note when a person must check it. */
function unitOf(v: DiscoveredVariable, dataType: OpcUaTagConfig['data_type']): { unit: string; note?: string } {
  const eu = v.unit;
  if (!eu) return dataType === 'Double' || dataType === 'Float' || dataType === 'DoubleArray' ? { unit: '1', note: 'no EngineeringUnits on the server: unit 1 assumed, set the real one' } : { unit: '1' };
  const ucum = ucumOf(eu);
  if (ucum) return { unit: ucum };
  const label = (eu.displayName ?? '').trim();
  if (label === '') return { unit: '1', note: `EngineeringUnits ${describeReportedUnit(eu)} names no unit: unit 1 assumed` };
  if (isValidUnit(label)) return { unit: label, note: `unit "${label}" taken from the display name (no unitId we know): check it is the UCUM ${label}` };
  // a vendor label (`kp`, `Tabl./h`) is no UCUM code; as an annotation it passes validation and stays visible
  const annotation = `{${label.replace(/[{}\s]+/g, '')}}`;
  return { unit: annotation, note: `vendor unit "${label}" has no UCUM mapping: written as the annotation ${annotation} (dimensionless); replace it with the UCUM unit` };
}

function entryOf(v: DiscoveredVariable, name: string, namespaces: readonly string[], uri: string | undefined): TagEntry {
  const path = v.path.join('/');
  const nodeId = configNodeId(v.nodeId, namespaces, uri);
  const { dataType, reason, note } = dataTypeOf(v);
  if (!dataType) return { path, notes: [`not configurable: ${reason} — node_id "${nodeId}"`] };
  const notes: string[] = note ? [note] : [];
  const { unit, note: unitNote } = unitOf(v, dataType);
  if (unitNote) notes.push(unitNote);
  const numeric = NUMERIC.has(dataType);
  let kind: OpcUaTagConfig['kind'];
  if (SUPERVISOR.has(name)) kind = 'supervisor';
  else if (v.writable && numeric) {
    kind = 'setpoint';
    notes.push('writable: a setpoint candidate — keep it a measurement unless linekeeper is to write it');
  } else {
    kind = 'measurement';
    if (v.writable) notes.push(`writable on the server; a setpoint must be a numeric scalar, so it is a measurement`);
  }
  let range: { min: number; max: number } | undefined;
  if (v.euRange && dataType !== 'Boolean' && dataType !== 'String' && dataType !== 'ByteString') {
    const { low, high } = v.euRange;
    if (Number.isFinite(low) && Number.isFinite(high) && low < high) range = { min: low, max: high };
    else notes.push(`EURange ${low}..${high} is not a range: left out`);
  }
  const tag: OpcUaTagConfig = { name, kind, unit, node_id: nodeId, data_type: dataType, ...(range ? { range } : {}), ...(v.description ? { description: v.description } : {}) };
  return { tag, path, notes };
}

/** Names unique in a group: the browse name, else prefixed with its parents' names, else numbered. */
function uniqueNames(vars: readonly DiscoveredVariable[]): string[] {
  const used = new Set<string>();
  return vars.map((v) => {
    let name = tagNameOf(v.browseName);
    for (let up = 2; used.has(name) && up <= v.path.length; up++) name = tagNameOf(v.path.slice(-up).join(' '));
    const base = name;
    for (let n = 2; used.has(name); n++) name = `${base}${n}`;
    used.add(name);
    return name;
  });
}

/**
 * Tag groups of a browse result: below the Objects folder, one group per top-level object (an equipment
 * candidate); below any other start node, one group named after it.
 */
export function mapDiscovery(r: BrowseResult, namespaceUri: string | undefined = dominantNamespace(r)): MappedDiscovery {
  const byObjects = r.start.nodeId.namespace === 0 && r.start.nodeId.value === OBJECTS_FOLDER;
  const groups = new Map<string, DiscoveredVariable[]>();
  for (const v of r.variables) {
    const g = byObjects && v.path.length > 1 ? v.path[0]! : r.start.browseName;
    groups.set(g, [...(groups.get(g) ?? []), v]);
  }
  const usedKeys = new Set<string>();
  let tags = 0;
  let commented = 0;
  const out: TagGroup[] = [];
  for (const [title, vars] of groups) {
    let key = equipmentIdOf(title);
    for (let n = 2; usedKeys.has(key); n++) key = `${equipmentIdOf(title)}-${n}`;
    usedKeys.add(key);
    const names = uniqueNames(vars);
    const entries = vars.map((v, i) => {
      const e = entryOf(v, names[i]!, r.namespaces, namespaceUri);
      if (e.tag) tags++;
      else commented++;
      return { ...e, path: byObjects && v.path.length > 1 ? v.path.slice(1).join('/') : e.path };
    });
    out.push({ key, title, entries });
  }
  return { namespaceUri, groups: out, tags, commented };
}
