/**
 * PLCs that are not linekeeper's simulator, for the supervision-profile tests: their own node ids, types and
 * state conventions, and a PLC program of their own (a watchdog on their own life sign, a revert to their own
 * last known-good recipe, a re-arm only while beaten).
 *
 * OPC UA server, namespace `urn:vendor:line`, with an embedded stack's 8 KiB message chunks:
 *   coater — a Boolean life bit (`Coater.Watchdog.LifeBit`), a String state `REMOTE` (supervised) / `LOCAL` (fallback)
 *   press  — an Int16 life counter (`Press.WD.Counter`, started near its wrap), an Int32 state 1 = supervised, 0 = fallback
 *   nir    — no supervisor tags at all (monitor-only): one Double measurement and one Double setpoint
 * Modbus TCP server, unit 3:
 *   fluidbed — inverted convention: SupervisorState 1 = REMOTE (supervised), 0 = LOCAL (fallback)
 *
 * Each unit's watchdog: no change of its life sign for `watchdogMs` → fallback (ActiveRecipe := LkgRecipeId,
 * RevertCount + 1). Writing the fallback value commands the revert at once; writing the supervised value re-arms
 * only while the life sign changed within `watchdogMs`.
 */
import { join } from 'node:path';
import type { AddressInfo, Server } from 'node:net';
import { once } from 'node:events';
import modbus from 'modbus-serial';
import { DataType, StatusCodes, Variant, type IHelloAckLimits, type UAVariable } from 'node-opcua';
import { testOpcUaServer } from './opcua-fixture.js';
import type { ModbusConnectionConfig, ModbusEquipmentConfig, OpcUaConnectionConfig, OpcUaEquipmentConfig } from '../../src/config/schema.js';

export const VENDOR_NS = 'urn:vendor:line';

interface Unit {
  readonly id: string;
  state: string | number;
  readonly supervised: string | number;
  readonly fallback: string | number;
  active: string | number;
  readonly lkg: string | number;
  reverts: number;
  life: number | boolean | undefined;
  lifeAt: number;
  /** Every life-sign value written, in order. */
  readonly beats: (number | boolean)[];
  /** Wall-clock ms of the last fallback (the PLC's own timestamp of its revert). */
  revertedAt?: number;
}

export interface VendorPlcs {
  readonly opcuaUrl: string;
  readonly modbusPort: number;
  readonly units: ReadonlyMap<string, Unit>;
  readonly opcua: OpcUaConnectionConfig;
  readonly modbus: ModbusConnectionConfig;
  readonly equipment: { coater: OpcUaEquipmentConfig; press: OpcUaEquipmentConfig; nir: OpcUaEquipmentConfig; fluidbed: ModbusEquipmentConfig };
  /** Values written to the monitor-only unit's nodes (must stay empty). */
  readonly nirWrites: unknown[];
  /** The transport limits each OPC UA client announced in its Hello (the server answers 8 KiB chunks to all). */
  readonly hellos: readonly IHelloAckLimits[];
  close(): Promise<void>;
}

const rw = { accessLevel: 'CurrentRead | CurrentWrite', userAccessLevel: 'CurrentRead | CurrentWrite', minimumSamplingInterval: 20 };

