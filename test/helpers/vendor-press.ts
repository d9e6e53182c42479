/**
 * A press that is not linekeeper's simulator: a real node-opcua server with a
 * vendor's own names, numeric ids in a non-zero namespace, Float nodes, an
 * Int16 in tenths, vendor unit labels and an enumeration, for the tests of
 * configuration that fits real devices.
 *
 * Namespaces after the server's own (index 1): `urn:acme:other` (index 2,
 * registered first so that the press's is not the first), `urn:acme:press`
 * (index 3, numeric ids and one string id), `urn:acme:supervisor` (string ids
 * of the six supervisor nodes).
 *
 *   i=6001  Hardness        Float AnalogItem, EU "kp" (no UNECE code), EURange 0..30
 *   i=6002  FillDepth       Int16 AnalogItem, tenths of a mm, EU mm, EURange 0..200, writable
 *   i=6003  Output          Double AnalogItem, EU "Tabl./h"
 *   i=6004  Temperature     Double AnalogItem, EU °F (UNECE FAH): the site configures Cel, no alias
 *   i=6005  TurretSpeed     Double AnalogItem, EU "U/min", writable: the site configures {rev}/min, no alias
 *   i=6006  StationForces   Float[8] AnalogItem, EU kN
 *   i=6007  MachineState    Int16, 0 STOPPED / 1 RUNNING / 2 FAULT
 *   i=6008  Pressure        Double AnalogItem, EU kPa, EURange 0..50
 *   i=6009  Recipe          String, read-only
 *   s=Press.Counter         UInt32
 *   i=6001 in urn:acme:other: a decoy Double (so a wrong namespace reads a wrong value, not an error)
 */
import { join } from 'node:path';
import { DataType, Variant, VariantArrayType, type OPCUAServer, type UAVariable } from 'node-opcua';
import { testOpcUaServer } from './opcua-fixture.js';
import { euInformationFor } from '../../connectors/opcua/units.js';

export const PRESS_NS = 'urn:acme:press';
export const SUPERVISOR_NS = 'urn:acme:supervisor';

export interface VendorPress {
  readonly url: string;
  /** Current value of a variable by browse name. */
  value(name: string): unknown;
  set(name: string, value: unknown, dataType: DataType): void;
  close(): Promise<void>;
}

const eu = (displayName: string, unitId = -1) => ({ namespaceUri: 'http://www.opcfoundation.org/UA/units/un/cefact', unitId, displayName: { text: displayName }, description: { text: displayName } });

export async function startVendorPress(dir: string): Promise<VendorPress> {
  const server = await testOpcUaServer(join(dir, 'vendor-pki'), '/acme');
  const as = server.engine.addressSpace!;
  const other = as.registerNamespace('urn:acme:other');
  const ns = as.registerNamespace(PRESS_NS);
  const sup = as.registerNamespace(SUPERVISOR_NS);
  const objects = as.rootFolder.objects;
  const vars = new Map<string, UAVariable>();
  const rw = { accessLevel: 'CurrentRead | CurrentWrite', userAccessLevel: 'CurrentRead | CurrentWrite' } as const;
  const ro = { accessLevel: 'CurrentRead', userAccessLevel: 'CurrentRead' } as const;
  other.addVariable({ organizedBy: objects, browseName: 'Decoy', nodeId: 'i=6001', dataType: 'Double', value: { dataType: DataType.Double, value: -1 } });
  const press = ns.addObject({ organizedBy: objects, browseName: 'AcmePress', nodeId: 'i=5000' });
  const analog = (name: string, id: string, dataType: string, value: Variant, unit: ReturnType<typeof eu>, range?: { low: number; high: number }, access: typeof rw | typeof ro = ro) =>
    vars.set(name, ns.addAnalogDataItem({ organizedBy: press, browseName: name, nodeId: id, dataType, engineeringUnitsRange: range ?? { low: 0, high: 1000 }, engineeringUnits: unit, ...access, value }));
  analog('Hardness', 'i=6001', 'Float', new Variant({ dataType: DataType.Float, value: 10 }), eu('kp'), { low: 0, high: 30 });
  analog('FillDepth', 'i=6002', 'Int16', new Variant({ dataType: DataType.Int16, value: 123 }), euInformationFor('mm'), { low: 0, high: 200 }, rw);
  analog('Output', 'i=6003', 'Double', new Variant({ dataType: DataType.Double, value: 250_000 }), eu('Tabl./h'), { low: 0, high: 400_000 });
  analog('Temperature', 'i=6004', 'Double', new Variant({ dataType: DataType.Double, value: 77 }), eu('°F', 0x464148), { low: 0, high: 300 });
  analog('TurretSpeed', 'i=6005', 'Double', new Variant({ dataType: DataType.Double, value: 60 }), eu('U/min'), { low: 0, high: 120 }, rw);
  const forces = ns.addVariable({ organizedBy: press, browseName: 'StationForces', nodeId: 'i=6006', dataType: 'Float', valueRank: 1, arrayDimensions: [8], ...ro, value: new Variant({ dataType: DataType.Float, arrayType: VariantArrayType.Array, value: new Float32Array([10, 10.5, 11, 11.5, 12, 12.5, 13, 13.5]) }) });
  vars.set('StationForces', forces);
  vars.set('MachineState', ns.addVariable({ organizedBy: press, browseName: 'MachineState', nodeId: 'i=6007', dataType: 'Int16', ...ro, value: { dataType: DataType.Int16, value: 1 } }));
  analog('Pressure', 'i=6008', 'Double', new Variant({ dataType: DataType.Double, value: 20 }), euInformationFor('kPa'), { low: 0, high: 50 });
  vars.set('Recipe', ns.addVariable({ organizedBy: press, browseName: 'Recipe', nodeId: 'i=6009', dataType: 'String', ...ro, value: { dataType: DataType.String, value: 'R-7' } }));
  vars.set('Counter', ns.addVariable({ organizedBy: press, browseName: 'Counter', nodeId: 's=Press.Counter', dataType: 'UInt32', ...ro, value: { dataType: DataType.UInt32, value: 42 } }));
  const supFolder = sup.addObject({ organizedBy: objects, browseName: 'Supervisor', nodeId: 's=Supervisor' });
  const supVar = (name: string, dataType: DataType, value: unknown, access: typeof rw | typeof ro) =>
    vars.set(name, sup.addVariable({ organizedBy: supFolder, browseName: name, nodeId: `s=Supervisor.${name}`, dataType: DataType[dataType], ...access, value: { dataType, value } }));
  supVar('Heartbeat', DataType.UInt32, 0, rw);
  supVar('WatchdogTimeoutMs', DataType.UInt32, 60_000, ro);
  supVar('SupervisorState', DataType.String, 'ATTENDED', rw);
  supVar('ActiveRecipe', DataType.String, 'R-7', ro);
  supVar('LkgRecipeId', DataType.String, 'R-7', ro);
  supVar('RevertCount', DataType.UInt32, 0, ro);
  await server.start();
  return {
    url: `opc.tcp://127.0.0.1:${server.endpoints[0]!.port}/acme`,
    value: (name) => {
      const v: unknown = vars.get(name)!.readValue().value.value;
      return v;
    },
    set: (name, value, dataType) => {
      vars.get(name)!.setValueFromSource(new Variant({ dataType, value }));
    },
    close: () => server.shutdown(0),
  };
}

