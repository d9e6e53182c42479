/**
 * Configuration that fits a real device, against a press that is not the
 * simulator (test/helpers/vendor-press.ts): relative numeric node ids in the
 * connection's namespace, Int16 in tenths (scale), vendor unit labels through
 * the site's unit aliases, a unit mismatch on one tag that leaves the other
 * tags served (and the bad setpoint never written), a Float array, an
 * enumeration, the server's EURange in engineering units, and doctor's look at
 * every configured node.
 */
import { mkdtempSync, rmSync, writeFileSync, cpSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createOpcUaConnector, inspectNodes, type OpcUaConnector } from '../../connectors/opcua/index.js';
import type { WriteCapability } from '../../connectors/types.js';
import type { OpcUaConnectionConfig, OpcUaEquipmentConfig } from '../../src/config/schema.js';
import { runDoctor } from '../../src/ops/doctor.js';
import { rejectionCode as codeOf } from '../helpers/codes.js';
import { PRESS_NS, startVendorPress, VENDOR_PRESS_TAGS, VENDOR_UNIT_ALIASES, type VendorPress } from '../helpers/vendor-press.js';
import { DataType } from 'node-opcua';

let dir: string;
let press: VendorPress;
let c: OpcUaConnector;
let writer: WriteCapability;

const connection = (): OpcUaConnectionConfig => ({
  id: 'acme-press',
  protocol: 'opcua',
  endpoint: press.url,
  namespace_uri: PRESS_NS,
  security: { mode: 'None', policy: 'None' },
  max_data_age_ms: 2000,
  request_timeout_ms: 2000,
  keepalive_ms: 500,
});

const equipment = (tags: readonly object[] = VENDOR_PRESS_TAGS): OpcUaEquipmentConfig => ({
  id: 'press',
  name: 'Acme rotary press',
  type: 'press',
  protocol: 'opcua',
  connection: 'acme-press',
  heartbeat: { period_ms: 1000 },
  tags: tags as OpcUaEquipmentConfig['tags'],
});

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'lk-vendor-'));
  press = await startVendorPress(dir);
  c = createOpcUaConnector({ connection: connection(), equipment: [equipment()], url: press.url, dataDir: join(dir, 'data'), unitAliases: VENDOR_UNIT_ALIASES, backoff: { initialMs: 100, maxMs: 400 } });
  // a tag whose unit differs from the server's no longer closes the connection
  await c.connect();
  writer = c.claimWriter();
});