export async function startVendorPlcs(dataDir: string, o: { watchdogMs: number; pressCounterStart?: number }): Promise<VendorPlcs> {
  const units = new Map<string, Unit>();
  const unit = (id: string, supervised: string | number, fallback: string | number, lkg: string | number, active: string | number): Unit => {
    const u: Unit = { id, state: supervised, supervised, fallback, active, lkg, reverts: 0, life: undefined, lifeAt: Date.now(), beats: [] };
    units.set(id, u);
    return u;
  };
  const coater = unit('coater', 'REMOTE', 'LOCAL', 'RCP-COAT-LKG', 'RCP-COAT-22');
  const press = unit('press', 1, 0, 'RCP-PRESS-LKG', 'RCP-PRESS-7');
  const fluidbed = unit('fluidbed', 1, 0, 900, 905);
  const revert = (u: Unit): void => {
    if (u.state === u.fallback) return;
    u.state = u.fallback;
    u.active = u.lkg;
    u.reverts++;
    u.revertedAt = Date.now();
  };
  const beat = (u: Unit, v: number | boolean): void => {
    if (v !== u.life) u.lifeAt = Date.now();
    u.life = v;
    u.beats.push(v);
  };
  const command = (u: Unit, v: string | number): boolean => {
    if (v === u.fallback) revert(u);
    else if (v === u.supervised) {
      if (Date.now() - u.lifeAt > o.watchdogMs) return false;
      u.state = u.supervised;
    } else return false;
    return true;
  };
  const watchdog = setInterval(() => {
    for (const u of units.values()) if (u.state === u.supervised && Date.now() - u.lifeAt > o.watchdogMs) revert(u);
  }, 20);

  // ── OPC UA ──
  // an embedded OPC UA stack's small buffers: chunks of 8 KiB each way, whatever the client asks for (linekeeper asks
  // for 64 KiB), at most 512 of them to a message of at most 2 MiB; each Hello is kept for the tests
  const hellos: IHelloAckLimits[] = [];
  const server = await testOpcUaServer(join(dataDir, 'vendor-pki'), '/vendor', {
    adjustTransportLimits: (hello) => {
      hellos.push({ ...hello });
      return { receiveBufferSize: 8192, sendBufferSize: 8192, maxMessageSize: 2 * 1024 * 1024, maxChunkCount: 512 };
    },
  });
  const as = server.engine.addressSpace!;
  const ns = as.registerNamespace(VENDOR_NS);
  const nirWrites: unknown[] = [];
  const bind = (u: Unit | null, node: string, dataType: DataType, get: () => unknown, set?: (v: unknown) => boolean): UAVariable => {
    const obj = as.rootFolder.objects;
    return ns.addVariable({
      organizedBy: obj, browseName: node, nodeId: `s=${node}`, dataType: DataType[dataType], ...(set ? rw : { minimumSamplingInterval: 20 }),
      value: {
        get: () => new Variant({ dataType, value: get() }),
        ...(set ? { set: (v: Variant) => (set(v.value) ? StatusCodes.Good : StatusCodes.BadNotWritable) } : {}),
      },
    });
  };
  // coater: Boolean life bit, String state REMOTE/LOCAL
  bind(coater, 'Coater.Watchdog.LifeBit', DataType.Boolean, () => coater.life ?? false, (v) => (beat(coater, v as boolean), true));
  bind(coater, 'Coater.Watchdog.Timeout', DataType.UInt32, () => o.watchdogMs);
  bind(coater, 'Coater.Mode', DataType.String, () => coater.state, (v) => command(coater, v as string));
  bind(coater, 'Coater.Recipe.Active', DataType.String, () => coater.active);
  bind(coater, 'Coater.Recipe.Safe', DataType.String, () => coater.lkg);
  bind(coater, 'Coater.Recipe.Fallbacks', DataType.UInt16, () => coater.reverts);
  // press: Int16 life counter near its wrap, Int32 state 1 supervised / 0 fallback
  press.life = o.pressCounterStart ?? 32_760;
  bind(press, 'Press.WD.Counter', DataType.Int16, () => press.life, (v) => (beat(press, v as number), true));
  bind(press, 'Press.WD.TimeoutMs', DataType.UInt32, () => o.watchdogMs);
  bind(press, 'Press.WD.Remote', DataType.Int32, () => press.state, (v) => command(press, v as number));
  bind(press, 'Press.Rcp.Active', DataType.String, () => press.active);
  bind(press, 'Press.Rcp.Lkg', DataType.String, () => press.lkg);
  bind(press, 'Press.Rcp.Reverts', DataType.UInt32, () => press.reverts);
  // nir: monitor-only, no supervisor tags
  let gain = 1.5;
  bind(null, 'Nir.Potency', DataType.Double, () => 99.7);
  bind(null, 'Nir.Gain', DataType.Double, () => gain, (v) => (nirWrites.push(v), (gain = v as number), true));
  await server.start();
  const opcuaUrl = `opc.tcp://127.0.0.1:${server.endpoints[0]!.port}/vendor`;

  // ── Modbus: unit 3, holding 0 life counter, 1 state, 2 active recipe, 3 LKG recipe, 4 reverts, 5 watchdog timeout ──
  const reg = (addr: number): number => [typeof fluidbed.life === 'number' ? fluidbed.life : 0, fluidbed.state as number, fluidbed.active as number, fluidbed.lkg as number, fluidbed.reverts, o.watchdogMs][addr] ?? 0;
  const write = (addr: number, value: number): void => {
    if (addr === 0) beat(fluidbed, value);
    else if (addr === 1) {
      if (!command(fluidbed, value)) throw Object.assign(new Error('refused'), { modbusErrorCode: 3 });
    } else throw Object.assign(new Error('not writable'), { modbusErrorCode: 2 });
  };
  const vector = {
    getHoldingRegister: (a: number, u: number, cb: (e: Error | null, v: number) => void) => cb(null, reg(a)),
    getMultipleHoldingRegisters: (a: number, n: number, u: number, cb: (e: Error | null, v: number[]) => void) => cb(null, Array.from({ length: n }, (_, i) => reg(a + i))),
    getInputRegister: (a: number, u: number, cb: (e: Error | null, v: number) => void) => cb(null, reg(a)),
    setRegister: (a: number, v: number, u: number, cb: (e: Error | null) => void) => {
      try {
        write(a, v);
        cb(null);
      } catch (e) {
        cb(e as Error);
      }
    },
    setRegisterArray: (a: number, vs: number[], u: number, cb: (e: Error | null) => void) => {
      try {
        vs.forEach((v, i) => write(a + i, v));
        cb(null);
      } catch (e) {
        cb(e as Error);
      }
    },
  };
  const mb = new modbus.ServerTCP(vector as never, { host: '127.0.0.1', port: '0' as unknown as number, unitID: 255 });
  await once(mb, 'initialized');
  const modbusPort = ((mb as unknown as { _server: Server })._server.address() as AddressInfo).port;

  const sup = (name: string, node: string, data_type: OpcUaEquipmentConfig['tags'][number]['data_type']) => ({ name, kind: 'supervisor' as const, unit: name === 'WatchdogTimeoutMs' ? 'ms' : '1', node_id: `s=${node}`, data_type });
  const equipment = {
    coater: {
      id: 'coater', name: 'Vendor coater', type: 'coater', protocol: 'opcua', connection: 'vendor-opcua',
      heartbeat: { period_ms: 100, kind: 'toggle' },
      supervision: { state: { supervised: ['REMOTE'], fallback: ['LOCAL'] } },
      tags: [sup('Heartbeat', 'Coater.Watchdog.LifeBit', 'Boolean'), sup('WatchdogTimeoutMs', 'Coater.Watchdog.Timeout', 'UInt32'), sup('SupervisorState', 'Coater.Mode', 'String'), sup('ActiveRecipe', 'Coater.Recipe.Active', 'String'), sup('LkgRecipeId', 'Coater.Recipe.Safe', 'String'), sup('RevertCount', 'Coater.Recipe.Fallbacks', 'UInt16')],
    },
    press: {
      id: 'press', name: 'Vendor press', type: 'press', protocol: 'opcua', connection: 'vendor-opcua',
      heartbeat: { period_ms: 100 },
      supervision: { state: { supervised: [1], fallback: [0] } },
      tags: [sup('Heartbeat', 'Press.WD.Counter', 'Int16'), sup('WatchdogTimeoutMs', 'Press.WD.TimeoutMs', 'UInt32'), sup('SupervisorState', 'Press.WD.Remote', 'Int32'), sup('ActiveRecipe', 'Press.Rcp.Active', 'String'), sup('LkgRecipeId', 'Press.Rcp.Lkg', 'String'), sup('RevertCount', 'Press.Rcp.Reverts', 'UInt32')],
    },
    nir: {
      id: 'nir', name: 'Vendor NIR (monitor-only)', type: 'nir', protocol: 'opcua', connection: 'vendor-opcua',
      heartbeat: { period_ms: 100 },
      supervision: { mode: 'monitor_only' },
      tags: [
        { name: 'Potency', kind: 'measurement', unit: '%', node_id: 's=Nir.Potency', data_type: 'Double' },
        { name: 'Gain', kind: 'setpoint', unit: '1', node_id: 's=Nir.Gain', data_type: 'Double', range: { min: 0, max: 10 } },
      ],
    },
    fluidbed: {
      id: 'fluidbed', name: 'Vendor fluid bed', type: 'fluidbed', protocol: 'modbus', connection: 'vendor-modbus', unit_id: 3,
      heartbeat: { period_ms: 100 },
      supervision: { state: { supervised: [1], fallback: [0] } },
      tags: (['Heartbeat', 'SupervisorState', 'ActiveRecipe', 'LkgRecipeId', 'RevertCount', 'WatchdogTimeoutMs'] as const).map((name, address) => ({
        name, kind: 'supervisor' as const, unit: name === 'WatchdogTimeoutMs' ? 'ms' : '1', table: 'holding' as const, address, type: 'uint16' as const, byte_order: 'BE' as const, word_order: 'BE' as const, scale: 1, offset: 0,
      })),
    },
  } as VendorPlcs['equipment'];
  return {
    opcuaUrl, modbusPort, units, nirWrites, hellos, equipment,
    opcua: { id: 'vendor-opcua', protocol: 'opcua', endpoint: opcuaUrl, namespace_uri: VENDOR_NS, security: { mode: 'None', policy: 'None' }, max_data_age_ms: 5000, request_timeout_ms: 3000, keepalive_ms: 1000 },
    modbus: { id: 'vendor-modbus', protocol: 'modbus', endpoint: `127.0.0.1:${modbusPort}`, timeout_ms: 1000, poll_ms: 100 },
    async close() {
      clearInterval(watchdog);
      await new Promise<void>((r) => mb.close(() => r()));
      await server.shutdown(0);
    },
  };
}
