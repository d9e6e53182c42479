/**
 * Revert latency per heartbeat kind, on PLCs that are not linekeeper's simulator (test/helpers/vendor-plcs.ts,
 * watchdog 1,000 ms checked every 20 ms): a Boolean life bit toggled over OPC UA (coater), an Int16 life counter
 * over OPC UA (press), a Modbus holding-register counter (fluid bed), each beaten every 100 ms by linekeeper's
 * connectors. Per round: heartbeats on, every PLC re-armed (read back ATTENDED), then the heartbeats stop — what a
 * dead edge node does — and each PLC's own revert timestamp gives the latency from the stop to its fallback.
 * Ours: p99 per kind. Peer: the PLC's bound for a supervisor that beat just before it died, watchdog + one check
 * (1,000 + 20 ms). Also the connectors' configure-to-ready: create → connected → the PLC's first accepted beat.
 * The kinds differ little by design: the PLC's watchdog, not the life sign's encoding, sets the latency; what the
 * kind decides is whether the beats are accepted at all (a Boolean bit written `2` never was).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createModbusConnector } from '../connectors/modbus/index.js';
import { createOpcUaConnector } from '../connectors/opcua/index.js';
import { startVendorPlcs } from '../test/helpers/vendor-plcs.js';
import { percentile, report } from './lib.js';

const rounds = Number(process.env['LK_BENCH_REVERTS'] ?? 10);
const WATCHDOG_MS = 1000;
const CHECK_MS = 20;
const dataDir = mkdtempSync(join(tmpdir(), 'lk-bench-supervision-'));
const until = async (what: string, ok: () => boolean, ms = 10_000): Promise<void> => {
  const end = Date.now() + ms;
  while (!ok()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
};

const plcs = await startVendorPlcs(dataDir, { watchdogMs: WATCHDOG_MS, pressCounterStart: 32_700 });
const unit = (id: string) => plcs.units.get(id)!;
const { coater, press, nir, fluidbed } = plcs.equipment;
const t0 = performance.now();
const opcua = createOpcUaConnector({ connection: plcs.opcua, equipment: [coater, press, nir], url: plcs.opcuaUrl, dataDir, backoff: { initialMs: 100, maxMs: 400 } });
const mb = createModbusConnector({ connection: plcs.modbus, equipment: [fluidbed], host: '127.0.0.1', port: plcs.modbusPort, backoff: { initialMs: 50, maxMs: 400 } });
await Promise.all([opcua.connect(), mb.connect()]);
const connectedMs = performance.now() - t0;
const ow = opcua.claimWriter();
const mw = mb.claimWriter();
const kinds = [
  { id: 'coater', label: 'Boolean life bit (toggle), OPC UA', w: ow, c: opcua },
  { id: 'press', label: 'Int16 life counter, OPC UA', w: ow, c: opcua },
  { id: 'fluidbed', label: 'uint16 counter, Modbus TCP', w: mw, c: mb },
] as const;
const before = new Map(kinds.map((k) => [k.id, unit(k.id).beats.length]));
opcua.startHeartbeat();
mb.startHeartbeat();
await until('first beats', () => kinds.every((k) => unit(k.id).beats.length > before.get(k.id)!));
const readyMs = performance.now() - t0;
opcua.stopHeartbeat();
mb.stopHeartbeat();

const latency = new Map<string, number[]>(kinds.map((k) => [k.id, []]));
const failures: string[] = [];
for (let r = 0; r < rounds; r++) {
  // the connectors' beats out of phase with each other (they are independent timers on a real node)
  opcua.startHeartbeat();
  await new Promise((res) => setTimeout(res, Math.floor(Math.random() * 100)));
  mb.startHeartbeat();
  const seen = new Map(kinds.map((k) => [k.id, unit(k.id).beats.length]));
  await until('beats', () => kinds.every((k) => unit(k.id).beats.length >= seen.get(k.id)! + 2));
  for (const k of kinds) {
    const a = await k.w.commandRearm(k.id);
    if (a.state !== 'ATTENDED' || !a.verified) failures.push(`round ${r}: ${k.id} not re-armed (${a.state})`);
  }
  // a stop at a random point of the beat period, as a crash would be
  await new Promise((res) => setTimeout(res, 200 + Math.floor(Math.random() * 100)));
  const stopAt = Date.now();
  opcua.stopHeartbeat();
  mb.stopHeartbeat();
  await until('every fallback', () => kinds.every((k) => (unit(k.id).revertedAt ?? 0) >= stopAt), 5000);
  for (const k of kinds) latency.get(k.id)!.push(unit(k.id).revertedAt! - stopAt);
}
await opcua.close();
await mb.close();
await plcs.close();
rmSync(dataDir, { recursive: true, force: true });

for (const f of failures) process.stdout.write(`${f}\n`);
const bound = WATCHDOG_MS + CHECK_MS;
for (const k of kinds) {
  const xs = latency.get(k.id)!;
  const p99 = percentile(xs, 99);
  report({
    name: `revert latency, heartbeats stopped → PLC on its LKG recipe: ${k.label} (${xs.length} rounds, beat 100 ms, watchdog ${WATCHDOG_MS} ms)`,
    unit: 'ms',
    ours: { label: 'p99, the PLC\u2019s own revert timestamps', value: p99 },
    peer: { label: 'PLC bound: watchdog + one check', value: bound },
    higherIsBetter: false,
    target: `p99 ≤ ${bound} ms: ${p99 <= bound ? 'met' : 'NOT met'}`,
    extra: { p50_ms: percentile(xs, 50), min_ms: Math.min(...xs), max_ms: Math.max(...xs) },
  });
}
process.stdout.write(`configure-to-ready (vendor PLCs, 2 connectors, 4 units): connected ${Math.round(connectedMs)} ms, first beat accepted by every supervised PLC ${Math.round(readyMs)} ms\n`);
process.exitCode = failures.length === 0 ? 0 : 1;
