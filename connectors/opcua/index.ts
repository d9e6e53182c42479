/**
 * The OPC UA connector of linekeeper. Everything other modules need:
 * `createOpcUaConnector(...)`, the PKI operations behind `linekeeper certs`
 * and the browse behind `linekeeper discover opcua`.
 */
import type { OpcUaConnector, OpcUaConnectorOptions } from './api.js';
import { OpcUaConnectorImpl } from './connector.js';

export type { OpcUaConnector, OpcUaConnectorOptions, OpcUaSubscription } from './api.js';
export { listCertificates, pkiFolder, rejectServerCertificate, trustServerCertificate, type CertificateInfo } from './pki.js';
export { euInformationFor, ucumOf, unitMatches, UNIT_TABLE } from './units.js';
export { routeOpcUaConsole } from './console.js';
export { discoverOpcUa, type DiscoverOpcUaOptions, type OpcUaDiscovery } from './discover.js';
export { inspectNodes, type InspectOptions, type NodeFinding } from './inspect.js';
export { assembleFrameSet, decodeFrame, encodeFrame, FRAME_CAMERAS, FRAME_FORMAT_GREY8, FRAME_FORMAT_GREY8_WIDE, FRAME_HEADER_BYTES, FRAME_HEADER_BYTES_WIDE, type Frame, type WireFrameSet } from './frames.js';

/**
 * Create the connector of one OPC UA connection and the equipment that uses
 * it. Nothing is contacted until `connect()`. Throws LK_CONFIG_INVALID for a
 * security mode/policy pair that cannot work (Sign without Basic256Sha256,
 * ...) or a duplicate tag id.
 */
export function createOpcUaConnector(options: OpcUaConnectorOptions): OpcUaConnector {
  return new OpcUaConnectorImpl(options);
}
