import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { queryAudit } from '../../src/audit/index.js';
import { defaultConfigFile } from '../../src/config/load.js';
import { startDaemon, type Daemon } from '../../src/daemon.js';
import { silentLogger } from '../../src/log.js';

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
    expect(daemon.ready.connections).toEqual({ 'opcua-line': 'connecting', 'modbus-line': 'connected' });
    // the reachable PLCs get their heartbeats: the blender stays attended well past its watchdog timeout
    await new Promise((r) => setTimeout(r, daemon.loaded.config.simulator.watchdog_timeout_ms + 500));
    expect(daemon.simulator!.plant.read('blender', 'SupervisorState')).toBe('ATTENDED');
    const site = queryAudit(daemon.store.db, 'site', {}, { limit: 1000 }).entries.map((e) => e.action);
    expect(site).toContain('connector.connected');
    expect(site.filter((a) => a === 'connector.connected')).toHaveLength(1);
  });
});
