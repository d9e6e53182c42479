/**
 * A late reply after a timeout must be discarded and never taken for the
 * answer of a later request (the classic Modbus client failure).
 *
 * The server here is ScriptedModbusServer: a REAL Modbus TCP server on
 * loopback (node:net), not a mock. It answers FC3/FC4 with registers holding
 * the ordinal of the request (1, 2, 3, ...), after a per-request delay, and can
 * stamp a reply with a transaction id other than the request's, as a broken
 * gateway or a wrapped 8-bit id would.
 */
import { createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import m from 'modbus-serial';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createModbusConnector, type ModbusConnector } from '../../connectors/modbus/index.js';
import { ModbusConnection, ModbusEquipment } from '../../src/config/schema.js';

const ModbusRTU = m.default;

interface Script {
  /** Delay of the reply to request number `seq` (1-based, counted over all connections). */
  delayMs(seq: number): number;
  /** Transaction id to stamp on the reply; default: the request's own. */
  tid?(seq: number, requestTid: number): number;
  /** Answer with this Modbus exception code instead of data. */
  exception?(fn: number, address: number, count: number): number | undefined;
}

interface ScriptedModbusServer {
  readonly port: number;
  readonly requests: number;
  readonly connections: number;
  setScript(s: Script): void;
  close(): Promise<void>;
}

