/**
 * OPC UA face of the simulated press, coater, NIR analyser, vision system and
 * line PLC (node-opcua). The address space is built from the configuration:
 * `Objects/<equipment>/{Setpoints,Measurements,Supervisor}/<Tag>` with the
 * configured node ids in the namespace `namespace_uri` of the tag's
 * connection. Setpoints and Double measurements are AnalogItems with
 * EngineeringUnits (UNECE, see eu.ts) and EURange.
 *
 * Security: None, Basic256Sha256 Sign and SignAndEncrypt. The simulator is the
 * EQUIPMENT side: by default it accepts any client certificate (as a
 * commissioning engineer would trust the supervisor on the PLC). The
 * linekeeper client must never auto-accept server certificates.
 */
import { join } from 'node:path';
import {
  DataType,
  DataValue,
  MessageSecurityMode,
  OPCUACertificateManager,
  OPCUAServer,
  SecurityPolicy,
  NumericRange,
  StatusCodes,
  Variant,
  VariantArrayType,
  type Namespace,
  type StatusCode,
  type UAObject,
  type UAVariable,
} from 'node-opcua';
import { BUILD_DATE, VERSION } from '../../src/version.js';
import { ARRAY_ELEMENT, type OpcUaEquipmentConfig, type OpcUaTagConfig, type SiteConfig } from '../../src/config/schema.js';
import { LkError } from '../../src/errors.js';
import type { Logger } from '../../src/log.js';
import { euInformation } from './eu.js';
import type { Value } from './dynamics.js';
import type { Plant } from './plant.js';
import { measurementRange } from './truth.js';

export const RESOURCE_PATH = '/linekeeper/sim';
export const DEFAULT_NAMESPACE_URI = 'urn:linekeeper:sim';

/** Supervisor tags the supervisor may write; the rest is the PLC's own. */
const WRITABLE_SUPERVISOR = new Set(['Heartbeat', 'SupervisorState']);

export interface OpcUaServerOptions {
  port: number;
  /** Folder of the server's PKI (own certificate, trusted/rejected client certificates). */
  pkiDir: string;
  /** Folder of the user-token PKI. */
  userPkiDir: string;
  /** Accept unknown client certificates (equipment-side convenience; default true). */
  autoAcceptClientCertificates: boolean;
  /** Sampling interval the server advertises and uses for bound variables, ms. */
  samplingMs: number;
  log: Logger;
  /** Host the endpoint announces and listens on (default 127.0.0.1); it is put in the certificate's subjectAltName. */
  hostname?: string;
}

export interface SimOpcUaServer {
  readonly url: string;
  readonly port: number;
  readonly server: OPCUAServer;
  readonly certificateManager: OPCUACertificateManager;
  close(): Promise<void>;
}