afterAll(async () => {
  await c?.close();
  await press?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('OPC UA tags on a vendor press', () => {
  it('resolves a relative numeric node id (i=6001) in the connection namespace, not in namespace 0 or another one', async () => {
    const [hardness, counter] = await c.read(['press.Hardness', 'press.Counter']);
    expect(hardness).toMatchObject({ quality: 'good', unit: 'N' });
    expect(counter).toMatchObject({ quality: 'good', value: 42 });
    const d = await c.describe();
    expect(d.find((t) => t.tag === 'press.Hardness')?.address).toBe('ns=3;i=6001');
  });

  it('maps a vendor label through the site alias: 10 kp reads as 98.0665 N, Tabl./h as {tbl}/h', async () => {
    const [hardness, output] = await c.read(['press.Hardness', 'press.Output']);
    expect(hardness!.value as number).toBeCloseTo(98.0665, 9);
    expect(output).toMatchObject({ quality: 'good', value: 250_000, unit: '{tbl}/h' });
  });

  it('scales an Int16 in tenths on read and undoes it on write, with the read-back in engineering units', async () => {
    expect((await c.read(['press.FillDepth']))[0]).toMatchObject({ quality: 'good', value: 12.3, unit: 'mm' });
    const r = await writer.write('press.FillDepth', 14.56);
    expect(press.value('FillDepth')).toBe(146);
    expect(r).toMatchObject({ written: 14.6, readBack: 14.6, verified: true });
    // the type's range is checked on the raw value: 3276.8 mm is 32768 tenths, past Int16
    expect(await codeOf(writer.write('press.FillDepth', 3276.8))).toBe('LK_VALUE_INVALID');
    expect(press.value('FillDepth')).toBe(146);
  });

  it('a unit mismatch marks that tag bad and keeps the other tags of the equipment served', async () => {
    expect(c.health().state).toBe('connected');
    const s = await c.read(['press.Temperature', 'press.TurretSpeed', 'press.Pressure', 'press.Counter']);
    expect(s[0]).toMatchObject({ quality: 'bad', status: 'LK_TAG_UNIT_MISMATCH', value: null });
    expect(s[1]).toMatchObject({ quality: 'bad', status: 'LK_TAG_UNIT_MISMATCH' });
    expect(s.slice(2).every((x) => x.quality === 'good')).toBe(true);
    const bad = c.health().badTags ?? {};
    expect(Object.keys(bad).sort()).toEqual(['press.Temperature', 'press.TurretSpeed']);
    expect(bad['press.TurretSpeed']).toMatch(/U\/min.*\{rev\}\/min/);
  });

  it('never writes a setpoint whose unit does not match: LK_TAG_UNIT_MISMATCH and the node unchanged', async () => {
    expect(await codeOf(writer.write('press.TurretSpeed', 70))).toBe('LK_TAG_UNIT_MISMATCH');
    expect(press.value('TurretSpeed')).toBe(60);
  });

  it('reads a Float array as numbers in the unit, and an enumeration as the name of its value', async () => {
    const [forces, state] = await c.read(['press.StationForces', 'press.MachineState']);
    expect(forces).toMatchObject({ quality: 'good', unit: 'kN', value: [10, 10.5, 11, 11.5, 12, 12.5, 13, 13.5] });
    expect(state).toMatchObject({ quality: 'good', value: 'RUNNING' });
    press.set('MachineState', 7, DataType.Int16);
    expect((await c.read(['press.MachineState']))[0]).toMatchObject({ quality: 'bad', status: 'BadOutOfRange', value: null });
    press.set('MachineState', 2, DataType.Int16);
    expect((await c.read(['press.MachineState']))[0]!.value).toBe('FAULT');
  });

  it('describes the server EURange in engineering units (kp range as N, tenths as mm)', async () => {
    const d = await c.describe();
    expect(d.find((t) => t.tag === 'press.FillDepth')?.range).toEqual({ min: 0, max: 20 });
    const h = d.find((t) => t.tag === 'press.Hardness')!.range!;
    expect(h.min).toBe(0);
    expect(h.max).toBeCloseTo(294.1995, 9);
    expect(d.find((t) => t.tag === 'press.StationForces')?.dataType).toBe('FloatArray');
  });

  it('subscribes to a scaled tag and delivers engineering values', async () => {
    const got: unknown[] = [];
    const sub = await c.subscribe(['press.FillDepth'], { intervalMs: 50, deadband: 0.05 }, (s) => got.push(...s.map((x) => x.value)));
    press.set('FillDepth', 100, DataType.Int16);
    const deadline = Date.now() + 20_000;
    while (!got.includes(10) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    await sub.close();
    expect(got).toContain(10);
  });
});

describe('doctor on the vendor press', () => {
  it('inspects every configured node: missing, not writable, wrong type, wrong unit, EURange differs; the rest ok', async () => {
    const tags = [
      ...VENDOR_PRESS_TAGS,
      { name: 'Missing', kind: 'measurement', unit: '1', node_id: 'i=6999', data_type: 'Double' },
      { name: 'RecipeSetpoint', kind: 'setpoint', unit: '1', node_id: 'i=6009', data_type: 'Double' },
    ];
    const f = await inspectNodes({ connection: connection(), equipment: [equipment(tags)], url: press.url, dataDir: join(dir, 'doctor'), unitAliases: VENDOR_UNIT_ALIASES, timeoutMs: 15_000 });
    const by = Object.fromEntries(f.map((x) => [x.tag, x]));
    expect(by['press.Missing']).toMatchObject({ status: 'fail', node: 'ns=3;i=6999' });
    expect(by['press.Missing']!.problems.join()).toContain('BadNodeIdUnknown');
    expect(by['press.RecipeSetpoint']!.status).toBe('fail');
    expect(by['press.RecipeSetpoint']!.problems.join('\n')).toMatch(/not writable/);
    expect(by['press.RecipeSetpoint']!.problems.join('\n')).toMatch(/DataType String on the server, configured Double/);
    expect(by['press.Temperature']).toMatchObject({ status: 'fail' });
    expect(by['press.Temperature']!.problems.join()).toMatch(/°F.*Cel/);
    expect(by['press.Pressure']).toMatchObject({ status: 'warn' });
    expect(by['press.Pressure']!.problems.join()).toMatch(/EURange 0\.\.50 kPa, configured range 0\.\.40/);
    for (const ok of ['press.Hardness', 'press.FillDepth', 'press.Output', 'press.StationForces', 'press.MachineState', 'press.Counter', 'press.Heartbeat', 'press.SupervisorState']) {
      expect(by[ok], ok).toMatchObject({ status: 'ok', problems: [] });
    }
  });

  it('runs in `linekeeper doctor` with one check per node problem, naming tag and reason', async () => {
    const cfgDir = join(dir, 'site');
    cpSync('config/policy', join(cfgDir, 'policy'), { recursive: true });
    const flow = (o: unknown): string => JSON.stringify(o);
    const site = [
      'version: 1',
      'site: { id: acme, name: Acme }',
      `data_dir: ${flow(join(cfgDir, 'data'))}`,
      'api: { host: 127.0.0.1, port: 0 }',
      'tenants: [{ id: t1, name: T1, products: [p1] }]',
      'products: [{ id: p1, name: P1, tooling: [tl] }]',
      'tooling: [{ id: tl, name: TL, punch_diameter_mm: 10 }]',
      'line: { id: line-1, name: Line 1, equipment: [press] }',
      `connections: [{ id: acme-press, protocol: opcua, endpoint: ${flow(press.url)}, namespace_uri: ${flow(PRESS_NS)} }]`,
      `unit_aliases: ${flow(VENDOR_UNIT_ALIASES)}`,
      'equipment:',
      `  - { id: press, name: Acme press, type: press, protocol: opcua, connection: acme-press, tags: ${flow([...VENDOR_PRESS_TAGS, { name: 'Missing', kind: 'measurement', unit: '1', node_id: 'i=6999', data_type: 'Double' }])} }`,
      'policy: { bundle: policy }',
      '',
    ].join('\n');
    const file = join(cfgDir, 'site.yaml');
    writeFileSync(file, site);
    const r = await runDoctor({ configFile: file, probes: { timedatectl: async () => 'NTPSynchronized=yes\n' } });
    const by = Object.fromEntries(r.checks.map((x) => [x.id, x]));
    expect(by['config']!.status).toBe('ok');
    expect(by['endpoint:acme-press']!.status).toBe('ok');
    expect(by['node:press.Missing']).toMatchObject({ status: 'fail' });
    expect(by['node:press.Missing']!.message).toMatch(/^press\.Missing \(ns=3;i=6999\): .*BadNodeIdUnknown/);
    expect(by['node:press.Temperature']!.status).toBe('fail');
    expect(by['node:press.TurretSpeed']!.message).toMatch(/U\/min/);
    expect(by['node:press.Pressure']!.status).toBe('warn');
    expect(by['node:press.Hardness']).toBeUndefined();
    expect(by['nodes:acme-press']).toMatchObject({ status: 'fail' });
    expect(by['nodes:acme-press']!.message).toMatch(/^12 of 16 configured nodes/);
    expect(r.status).toBe('fail');
  });
});