async function startScriptedModbusServer(): Promise<ScriptedModbusServer> {
  let script: Script = { delayMs: () => 0 };
  let requests = 0;
  let connections = 0;
  const sockets = new Set<Socket>();
  const server: Server = createServer((sock) => {
    connections++;
    sockets.add(sock);
    sock.on('close', () => sockets.delete(sock));
    sock.on('error', () => undefined); // late replies to a socket the client dropped
    let buf = Buffer.alloc(0);
    sock.on('data', (d) => {
      buf = Buffer.concat([buf, d]);
      while (buf.length >= 7 && buf.length >= 6 + buf.readUInt16BE(4)) {
        const len = buf.readUInt16BE(4);
        const frame = buf.subarray(0, 6 + len);
        buf = buf.subarray(6 + len);
        const seq = ++requests;
        const tid = frame.readUInt16BE(0);
        const unit = frame[6]!;
        const fn = frame[7]!;
        const address = frame.readUInt16BE(8);
        const count = frame.readUInt16BE(10);
        const exception = script.exception?.(fn, address, count);
        let pdu: Buffer;
        if (exception !== undefined) {
          pdu = Buffer.from([fn | 0x80, exception]);
        } else if (fn === 3 || fn === 4) {
          pdu = Buffer.alloc(2 + 2 * count);
          pdu[0] = fn;
          pdu[1] = 2 * count;
          for (let i = 0; i < count; i++) pdu.writeUInt16BE(seq & 0xffff, 2 + 2 * i);
        } else {
          pdu = Buffer.from([fn | 0x80, 1]);
        }
        const reply = Buffer.alloc(7 + pdu.length);
        reply.writeUInt16BE(script.tid ? script.tid(seq, tid) : tid, 0);
        reply.writeUInt16BE(0, 2);
        reply.writeUInt16BE(1 + pdu.length, 4);
        reply[6] = unit;
        pdu.copy(reply, 7);
        setTimeout(() => {
          if (!sock.destroyed) sock.write(reply);
        }, script.delayMs(seq));
      }
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    port: (server.address() as AddressInfo).port,
    get requests() { return requests; },
    get connections() { return connections; },
    setScript(s) {
      script = s;
      requests = 0;
    },
    close: () => {
      for (const s of sockets) s.destroy();
      return new Promise((r) => server.close(() => r()));
    },
  };
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
// Margins chosen for a loaded two-core box: the late reply (1200 ms) lands while request 2
// (sent at ~1000 ms, answered 400 ms later, 600 ms inside its own timeout) is still waiting.
// Client and server share one event loop, so a stall delays both sides' timers alike and
// keeps their order; the margins only absorb socket-read lag between them.
const TIMEOUT = 1000;
const LATE = 1200;
const SLOW = 400;

describe('modbus: a late reply after a timeout', () => {
  let srv: ScriptedModbusServer;
  let conn: ModbusConnector;

  beforeAll(async () => {
    srv = await startScriptedModbusServer();
    conn = createModbusConnector({
      connection: ModbusConnection.parse({ id: 'mb', protocol: 'modbus', endpoint: 'sim', timeout_ms: TIMEOUT }),
      equipment: [ModbusEquipment.parse({
        id: 'dev', name: 'dev', type: 'plc', protocol: 'modbus', connection: 'mb', unit_id: 7,
        tags: [
          { name: 'Seq', kind: 'measurement', unit: '1', table: 'input', address: 0, type: 'uint16' },
          { name: 'Next', kind: 'measurement', unit: '1', table: 'input', address: 1, type: 'uint16' },
          { name: 'Hole', kind: 'measurement', unit: '1', table: 'input', address: 2, type: 'uint16' },
        ],
      })],
      host: '127.0.0.1',
      port: srv.port,
    });
    await conn.connect();
  });

  afterAll(async () => {
    await conn?.close();
    await srv?.close();
  });

  it('times out, then every later request gets its own answer, never the late one', async () => {
    srv.setScript({ delayMs: (seq) => (seq === 1 ? LATE : seq === 2 ? SLOW : 0) });
    const [first] = await conn.read(['dev.Seq']);
    expect(first).toMatchObject({ quality: 'bad', value: null, status: 'LK_CONN_TIMEOUT' });
    const values: unknown[] = [];
    for (let i = 0; i < 5; i++) values.push((await conn.read(['dev.Seq']))[0]!.value);
    expect(values).toEqual([2, 3, 4, 5, 6]);
    expect(conn.health().units).toEqual({ '7': 'ok' });
  });

  it('even when the late reply carries the transaction id of the next request', async () => {
    // The hazard is real: raw modbus-serial on one socket takes the late reply for the next answer.
    srv.setScript({ delayMs: (seq) => (seq === 1 ? LATE : seq === 2 ? SLOW : 0), tid: (seq, t) => (seq === 1 ? t + 1 : t) });
    const raw = new ModbusRTU();
    await raw.connectTCP('127.0.0.1', { port: srv.port });
    raw.setID(7);
    raw.setTimeout(TIMEOUT);
    await expect(raw.readInputRegisters(0, 1)).rejects.toMatchObject({ errno: 'ETIMEDOUT' });
    const rawSecond = await raw.readInputRegisters(0, 1);
    expect(rawSecond.data).toEqual([1]); // the answer to request 1, delivered as the answer to request 2
    await new Promise<void>((r) => raw.close(() => r()));
    await sleep(50);

    // Ours drops the socket on the timeout, so the mis-stamped late reply has nowhere to land.
    srv.setScript({ delayMs: (seq) => (seq === 1 ? LATE : seq === 2 ? SLOW : 0), tid: (seq, t) => (seq === 1 ? t + 1 : t) });
    const connectionsBefore = srv.connections;
    expect((await conn.read(['dev.Seq']))[0]!.status).toBe('LK_CONN_TIMEOUT');
    expect((await conn.read(['dev.Seq']))[0]!.value).toBe(2);
    await sleep(LATE - SLOW);
    expect((await conn.read(['dev.Seq']))[0]!.value).toBe(3);
    expect(srv.connections).toBe(connectionsBefore + 1);
  });

  it('a write to a non-setpoint is refused before anything is sent', async () => {
    const w = conn.claimWriter();
    // no setpoint on this device: refused before anything is sent
    srv.setScript({ delayMs: () => 0 });
    await expect(w.write('dev.Seq', 1)).rejects.toMatchObject({ code: 'LK_TAG_NOT_WRITABLE' });
    expect(srv.requests).toBe(0);
  });

  it('maps exception replies to LK codes, and one illegal address does not black out its coalesced neighbours', async () => {
    const cases: [number, string][] = [[1, 'LK_MODBUS_ILLEGAL_FUNCTION'], [2, 'LK_MODBUS_ILLEGAL_ADDRESS'], [4, 'LK_MODBUS_DEVICE_FAILURE'], [6, 'LK_MODBUS_BUSY'], [11, 'LK_MODBUS_GATEWAY'], [8, 'LK_MODBUS_EXCEPTION']];
    for (const [code, lk] of cases) {
      srv.setScript({ delayMs: () => 0, exception: () => code });
      expect((await conn.read(['dev.Seq']))[0], `exception ${code}`).toMatchObject({ quality: 'bad', value: null, status: lk });
    }
    // registers 0..2 are read as one block; address 2 is "unmapped"
    srv.setScript({ delayMs: () => 0, exception: (_fn, a, n) => (a + n > 2 ? 2 : undefined) });
    const s = await conn.read(['dev.Seq', 'dev.Next', 'dev.Hole']);
    expect(s.map((x) => x.status)).toEqual(['Good', 'Good', 'LK_MODBUS_ILLEGAL_ADDRESS']);
    expect(srv.requests).toBe(4); // the block, then each tag on its own
    expect(s[0]!.value).toBe(2);
    expect(s[1]!.value).toBe(3);
  });
});

describe('modbus: an endpoint that refuses connections', () => {
  it('connect() keeps retrying with backoff, reads fail fast as bad samples, close() ends it', async () => {
    // a port that was free a moment ago and is closed now
    const probe = createServer();
    await new Promise<void>((r) => probe.listen(0, '127.0.0.1', r));
    const port = (probe.address() as AddressInfo).port;
    await new Promise<void>((r) => probe.close(() => r()));

    const conn = createModbusConnector({
      // a request timeout far longer than the hang guard below: a read that waited for it (or for a
      // connection, which never comes) cannot pass as failing fast
      connection: ModbusConnection.parse({ id: 'mb', protocol: 'modbus', endpoint: 'sim', timeout_ms: 120_000 }),
      equipment: [ModbusEquipment.parse({
        id: 'dev', name: 'dev', type: 'plc', protocol: 'modbus', connection: 'mb', unit_id: 1,
        tags: [{ name: 'A', kind: 'measurement', unit: '1', table: 'input', address: 0, type: 'uint16' }],
      })],
      host: '127.0.0.1',
      port,
      backoff: { initialMs: 20, maxMs: 100 },
    });
    const connecting = conn.connect();
    let settled = false;
    connecting.then(() => (settled = true), () => (settled = true));
    await sleep(300);
    expect(settled).toBe(false);
    expect(conn.health()).toMatchObject({ state: 'connecting', units: { '1': 'error' } });
    // Hang guard, not a speed limit: the read answers at once (milliseconds); 20 s only catches a read
    // that waits for the connection or for the 120 s request timeout.
    const hang = new Promise<'hang'>((r) => setTimeout(() => r('hang'), 20_000).unref());
    const read = await Promise.race([conn.read(['dev.A']), hang]);
    expect(read).not.toBe('hang');
    const [a] = read as Awaited<ReturnType<typeof conn.read>>;
    expect(a).toMatchObject({ quality: 'bad', value: null, status: 'LK_CONN_UNAVAILABLE' });
    expect(settled).toBe(false); // answered while still connecting, not after giving up
    await conn.close();
    await expect(connecting).rejects.toMatchObject({ code: 'LK_CONN_UNAVAILABLE' });
    expect(conn.health().state).toBe('closed');
  });
});
