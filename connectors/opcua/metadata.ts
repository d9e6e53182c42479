/**
 * What the server itself says about our tags, fetched on every (re)connect
 * in three batched service calls (Read attributes, TranslateBrowsePaths to
 * the EngineeringUnits/EURange properties, Read those properties): the
 * NamespaceArray, each node's DataType (cached for writes: the exact type,
 * so no BadTypeMismatch), its UserAccessLevel, EngineeringUnits and EURange.
 */
import { AttributeIds, DataType, makeBrowsePath, StatusCodes, type ClientSession, type DataValue, type NodeId } from 'node-opcua';
import { LkError } from '../../src/errors.js';
import type { TagDescription } from '../types.js';
import type { OpcUaTag } from './tags.js';
import { builtInDataType } from './values.js';
import { describeReportedUnit, unitMatches, type ReportedUnit } from './units.js';

export interface TagMeta {
  /** Built-in type from the node's DataType attribute; undefined when unreadable or not a built-in type. */
  readonly dataType: DataType | undefined;
  /** Name for TagDescription.dataType: the server's type, else the configured one. */
  readonly dataTypeName: string;
  /** EngineeringUnits property, when the node has one (AnalogItems). */
  readonly unit?: ReportedUnit;
  /** EURange property, when the node has one. */
  readonly range?: { readonly min: number; readonly max: number };
  /** UserAccessLevel has CurrentWrite. */
  readonly writable: boolean;
  /** Status of reading the node's attributes (e.g. BadNodeIdUnknown when the node is missing). */
  readonly status: string;
}

/**
 * Server_NamespaceArray (i=2255).
 * @throws LkError(LK_CONN_UNAVAILABLE) when the server does not return it: without it no tag can be addressed.
 */
export async function readNamespaces(session: ClientSession): Promise<string[]> {
  const dv = await session.read({ nodeId: 'i=2255', attributeId: AttributeIds.Value });
  const v: unknown = dv.value?.value;
  if (!dv.statusCode.isGood() || !Array.isArray(v)) throw new LkError('LK_CONN_UNAVAILABLE', `cannot read the server's NamespaceArray: ${dv.statusCode.name}`, { status: dv.statusCode.name });
  return v.map(String);
}

const CURRENT_WRITE = 0x02;

/** Fetch {@link TagMeta} for every tag in three batched calls. */
export async function fetchMetadata(session: ClientSession, tags: readonly OpcUaTag[], nodeOf: (t: OpcUaTag) => NodeId): Promise<Map<string, TagMeta>> {
  const nodes = tags.map(nodeOf);
  const attrs = await session.read(
    nodes.flatMap((nodeId) => [
      { nodeId, attributeId: AttributeIds.DataType },
      { nodeId, attributeId: AttributeIds.UserAccessLevel },
    ]),
  );
  const paths = await session.translateBrowsePath(nodes.flatMap((n) => [makeBrowsePath(n, '.EngineeringUnits'), makeBrowsePath(n, '.EURange')]));
  const propIndex: { tag: number; which: 'unit' | 'range'; nodeId: NodeId }[] = [];
  paths.forEach((p, i) => {
    const target = p.statusCode.isGood() ? p.targets?.[0]?.targetId : undefined;
    // ExpandedNodeId of a local node: usable as a NodeId.
    if (target) propIndex.push({ tag: Math.floor(i / 2), which: i % 2 === 0 ? 'unit' : 'range', nodeId: target as unknown as NodeId });
  });
  const props: DataValue[] = propIndex.length > 0 ? await session.read(propIndex.map((p) => ({ nodeId: p.nodeId, attributeId: AttributeIds.Value }))) : [];
  const units = new Map<number, ReportedUnit>();
  const ranges = new Map<number, { min: number; max: number }>();
  propIndex.forEach((p, k) => {
    const dv = props[k];
    const v = dv?.statusCode.isGood() ? (dv.value?.value as Record<string, unknown> | null) : null;
    if (!v || typeof v !== 'object') return;
    if (p.which === 'unit') {
      const text = (x: unknown): string | null => (x && typeof x === 'object' && 'text' in x ? ((x as { text: string | null }).text ?? null) : null);
      units.set(p.tag, { unitId: typeof v.unitId === 'number' ? v.unitId : null, displayName: text(v.displayName), description: text(v.description) });
    } else if (typeof v.low === 'number' && typeof v.high === 'number') {
      ranges.set(p.tag, { min: v.low, max: v.high });
    }
  });
  const out = new Map<string, TagMeta>();
  tags.forEach((t, i) => {
    const dtDv = attrs[2 * i];
    const alDv = attrs[2 * i + 1];
    const good = dtDv?.statusCode.isGood() ?? false;
    const dataType = good ? builtInDataType(dtDv?.value?.value as NodeId) : undefined;
    const access = alDv?.statusCode.isGood() ? Number(alDv.value?.value ?? 0) : 0;
    const unit = units.get(i);
    const range = ranges.get(i);
    out.set(t.id, {
      dataType,
      // a DoubleArray node is DataType Double with ValueRank 1: report it as configured, not as a scalar
      dataTypeName: dataType === undefined ? t.configType : t.configType === 'DoubleArray' && dataType === DataType.Double ? 'DoubleArray' : DataType[dataType],
      ...(unit ? { unit } : {}),
      ...(range ? { range } : {}),
      writable: (access & CURRENT_WRITE) !== 0,
      status: dtDv?.statusCode.name ?? StatusCodes.BadInternalError.name,
    });
  });
  return out;
}

export interface UnitMismatch {
  readonly tag: string;
  readonly configured: string;
  readonly reported: string;
}

/** Tags whose server-side EngineeringUnits do not denote the configured UCUM unit. Tags without the property are not checked. */
export function unitMismatches(tags: readonly OpcUaTag[], meta: ReadonlyMap<string, TagMeta>): UnitMismatch[] {
  const out: UnitMismatch[] = [];
  for (const t of tags) {
    const u = meta.get(t.id)?.unit;
    if (u && !unitMatches(u, t.unit)) out.push({ tag: t.id, configured: t.unit, reported: describeReportedUnit(u) });
  }
  return out;
}

/** TagDescriptions: what the server reported on the last connect (DataType, EURange, access), the configuration where it reported nothing. */
export function describeTags(tags: readonly OpcUaTag[], meta: ReadonlyMap<string, TagMeta>, address: (t: OpcUaTag) => string): TagDescription[] {
  return tags.map((t) => {
    const m = meta.get(t.id);
    const range = m?.range ?? t.range;
    return {
      tag: t.id,
      equipment: t.equipment,
      name: t.name,
      kind: t.kind,
      unit: t.unit,
      dataType: m?.dataTypeName ?? t.configType,
      writable: t.kind === 'setpoint' && (m ? m.writable : true),
      ...(range ? { range } : {}),
      address: address(t),
    };
  });
}
