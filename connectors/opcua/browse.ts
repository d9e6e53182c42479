/**
 * Browse an OPC UA server for `linekeeper discover opcua`: every Variable
 * below a start node, with what the server says about it (DataType and its
 * built-in base, ValueRank, access levels, EngineeringUnits, EURange), in
 * batched service calls level by level. Bounded by a node count and a depth:
 * a server with a large address space is cut, and the result says where.
 *
 * Only the session's services are used (Browse, BrowseNext, Read), so the
 * same code runs against any server; the mapping to configuration tags is
 * discover-map.ts (pure).
 */
import {
  AttributeIds,
  BrowseDirection,
  browseAll,
  coerceNodeId,
  DataType,
  makeResultMask,
  NodeClass,
  NodeClassMask,
  resolveNodeId as opcuaResolve,
  type ClientSession,
  type DataValue,
  type NodeId,
  type ReferenceDescription,
} from 'node-opcua-client';
import { LkError } from '../../src/errors.js';
import type { ReportedUnit } from './units.js';

/** DataType of a variable, reduced to its built-in base. */
export interface DiscoveredType {
  /** The DataType node id as the server gives it, e.g. `i=11` or `ns=2;i=3002`. */
  readonly id: string;
  /** The DataType's browse name, e.g. `Double`, `Duration`, `MachineState`. */
  readonly name: string;
  /** Built-in type it derives from; undefined when the chain cannot be followed. */
  readonly builtIn: DataType | undefined;
  /** Derives from Enumeration (values are Int32 with names). */
  readonly enumeration: boolean;
}

export interface DiscoveredVariable {
  /** Namespace index and identifier as the server has them now (indexes can change when it restarts). */
  readonly nodeId: NodeId;
  readonly namespaceUri: string;
  /** Browse names from the start node (exclusive) to this variable (inclusive). */
  readonly path: readonly string[];
  readonly browseName: string;
  readonly displayName: string;
  readonly description?: string;
  readonly dataType: DiscoveredType;
  /** -1 scalar, 1 one-dimensional array, others per OPC UA Part 3 (0, -2, -3, n). */
  readonly valueRank: number;
  readonly readable: boolean;
  /** UserAccessLevel has CurrentWrite: this session may write it. */
  readonly writable: boolean;
  /** The EngineeringUnits property (AnalogItems), when it has one. */
  readonly unit?: ReportedUnit;
  /** The EURange property (AnalogItems), when it has one. */
  readonly euRange?: { readonly low: number; readonly high: number };
}

export interface BrowseLimits {
  /** Nodes (objects and variables) visited at most. */
  readonly maxNodes: number;
  /** Levels below the start node followed at most. */
  readonly maxDepth: number;
}

export interface BrowseResult {
  readonly start: { readonly nodeId: NodeId; readonly browseName: string };
  readonly namespaces: readonly string[];
  readonly variables: readonly DiscoveredVariable[];
  /** Nodes visited (objects and variables, properties not counted). */
  readonly nodes: number;
  /** Set when a limit stopped the browse: the result is partial. */
  readonly cut?: { readonly limit: 'max-nodes' | 'max-depth'; readonly value: number };
  /** Namespace-0 objects below the start node that were not followed (the Server object and its diagnostics). */
  readonly skipped: readonly string[];
}

const HAS_PROPERTY = 46;
const HIERARCHICAL = coerceNodeId('i=33');
const ENUMERATION = 29;
const CURRENT_READ = 0x01;
const CURRENT_WRITE = 0x02;
/** Nodes per Read/Browse request: below the MaxNodesPerRead/Browse of small PLCs. */
const CHUNK = 200;

async function chunked<T, R>(items: readonly T[], fn: (part: T[]) => Promise<R[]>): Promise<R[]> {
  const out: R[] = [];
  for (let i = 0; i < items.length; i += CHUNK) out.push(...(await fn(items.slice(i, i + CHUNK))));
  return out;
}

function text(v: unknown): string | undefined {
  if (v && typeof v === 'object' && 'text' in v) {
    const t = (v as { text: unknown }).text;
    return typeof t === 'string' ? t : undefined;
  }
  return undefined;
}

interface Pending {
  nodeId: NodeId;
  nodeClass: NodeClass;
  path: string[];
  depth: number;
}

