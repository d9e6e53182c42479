/**
 * `linekeeper discover opcua|modbus` against real servers on loopback (port 0): the embedded simulator's OPC UA
 * server, and a second, differently-shaped node-opcua server built here (another vendor's names, two
 * namespaces, numeric and string node ids, Float/Int16/Boolean/Double-array variables, an AnalogItem with a
 * vendor unit label). The YAML written must load through the real configuration loader once placed in an
 * equipment entry.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { DataType, VariantArrayType, type OPCUAServer } from 'node-opcua';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, parseDocument } from 'yaml';
import { loadConfig } from '../../src/config/load.js';
import { euInformationFor } from '../../connectors/opcua/units.js';
import { runCli } from '../helpers/cli.js';
import { testOpcUaServer } from '../helpers/opcua-fixture.js';
import { startTestSimulator, type Simulator } from '../helpers/sim.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const PRESS_NS = 'urn:acme:tablet-press';
const UTIL_NS = 'urn:acme:utilities';

type Tag = { name: string; kind: string; unit: string; node_id: string; data_type: string; range?: { min: number; max: number } };

let dir: string;
let data: string;
let sim: Simulator;
let vendor: OPCUAServer;
let vendorUrl: string;

/** A press as another vendor builds it: its own names, namespaces, id styles, types and units. */
async function startVendorServer(pki: string): Promise<OPCUAServer> {
  const server = await testOpcUaServer(pki, '/acme');
  const as = server.engine.addressSpace!;
  const ns = as.registerNamespace(PRESS_NS);
  const util = as.registerNamespace(UTIL_NS);
  const rw = { accessLevel: 'CurrentRead | CurrentWrite', userAccessLevel: 'CurrentRead | CurrentWrite' };
  const ro = { accessLevel: 'CurrentRead', userAccessLevel: 'CurrentRead' };
  const press = ns.addObject({ organizedBy: as.rootFolder.objects, browseName: 'TabletPress 1', nodeId: 's=TP1' });
  const drive = ns.addObject({ componentOf: press, browseName: 'Drive', nodeId: 'i=5000' });
  ns.addAnalogDataItem({ organizedBy: press, browseName: 'Main Force', nodeId: 's=TP1.MainForce_act', dataType: 'Double', engineeringUnitsRange: { low: 0, high: 80 }, engineeringUnits: euInformationFor('kN'), ...ro, value: { dataType: DataType.Double, value: 12 } });
  // a vendor label with no UNECE unitId: kilopond, as many presses show hardness
  ns.addAnalogDataItem({ organizedBy: press, browseName: 'Hardness', nodeId: 's=TP1.Hardness', dataType: 'Float', engineeringUnitsRange: { low: 0, high: 30 }, engineeringUnits: { namespaceUri: 'http://acme.example/units', unitId: -1, displayName: { text: 'kp' }, description: { text: 'kilopond' } }, ...ro, value: { dataType: DataType.Float, value: 9.5 } });
  ns.addVariable({ componentOf: drive, browseName: 'SpeedSet', nodeId: 'i=1001', dataType: 'Int16', ...rw, value: { dataType: DataType.Int16, value: 40 } });
  ns.addVariable({ componentOf: drive, browseName: 'Running', nodeId: 'i=1002', dataType: 'Boolean', ...ro, value: { dataType: DataType.Boolean, value: true } });
  ns.addVariable({ organizedBy: press, browseName: 'ForceProfile', nodeId: 's=TP1.ForceProfile', dataType: 'Double', valueRank: 1, arrayDimensions: [0], ...ro, value: { dataType: DataType.Double, arrayType: VariantArrayType.Array, value: new Float64Array([1, 2, 3]) } });
  ns.addVariable({ organizedBy: press, browseName: 'StationCounts', nodeId: 's=TP1.StationCounts', dataType: 'Int32', valueRank: 1, arrayDimensions: [0], ...ro, value: { dataType: DataType.Int32, arrayType: VariantArrayType.Array, value: new Int32Array([1, 2]) } });
  ns.addVariable({ organizedBy: press, browseName: 'BatchStart', nodeId: 's=TP1.BatchStart', dataType: 'DateTime', ...ro, value: { dataType: DataType.DateTime, value: new Date(0) } });
  ns.addVariable({ organizedBy: press, browseName: 'Operator', nodeId: 's=TP1.Operator', dataType: 'String', ...rw, value: { dataType: DataType.String, value: 'x' } });
  ns.addVariable({ organizedBy: press, browseName: 'Fill Depth SP', nodeId: 's=TP1.FillDepth_sp', dataType: 'Float', ...rw, value: { dataType: DataType.Float, value: 8 } });
  const ut = util.addObject({ organizedBy: as.rootFolder.objects, browseName: 'Utilities', nodeId: 's=Utilities' });
  util.addAnalogDataItem({ organizedBy: ut, browseName: 'Air Pressure', nodeId: 'i=7', dataType: 'Double', engineeringUnitsRange: { low: 0, high: 1000 }, engineeringUnits: euInformationFor('kPa'), ...ro, value: { dataType: DataType.Double, value: 600 } });
  util.addVariable({ organizedBy: ut, browseName: 'RoomTemp', nodeId: 's=Room.Temp', dataType: 'Float', ...ro, value: { dataType: DataType.Float, value: 21 } });
  await server.start();
  return server;
}

