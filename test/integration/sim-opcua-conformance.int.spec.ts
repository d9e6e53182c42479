/**
 * The simulator's OPC UA server as a site's client sees it (a real node-opcua client, server on port 0):
 * a refused write has no effect and its status names the reason (Part 4 §5.10.4); the certificate names the
 * host the endpoint announces; BuildInfo is linekeeper's.
 */
import { X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { AttributeIds, DataType, NumericRange, StatusCodes, VariantArrayType, Variant } from 'node-opcua';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeRefusal } from '../../connectors/sim/opcua-server.js';
import { BUILD_DATE, VERSION } from '../../src/version.js';
import { rawOpcUaSession, startTestSimulator, type RawOpcUaSession, type Simulator } from '../helpers/sim.js';

let sim: Simulator;
let raw: RawOpcUaSession;

beforeAll(async () => {
  sim = await startTestSimulator({ timeScale: 60, watchdogTimeoutMs: 60_000 });
  raw = await rawOpcUaSession(sim);
}, 60_000);
afterAll(async () => {
  await raw?.close();
  await sim?.close();
});

const write = async (id: string, value: { dataType: DataType; arrayType?: VariantArrayType; value: unknown }, indexRange?: string): Promise<string> =>
  (await raw.session.write({ nodeId: raw.nodeId(id), attributeId: AttributeIds.Value, ...(indexRange !== undefined ? { indexRange: NumericRange.coerce(indexRange) } : {}), value: { value } })).name;
const read = async (id: string): Promise<unknown> => (await raw.session.read({ nodeId: raw.nodeId(id), attributeId: AttributeIds.Value })).value.value as unknown;

describe('refused writes have no effect', () => {
  it('an IndexRange on a scalar setpoint: BadIndexRangeInvalid, the setpoint does not move', async () => {
    const before = await read('press.Setpoints.MainForce');
    const status = await write('press.Setpoints.MainForce', { dataType: DataType.Double, value: 13.25 }, '0');
    expect(status).toBe('BadIndexRangeInvalid');
    expect(await read('press.Setpoints.MainForce')).toBe(before);
  });

  it('an IndexRange write of "LOST" to SupervisorState does not command a revert', async () => {
    expect(sim.plant.read('coater', 'SupervisorState')).toBe('ATTENDED');
    const status = await write('coater.Supervisor.SupervisorState', { dataType: DataType.String, value: 'LOST' }, '0:3');
    expect(status).toBe('BadIndexRangeInvalid');
    expect(sim.plant.read('coater', 'SupervisorState')).toBe('ATTENDED');
  });

  it('a one-element String array to the scalar SupervisorState: BadTypeMismatch, no revert', async () => {
    const status = await write('coater.Supervisor.SupervisorState', { dataType: DataType.String, arrayType: VariantArrayType.Array, value: ['LOST'] });
    expect(status).toBe('BadTypeMismatch');
    expect(sim.plant.read('coater', 'SupervisorState')).toBe('ATTENDED');
    expect(sim.plant.read('coater', 'RevertCount')).toBe(0);
  });

  it('an array to a numeric scalar setpoint: BadTypeMismatch (not BadOutOfRange), the setpoint does not move', async () => {
    const before = await read('press.Setpoints.MainForce');
    for (const value of [[13.5], [13.5, 14]]) {
      const status = await write('press.Setpoints.MainForce', { dataType: DataType.Double, arrayType: VariantArrayType.Array, value: new Float64Array(value) });
      expect(status).toBe('BadTypeMismatch');
    }
    expect(await read('press.Setpoints.MainForce')).toBe(before);
  });

  it('a plain scalar write still works (the guard refuses only what it must)', async () => {
    expect(await write('press.Setpoints.MainForce', { dataType: DataType.Double, value: 12.75 })).toBe('Good');
    expect(await read('press.Setpoints.MainForce')).toBe(12.75);
  });

  it('writeRefusal names the reason per shape', () => {
    const scalar = new Variant({ dataType: DataType.Double, value: 1 });
    const array = new Variant({ dataType: DataType.Double, arrayType: VariantArrayType.Array, value: new Float64Array([1]) });
    expect(writeRefusal(true, scalar, undefined)).toBeUndefined();
    expect(writeRefusal(true, scalar, '')).toBeUndefined();
    expect(writeRefusal(true, scalar, '0')).toBe(StatusCodes.BadIndexRangeInvalid);
    expect(writeRefusal(true, scalar, '3:1')).toBe(StatusCodes.BadIndexRangeInvalid);
    expect(writeRefusal(true, array, undefined)).toBe(StatusCodes.BadTypeMismatch);
    expect(writeRefusal(false, scalar, undefined)).toBe(StatusCodes.BadTypeMismatch);
    expect(writeRefusal(false, array, undefined)).toBeUndefined();
  });
});

describe('identity of the server', () => {
  it('the certificate subjectAltName contains the host the endpoint announces', () => {
    const host = new URL(sim.opcuaUrl.replace(/^opc\.tcp:/, 'http:')).hostname;
    expect(host).toBe('127.0.0.1');
    const cert = new X509Certificate(readFileSync(sim.serverCertificateFile));
    expect(cert.subjectAltName ?? '').toContain(`IP Address:${host}`);
    expect(cert.checkIP(host)).toBe(host);
  });

  it('BuildInfo reports linekeeper: product name, version and build date', async () => {
    const ns0 = (i: number): string => `ns=0;i=${i}`;
    // Server_ServerStatus_BuildInfo_{ProductName 2261, SoftwareVersion 2264, BuildNumber 2265, BuildDate 2266, ManufacturerName 2263}
    const [product, version, build, date, maker] = await raw.session.read([2261, 2264, 2265, 2266, 2263].map((i) => ({ nodeId: ns0(i), attributeId: AttributeIds.Value })));
    expect(product!.value.value).toBe('linekeeper plant simulator');
    expect(maker!.value.value).toBe('linekeeper');
    expect(version!.value.value).toBe(VERSION);
    expect(build!.value.value).toBe(VERSION);
    expect((date!.value.value as Date).getTime()).toBe(BUILD_DATE.getTime());
  });
});