/**
 * Browse every Variable below `start` (hierarchical references; properties are read as the variables'
 * EngineeringUnits and EURange, never listed). Objects of namespace 0 below the start (the Server object) are
 * not followed. Throws LK_NOT_FOUND when the start node is not on the server.
 */
export async function browseVariables(session: ClientSession, start: NodeId, limits: BrowseLimits): Promise<BrowseResult> {
  const namespaces = (await session.readNamespaceArray()).map(String);
  const startName = await session.read({ nodeId: start, attributeId: AttributeIds.BrowseName });
  const startClass = await session.read({ nodeId: start, attributeId: AttributeIds.NodeClass });
  if (!startName.statusCode.isGood()) {
    throw new LkError('LK_NOT_FOUND', `start node ${start.toString()} is not on the server (${startName.statusCode.name})`, { nodeId: start.toString(), status: startName.statusCode.name });
  }
  const startBrowseName = String((startName.value.value as { name?: string } | null)?.name ?? start.toString());
  const visited = new Set<string>([start.toString()]);
  const found: Pending[] = [];
  const props = new Map<string, { unit?: NodeId; range?: NodeId }>();
  const skipped: string[] = [];
  let cut: BrowseResult['cut'];
  let nodes = 0;
  let level: Pending[] = [{ nodeId: start, nodeClass: Number(startClass.value.value) as NodeClass, path: [], depth: 0 }];
  const resultMask = makeResultMask('ReferenceType | IsForward | NodeClass | BrowseName | DisplayName | TypeDefinition');
  while (level.length > 0) {
    const results = await chunked(level, (part) =>
      browseAll(
        session,
        part.map((p) => ({
          nodeId: p.nodeId,
          browseDirection: BrowseDirection.Forward,
          referenceTypeId: HIERARCHICAL,
          includeSubtypes: true,
          nodeClassMask: NodeClassMask.Object | NodeClassMask.Variable,
          resultMask,
        })),
      ),
    );
    const next: Pending[] = [];
    level.forEach((parent, i) => {
      const refs: ReferenceDescription[] = results[i]?.references ?? [];
      for (const ref of refs) {
        const id = ref.nodeId as unknown as NodeId;
        const key = id.toString();
        const name = ref.browseName.name ?? key;
        const isProperty = ref.referenceTypeId.namespace === 0 && ref.referenceTypeId.value === HAS_PROPERTY;
        if (isProperty) {
          if (parent.nodeClass === NodeClass.Variable && (name === 'EngineeringUnits' || name === 'EURange')) {
            const p = props.get(parent.nodeId.toString()) ?? {};
            if (name === 'EngineeringUnits') p.unit = id;
            else p.range = id;
            props.set(parent.nodeId.toString(), p);
          }
          continue;
        }
        if (visited.has(key)) continue;
        visited.add(key);
        if (ref.nodeClass === NodeClass.Object && id.namespace === 0) {
          skipped.push(name);
          continue;
        }
        if (nodes >= limits.maxNodes) {
          cut ??= { limit: 'max-nodes', value: limits.maxNodes };
          continue;
        }
        if (parent.depth + 1 > limits.maxDepth) {
          cut ??= { limit: 'max-depth', value: limits.maxDepth };
          continue;
        }
        nodes++;
        const child: Pending = { nodeId: id, nodeClass: ref.nodeClass, path: [...parent.path, name], depth: parent.depth + 1 };
        if (ref.nodeClass === NodeClass.Variable) found.push(child);
        // variables are browsed too: their properties (units, range) and components (members of a structure)
        next.push(child);
      }
    });
    level = next;
  }

  const attrIds = [AttributeIds.DataType, AttributeIds.ValueRank, AttributeIds.AccessLevel, AttributeIds.UserAccessLevel, AttributeIds.DisplayName, AttributeIds.Description];
  const attrs = await chunked(
    found.flatMap((v) => attrIds.map((attributeId) => ({ nodeId: v.nodeId, attributeId }))),
    (part) => session.read(part),
  );
  const propReads: { owner: string; which: 'unit' | 'range'; nodeId: NodeId }[] = [];
  for (const [owner, p] of props) {
    if (p.unit) propReads.push({ owner, which: 'unit', nodeId: p.unit });
    if (p.range) propReads.push({ owner, which: 'range', nodeId: p.range });
  }
  const propValues = await chunked(propReads, (part) => session.read(part.map((p) => ({ nodeId: p.nodeId, attributeId: AttributeIds.Value }))));
  const units = new Map<string, ReportedUnit>();
  const ranges = new Map<string, { low: number; high: number }>();
  propReads.forEach((p, k) => {
    const dv = propValues[k];
    const v = dv?.statusCode.isGood() ? (dv.value?.value as Record<string, unknown> | null) : null;
    if (!v || typeof v !== 'object') return;
    if (p.which === 'unit') units.set(p.owner, { unitId: typeof v.unitId === 'number' ? v.unitId : null, displayName: text(v.displayName) ?? null, description: text(v.description) ?? null });
    else if (typeof v.low === 'number' && typeof v.high === 'number') ranges.set(p.owner, { low: v.low, high: v.high });
  });

  const types = new DataTypeResolver(session);
  const variables: DiscoveredVariable[] = [];
  for (let i = 0; i < found.length; i++) {
    const v = found[i]!;
    const a = (k: number): DataValue | undefined => attrs[i * attrIds.length + k];
    const good = (dv: DataValue | undefined): unknown => (dv?.statusCode.isGood() ? dv.value?.value : undefined);
    const dtId = good(a(0)) as NodeId | undefined;
    const access = Number(good(a(3)) ?? good(a(2)) ?? 0);
    const key = v.nodeId.toString();
    const description = text(good(a(5)));
    const unit = units.get(key);
    const euRange = ranges.get(key);
    variables.push({
      nodeId: v.nodeId,
      namespaceUri: namespaces[v.nodeId.namespace] ?? `ns=${v.nodeId.namespace}`,
      path: v.path,
      browseName: v.path[v.path.length - 1]!,
      displayName: text(good(a(4))) ?? v.path[v.path.length - 1]!,
      ...(description ? { description } : {}),
      dataType: dtId ? await types.resolve(dtId) : { id: '?', name: 'unknown (DataType unreadable)', builtIn: undefined, enumeration: false },
      valueRank: typeof good(a(1)) === 'number' ? (good(a(1)) as number) : -1,
      readable: (access & CURRENT_READ) !== 0,
      writable: (access & CURRENT_WRITE) !== 0,
      ...(unit ? { unit } : {}),
      ...(euRange ? { euRange } : {}),
    });
  }
  return { start: { nodeId: start, browseName: startBrowseName }, namespaces, variables, nodes, ...(cut ? { cut } : {}), skipped };
}

