/**
 * Modbus TCP face of the simulated blender and fluid bed (modbus-serial
 * ServerTCP, one server for every unit; the request's unit id selects the
 * equipment). Register layout and codec: register-map.ts / REGISTER_MAP.md.
 *
 * Faults for connector tests: a muted unit never answers (the request is
 * dropped, as by a dead serial gateway); a delayed unit answers late.
 * modbus-serial calls a 3/4-argument vector function with a callback, so not
 * calling it is "no reply" and calling it later is "late reply".
 */
import { once } from 'node:events';
import type { AddressInfo, Server } from 'node:net';
import modbus from 'modbus-serial';
import type { SiteConfig } from '../../src/config/schema.js';
import { LkError } from '../../src/errors.js';
import type { Logger } from '../../src/log.js';
import type { Plant } from './plant.js';
import { buildRegisterMap, decodeValue, encodeValue, isWritableTag, REGISTER_WIDTH, SUPERVISOR_STATE_CODES, supervisorRegister, type RegisterSlot, type UnitMap } from './register-map.js';

const { ServerTCP } = modbus;

/** Modbus exception codes the simulator answers with. */
export const MODBUS_EXCEPTION = { ILLEGAL_FUNCTION: 1, ILLEGAL_ADDRESS: 2, ILLEGAL_VALUE: 3, DEVICE_FAILURE: 4, GATEWAY_TARGET: 11 } as const;

class ModbusException extends Error {
  constructor(
    readonly modbusErrorCode: number,
    message: string,
  ) {
    super(message);
  }
}

type Cb<T> = (err: Error | null, value: T) => void;

export interface SimModbusServer {
  readonly host: string;
  readonly port: number;
  /** A muted unit receives requests and never answers them (its PLC sees nothing either). */
  muteUnit(unitId: number, muted: boolean): void;
  /** Answer every request of the unit `ms` later (0 = on time). */
  delayUnit(unitId: number, ms: number): void;
  /** Drop every open TCP connection (the server keeps listening). */
  dropConnections(): void;
  close(): Promise<void>;
}