/** The shipped site configuration with these equipment tag lists (and connection namespace) swapped in, loaded through the real loader. */
function loadWith(tags: Record<string, object[]>, namespaceUri?: string): ReturnType<typeof loadConfig> {
  const doc = parseDocument(readFileSync(join(ROOT, 'config/site.yaml'), 'utf8'));
  const site = doc.toJS() as { equipment: { id: string; tags: object[] }[]; connections: { id: string; namespace_uri?: string }[]; policy: { bundle: string }; data_dir: string };
  for (const [id, list] of Object.entries(tags)) {
    const e = site.equipment.find((x) => x.id === id);
    if (!e) throw new Error(`no equipment ${id}`);
    e.tags = list;
  }
  if (namespaceUri) site.connections.find((c) => c.id === 'opcua-line')!.namespace_uri = namespaceUri;
  site.policy.bundle = join(ROOT, 'config/policy');
  site.data_dir = data;
  const file = join(dir, `site-${Object.keys(tags).join('-')}.json`);
  writeFileSync(file, JSON.stringify(site));
  return loadConfig(file);
}

/** The six supervisor tags of an equipment of the shipped configuration (a vendor press has none of its own). */
function supervisorTags(equipment: string): object[] {
  const site = parse(readFileSync(join(ROOT, 'config/site.yaml'), 'utf8')) as { equipment: { id: string; tags: { kind: string }[] }[] };
  return site.equipment.find((e) => e.id === equipment)!.tags.filter((t) => t.kind === 'supervisor');
}

