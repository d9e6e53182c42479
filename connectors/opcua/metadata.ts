/**
 * What the server itself says about our tags, fetched on every (re)connect
 * in three batched service calls (Read attributes, TranslateBrowsePaths to
 * the EngineeringUnits/EURange properties, Read those properties): the
 * NamespaceArray, each node's DataType (cached for writes: the exact type,
 * so no BadTypeMismatch), its UserAccessLevel, EngineeringUnits and EURange.
 */
import { AttributeIds, DataType, makeBrowsePath, StatusCodes, type ClientSession, type DataValue, type NodeId } from 'node-opcua-client';
import { LkError } from '../../src/errors.js';
import type { TagDescription } from '../types.js';
import type { OpcUaTag } from './tags.js';
import { builtInDataType } from './values.js';
import { conversionFor, describeReportedUnit, type Linear, type ReportedUnit, type UnitAlias } from './units.js';

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
  /** UserAccessLevel has CurrentRead. */
  readonly readable: boolean;
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

const CURRENT_READ = 0x01;
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
      // an array node (DoubleArray, FloatArray…) is DataType Double/Float… with ValueRank 1: report it as configured, not as a scalar
      dataTypeName: dataType === undefined ? t.configType : t.element !== undefined && dataType === DataType[t.element] ? t.configType : DataType[dataType],
      ...(unit ? { unit } : {}),
      ...(range ? { range } : {}),
      writable: (access & CURRENT_WRITE) !== 0,
      readable: (access & CURRENT_READ) !== 0,
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

/**
 * Per tag, how a raw value becomes one in the configured unit: the tag's
 * scale/offset, then the server's EngineeringUnits through the site's unit
 * aliases (value = a·raw + b). A tag whose server unit nothing maps to the
 * configured one is a mismatch and has no conversion. Tags without the
 * EngineeringUnits property are not checked (scale/offset only).
 */
export function unitConversions(
  tags: readonly OpcUaTag[],
  meta: ReadonlyMap<string, TagMeta>,
  aliases: Readonly<Record<string, UnitAlias>>,
): { conversions: Map<string, Linear>; mismatches: UnitMismatch[] } {
  const conversions = new Map<string, Linear>();
  const mismatches: UnitMismatch[] = [];
  for (const t of tags) {
    const u = meta.get(t.id)?.unit;
    const c = conversionFor(u, t.unit, aliases);
    if (!c) mismatches.push({ tag: t.id, configured: t.unit, reported: describeReportedUnit(u!) });
    else conversions.set(t.id, { a: c.a * t.scale, b: c.a * t.offset + c.b });
  }
  return { conversions, mismatches };
}

/** A server EURange in engineering units (the conversion may be falling: then low and high swap). */
export function engineeringRange(r: { min: number; max: number }, c: Linear): { min: number; max: number } {
  const lo = tidy(c.a * r.min + c.b);
  const hi = tidy(c.a * r.max + c.b);
  return lo <= hi ? { min: lo, max: hi } : { min: hi, max: lo };
}

/** 15 significant digits: 100 × 0.1 is 10, not 10.000000000000002. */
export function tidy(v: number): number {
  return Number(v.toPrecision(15));
}

export interface RangeMismatch {
  readonly tag: string;
  readonly configured: { readonly min: number; readonly max: number };
  readonly reported: { readonly min: number; readonly max: number };
}

/** Tags whose configured range differs from the server's EURange (in engineering units). Only tags with both are compared. */
export function rangeMismatches(tags: readonly OpcUaTag[], meta: ReadonlyMap<string, TagMeta>, conversions: ReadonlyMap<string, Linear>): RangeMismatch[] {
  const out: RangeMismatch[] = [];
  const same = (x: number, y: number): boolean => Math.abs(x - y) <= 1e-9 * Math.max(1, Math.abs(x), Math.abs(y));
  for (const t of tags) {
    const r = meta.get(t.id)?.range;
    const c = conversions.get(t.id);
    if (!r || !t.range || !c) continue;
    const eng = engineeringRange(r, c);
    if (!same(eng.min, t.range.min) || !same(eng.max, t.range.max)) out.push({ tag: t.id, configured: t.range, reported: eng });
  }
  return out;
}

/** TagDescriptions: what the server reported on the last connect (DataType, EURange, access), the configuration where it reported nothing. */
export function describeTags(tags: readonly OpcUaTag[], meta: ReadonlyMap<string, TagMeta>, address: (t: OpcUaTag) => string, conversions: ReadonlyMap<string, Linear> = new Map()): TagDescription[] {
  return tags.map((t) => {
    const m = meta.get(t.id);
    const c = conversions.get(t.id);
    const range = m?.range && c ? engineeringRange(m.range, c) : t.range;
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