/** Start an OPC UA server on 127.0.0.1 (port 0 = any free port) serving every OPC UA equipment of the plant. */
export async function startOpcUaServer(plant: Plant, config: SiteConfig, opts: OpcUaServerOptions): Promise<SimOpcUaServer> {
  const certificateManager = new OPCUACertificateManager({ rootFolder: opts.pkiDir, automaticallyAcceptUnknownCertificate: opts.autoAcceptClientCertificates });
  const userCertificateManager = new OPCUACertificateManager({ rootFolder: opts.userPkiDir, automaticallyAcceptUnknownCertificate: opts.autoAcceptClientCertificates });
  const hostname = opts.hostname ?? '127.0.0.1';
  const server = new OPCUAServer({
    port: opts.port,
    hostname,
    host: hostname,
    // node-opcua puts the machine's FQDN and non-loopback IPs in a self-signed certificate's subjectAltName, not the
    // host the endpoint announces: strict clients (UaExpert, Kepware) then refuse it (BadCertificateHostNameInvalid)
    alternateHostname: [hostname],
    resourcePath: RESOURCE_PATH,
    serverCertificateManager: certificateManager,
    userCertificateManager,
    securityModes: [MessageSecurityMode.None, MessageSecurityMode.Sign, MessageSecurityMode.SignAndEncrypt],
    securityPolicies: [SecurityPolicy.None, SecurityPolicy.Basic256Sha256],
    allowAnonymous: true,
    disableDiscovery: true,
    // linekeeper's identity, not node-opcua's version and build date
    buildInfo: {
      productName: 'linekeeper plant simulator', manufacturerName: 'linekeeper', productUri: 'urn:linekeeper:sim',
      softwareVersion: VERSION, buildNumber: VERSION, buildDate: BUILD_DATE,
    },
    serverInfo: { applicationUri: 'urn:linekeeper:sim:server', productUri: 'urn:linekeeper:sim' },
  });
  try {
    await server.initialize();
    // a certificate made by an earlier start (or another version) may lack the announced host: make it again
    const missing = server.checkCertificateSAN();
    if (missing.length > 0) {
      // only a self-signed certificate is made again; one a site installed (CA-signed) is kept, with a warning
      await server.regenerateSelfSignedCertificate().catch((err: unknown) => opts.log.warn({ err, missing }, 'OPC UA simulator certificate does not name the announced host'));
    }
    buildAddressSpace(server, plant, config, opts.samplingMs);
    await server.start();
  } catch (e) {
    await server.shutdown(0).catch(() => undefined);
    throw new LkError('LK_CONN_UNAVAILABLE', `OPC UA simulator cannot start on port ${opts.port}: ${(e as Error).message}`, undefined, { cause: e });
  }
  const endpoint = server.endpoints[0];
  const port = endpoint?.port ?? opts.port;
  const url = `opc.tcp://${hostname.includes(':') ? `[${hostname}]` : hostname}:${port}${RESOURCE_PATH}`;
  opts.log.debug({ url }, 'OPC UA simulator listening');
  return {
    url,
    port,
    server,
    certificateManager,
    close: async () => {
      await server.shutdown(0);
    },
  };
}

/** The namespace URI each OPC UA connection declares (equipment are placed in their connection's namespace). */
function namespaceOf(config: SiteConfig, e: OpcUaEquipmentConfig): string {
  const c = config.connections.find((k) => k.id === e.connection);
  return c && c.protocol === 'opcua' ? c.namespace_uri : DEFAULT_NAMESPACE_URI;
}

function buildAddressSpace(server: OPCUAServer, plant: Plant, config: SiteConfig, samplingMs: number): void {
  const addressSpace = server.engine.addressSpace;
  if (!addressSpace) throw new Error('address space not ready');
  const namespaces = new Map<string, Namespace>();
  const ns = (uri: string): Namespace => {
    let n = namespaces.get(uri);
    if (!n) {
      n = addressSpace.getOwnNamespace().namespaceUri === uri ? addressSpace.getOwnNamespace() : addressSpace.registerNamespace(uri);
      namespaces.set(uri, n);
    }
    return n;
  };
  for (const e of config.equipment) {
    if (e.protocol !== 'opcua') continue;
    const n = ns(namespaceOf(config, e));
    const obj = n.addObject({ organizedBy: addressSpace.rootFolder.objects, browseName: e.id, nodeId: `s=${e.id}`, displayName: e.name });
    const folders: Record<string, UAObject> = {};
    for (const kind of ['Setpoints', 'Measurements', 'Supervisor']) {
      folders[kind] = n.addObject({ componentOf: obj, browseName: kind, nodeId: `s=${e.id}.${kind}`, typeDefinition: 'FolderType' });
    }
    for (const t of e.tags) {
      const folder = folders[t.kind === 'setpoint' ? 'Setpoints' : t.kind === 'measurement' ? 'Measurements' : 'Supervisor']!;
      addTag(n, folder, plant, e, t, samplingMs);
    }
  }
}

