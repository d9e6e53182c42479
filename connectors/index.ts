/**
 * One connector per configured connection, with the equipment that uses it.
 * The endpoint `sim` resolves to the embedded simulator's addresses, which
 * the caller passes in (only main-level code starts the simulator).
 */
import type { Clock } from '../src/clock.js';
import type { ConnectionConfig, ModbusEquipmentConfig, OpcUaEquipmentConfig, SiteConfig } from '../src/config/schema.js';
import { LkError } from '../src/errors.js';
import type { Logger } from '../src/log.js';
import { createModbusConnector } from './modbus/index.js';
import { createOpcUaConnector } from './opcua/index.js';
import type { Connector } from './types.js';

export interface ConnectorDeps {
  /** Data directory (the OPC UA client PKI lives under it). */
  readonly dataDir: string;
  /** Addresses of the embedded simulator, for connections whose endpoint is `sim`. */
  readonly sim?: { readonly opcuaUrl: string; readonly modbusHost: string; readonly modbusPort: number };
  readonly clock?: Clock;
  readonly logger?: Logger;
  /** The site's `unit_aliases` (OPC UA EngineeringUnits labels → UCUM). */
  readonly unitAliases?: SiteConfig['unit_aliases'];
}

/** Split `host:port` (`[v6]:port` too). */
export function parseHostPort(endpoint: string): { host: string; port: number } {
  const m = /^\[?([^\]]+?)\]?:(\d{1,5})$/.exec(endpoint);
  const port = Number(m?.[2]);
  if (!m || !(port > 0 && port <= 65535)) throw new LkError('LK_CONFIG_INVALID', `endpoint "${endpoint}" is not host:port`);
  return { host: m[1]!, port };
}

/**
 * The connector of one connection.
 *
 * @throws LkError LK_CONFIG_INVALID when the endpoint is `sim` and no simulator
 *   addresses are given, or the endpoint is malformed; whatever the protocol's factory throws.
 */
export function createConnector(connection: ConnectionConfig, equipment: SiteConfig['equipment'], deps: ConnectorDeps): Connector {
  const mine = equipment.filter((e) => e.connection === connection.id);
  const needSim = (): NonNullable<ConnectorDeps['sim']> => {
    if (!deps.sim) throw new LkError('LK_CONFIG_INVALID', `connection ${connection.id}: endpoint "sim" needs the embedded simulator`);
    return deps.sim;
  };
  const common = { ...(deps.clock ? { clock: deps.clock } : {}), ...(deps.logger ? { logger: deps.logger } : {}) };
  if (connection.protocol === 'modbus') {
    const { host, port } = connection.endpoint === 'sim' ? { host: needSim().modbusHost, port: needSim().modbusPort } : parseHostPort(connection.endpoint);
    return createModbusConnector({ connection, equipment: mine.filter((e): e is ModbusEquipmentConfig => e.protocol === 'modbus'), host, port, ...common });
  }
  const url = connection.endpoint === 'sim' ? needSim().opcuaUrl : connection.endpoint;
  return createOpcUaConnector({ connection, equipment: mine.filter((e): e is OpcUaEquipmentConfig => e.protocol === 'opcua'), url, dataDir: deps.dataDir, ...(deps.unitAliases ? { unitAliases: deps.unitAliases } : {}), ...common });
}

/** Every connector of the site, in configuration order. */
export function createConnectors(config: SiteConfig, deps: ConnectorDeps): Connector[] {
  const withAliases: ConnectorDeps = config.unit_aliases ? { ...deps, unitAliases: config.unit_aliases } : deps;
  return config.connections.map((c) => createConnector(c, config.equipment, withAliases));
}

export { FALLBACK, SUPERVISED, commandValue, counterMax, nextBeat, profileOf, profilesOf, stateOf, tagType, type StateValue, type SupervisionProfile } from './supervision.js';
