/**
 * A small real node-opcua server for the OPC UA connector's tests of things
 * the plant simulator does not do on purpose: values with Bad/Uncertain
 * status, NaN, a value of the wrong type, and server-side faults of a
 * subscription (its monitored items disabled, or the subscription
 * terminated) — through the server engine, the way a misbehaving PLC would.
 *
 * One equipment `rig` in namespace `urn:linekeeper:fixture`:
 *   rig.Value    Double AnalogItem (kN), set by the test with any status
 *   rig.Ramp     Double, +1 every 50 ms (a value that keeps changing)
 *   rig.Level    Int16 setpoint (mm), range −100..100
 *   rig.Ratio    Float setpoint (%)
 *   rig.Heartbeat UInt32 supervisor, writable
 *   rig.Loose    DataType BaseDataType (any value), configured as Double: a PLC sending the wrong type
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import {
  DataType,
  MonitoringMode,
  OPCUACertificateManager,
  OPCUAServer,
  StatusCodes,
  Variant,
  type IServerTransportSettings,
  type StatusCode,
  type UAVariable,
} from 'node-opcua';
import type { OpcUaConnectionConfig, OpcUaEquipmentConfig } from '../../src/config/schema.js';
import { euInformationFor } from '../../connectors/opcua/units.js';

export const FIXTURE_NS = 'urn:linekeeper:fixture';

export interface OpcUaFixture {
  readonly url: string;
  readonly server: OPCUAServer;
  /** Set rig.Value (or another variable by tag name) with a status, e.g. StatusCodes.UncertainLastUsableValue. */
  set(tag: string, value: number | string | boolean, dataType?: DataType, status?: StatusCode): void;
  /** Disable every monitored item of a server-side subscription: it stays alive (keep-alives) and reports nothing. */
  silenceSubscription(subscriptionId: number): boolean;
  /** Terminate a subscription on the server without telling the client. */
  dropSubscription(subscriptionId: number): boolean;
  /** Close every client session on the server (as a PLC does on session timeout or a restart of its OPC UA stack); returns how many. */
  closeSessions(): number;
  readonly equipment: OpcUaEquipmentConfig;
  connection(overrides?: Partial<OpcUaConnectionConfig>): OpcUaConnectionConfig;
  close(): Promise<void>;
}

/**
 * Sizes of the Buffers `Buffer.allocUnsafe` hands out while `fn` runs, with `fn`'s result: node-opcua allocates each
 * message chunk it sends so, whole, whatever the message's length, so they show the chunk size a link really uses.
 */
export async function bufferAllocations<T>(fn: () => Promise<T>): Promise<{ sizes: number[]; result: T }> {
  const sizes: number[] = [];
  const original = Buffer.allocUnsafe;
  Buffer.allocUnsafe = ((n: number) => {
    sizes.push(n);
    return original(n);
  }) as typeof Buffer.allocUnsafe;
  try {
    return { sizes, result: await fn() };
  } finally {
    Buffer.allocUnsafe = original;
  }
}

/**
 * A node-opcua server for a test, initialised and not yet started: loopback, a free port, anonymous, its PKI
 * (accepting any client certificate) in `pki`, the transport limits it answers a client's Hello with when given. The caller builds its address space, then `start()`s it.
 */
export async function testOpcUaServer(pki: string, resourcePath: string, transportSettings?: IServerTransportSettings): Promise<OPCUAServer> {
  mkdirSync(pki, { recursive: true });
  const server = new OPCUAServer({
    port: 0,
    hostname: '127.0.0.1',
    host: '127.0.0.1',
    resourcePath,
    serverCertificateManager: new OPCUACertificateManager({ rootFolder: join(pki, 'server'), automaticallyAcceptUnknownCertificate: true }),
    userCertificateManager: new OPCUACertificateManager({ rootFolder: join(pki, 'user'), automaticallyAcceptUnknownCertificate: true }),
    allowAnonymous: true,
    disableDiscovery: true,
    ...(transportSettings ? { transportSettings } : {}),
  });
  await server.initialize();
  return server;
}

