/**
 * `serve` compares each equipment's heartbeat period with the WatchdogTimeoutMs its PLC reports, and refuses
 * to supervise a PLC it cannot keep alive (audited on the site chain) instead of heartbeating it too slowly.
 * The plant runs outside the daemon (as a real line does), with a watchdog shorter than the press's period.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import type { Simulator } from '../../connectors/sim/index.js';
import { queryAudit } from '../../src/audit/index.js';
import { startDaemon, type Daemon } from '../../src/daemon.js';
import { silentLogger } from '../../src/log.js';
import { keepAliveRefusals } from '../../src/supervision/plc-watch.js';
import { startPlant, writeSiteConfig } from '../fault/daemon-child.js';

let dir: string;
let plant: Simulator;
let daemon: Daemon;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'lk-keepalive-'));
  plant = await startPlant({ watchdogTimeoutMs: 1500 });
  const file = writeSiteConfig(dir, { opcua: plant.opcuaUrl, modbus: `${plant.modbusHost}:${plant.modbusPort}`, heartbeatMs: 300 });
  // the press alone beats slower than its PLC's watchdog; config check cannot know a real PLC's timeout
  const cfg = parse(readFileSync(file, 'utf8')) as { equipment: { id: string; heartbeat: { period_ms: number } }[] };
  cfg.equipment.find((e) => e.id === 'press')!.heartbeat.period_ms = 2000;
  writeFileSync(file, stringify(cfg));
  daemon = await startDaemon({ configFile: file, dataDir: join(dir, 'data'), logger: silentLogger, connectTimeoutMs: 150_000 }); // hang guard: every PLC here is reachable, and the keep-alive check reads them at start (OPC UA took > 15 s to connect under load)
}, 120_000);
afterAll(async () => {
  await daemon?.stop('test done');
  await plant?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('a PLC whose watchdog is shorter than the heartbeat period', () => {
  it('is judged from what the PLC reports', () => {
    const good = (tag: string, value: number | null) => ({ tag, value, quality: 'good' as const, status: 'Good', unit: 'ms', sourceTime: 0, receivedAt: 0 });
    const eq = [{ id: 'press', heartbeat: { period_ms: 1000 } }, { id: 'coater', heartbeat: { period_ms: 1000 } }, { id: 'nir', heartbeat: { period_ms: 1000 } }];
    expect(keepAliveRefusals(eq, [good('press.WatchdogTimeoutMs', 1000), good('coater.WatchdogTimeoutMs', 3000), { ...good('nir.WatchdogTimeoutMs', null), quality: 'bad' as const }]))
      .toEqual([{ equipment: 'press', periodMs: 1000, watchdogTimeoutMs: 1000 }]);
  });

  it('is refused and audited at start; the others are supervised', () => {
    const refused = queryAudit(daemon.store.db, 'site', { kind: 'watchdog' }, { limit: 100 }).entries.filter((e) => e.action === 'watchdog.supervision_refused');
    expect(refused.map((e) => (e.args as { equipment: string }).equipment)).toEqual(['press']);
    expect((refused[0]!.args as { detail: unknown }).detail).toEqual({ heartbeat_period_ms: 2000, watchdog_timeout_ms: 1500 });
  });

  it('is not heartbeated (its watchdog is never armed by linekeeper) while the coater is', async () => {
    const press = plant.plant.read('press', 'Heartbeat');
    const coater = plant.plant.read('coater', 'Heartbeat');
    const deadline = Date.now() + 20_000;
    while (plant.plant.read('coater', 'Heartbeat') === coater && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    await new Promise((r) => setTimeout(r, 2500)); // longer than the press's period
    expect(plant.plant.read('coater', 'Heartbeat')).not.toBe(coater);
    expect(plant.plant.read('press', 'Heartbeat')).toBe(press);
    expect(plant.plant.read('coater', 'SupervisorState')).toBe('ATTENDED');
  });
});