/** Start the Modbus TCP server on 127.0.0.1 (port 0 = any free port). */
export async function startModbusServer(plant: Plant, config: SiteConfig, opts: { port?: number; host?: string; log: Logger }): Promise<SimModbusServer> {
  const host = opts.host ?? '127.0.0.1';
  const units = buildRegisterMap(config.equipment);
  const muted = new Set<number>();
  const delays = new Map<number, number>();
  const timers = new Set<NodeJS.Timeout>();
  const log = opts.log;

  /** Run the request against the plant now; reply now, later, or never. */
  const serve = <T>(unitId: number, fn: (u: UnitMap) => T, cb: Cb<T>): void => {
    if (muted.has(unitId)) return;
    let err: Error | null = null;
    let value: T | undefined;
    try {
      const u = units.get(unitId);
      if (!u) throw new ModbusException(MODBUS_EXCEPTION.GATEWAY_TARGET, `no unit ${unitId}`);
      value = fn(u);
    } catch (e) {
      err = toModbusException(e);
      log.debug({ unitId, code: (err as ModbusException).modbusErrorCode, err: err.message }, 'modbus request refused');
    }
    // modbus-serial's FC4 path indexes the values even on error: hand it an empty array, not undefined
    const reply = (): void => (err ? cb(err, [] as unknown as T) : cb(null, value as T));
    const delay = delays.get(unitId) ?? 0;
    if (delay <= 0) return reply();
    const t = setTimeout(() => {
      timers.delete(t);
      reply();
    }, delay);
    timers.add(t);
  };

  const readTable = (u: UnitMap, table: 'holding' | 'input', addr: number, len: number): number[] => {
    const map = table === 'holding' ? u.holding : u.input;
    const end = table === 'holding' ? u.holdingEnd : u.inputEnd;
    if (len < 1 || addr + len > end) throw new ModbusException(MODBUS_EXCEPTION.ILLEGAL_ADDRESS, `${table} ${addr}+${len} is past ${end}`);
    const cache = new Map<string, number[]>();
    const out: number[] = [];
    for (let a = addr; a < addr + len; a++) {
      const slot = map.get(a);
      if (!slot) {
        out.push(0);
        continue;
      }
      let regs = cache.get(slot.tag.name);
      if (!regs) {
        regs = encodeValue(numericValue(plant, u, slot), slot.tag);
        cache.set(slot.tag.name, regs);
      }
      out.push(regs[slot.word] ?? 0);
    }
    return out;
  };

  const writeHolding = (u: UnitMap, addr: number, values: readonly number[]): void => {
    const eq = u.equipment.id;
    const writes: { slot: RegisterSlot; regs: number[] }[] = [];
    for (let i = 0; i < values.length; ) {
      const slot = u.holding.get(addr + i);
      if (!slot || !isWritableTag(slot.tag)) throw new ModbusException(MODBUS_EXCEPTION.ILLEGAL_ADDRESS, `holding ${addr + i} of ${eq} is not writable`);
      const width = REGISTER_WIDTH[slot.tag.type];
      if (slot.word !== 0 || i + width > values.length) throw new ModbusException(MODBUS_EXCEPTION.ILLEGAL_VALUE, `${eq}.${slot.tag.name} must be written whole (${width} registers)`);
      writes.push({ slot, regs: values.slice(i, i + width) as number[] });
      i += width;
    }
    // heartbeat first (it proves the supervisor is there), then setpoints all-or-nothing, then a state change
    const setpoints: Record<string, number> = {};
    let state: number | undefined;
    for (const { slot, regs } of writes) {
      const v = decodeValue(regs, slot.tag);
      if (slot.tag.name === 'Heartbeat') plant.heartbeat(eq, v);
      else if (slot.tag.name === 'SupervisorState') state = v;
      else setpoints[slot.tag.name] = v;
    }
    if (Object.keys(setpoints).length > 0) plant.writeSetpoints(eq, setpoints);
    if (state !== undefined) {
      const name = state === SUPERVISOR_STATE_CODES.ATTENDED ? 'ATTENDED' : state === SUPERVISOR_STATE_CODES.LOST ? 'LOST' : undefined;
      if (!name) throw new ModbusException(MODBUS_EXCEPTION.ILLEGAL_VALUE, `${eq}.SupervisorState: ${state} is neither 0 nor 1`);
      plant.setSupervisorState(eq, name);
    }
  };

  const refuseBits = (_addr: number, _unitId: number, cb: Cb<boolean>): void => cb(new ModbusException(MODBUS_EXCEPTION.ILLEGAL_FUNCTION, 'no coils or discrete inputs'), false);
  const vector = {
    getCoil: refuseBits,
    getDiscreteInput: refuseBits,
    setCoil: (_a: number, _v: boolean, _u: number, cb: Cb<void>): void => cb(new ModbusException(MODBUS_EXCEPTION.ILLEGAL_FUNCTION, 'no coils'), undefined),
    getHoldingRegister: (addr: number, unitId: number, cb: Cb<number>): void => serve(unitId, (u) => readTable(u, 'holding', addr, 1)[0] ?? 0, cb),
    getMultipleHoldingRegisters: (addr: number, len: number, unitId: number, cb: Cb<number[]>): void => serve(unitId, (u) => readTable(u, 'holding', addr, len), cb),
    getInputRegister: (addr: number, unitId: number, cb: Cb<number>): void => serve(unitId, (u) => readTable(u, 'input', addr, 1)[0] ?? 0, cb),
    getMultipleInputRegisters: (addr: number, len: number, unitId: number, cb: Cb<number[]>): void => serve(unitId, (u) => readTable(u, 'input', addr, len), cb),
    setRegister: (addr: number, value: number, unitId: number, cb: Cb<void>): void => serve(unitId, (u) => writeHolding(u, addr, [value]), cb),
    setRegisterArray: (addr: number, values: number[], unitId: number, cb: Cb<void>): void => serve(unitId, (u) => writeHolding(u, addr, values), cb),
  };

  // modbus-serial listens on `options.port || 502`: port 0 would become 502, the string "0" is truthy and net accepts it
  const server = new ServerTCP(vector as never, { host, port: (opts.port ? opts.port : '0') as number, unitID: 255 });
  const tcp = (server as unknown as { _server: Server })._server;
  await Promise.race([
    once(server, 'initialized'),
    once(server, 'serverError').then(([e]) => {
      throw new LkError('LK_CONN_UNAVAILABLE', `modbus simulator cannot listen on ${host}:${opts.port ?? 0}: ${(e as Error).message}`);
    }),
  ]);
  server.on('socketError', (e) => log.debug({ err: e?.message }, 'modbus socket error'));
  server.on('error', (e) => log.debug({ err: e?.message }, 'modbus server error'));
  const port = (tcp.address() as AddressInfo).port;

  return {
    host,
    port,
    muteUnit(unitId, isMuted) {
      if (isMuted) muted.add(unitId);
      else muted.delete(unitId);
    },
    delayUnit(unitId, ms) {
      if (!(ms > 0)) delays.delete(unitId);
      else delays.set(unitId, ms);
    },
    dropConnections() {
      for (const sock of server.socks.keys()) sock.destroy();
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const t of timers) clearTimeout(t);
        timers.clear();
        server.close(() => resolve());
      }),
  };
}

/** The number a tag shows on Modbus: strings of the supervisor become their codes. */
function numericValue(plant: Plant, u: UnitMap, slot: RegisterSlot): number {
  const eq = u.equipment.id;
  const name = slot.tag.name;
  const code = slot.tag.kind === 'supervisor' ? supervisorRegister(plant.supervisor(eq), name) : undefined;
  if (code !== undefined) return code;
  const v = plant.read(eq, name);
  return typeof v === 'number' ? v : typeof v === 'boolean' ? Number(v) : 0;
}

function toModbusException(e: unknown): ModbusException {
  if (e instanceof ModbusException) return e;
  if (LkError.is(e)) {
    switch (e.code) {
      case 'LK_PLC_OUT_OF_RANGE':
      case 'LK_VALUE_INVALID':
      case 'LK_CODEC':
        return new ModbusException(MODBUS_EXCEPTION.ILLEGAL_VALUE, e.message);
      case 'LK_TAG_UNKNOWN':
      case 'LK_TAG_NOT_WRITABLE':
        return new ModbusException(MODBUS_EXCEPTION.ILLEGAL_ADDRESS, e.message);
      default:
        // LK_PLC_LOST, LK_PLC_NO_HEARTBEAT: the device refuses in its present state
        return new ModbusException(MODBUS_EXCEPTION.DEVICE_FAILURE, e.message);
    }
  }
  return new ModbusException(MODBUS_EXCEPTION.DEVICE_FAILURE, e instanceof Error ? e.message : String(e));
}