/** Start the fixture server on 127.0.0.1 (free port); its PKI goes under `dataDir`. */
export async function startOpcUaFixture(dataDir: string): Promise<OpcUaFixture> {
  const server = await testOpcUaServer(join(dataDir, 'fixture-pki'), '/fixture');
  const as = server.engine.addressSpace!;
  const ns = as.registerNamespace(FIXTURE_NS);
  const rig = ns.addObject({ organizedBy: as.rootFolder.objects, browseName: 'rig', nodeId: 's=rig' });
  const vars = new Map<string, UAVariable>();
  const rw = { accessLevel: 'CurrentRead | CurrentWrite', userAccessLevel: 'CurrentRead | CurrentWrite', minimumSamplingInterval: 20 };
  vars.set(
    'Value',
    ns.addAnalogDataItem({ organizedBy: rig, browseName: 'Value', nodeId: 's=rig.Value', dataType: 'Double', engineeringUnitsRange: { low: 0, high: 100 }, engineeringUnits: euInformationFor('kN'), minimumSamplingInterval: 20, value: { dataType: DataType.Double, value: 1 } }),
  );
  vars.set('Ramp', ns.addVariable({ organizedBy: rig, browseName: 'Ramp', nodeId: 's=rig.Ramp', dataType: 'Double', minimumSamplingInterval: 20, value: { dataType: DataType.Double, value: 0 } }));
  vars.set(
    'Level',
    ns.addAnalogDataItem({ organizedBy: rig, browseName: 'Level', nodeId: 's=rig.Level', dataType: 'Int16', engineeringUnitsRange: { low: -100, high: 100 }, instrumentRange: { low: -100, high: 100 }, engineeringUnits: euInformationFor('mm'), ...rw, value: { dataType: DataType.Int16, value: 0 } }),
  );
  vars.set('Ratio', ns.addVariable({ organizedBy: rig, browseName: 'Ratio', nodeId: 's=rig.Ratio', dataType: 'Float', ...rw, value: { dataType: DataType.Float, value: 0 } }));
  vars.set('Heartbeat', ns.addVariable({ organizedBy: rig, browseName: 'Heartbeat', nodeId: 's=rig.Heartbeat', dataType: 'UInt32', ...rw, value: { dataType: DataType.UInt32, value: 0 } }));
  vars.set('Loose', ns.addVariable({ organizedBy: rig, browseName: 'Loose', nodeId: 's=rig.Loose', dataType: 'BaseDataType', minimumSamplingInterval: 20, value: { dataType: DataType.Double, value: 0 } }));
  let ramp = 0;
  const timer = setInterval(() => vars.get('Ramp')!.setValueFromSource({ dataType: DataType.Double, value: ++ramp }), 50);
  await server.start();
  const url = `opc.tcp://127.0.0.1:${server.endpoints[0]!.port}/fixture`;

  const equipment: OpcUaEquipmentConfig = {
    id: 'rig',
    name: 'Test rig',
    type: 'plc',
    protocol: 'opcua',
    connection: 'opcua-fixture',
    heartbeat: { period_ms: 100 },
    tags: [
      { name: 'Value', kind: 'measurement', unit: 'kN', node_id: 's=rig.Value', data_type: 'Double' },
      { name: 'Ramp', kind: 'measurement', unit: '1', node_id: 's=rig.Ramp', data_type: 'Double' },
      { name: 'Level', kind: 'setpoint', unit: 'mm', node_id: 's=rig.Level', data_type: 'Int16', range: { min: -100, max: 100 }, readback_tolerance: 0 },
      { name: 'Ratio', kind: 'setpoint', unit: '%', node_id: 's=rig.Ratio', data_type: 'Float', readback_tolerance: 0 },
      { name: 'Heartbeat', kind: 'supervisor', unit: '1', node_id: 's=rig.Heartbeat', data_type: 'UInt32' },
      { name: 'Loose', kind: 'measurement', unit: '1', node_id: 's=rig.Loose', data_type: 'Double' },
    ],
  };
  const findSub = (id: number) => server.engine.findSubscription(id);
  return {
    url,
    server,
    equipment,
    set(tag, value, dataType = DataType.Double, status = StatusCodes.Good) {
      vars.get(tag)!.setValueFromSource(new Variant({ dataType, value }), status);
    },
    silenceSubscription(id) {
      const sub = findSub(id);
      if (!sub) return false;
      for (const h of sub.getMonitoredItems().serverHandles) sub.getMonitoredItem(h)?.setMonitoringMode(MonitoringMode.Disabled);
      return true;
    },
    dropSubscription(id) {
      const sub = findSub(id);
      if (!sub) return false;
      sub.terminate();
      return true;
    },
    closeSessions() {
      const sessions = server.engine.getSessions();
      for (const s of sessions) server.engine.closeSession(s.authenticationToken, true, 'Forcing');
      return sessions.length;
    },
    connection: (o = {}) => ({
      id: 'opcua-fixture',
      protocol: 'opcua',
      endpoint: url,
      namespace_uri: FIXTURE_NS,
      security: { mode: 'None', policy: 'None' },
      max_data_age_ms: 2000,
      request_timeout_ms: 2000,
      keepalive_ms: 400,
      ...o,
    }),
    async close() {
      clearInterval(timer);
      await server.shutdown(0);
    },
  };
}
