/**
 * `linekeeper doctor` on a real configuration copy in a temp dir: equipment endpoints on real loopback sockets
 * (one listening, one closed), a real audit store (then tampered), a port taken by another program; the time
 * daemon and statfs are stood in for where the container cannot show them.
 */
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clockCheck, endpointAddress, exitCodeOf, runDoctor, worst } from '../../src/ops/doctor.js';
import { openStore } from '../../src/store/store.js';
import { entry, rawDb } from '../unit/audit-helpers.js';
import { runCli } from '../helpers/cli.js';

const listen = (srv: Server): Promise<number> => new Promise((r) => srv.listen(0, '127.0.0.1', () => r((srv.address() as { port: number }).port)));

let dir: string;
let cfg: string;
let open: Server;
let openPort: number;
let closedPort: number;
let busy: Server;
let busyPort: number;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'lk-doctor-'));
  cpSync('config/policy', join(dir, 'policy'), { recursive: true });
  open = createServer((s) => s.destroy());
  openPort = await listen(open);
  const closed = createServer();
  closedPort = await listen(closed);
  await new Promise((r) => closed.close(r));
  busy = createServer((s) => s.destroy());
  busyPort = await listen(busy);
  const site = readFileSync('config/site.yaml', 'utf8')
    .replace('embedded: true', 'embedded: false')
    .replace(/endpoint: sim\n(\s+)namespace_uri/, `endpoint: "opc.tcp://127.0.0.1:${openPort}/lk"\n$1namespace_uri`)
    .replace(/endpoint: sim\n(\s+)timeout_ms/, `endpoint: "127.0.0.1:${closedPort}"\n$1timeout_ms`)
    .replace('data_dir: ./data', `data_dir: ${JSON.stringify(join(dir, 'data'))}\napi: { host: 127.0.0.1, port: ${busyPort} }`);
  cfg = join(dir, 'site.yaml');
  writeFileSync(cfg, site);
});

afterAll(async () => {
  await new Promise((r) => open.close(r));
  await new Promise((r) => busy.close(r));
  rmSync(dir, { recursive: true, force: true });
});

const synced = async (): Promise<string> => 'Timezone=UTC\nNTP=yes\nNTPSynchronized=yes\n';

describe('linekeeper doctor', () => {
  it('reports each check with ok / warn / fail and an action, and the worst decides', async () => {
    const r = await runDoctor({ configFile: cfg, connectTimeoutMs: 1000, probes: { timedatectl: synced } });
    const by = Object.fromEntries(r.checks.map((c) => [c.id, c]));
    expect(by['config']!.status).toBe('ok');
    // valid against the configuration, but nothing has signed it yet (no data directory): a warning with what to do
    expect(by['policy']!.status).toBe('warn');
    expect(by['policy']!.message).toContain('not signed yet');
    expect(by['policy']!.action).toContain('policy apply');
    expect(by['data_dir']!.status).toBe('ok');
    // every unit of the embedded default is supervised, each with its heartbeat and fallback value
    expect(by['supervision']).toMatchObject({ status: 'ok', message: expect.stringMatching(/^supervised: blender \(counter to 4294967295, fallback 1\), .*press \(counter to 4294967295, fallback "LOST"\).*; monitor-only: none$/) });
    expect(by['endpoint:opcua-line']!.status).toBe('ok');
    expect(by['endpoint:modbus-line']!.status).toBe('fail');
    expect(by['endpoint:modbus-line']!.action).toBeTruthy();
    expect(by['clock']!.status).toBe('ok');
    expect(by['ports']!.status).toBe('fail');
    expect(r.status).toBe('fail');
  });

  it('fails a data directory on a network filesystem and warns or fails on low free space', async () => {
    const nfs = await runDoctor({ configFile: cfg, probes: { timedatectl: synced, statfs: () => ({ free: 10 * 1024 ** 3, type: 0x6969 }) } });
    expect(nfs.checks.find((c) => c.id === 'data_dir')!.status).toBe('fail');
    const low = await runDoctor({ configFile: cfg, probes: { timedatectl: synced, statfs: () => ({ free: 1024 ** 3, type: 0xef53 }) } });
    expect(low.checks.find((c) => c.id === 'free_space')!.status).toBe('warn');
    const full = await runDoctor({ configFile: cfg, probes: { timedatectl: synced, statfs: () => ({ free: 1024 ** 2, type: 0xef53 }) } });
    expect(full.checks.find((c) => c.id === 'free_space')!.status).toBe('fail');
  });

  it('verifies the audit chain, and fails it once a row was edited behind its back', async () => {
    const data = join(dir, 'data');
    const store = openStore({ dataDir: data });
    for (let i = 0; i < 5; i++) store.audit.append(entry(i));
    store.close();
    const good = await runDoctor({ configFile: cfg, probes: { timedatectl: synced } });
    expect(good.checks.find((c) => c.id === 'audit')!.status).toBe('ok');
    const db = rawDb(data);
    db.prepare("UPDATE audit_entry SET body = json_set(body, '$.actor', 'mallory') WHERE tenant = 'acme-pharma' AND seq = 3").run();
    db.close();
    const bad = await runDoctor({ configFile: cfg, probes: { timedatectl: synced } });
    expect(bad.checks.find((c) => c.id === 'audit')!.status).toBe('fail');
    rmSync(data, { recursive: true, force: true });
  });

  it('an invalid configuration is one failed check, not an exception', async () => {
    const badCfg = join(dir, 'bad.yaml');
    writeFileSync(badCfg, readFileSync(cfg, 'utf8').replace('version: 1', 'version: 1\nnot_a_key: 3'));
    const r = await runDoctor({ configFile: badCfg });
    expect(r.checks.map((c) => [c.id, c.status])).toEqual([['config', 'fail']]);
  });

  it('CLI: --json, and the exit code says the worst (0 ok, 1 warn, 2 fail)', async () => {
    const out = await runCli('doctor', '-c', cfg, '--json', '--timeout', '500');
    expect(out.code).toBe(2);
    const report = JSON.parse(out.out) as { status: string; checks: { id: string; status: string }[] };
    expect(report.status).toBe('fail');
    expect(report.checks.some((c) => c.id === 'ports' && c.status === 'fail')).toBe(true);
  });

  it('reads the NTP state of timedatectl, and calls a missing one unknown (warn)', () => {
    expect(clockCheck(null).status).toBe('warn');
    expect(clockCheck('NTP=yes\nNTPSynchronized=no\n').status).toBe('warn');
    expect(clockCheck('NTP=yes\nNTPSynchronized=yes\n').status).toBe('ok');
    expect(endpointAddress('opc.tcp://10.0.0.5/press')).toEqual({ host: '10.0.0.5', port: 4840 });
    expect(endpointAddress('[::1]:502')).toEqual({ host: '::1', port: 502 });
    expect(worst(['ok', 'warn', 'ok'])).toBe('warn');
    expect([exitCodeOf('ok'), exitCodeOf('warn'), exitCodeOf('fail')]).toEqual([0, 1, 2]);
  });
});
