/**
 * `linekeeper doctor`'s look at every configured OPC UA node: one connection
 * attempt (no retries, bounded in time), then per tag whether the node exists,
 * is readable (and writable where the configuration says setpoint), has the
 * configured DataType and engineering unit, and an EURange that agrees with the
 * configured range. Nothing is written.
 */
import { AttributeIds, DataType, OPCUAClient, type ClientSession, type NodeId } from 'node-opcua-client';
import { LkError } from '../../src/errors.js';
import type { OpcUaConnectionConfig, OpcUaEquipmentConfig } from '../../src/config/schema.js';
import { classifyError, clientOptions, disposeClient, withTimeout } from './link.js';
import { fetchMetadata, rangeMismatches, readNamespaces, unitConversions } from './metadata.js';
import { acquireClientPki } from './pki.js';
import { buildTagTable, resolveNodeId, type OpcUaTag } from './tags.js';
import { STATUS_NO_NAME, toSample } from './values.js';
import type { UnitAlias } from './units.js';

export interface NodeFinding {
  readonly tag: string;
  /** The node id as resolved on the server (or as configured when it could not be resolved). */
  readonly node: string;
  readonly status: 'ok' | 'warn' | 'fail';
  /** Every problem found with this node; empty when ok. */
  readonly problems: readonly string[];
}

export interface InspectOptions {
  readonly connection: OpcUaConnectionConfig;
  readonly equipment: readonly OpcUaEquipmentConfig[];
  readonly url: string;
  /** Where the client PKI lives (`<dir>/pki`). */
  readonly dataDir: string;
  readonly unitAliases?: Readonly<Record<string, UnitAlias>>;
  /** Bound of the whole inspection. */
  readonly timeoutMs: number;
}

const NUMERIC = new Set<DataType>([DataType.SByte, DataType.Byte, DataType.Int16, DataType.UInt16, DataType.Int32, DataType.UInt32, DataType.Float, DataType.Double]);

/**
 * Inspect every tag of the connection's equipment.
 * @throws LkError LK_CONN_UNAVAILABLE / LK_CONN_TIMEOUT / LK_CERT_UNTRUSTED when no session can be made, or the
 *   server lacks the connection's namespace_uri (then no node can be judged).
 */
export async function inspectNodes(o: InspectOptions): Promise<NodeFinding[]> {
  const tags = [...buildTagTable(o.equipment).values()];
  const pki = await acquireClientPki(o.dataDir);
  let client: OPCUAClient | undefined;
  let session: ClientSession | undefined;
  try {
    await pki.cm.reloadCertificates();
    const opts = clientOptions(o.connection, { initialMs: 100, maxMs: 100 }, pki.cm);
    // one attempt: doctor reports, it does not wait for the equipment to come back
    client = OPCUAClient.create({ ...opts, connectionStrategy: { initialDelay: 100, maxDelay: 100, maxRetry: 0 } });
    const c = client;
    const work = (async (): Promise<NodeFinding[]> => {
      await c.connect(o.url);
      session = await c.createSession();
      return judge(session, o, tags);
    })();
    work.catch(() => undefined);
    const out = await withTimeout(work, o.timeoutMs);
    if (out === undefined) throw new LkError('LK_CONN_TIMEOUT', `${o.connection.id}: no OPC UA session within ${o.timeoutMs} ms`);
    return out;
  } catch (err) {
    throw classifyError(err, o.connection.id, o.url, o.dataDir);
  } finally {
    await disposeClient(client, session, o.connection.request_timeout_ms);
    await pki.release();
  }
}

async function judge(session: ClientSession, o: InspectOptions, tags: readonly OpcUaTag[]): Promise<NodeFinding[]> {
  const namespaces = await readNamespaces(session);
  const idx = namespaces.indexOf(o.connection.namespace_uri);
  if (idx < 0) throw new LkError('LK_CONN_UNAVAILABLE', `${o.connection.id}: the server has no namespace ${o.connection.namespace_uri} (it has: ${namespaces.join(', ')})`);
  const nodes = new Map<string, NodeId>();
  const findings = new Map<string, NodeFinding>();
  for (const t of tags) {
    try {
      nodes.set(t.id, resolveNodeId(t.nodeId, idx, namespaces));
    } catch (err) {
      findings.set(t.id, { tag: t.id, node: t.nodeId, status: 'fail', problems: [(err as Error).message] });
    }
  }
  const resolvable = tags.filter((t) => nodes.has(t.id));
  const nodeOf = (t: OpcUaTag): NodeId => nodes.get(t.id)!;
  const meta = resolvable.length > 0 ? await fetchMetadata(session, resolvable, nodeOf) : new Map();
  const values = resolvable.length > 0 ? await session.read(resolvable.map((t) => ({ nodeId: nodeOf(t), attributeId: AttributeIds.Value }))) : [];
  const { conversions, mismatches } = unitConversions(resolvable, meta, o.unitAliases ?? {});
  const units = new Map(mismatches.map((m) => [m.tag, m]));
  const ranges = new Map(rangeMismatches(resolvable, meta, conversions).map((r) => [r.tag, r]));
  resolvable.forEach((t, i) => {
    const m = meta.get(t.id);
    const fail: string[] = [];
    const warn: string[] = [];
    if (!m || m.status !== 'Good') {
      fail.push(`the node does not answer: ${m?.status ?? 'no reply'}${m?.status === 'BadNodeIdUnknown' ? ` (no such node in ${o.connection.namespace_uri}; a namespace-0 node is written ns=0;…)` : ''}`);
    } else {
      if (!m.readable) fail.push('not readable (its UserAccessLevel lacks CurrentRead)');
      if (t.kind === 'setpoint' && !m.writable) fail.push('not writable (its UserAccessLevel lacks CurrentWrite) but configured as a setpoint');
      const expected = DataType[t.element ?? (t.configType as keyof typeof DataType)] as DataType | undefined;
      if (m.dataType === undefined) warn.push(`its DataType is not a built-in type; configured ${t.configType}`);
      else if (expected !== undefined && m.dataType !== expected) {
        const text = `DataType ${DataType[m.dataType]} on the server, configured ${t.element ?? t.configType}`;
        if (NUMERIC.has(m.dataType) && NUMERIC.has(expected)) warn.push(`${text} (read and written as the server's type: check range and precision)`);
        else fail.push(text);
      }
      const u = units.get(t.id);
      if (u) fail.push(`server unit ${u.reported}, configured ${u.configured}, and no unit_aliases entry maps them: it would read bad and refuse writes`);
      const r = ranges.get(t.id);
      if (r) warn.push(`server EURange ${r.reported.min}..${r.reported.max} ${t.unit}, configured range ${r.configured.min}..${r.configured.max}`);
      const dv = values[i];
      if (dv && !u && m.readable) {
        const s = toSample(t, dv, 0, conversions.get(t.id));
        if (s.quality !== 'good') (s.status === STATUS_NO_NAME ? warn : fail).push(s.status === STATUS_NO_NAME ? `its value ${String(dv.value?.value)} has no name in the configured enum` : `reading its value gives ${s.status}`);
      }
    }
    findings.set(t.id, { tag: t.id, node: nodeOf(t).toString(), status: fail.length > 0 ? 'fail' : warn.length > 0 ? 'warn' : 'ok', problems: [...fail, ...warn] });
  });
  return tags.map((t) => findings.get(t.id)!);
}