/** `ns=2;s=press.Setpoints.MainForce` or `s=press...` → the part after the namespace. */
function localNodeId(nodeId: string): string {
  return nodeId.replace(/^ns=[^;]+;/, '').replace(/^nsu=[^;]+;/, '');
}

function addTag(n: Namespace, folder: UAObject, plant: Plant, e: OpcUaEquipmentConfig, t: OpcUaTagConfig, samplingMs: number): void {
  const element = ARRAY_ELEMENT[t.data_type];
  const array = element !== undefined;
  const dataType = DataType[(element ?? t.data_type) as Exclude<OpcUaTagConfig['data_type'], `${string}Array`>];
  const writable = t.kind === 'setpoint' || (t.kind === 'supervisor' && WRITABLE_SUPERVISOR.has(t.name));
  const access = writable ? 'CurrentRead | CurrentWrite' : 'CurrentRead';
  const variant = (): Variant =>
    array ? new Variant({ dataType, arrayType: VariantArrayType.Array, value: doubles(plant.read(e.id, t.name)) }) : new Variant({ dataType, value: coerce(plant.read(e.id, t.name), t.data_type) });
  const get = variant;
  const set = (v: Variant): StatusCode => {
    try {
      const value: unknown = v.value;
      if (t.kind === 'setpoint') plant.writeSetpoint(e.id, t.name, value as number);
      else if (t.name === 'Heartbeat') plant.heartbeat(e.id, value as number);
      else if (t.name === 'SupervisorState') plant.setSupervisorState(e.id, String(value));
      else return StatusCodes.BadNotWritable;
      return StatusCodes.Good;
    } catch (err) {
      return statusOf(err);
    }
  };
  // raw data (spectra, frames, their ids) carry the acquisition time as source timestamp, so a client can pair them;
  // one DataValue per acquisition: a 351-point spectrum is not rebuilt and compared on every sample of every client
  let stampedSeq = -1;
  let stamped: DataValue | undefined;
  const timestamped_get = (): DataValue => {
    const acq = plant.acquisition(e.id, t.name)!;
    if (!stamped || acq.seq !== stampedSeq) {
      stampedSeq = acq.seq;
      const at = new Date(acq.at);
      stamped = new DataValue({ value: variant(), statusCode: StatusCodes.Good, sourceTimestamp: at, serverTimestamp: at });
    }
    return stamped;
  };
  const value = plant.acquisition(e.id, t.name) ? { timestamped_get } : writable ? { get, set } : { get };
  const common = {
    organizedBy: folder,
    browseName: t.name,
    nodeId: localNodeId(t.node_id),
    description: t.description ?? `${e.id}.${t.name} (${t.kind}, ${t.unit})`,
    accessLevel: access,
    userAccessLevel: access,
    minimumSamplingInterval: samplingMs,
  };
  const numeric = t.data_type === 'Double' || t.data_type === 'Float';
  let node: UAVariable;
  if (numeric && t.kind !== 'supervisor') {
    const r = t.range ? { low: t.range.min, high: t.range.max } : measurementRange(e.type, t.name);
    node = n.addAnalogDataItem({
      ...common,
      dataType: t.data_type,
      engineeringUnitsRange: r,
      // the PLC refuses a setpoint outside its instrument range (BadOutOfRange), and so does node-opcua
      ...(t.kind === 'setpoint' ? { instrumentRange: r } : {}),
      engineeringUnits: euInformation(t.unit),
      value,
    });
  } else if (array) {
    node = n.addVariable({ ...common, dataType: 'Double', valueRank: 1, arrayDimensions: [0], value });
  } else {
    node = n.addVariable({ ...common, dataType: t.data_type, value });
  }
  if (writable) guardWrites(node, !array);
}