/** DataType node → built-in base type, by following HasSubtype upwards (cached: a server has few types). */
class DataTypeResolver {
  private readonly cache = new Map<string, DiscoveredType>();
  constructor(private readonly session: ClientSession) {}

  async resolve(id: NodeId): Promise<DiscoveredType> {
    const key = id.toString();
    const hit = this.cache.get(key);
    if (hit) return hit;
    const nameDv = await this.session.read({ nodeId: id, attributeId: AttributeIds.BrowseName });
    const name = nameDv.statusCode.isGood() ? String((nameDv.value.value as { name?: string } | null)?.name ?? key) : key;
    let builtIn: DataType | undefined;
    let enumeration = false;
    let cur: NodeId | undefined = id;
    // a type hierarchy is a few levels deep; 16 guards against a server with a cycle
    for (let hops = 0; cur && hops < 16; hops++) {
      if (cur.namespace === 0 && typeof cur.value === 'number') {
        if (cur.value === ENUMERATION) enumeration = true;
        if (cur.value >= 1 && cur.value <= 25) {
          builtIn = cur.value as DataType;
          break;
        }
      }
      const r = await this.session.browse({ nodeId: cur, browseDirection: BrowseDirection.Inverse, referenceTypeId: opcuaResolve('HasSubtype'), includeSubtypes: false, resultMask: 0 });
      cur = r.references?.[0]?.nodeId as unknown as NodeId | undefined;
    }
    const t: DiscoveredType = { id: key, name, builtIn: enumeration ? DataType.Int32 : builtIn, enumeration };
    this.cache.set(key, t);
    return t;
  }
}