async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const port = (s.address() as { port: number }).port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'lk-discover-'));
  data = join(dir, 'data');
  sim = await startTestSimulator();
  vendor = await startVendorServer(join(dir, 'vendor-pki'));
  vendorUrl = `opc.tcp://127.0.0.1:${vendor.endpoints[0]!.port}/acme`;
}, 60_000);
afterAll(async () => {
  await vendor?.shutdown(0);
  await sim?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('discover opcua: the embedded simulator', () => {
  it('lists every configured OPC UA tag with its node id, data type, kind, unit and range, and the list loads as the configuration', async () => {
    const out = join(dir, 'sim.yaml');
    const r = await runCli('discover', 'opcua', sim.opcuaUrl, '--data', data, '--out', out);
    expect(r.code, r.err).toBe(0);
    expect(r.out).toBe('');
    const text = readFileSync(out, 'utf8');
    expect(text).toContain(`namespace_uri: "${sim.namespaceUri}"`);
    const groups = parse(text) as Record<string, Tag[]>;
    const configured = sim.config.config.equipment.filter((e) => e.protocol === 'opcua');
    expect(Object.keys(groups).sort()).toEqual(configured.map((e) => e.id).sort());
    for (const e of configured) {
      for (const t of e.tags) {
        if (!('node_id' in t)) continue;
        const d = groups[e.id]!.find((x) => x.name === t.name);
        expect(d, `${e.id}.${t.name}`).toBeDefined();
        expect(d!.node_id).toBe(t.node_id);
        expect(d!.data_type).toBe(t.data_type);
        expect(d!.kind, `${e.id}.${t.name}`).toBe(t.kind);
        // AnalogItems carry EngineeringUnits and EURange; the rest are unit 1
        if ((t.data_type === 'Double' || t.data_type === 'Float') && t.kind !== 'supervisor') {
          expect(d!.unit, `${e.id}.${t.name}`).toBe(t.unit);
          if (t.kind === 'setpoint') expect(d!.range).toEqual(t.range);
        }
      }
      expect(groups[e.id]!.length).toBe(e.tags.length);
    }
    const loaded = loadWith(groups);
    expect(loaded.config.equipment.find((e) => e.id === 'press')!.tags.map((t) => t.name)).toContain('MainForce');
  }, 60_000);

  it('--under one equipment with its namespace: one list named after it', async () => {
    const r = await runCli('discover', 'opcua', sim.opcuaUrl, '--data', data, '--under', 's=coater', '--namespace-uri', sim.namespaceUri);
    expect(r.code, r.err).toBe(0);
    const groups = parse(r.out) as Record<string, Tag[]>;
    expect(Object.keys(groups)).toEqual(['coater']);
    expect(groups['coater']!.find((t) => t.name === 'SprayRate')).toMatchObject({ kind: 'setpoint', unit: 'g/min', node_id: 's=coater.Setpoints.SprayRate', data_type: 'Double', range: { min: 0, max: 400 } });
  }, 30_000);

  it('a browse cut by --max-nodes says so on stderr and in the file, and still writes what it found', async () => {
    // level by level: 5 equipment objects and their 15 folders, then the first 10 variables
    const r = await runCli('discover', 'opcua', sim.opcuaUrl, '--data', data, '--max-nodes', '30');
    expect(r.code).toBe(0);
    expect(r.err).toMatch(/CUT: the browse stopped at --max-nodes 30; the list is incomplete/);
    expect(r.out).toMatch(/^# CUT: the browse stopped at --max-nodes 30/m);
    const groups = (parse(r.out) ?? {}) as Record<string, Tag[] | null>;
    const n = Object.values(groups).reduce((s, l) => s + (l?.length ?? 0), 0);
    expect(n).toBe(10);
  }, 30_000);

  it('--max-depth cuts too', async () => {
    const r = await runCli('discover', 'opcua', sim.opcuaUrl, '--data', data, '--max-depth', '2');
    expect(r.code).toBe(0);
    expect(r.err).toMatch(/CUT: the browse stopped at --max-depth 2/);
    // Objects → press → Setpoints: no variable is two levels down in the simulator
    expect(r.out).toMatch(/0 variables: 0 tags/);
  }, 30_000);
});

describe('discover opcua: another vendor\'s server', () => {
  let groups: Record<string, Tag[] | null>;
  let text: string;
  beforeAll(async () => {
    const r = await runCli('discover', 'opcua', vendorUrl, '--data', data, '--namespace-uri', PRESS_NS);
    expect(r.code, r.err).toBe(0);
    text = r.out;
    groups = parse(text) as Record<string, Tag[]>;
  }, 60_000);
  const tag = (g: string, name: string): Tag | undefined => groups[g]?.find((t) => t.name === name);

  it('groups per top-level object, names as PascalCase, node ids relative to the namespace or with nsu=', () => {
    expect(Object.keys(groups).sort()).toEqual(['tablet-press-1', 'utilities']);
    expect(tag('tablet-press-1', 'MainForce')).toEqual({ name: 'MainForce', kind: 'measurement', unit: 'kN', node_id: 's=TP1.MainForce_act', data_type: 'Double', range: { min: 0, max: 80 } });
    // numeric ids always carry their namespace (a relative i=N would be read in namespace 0)
    expect(tag('tablet-press-1', 'SpeedSet')).toMatchObject({ kind: 'setpoint', unit: '1', node_id: `nsu=${PRESS_NS};i=1001`, data_type: 'Int16' });
    expect(tag('tablet-press-1', 'Running')).toMatchObject({ kind: 'measurement', node_id: `nsu=${PRESS_NS};i=1002`, data_type: 'Boolean' });
    expect(tag('utilities', 'AirPressure')).toEqual({ name: 'AirPressure', kind: 'measurement', unit: 'kPa', node_id: `nsu=${UTIL_NS};i=7`, data_type: 'Double', range: { min: 0, max: 1000 } });
    expect(tag('utilities', 'RoomTemp')).toMatchObject({ node_id: `nsu=${UTIL_NS};s=Room.Temp`, data_type: 'Float', unit: '1' });
  });

  it('access level → kind: a writable number is a setpoint candidate, a writable string a measurement, read-only a measurement', () => {
    expect(tag('tablet-press-1', 'FillDepthSP')).toMatchObject({ kind: 'setpoint', data_type: 'Float', node_id: 's=TP1.FillDepth_sp' });
    expect(tag('tablet-press-1', 'Operator')).toMatchObject({ kind: 'measurement', data_type: 'String' });
    expect(tag('tablet-press-1', 'Hardness')!.kind).toBe('measurement');
    expect(text).toMatch(/# CHECK: writable: a setpoint candidate[^\n]*\n {2}- \{ name: FillDepthSP,/);
  });

  it('a vendor unit label is kept visible as a UCUM annotation and flagged; EURange becomes the range', () => {
    expect(tag('tablet-press-1', 'Hardness')).toMatchObject({ unit: '{kp}', data_type: 'Float', range: { min: 0, max: 30 } });
    expect(text).toMatch(/# CHECK: vendor unit "kp" has no UCUM mapping[^\n]*\n {2}- \{ name: Hardness,/);
  });

  it('a Double array is DoubleArray; what the configuration cannot take is a comment with the reason, not dropped', () => {
    expect(tag('tablet-press-1', 'ForceProfile')).toMatchObject({ data_type: 'DoubleArray', node_id: 's=TP1.ForceProfile' });
    expect(tag('tablet-press-1', 'StationCounts')).toBeUndefined();
    expect(tag('tablet-press-1', 'BatchStart')).toBeUndefined();
    expect(text).toMatch(/# not configurable: Int32 array: the configuration takes arrays of Double only \(DoubleArray\) — node_id "s=TP1.StationCounts"/);
    expect(text).toMatch(/# not configurable: DateTime: not a data_type the configuration takes .* — node_id "s=TP1.BatchStart"/);
    expect(text).toMatch(/9 tags, 2 only as comments/);
  });

  it('placed in equipment entries (with supervisor tags added), the lists load through the configuration loader', () => {
    const press = [...(groups['tablet-press-1'] as object[]), ...supervisorTags('press')];
    const coater = [...(groups['utilities'] as object[]), ...supervisorTags('coater')];
    const loaded = loadWith({ press, coater }, PRESS_NS);
    const hardness = loaded.config.equipment.find((e) => e.id === 'press')!.tags.find((t) => t.name === 'Hardness');
    expect(hardness).toMatchObject({ unit: '{kp}', data_type: 'Float', range: { min: 0, max: 30 } });
  });

  it('--under a numeric node of another namespace with nsu=', async () => {
    const r = await runCli('discover', 'opcua', vendorUrl, '--data', data, '--under', `nsu=${PRESS_NS};i=5000`, '--namespace-uri', PRESS_NS);
    expect(r.code, r.err).toBe(0);
    const g = parse(r.out) as Record<string, Tag[]>;
    expect(Object.keys(g)).toEqual(['drive']);
    expect(g['drive']!.map((t) => t.name).sort()).toEqual(['Running', 'SpeedSet']);
  }, 30_000);
});

describe('discover opcua: errors', () => {
  it('an unreachable endpoint: a clear error, exit 1, nothing written', async () => {
    const out = join(dir, 'unreachable.yaml');
    const port = await freePort();
    const r = await runCli('discover', 'opcua', `opc.tcp://127.0.0.1:${port}/none`, '--data', data, '--out', out);
    expect(r.code).toBe(1);
    expect(r.err).toMatch(/^linekeeper: opc\.tcp:\/\/127\.0\.0\.1:\d+\/none: .*\[LK_CONN_(UNAVAILABLE|TIMEOUT)\]/);
    expect(r.err).not.toMatch(/\n\s+at /);
    expect(existsSync(out)).toBe(false);
  }, 30_000);

  it('a start node the server does not have: LK_NOT_FOUND; a namespace it does not have: LK_VALIDATION (exit 2)', async () => {
    const a = await runCli('discover', 'opcua', vendorUrl, '--data', data, '--under', 's=Nope', '--namespace-uri', PRESS_NS);
    expect(a.code).toBe(1);
    expect(a.err).toContain('[LK_NOT_FOUND]');
    const b = await runCli('discover', 'opcua', vendorUrl, '--data', data, '--namespace-uri', 'urn:not-here');
    expect(b.code).toBe(2);
    expect(b.err).toMatch(/namespace urn:not-here is not on the server .*\[LK_VALIDATION\]/);
  }, 30_000);
});

describe('discover modbus --csv', () => {
  const HEADER = 'name,kind,table,address,type,unit,scale,offset,byte_order,word_order,min,max,readback_tolerance,description';
  const GOOD = [
    HEADER,
    '# the blender drive, from the vendor\'s register list',
    'DriveSpeedSp,setpoint,holding,200,float32,{rev}/min,,,,,5,35,0.01,"speed setpoint, r/min"',
    'DriveSpeed,measurement,input,100,int16,{rev}/min,0.1,,,,,,,',
    'BowlTemp,measurement,input,101,int32,Cel,0.01,-40,LE,LE,,,,"PT100, two registers"',
    'Energy,measurement,input,103,float64,kW.h,,,,,,,,',
  ].join('\n');

  it('imports a register table into the configuration\'s tag shape, and the list loads', async () => {
    const csv = join(dir, 'blender.csv');
    writeFileSync(csv, `${GOOD}\n`);
    const out = join(dir, 'blender.yaml');
    const r = await runCli('discover', 'modbus', '--csv', csv, '--equipment', 'blender', '--out', out);
    expect(r.code, r.err).toBe(0);
    const groups = parse(readFileSync(out, 'utf8')) as Record<string, object[]>;
    expect(groups['blender']).toEqual([
      { name: 'DriveSpeedSp', kind: 'setpoint', unit: '{rev}/min', table: 'holding', address: 200, type: 'float32', range: { min: 5, max: 35 }, readback_tolerance: 0.01, description: 'speed setpoint, r/min' },
      { name: 'DriveSpeed', kind: 'measurement', unit: '{rev}/min', table: 'input', address: 100, type: 'int16', scale: 0.1 },
      { name: 'BowlTemp', kind: 'measurement', unit: 'Cel', table: 'input', address: 101, type: 'int32', scale: 0.01, offset: -40, byte_order: 'LE', word_order: 'LE', description: 'PT100, two registers' },
      { name: 'Energy', kind: 'measurement', unit: 'kW.h', table: 'input', address: 103, type: 'float64' },
    ]);
    const loaded = loadWith({ blender: [...groups['blender']!, ...supervisorTags('blender')] });
    expect(loaded.config.equipment.find((e) => e.id === 'blender')!.tags.find((t) => t.name === 'BowlTemp')).toMatchObject({ scale: 0.01, offset: -40, word_order: 'LE' });
  });

  it('a bad row names the line and the column, exits 65 and writes nothing', async () => {
    const cases: [string, RegExp][] = [
      ['Bad,measurement,input,110,float,Cel,,,,,,,,', /blender-bad\.csv:7: column "type": .*\[LK_TAG_TABLE_INVALID\]/],
      ['Bad,setpoint,input,110,float32,Cel,,,,,,,,', /blender-bad\.csv:7: column "table": a setpoint must be a holding register/],
      ['Bad,measurement,input,110,float32,degC-ish,,,,,,,,', /blender-bad\.csv:7: column "unit": unknown unit "degC-ish"/],
      ['Bad,measurement,input,4x0110,float32,Cel,,,,,,,,', /blender-bad\.csv:7: column "address": "4x0110" is not a number/],
      ['Bad,measurement,input,102,float32,Cel,,,,,,,,', /blender-bad\.csv:7: column "address": register input 102 overlaps BowlTemp \(line 5\)/],
      ['DriveSpeed,measurement,input,120,float32,Cel,,,,,,,,', /blender-bad\.csv:7: column "name": duplicate tag "DriveSpeed" \(also on line 4\)/],
      ['Bad,measurement,input,120,float32,Cel,,,,,10,,,', /blender-bad\.csv:7: column "max": min and max go together/],
    ];
    const csv = join(dir, 'blender-bad.csv');
    const out = join(dir, 'blender-bad.yaml');
    for (const [row, want] of cases) {
      writeFileSync(csv, `${GOOD}\n${row}\n`);
      const r = await runCli('discover', 'modbus', '--csv', csv, '--out', out);
      expect(r.code, row).toBe(65);
      expect(r.err, row).toMatch(want);
      expect(r.err).toContain('[LK_TAG_TABLE_INVALID]');
      expect(existsSync(out), row).toBe(false);
    }
  });

  it('an unknown or missing column is named on the header line', async () => {
    const csv = join(dir, 'header.csv');
    writeFileSync(csv, 'name,kind,table,adress,type,unit\nX,measurement,input,1,int16,1\n');
    const r = await runCli('discover', 'modbus', '--csv', csv);
    expect(r.code).toBe(65);
    expect(r.err).toMatch(/header\.csv:1: column "adress": unknown column/);
    expect(r.err).toMatch(/header\.csv:1: column "address": required column missing/);
    expect(r.out).toBe('');
  });
});