/**
 * Why a write to a node of this shape must be refused before anything happens, or undefined when it may go on.
 * OPC UA Part 4 §5.10.4: a refused write has no effect and its status names the reason. A scalar node takes a
 * scalar (a one-element array is still an array: BadTypeMismatch) and no IndexRange (BadIndexRangeInvalid, as
 * open62541 answers; node-opcua would call our setter first and refuse afterwards, with the value moved).
 */
export function writeRefusal(scalarNode: boolean, variant: Variant | undefined, indexRange: string | NumericRange | null | undefined): StatusCode | undefined {
  const range = indexRange === undefined || indexRange === null || indexRange === '' ? undefined : NumericRange.coerce(indexRange);
  if (range && !range.isEmpty()) {
    if (!range.isValid()) return StatusCodes.BadIndexRangeInvalid;
    if (scalarNode) return StatusCodes.BadIndexRangeInvalid;
  }
  const arrayType = variant?.arrayType ?? VariantArrayType.Scalar;
  if (scalarNode && arrayType !== VariantArrayType.Scalar) return StatusCodes.BadTypeMismatch;
  if (!scalarNode && arrayType === VariantArrayType.Scalar) return StatusCodes.BadTypeMismatch;
  return undefined;
}

/** Put {@link writeRefusal} in front of node-opcua's own write path of one variable (callback and promise forms). */
function guardWrites(node: UAVariable, scalarNode: boolean): void {
  type WriteValue = (context: unknown, dataValue: DataValue, ...rest: unknown[]) => unknown;
  const target = node as unknown as { writeValue: WriteValue };
  const writeValue = target.writeValue.bind(node);
  target.writeValue = (context, dataValue, ...rest) => {
    const callback = typeof rest[rest.length - 1] === 'function' ? (rest[rest.length - 1] as (err: Error | null, s: StatusCode) => void) : undefined;
    const args = callback ? rest.slice(0, -1) : rest;
    const refused = writeRefusal(scalarNode, dataValue?.value, args[0] as string | NumericRange | null | undefined);
    if (!refused) return writeValue(context, dataValue, ...rest);
    if (callback) {
      callback(null, refused);
      return undefined;
    }
    return Promise.resolve(refused);
  };
}

function doubles(v: Value): Float64Array {
  return v instanceof Float64Array ? v : new Float64Array(0);
}

function coerce(v: Value, dataType: OpcUaTagConfig['data_type']): number | string | boolean | Buffer {
  if (typeof v === 'object') {
    // the ByteString of a frame: a Buffer view of the feed's bytes (node-opcua encodes Buffers), no copy
    return dataType === 'ByteString' && v instanceof Uint8Array ? Buffer.from(v.buffer, v.byteOffset, v.byteLength) : 0;
  }
  switch (dataType) {
    case 'ByteString':
      return Buffer.alloc(0);
    case 'String':
      return String(v);
    case 'Boolean':
      return Boolean(v);
    case 'Double':
    case 'Float':
      return Number(v);
    case 'UInt16':
    case 'UInt32':
      return Math.max(0, Math.trunc(Number(v)));
    default:
      return Math.trunc(Number(v));
  }
}

/** The StatusCode a PLC answers a refused write with. */
function statusOf(err: unknown): StatusCode {
  if (!LkError.is(err)) return StatusCodes.BadInternalError;
  switch (err.code) {
    case 'LK_PLC_LOST':
    case 'LK_PLC_NO_HEARTBEAT':
      return StatusCodes.BadInvalidState;
    case 'LK_PLC_OUT_OF_RANGE':
      return StatusCodes.BadOutOfRange;
    case 'LK_VALUE_INVALID':
      return StatusCodes.BadOutOfRange;
    case 'LK_TAG_NOT_WRITABLE':
      return StatusCodes.BadNotWritable;
    default:
      return StatusCodes.BadInternalError;
  }
}

/** Certificate (PEM) the simulator presents, under its PKI folder. */
export function serverCertificateFile(pkiDir: string): string {
  return join(pkiDir, 'own', 'certs', 'certificate.pem');
}
