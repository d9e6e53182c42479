import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AttributeIds, BrowseDirection, DataType, MessageSecurityMode, NodeClass, OPCUACertificateManager, SecurityPolicy, StatusCodes, type ClientSession } from 'node-opcua';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ucumFromEu } from '../../connectors/sim/index.js';
import { rawOpcUaSession, startTestSimulator, waitFor, type RawOpcUaSession, type Simulator } from '../helpers/sim.js';

let sim: Simulator;
let raw: RawOpcUaSession;
let session: ClientSession;

beforeAll(async () => {
  sim = await startTestSimulator({ timeScale: 60, watchdogTimeoutMs: 60_000 });
  raw = await rawOpcUaSession(sim);
  session = raw.session;
});

afterAll(async () => {
  await raw?.close();
  await sim?.close();
});

const read = async (id: string): Promise<{ value: unknown; status: string }> => {
  const dv = await session.read({ nodeId: raw.nodeId(id), attributeId: AttributeIds.Value });
  return { value: dv.value.value, status: dv.statusCode.name };
};
const write = async (id: string, dataType: DataType, value: unknown): Promise<string> =>
  (await session.write({ nodeId: raw.nodeId(id), attributeId: AttributeIds.Value, value: { value: { dataType, value } } })).name;

describe('simulator OPC UA server', () => {
  it('exposes every configured equipment with Setpoints, Measurements and Supervisor folders', async () => {
    expect(raw.ns).toBeGreaterThan(0);
    const objects = await session.browse({ nodeId: 'i=85', browseDirection: BrowseDirection.Forward, nodeClassMask: NodeClass.Object, resultMask: 0x3f });
    const names = (objects.references ?? []).map((r) => r.browseName.name);
    const opcuaEquipment = sim.config.config.equipment.filter((e) => e.protocol === 'opcua');
    for (const e of opcuaEquipment) expect(names).toContain(e.id);
    const folders = await session.browse(raw.nodeId('press'));
    expect((folders.references ?? []).map((r) => r.browseName.name)).toEqual(expect.arrayContaining(['Setpoints', 'Measurements', 'Supervisor']));
    // every configured node id resolves to a variable with the configured data type
    for (const e of opcuaEquipment) {
      for (const t of e.tags) {
        if (!('node_id' in t)) continue;
        const dt = await session.read({ nodeId: raw.nodeId(t.node_id.replace(/^s=/, '')), attributeId: AttributeIds.DataType });
        expect(dt.statusCode.name, `${e.id}.${t.name}`).toBe('Good');
        // a DoubleArray is a Double node with ValueRank 1
        expect(dt.value.value.value, `${e.id}.${t.name}`).toBe(t.data_type === 'DoubleArray' ? DataType.Double : DataType[t.data_type as 'Double']);
      }
    }
  });

  it('setpoints carry EngineeringUnits and EURange from the configuration', async () => {
    const props = await session.browse(raw.nodeId('press.Setpoints.MainForce'));
    const byName = new Map((props.references ?? []).map((r) => [r.browseName.name, r.nodeId]));
    const eu = await session.read({ nodeId: byName.get('EngineeringUnits')!, attributeId: AttributeIds.Value });
    const range = await session.read({ nodeId: byName.get('EURange')!, attributeId: AttributeIds.Value });
    expect(ucumFromEu(eu.value.value)).toBe('kN');
    expect({ low: range.value.value.low, high: range.value.value.high }).toEqual({ low: 0, high: 40 });
    const access = await session.read({ nodeId: raw.nodeId('press.Measurements.Hardness'), attributeId: AttributeIds.UserAccessLevel });
    expect(access.value.value & 2).toBe(0); // measurements are read-only
  });

  it('reads a measurement and sees it follow a setpoint: more main force, harder tablets', async () => {
    const before = await read('press.Measurements.Hardness');
    expect(before.status).toBe('Good');
    expect(typeof before.value).toBe('number');
    const mean = async (n: number): Promise<number> => {
      let s = 0;
      for (let i = 0; i < n; i++) {
        s += (await read('press.Measurements.Hardness')).value as number;
        await new Promise((r) => setTimeout(r, 20));
      }
      return s / n;
    };
    const base = await mean(10);
    expect(await write('press.Setpoints.MainForce', DataType.Double, 22)).toBe('Good');
    expect((await read('press.Setpoints.MainForce')).value).toBe(22);
    expect((await read('press.Supervisor.ActiveRecipe')).value).toBe('SUPERVISED');
    // the press actuators settle in a few process seconds: well under a wall second at time scale 60
    expect(await waitFor(async () => ((await read('press.Measurements.Hardness')).value as number) > base * 1.25, 30_000)).toBe(true);
    expect(await mean(10)).toBeGreaterThan(base * 1.25);
  });

  it('refuses a setpoint of the wrong DataType, out of EURange, NaN, and writes to measurements; the value stays', async () => {
    const before = (await read('press.Setpoints.FillDepth')).value;
    expect(await write('press.Setpoints.FillDepth', DataType.Float, 9)).toBe('BadTypeMismatch');
    expect(await write('press.Setpoints.FillDepth', DataType.Int32, 9)).toBe('BadTypeMismatch');
    expect(await write('press.Setpoints.FillDepth', DataType.Double, 16.5)).toBe('BadOutOfRange');
    expect(await write('press.Setpoints.FillDepth', DataType.Double, 3.9)).toBe('BadOutOfRange');
    expect(await write('press.Setpoints.FillDepth', DataType.Double, Number.NaN)).toMatch(/^Bad/);
    expect(await write('press.Measurements.Hardness', DataType.Double, 100)).toMatch(/^Bad(NotWritable|UserAccessDenied)$/);
    expect(await write('press.Supervisor.RevertCount', DataType.UInt32, 0)).toMatch(/^Bad(NotWritable|UserAccessDenied)$/);
    expect(await write('press.Supervisor.Heartbeat', DataType.Double, 1)).toBe('BadTypeMismatch');
    expect((await read('press.Setpoints.FillDepth')).value).toBe(before);
  });

  it('supervisor tags read as configured: LKG recipe id, watchdog timeout, state', async () => {
    expect((await read('coater.Supervisor.LkgRecipeId')).value).toBe('LKG-coater-0007');
    expect((await read('coater.Supervisor.ActiveRecipe')).value).toBe('LKG-coater-0007');
    expect((await read('coater.Supervisor.WatchdogTimeoutMs')).value).toBe(60_000);
    expect((await read('coater.Supervisor.SupervisorState')).value).toBe('ATTENDED');
    expect((await read('vision.Measurements.Inspected')).value as number).toBeGreaterThanOrEqual(0);
    expect(typeof (await read('plc.Measurements.LineRunning')).value).toBe('boolean');
  });

  it('serves Basic256Sha256 SignAndEncrypt, accepting the client certificate on the equipment side', async () => {
    const secure = await rawOpcUaSession(sim, { securityMode: MessageSecurityMode.SignAndEncrypt, securityPolicy: SecurityPolicy.Basic256Sha256 });
    try {
      const dv = await secure.session.read({ nodeId: secure.nodeId('press.Measurements.TabletWeight'), attributeId: AttributeIds.Value });
      expect(dv.statusCode).toBe(StatusCodes.Good);
      expect(dv.value.value).toBeGreaterThan(0);
    } finally {
      await secure.close();
    }
  });

  it('restartOpcUa brings the server back on the same URL with the same plant state', async () => {
    const before = sim.plant.read('press', 'MainForce');
    await sim.faults.restartOpcUa({ downtimeMs: 100 });
    const again = await rawOpcUaSession(sim);
    try {
      const dv = await again.session.read({ nodeId: again.nodeId('press.Setpoints.MainForce'), attributeId: AttributeIds.Value });
      expect(dv.value.value).toBe(before);
    } finally {
      await again.close();
    }
  });
});

