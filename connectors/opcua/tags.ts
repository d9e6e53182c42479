/**
 * The OPC UA tag table of one connection: every tag of every equipment that
 * uses it, keyed by tag id `<equipment>.<Tag>`, and node id resolution.
 *
 * Node ids in the configuration are relative to the connection's
 * namespace_uri (`s=press.Setpoints.MainForce`, `i=6001`, `g=…`, `b=…`); the
 * namespace index is only known after reading the server's NamespaceArray,
 * and can change when the server restarts, so resolution takes the current
 * index as a parameter. Absolute ids (`ns=3;s=x`, `ns=0;i=2258`,
 * `nsu=<uri>;i=6001`) are used as they are: a node of the standard's own
 * namespace 0 needs its `ns=0;`, as the configuration schema documents.
 */
import { coerceNodeId, type NodeId } from 'node-opcua-client';
import { LkError } from '../../src/errors.js';
import { ARRAY_ELEMENT, tagId, type OpcUaEquipmentConfig, type OpcUaTagConfig } from '../../src/config/schema.js';

export interface OpcUaTag {
  readonly id: string;
  readonly equipment: string;
  readonly name: string;
  readonly kind: OpcUaTagConfig['kind'];
  readonly unit: string;
  /** Configured data type; the server's own DataType attribute decides how writes are encoded. */
  readonly configType: OpcUaTagConfig['data_type'];
  /** Node id as configured (relative or absolute). */
  readonly nodeId: string;
  readonly range?: { readonly min: number; readonly max: number };
  readonly readbackTolerance?: number;
  /** Numeric tags get the absolute deadband filter; Boolean/String would be refused by the server (BadFilterNotAllowed). */
  readonly numeric: boolean;
  /** value in the server's unit = raw × scale + offset (1 and 0 unless configured). */
  readonly scale: number;
  readonly offset: number;
  /** Element type of an array tag (`FloatArray` → `Float`); undefined for scalars. */
  readonly element?: 'Double' | 'Float' | 'Int16' | 'UInt16' | 'Int32' | 'UInt32';
  /** Names of the values of an enumerated integer tag: the tag reads as the name. */
  readonly enumNames?: ReadonlyMap<number, string>;
}

const NUMERIC = new Set(['Int16', 'UInt16', 'Int32', 'UInt32', 'Float', 'Double']);

/** Build the tag table of one connection; throws LK_CONFIG_INVALID on a duplicate tag id. */
export function buildTagTable(equipment: readonly OpcUaEquipmentConfig[]): ReadonlyMap<string, OpcUaTag> {
  const out = new Map<string, OpcUaTag>();
  for (const e of equipment) {
    for (const t of e.tags) {
      const id = tagId(e.id, t.name);
      if (out.has(id)) throw new LkError('LK_CONFIG_INVALID', `duplicate OPC UA tag "${id}"`, { tag: id });
      out.set(id, {
        id,
        equipment: e.id,
        name: t.name,
        kind: t.kind,
        unit: t.unit,
        configType: t.data_type,
        nodeId: t.node_id,
        ...(t.range ? { range: t.range } : {}),
        ...(t.readback_tolerance !== undefined ? { readbackTolerance: t.readback_tolerance } : {}),
        numeric: NUMERIC.has(t.data_type) && t.enum === undefined,
        scale: t.scale ?? 1,
        offset: t.offset ?? 0,
        ...(ARRAY_ELEMENT[t.data_type] ? { element: ARRAY_ELEMENT[t.data_type] } : {}),
        ...(t.enum ? { enumNames: new Map(Object.entries(t.enum).map(([k, v]) => [Number(k), v])) } : {}),
      });
    }
  }
  return out;
}

/** Look tags up by id; unknown ids throw LK_TAG_UNKNOWN naming them all. */
export function lookupTags(table: ReadonlyMap<string, OpcUaTag>, ids: readonly string[]): OpcUaTag[] {
  const missing: string[] = [];
  const found: OpcUaTag[] = [];
  for (const id of ids) {
    const t = table.get(id);
    if (t) found.push(t);
    else missing.push(id);
  }
  if (missing.length > 0) {
    throw new LkError('LK_TAG_UNKNOWN', `tag${missing.length > 1 ? 's' : ''} not configured on this connection: ${missing.join(', ')}`, { tags: missing });
  }
  return found;
}

/**
 * True when the configured node id carries its own namespace. `i=6001` does
 * not: like `s=…` it is relative to the connection's namespace_uri (a vendor's
 * numeric ids live in its own namespace; namespace 0 is written `ns=0;i=…`).
 */
export function isAbsoluteNodeId(nodeId: string): boolean {
  return /^(ns|nsu)=/.test(nodeId);
}

/**
 * Resolve a configured node id against the server's namespace table.
 * Throws LK_CONFIG_INVALID when an `nsu=` names a namespace the server does not have.
 */
export function resolveNodeId(nodeId: string, nsIndex: number, namespaces: readonly string[]): NodeId {
  if (nodeId.startsWith('nsu=')) {
    const semi = nodeId.indexOf(';');
    const uri = nodeId.slice(4, semi);
    const idx = namespaces.indexOf(uri);
    if (semi < 0 || idx < 0) throw new LkError('LK_CONFIG_INVALID', `node id ${nodeId}: namespace not on the server`, { nodeId });
    return coerceNodeId(`ns=${idx};${nodeId.slice(semi + 1)}`);
  }
  if (isAbsoluteNodeId(nodeId)) return coerceNodeId(nodeId);
  return coerceNodeId(`ns=${nsIndex};${nodeId}`);
}
