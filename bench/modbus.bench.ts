/**
 * Modbus poll throughput: linekeeper's connector reading a 50-register group
 * (50 int16 tags, scaled, decoded into samples) against raw modbus-serial
 * reading the same 50 input registers, both on one connection to the same
 * in-process modbus-serial ServerTCP on loopback. Values per second; the
 * rounds alternate so drift on a noisy two-core box hits both sides alike.
 *
 * Run: npx tsx bench/modbus.bench.ts
 */
import { once } from 'node:events';
import type { AddressInfo, Server } from 'node:net';
import m from 'modbus-serial';
import { createModbusConnector } from '../connectors/modbus/index.js';
import { ModbusConnection, ModbusEquipment } from '../src/config/schema.js';
import { opsPerSecond, report } from './lib.js';

const ModbusRTU = m.default;
const { ServerTCP } = m;
const N = 50;
const ROUNDS = 3;
const MS = 2500;

const registers = Array.from({ length: N }, (_, i) => (i * 37) & 0x7fff);
const vector = {
  getMultipleInputRegisters: (addr: number, len: number): number[] => registers.slice(addr, addr + len),
  getInputRegister: (addr: number): number => registers[addr] ?? 0,
};
// modbus-serial listens on `port || 502`, so port 0 must be passed as the truthy string "0".
const server = new ServerTCP(vector as never, { host: '127.0.0.1', port: '0' as unknown as number, unitID: 1 });
await once(server, 'initialized');
const port = ((server as unknown as { _server: Server })._server.address() as AddressInfo).port;

const connection = ModbusConnection.parse({ id: 'bench', protocol: 'modbus', endpoint: 'sim', timeout_ms: 1000 });
const equipment = ModbusEquipment.parse({
  id: 'dev', name: 'bench device', type: 'plc', protocol: 'modbus', connection: 'bench', unit_id: 1,
  tags: Array.from({ length: N }, (_, i) => ({ name: `R${i}`, kind: 'measurement', unit: 'Cel', table: 'input', address: i, type: 'int16', scale: 0.1 })),
});
const tags = equipment.tags.map((t) => `dev.${t.name}`);
const ours = createModbusConnector({ connection, equipment: [equipment], host: '127.0.0.1', port });
await ours.connect();

const raw = new ModbusRTU();
await raw.connectTCP('127.0.0.1', { port });
raw.setID(1);
raw.setTimeout(1000);

// Sanity: both see the same registers, ours as engineering values.
const [s0] = await ours.read(['dev.R3']);
const r0 = await raw.readInputRegisters(0, N);
if (s0?.quality !== 'good' || s0.value !== Number((r0.data[3]! * 0.1).toPrecision(15))) throw new Error(`mismatch: ${JSON.stringify(s0)} vs ${r0.data[3]}`);

let bad = 0;
const oursRead = async (): Promise<void> => {
  const s = await ours.read(tags);
  if (s.length !== N || s[N - 1]!.quality !== 'good') bad++;
};
const rawRead = async (): Promise<void> => {
  const r = await raw.readInputRegisters(0, N);
  if (r.data.length !== N) bad++;
};

const oursRates: number[] = [];
const rawRates: number[] = [];
for (let i = 0; i < ROUNDS; i++) {
  rawRates.push((await opsPerSecond(rawRead, MS)) * N);
  oursRates.push((await opsPerSecond(oursRead, MS)) * N);
}
const mean = (xs: number[]): number => xs.reduce((a, b) => a + b, 0) / xs.length;

report({
  name: 'modbus poll, 50-register group',
  unit: 'values/s',
  ours: { label: 'linekeeper ModbusConnector.read (50 int16 tags, decoded)', value: mean(oursRates) },
  peer: { label: 'raw modbus-serial readInputRegisters(0, 50)', value: mean(rawRates) },
  higherIsBetter: true,
  target: 'ours ≥ 0.85 × raw',
  extra: {
    oursRequestsPerS: mean(oursRates) / N,
    rawRequestsPerS: mean(rawRates) / N,
    rounds: ROUNDS,
    errors: bad,
  },
});

await ours.close();
await new Promise<void>((r) => raw.close(() => r()));
await new Promise<void>((r) => server.close(() => r()));
