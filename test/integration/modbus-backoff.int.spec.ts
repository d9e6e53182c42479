/**
 * A Modbus peer that accepts and closes at once (a gateway at its connection limit): the reconnect backoff
 * keeps doubling, because a connection that was never healthy must not reset it. Before, every accepted
 * connection reset the delay to its initial value and the lane reconnected every ~200 ms forever.
 * Gaps are asserted as lower bounds (a timer never fires early; a loaded machine only makes them longer).
 */
import { createServer, type Server, type Socket } from 'node:net';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createModbusConnector, type ModbusConnector } from '../../connectors/modbus/index.js';
import { nextBackoff } from '../../connectors/modbus/lane.js';
import { loadConfig } from '../../src/config/load.js';
import type { ModbusEquipmentConfig } from '../../src/config/schema.js';

const SITE = fileURLToPath(new URL('../../config/site.yaml', import.meta.url));
let server: Server;
let port: number;
const accepts: number[] = [];

beforeAll(async () => {
  server = createServer((s: Socket) => {
    accepts.push(performance.now());
    s.destroy();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  port = (server.address() as { port: number }).port;
});
afterAll(async () => {
  await new Promise<void>((r) => server.close(() => r()));
});

describe('modbus reconnect backoff', () => {
  it('is reset only by a connection that stayed open for healthyMs', () => {
    const b = { initialMs: 100, maxMs: 1000, healthyMs: 5000 };
    expect(nextBackoff(b, 0, undefined)).toEqual({ delayMs: 100, attempt: 1 });
    expect(nextBackoff(b, 3, 10)).toEqual({ delayMs: 800, attempt: 4 }); // opened and closed at once: keeps doubling
    expect(nextBackoff(b, 6, 10)).toEqual({ delayMs: 1000, attempt: 7 });
    expect(nextBackoff(b, 6, 5000)).toEqual({ delayMs: 100, attempt: 1 }); // healthy for 5 s: afresh
    expect(nextBackoff(b, 5000, undefined).delayMs).toBe(1000); // no overflow to Infinity
  });

  it('against a peer that accepts and closes at once, the gaps between connects grow to the cap', async () => {
    const cfg = loadConfig(SITE).config;
    const connection = cfg.connections.find((c) => c.protocol === 'modbus');
    if (connection?.protocol !== 'modbus') throw new Error('no modbus connection in site.yaml');
    // one unit: one lane, so every accept belongs to the same backoff
    const equipment = cfg.equipment.filter((e): e is ModbusEquipmentConfig => e.protocol === 'modbus').slice(0, 1);
    const conn: ModbusConnector = createModbusConnector({
      connection: { ...connection, timeout_ms: 500 }, equipment, host: '127.0.0.1', port, backoff: { initialMs: 20, maxMs: 640 },
    });
    void conn.connect().catch(() => undefined);
    try {
      const deadline = Date.now() + 30_000;
      while (accepts.length < 8 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    } finally {
      await conn.close();
    }
    expect(accepts.length).toBeGreaterThanOrEqual(8);
    // delays 20, 40, 80, 160, 320, 640, 640: the 6th and 7th gaps are at least ~640 ms
    const gaps = accepts.slice(1).map((t, i) => t - accepts[i]!);
    expect(gaps[5]!).toBeGreaterThanOrEqual(600);
    expect(gaps[6]!).toBeGreaterThanOrEqual(600);
  });
});