/** The site's tags for the vendor press (the configuration an automation engineer writes from the vendor's tag list). */
export const VENDOR_PRESS_TAGS = [
  { name: 'Hardness', kind: 'measurement', unit: 'N', node_id: 'i=6001', data_type: 'Float', range: { min: 0, max: 294.1995 } },
  { name: 'FillDepth', kind: 'setpoint', unit: 'mm', node_id: 'i=6002', data_type: 'Int16', scale: 0.1, range: { min: 0, max: 20 }, readback_tolerance: 0 },
  { name: 'Output', kind: 'measurement', unit: '{tbl}/h', node_id: 'i=6003', data_type: 'Double' },
  { name: 'Temperature', kind: 'measurement', unit: 'Cel', node_id: 'i=6004', data_type: 'Double' },
  { name: 'TurretSpeed', kind: 'setpoint', unit: '{rev}/min', node_id: 'i=6005', data_type: 'Double', readback_tolerance: 0.001 },
  { name: 'StationForces', kind: 'measurement', unit: 'kN', node_id: 'i=6006', data_type: 'FloatArray' },
  { name: 'MachineState', kind: 'measurement', unit: '1', node_id: 'i=6007', data_type: 'Int16', enum: { '0': 'STOPPED', '1': 'RUNNING', '2': 'FAULT' } },
  { name: 'Pressure', kind: 'measurement', unit: 'kPa', node_id: 'i=6008', data_type: 'Double', range: { min: 0, max: 40 } },
  { name: 'Counter', kind: 'measurement', unit: '1', node_id: 's=Press.Counter', data_type: 'UInt32' },
  { name: 'Heartbeat', kind: 'supervisor', unit: '1', node_id: `nsu=${SUPERVISOR_NS};s=Supervisor.Heartbeat`, data_type: 'UInt32' },
  { name: 'WatchdogTimeoutMs', kind: 'supervisor', unit: 'ms', node_id: `nsu=${SUPERVISOR_NS};s=Supervisor.WatchdogTimeoutMs`, data_type: 'UInt32' },
  { name: 'SupervisorState', kind: 'supervisor', unit: '1', node_id: `nsu=${SUPERVISOR_NS};s=Supervisor.SupervisorState`, data_type: 'String' },
  { name: 'ActiveRecipe', kind: 'supervisor', unit: '1', node_id: `nsu=${SUPERVISOR_NS};s=Supervisor.ActiveRecipe`, data_type: 'String' },
  { name: 'LkgRecipeId', kind: 'supervisor', unit: '1', node_id: `nsu=${SUPERVISOR_NS};s=Supervisor.LkgRecipeId`, data_type: 'String' },
  { name: 'RevertCount', kind: 'supervisor', unit: '1', node_id: `nsu=${SUPERVISOR_NS};s=Supervisor.RevertCount`, data_type: 'UInt32' },
] as const;

/** The site's aliases for the vendor's labels. */
export const VENDOR_UNIT_ALIASES = {
  kp: { unit: 'N', factor: 9.80665, offset: 0 },
  'Tabl./h': { unit: '{tbl}/h', factor: 1, offset: 0 },
} as const;