describe('simulator OPC UA server without auto-accept', () => {
  it('rejects an unknown client certificate until trustClientCertificate() trusts it', async () => {
    const strict = await startTestSimulator({ security: { autoAcceptClientCertificates: false }, watchdogTimeoutMs: 60_000 });
    const pki = mkdtempSync(join(tmpdir(), 'lk-test-strict-client-'));
    const opts = {
      securityMode: MessageSecurityMode.SignAndEncrypt,
      securityPolicy: SecurityPolicy.Basic256Sha256,
      clientCertificateManager: new OPCUACertificateManager({ rootFolder: pki, automaticallyAcceptUnknownCertificate: true }),
    };
    try {
      await expect(rawOpcUaSession(strict, opts)).rejects.toThrow();
      const pem = readFileSync(join(pki, 'own', 'certs', 'client_certificate.pem'), 'utf8');
      const der = Buffer.from(pem.replace(/-----(BEGIN|END) CERTIFICATE-----/g, '').replace(/\s+/g, ''), 'base64');
      await strict.trustClientCertificate(der);
      const ok = await rawOpcUaSession(strict, opts);
      try {
        const dv = await ok.session.read({ nodeId: ok.nodeId('nir.Measurements.Potency'), attributeId: AttributeIds.Value });
        expect(dv.statusCode).toBe(StatusCodes.Good);
      } finally {
        await ok.close();
      }
    } finally {
      await strict.close();
      rmSync(pki, { recursive: true, force: true });
    }
  });
});
