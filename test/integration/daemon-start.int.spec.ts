import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { queryAudit } from '../../src/audit/index.js';
import { defaultConfigFile } from '../../src/config/load.js';
import { startDaemon, type Daemon } from '../../src/daemon.js';
import { silentLogger } from '../../src/log.js';
import { waitFor } from '../helpers/sim.js';

/** Hang guard for what comes after ready (ms on an idle machine, seconds under load): fails only if it never comes. */
const HANG_GUARD_MS = 60_000;

let dir: string;
let daemon: Daemon;

beforeAll(async () => {
  // the OPC UA PLCs are unreachable when the edge node starts (nothing listens on the discard port)
  dir = mkdtempSync(join(tmpdir(), 'lk-daemon-start-'));
  cpSync(join(defaultConfigFile(), '..', 'policy'), join(dir, 'policy'), { recursive: true });
  const site = readFileSync(defaultConfigFile(), 'utf8').replace('protocol: opcua\n    endpoint: sim', 'protocol: opcua\n    endpoint: "opc.tcp://127.0.0.1:9/unreachable"');
  expect(site).toContain('127.0.0.1:9/unreachable');
  writeFileSync(join(dir, 'site.yaml'), site);
  daemon = await startDaemon({ configFile: join(dir, 'site.yaml'), dataDir: join(dir, 'data'), logger: silentLogger, connectTimeoutMs: 1500 });
});
afterAll(async () => {
  await daemon?.stop('test done');
  rmSync(dir, { recursive: true, force: true });
});

describe('the daemon starts while part of the line is unreachable', () => {
  it('reports ready with the unreachable connection still connecting, and supervises the rest', async () => {
    // connectTimeoutMs is how long start-up waits before reporting ready anyway: the OPC UA line can
    // never connect, so it must be 'connecting'; the reachable Modbus line is connected at ready time
    // on an idle machine, but a loaded one may take longer than 1.5 s — then it connects after.
    expect(daemon.ready.connections['opcua-line']).toBe('connecting');
    expect(['connected', 'connecting']).toContain(daemon.ready.connections['modbus-line']);
    const modbus = daemon.connectors.find((c) => c.id === 'modbus-line')!;
    expect(await waitFor(() => modbus.health().state === 'connected', HANG_GUARD_MS, 50)).toBe(true);
    // the reachable PLCs get their heartbeats: the blender is armed by them and stays attended well past
    // its watchdog timeout
    const plant = daemon.simulator!.plant;
    expect(await waitFor(() => plant.supervisor('blender').armed, HANG_GUARD_MS, 50)).toBe(true);
    const beat = plant.supervisor('blender').heartbeat;
    await new Promise((r) => setTimeout(r, daemon.loaded.config.simulator.watchdog_timeout_ms + 500));
    expect(plant.supervisor('blender').heartbeat).not.toBe(beat);
    expect(plant.read('blender', 'SupervisorState')).toBe('ATTENDED');
    expect(daemon.connectors.find((c) => c.id === 'opcua-line')!.health().state).toBe('connecting');
    const site = queryAudit(daemon.store.db, 'site', {}, { limit: 1000 }).entries.map((e) => e.action);
    expect(site.filter((a) => a === 'connector.connected')).toHaveLength(1);
  });
});
