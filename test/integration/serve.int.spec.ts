import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AttributeIds } from 'node-opcua';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { queryAudit } from '../../src/audit/index.js';
import { defaultConfigFile } from '../../src/config/load.js';
import type { ReadyInfo } from '../../src/daemon.js';
import { openStore } from '../../src/store/store.js';
import { rawOpcUaSession, waitFor, type Simulator } from '../helpers/sim.js';
import { LINEKEEPER_BIN } from '../helpers/bin.js';

const CLI = LINEKEEPER_BIN;

/** Start `linekeeper serve` as a child and resolve with its ready line. */
function serve(args: string[]): Promise<{ child: ChildProcess; ready: ReadyInfo; stderr: () => string; stdout: () => string }> {
  // the REST API on a free port: the default 8080 may be taken on a test machine
  const child = spawn(process.execPath, [...CLI, 'serve', '--api-port', '0', ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  return new Promise((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`no ready line in 150 s; stderr:\n${err.slice(-2000)}`)), 150_000);
    child.on('exit', (code) => reject(new Error(`serve exited ${code} before ready; stderr:\n${err.slice(-2000)}`)));
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      const line = out.split('\n').find((l) => l.startsWith('linekeeper ready '));
      if (line) {
        clearTimeout(t);
        resolve({ child, ready: JSON.parse(line.slice('linekeeper ready '.length)) as ReadyInfo, stderr: () => err, stdout: () => out });
      }
    });
  });
}

function exited(child: ChildProcess, timeoutMs: number): Promise<number | null> {
  return new Promise((resolve, reject) => {
    if (child.exitCode !== null) return resolve(child.exitCode);
    const t = setTimeout(() => reject(new Error('did not exit in time')), timeoutMs);
    child.on('exit', (code) => {
      clearTimeout(t);
      resolve(code);
    });
  });
}

describe('linekeeper serve on the embedded default', () => {
  let data: string;
  let run: Awaited<ReturnType<typeof serve>>;

  beforeAll(async () => {
    data = mkdtempSync(join(tmpdir(), 'lk-serve-'));
    run = await serve(['--data', data]);
    // generous: a guard against a hang, not a speed requirement (a loaded CI machine starts slowly)
  }, 180_000);
  afterAll(() => {
    if (run?.child.exitCode === null) run.child.kill('SIGKILL');
    rmSync(data, { recursive: true, force: true });
  });

  it('prints one ready line with the endpoints it uses, all connected', () => {
    expect(run.ready.line).toBe('line-3');
    expect(run.ready.data).toBe(data);
    expect(run.ready.endpoints['opcua-line']).toMatch(/^opc\.tcp:\/\/127\.0\.0\.1:\d+\//);
    expect(run.ready.endpoints['modbus-line']).toMatch(/^127\.0\.0\.1:\d+$/);
    expect(run.ready.connections).toEqual({ 'opcua-line': 'connected', 'modbus-line': 'connected' });
    expect(run.ready.api).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
  });

  it('serves the REST API at the address of its ready line, to the demo identities it printed once', async () => {
    expect((await fetch(`${run.ready.api}/healthz`)).status).toBe(200);
    const users = JSON.parse(run.stdout().split('\n').find((l) => l.startsWith('linekeeper demo-users '))!.slice('linekeeper demo-users '.length)) as { user: string; password: string }[];
    expect(users.map((u) => u.user)).toEqual(expect.arrayContaining(['o.operator', 'p.bianchi', 'm.rossi', 'l.conti', 'g.ferri']));
    const rossi = users.find((u) => u.user === 'm.rossi')!;
    const signIn = await fetch(`${run.ready.api}/v1/auth/token`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ user: 'm.rossi', password: rossi.password }) });
    expect(signIn.status).toBe(200);
    const { token, mustChangePassword } = (await signIn.json()) as { token: string; mustChangePassword: boolean };
    // a one-time password printed by the daemon is someone else's choice: it opens nothing but the change (21 CFR 11.300)
    expect(mustChangePassword).toBe(true);
    const auth = { authorization: `Bearer ${token}` };
    const before = await fetch(`${run.ready.api}/v1/tenants/acme-pharma/runs`, { headers: auth });
    expect(before.status).toBe(403);
    expect(((await before.json()) as { code: string }).code).toBe('LK_PASSWORD_CHANGE_REQUIRED');
    const change = await fetch(`${run.ready.api}/v1/auth/password`, { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: JSON.stringify({ current: rossi.password, password: 'Quarantine-lot 7 of the blue granulate' }) });
    expect(change.status).toBe(200);
    const runs = await fetch(`${run.ready.api}/v1/tenants/acme-pharma/runs`, { headers: auth });
    expect(await runs.json()).toEqual({ items: [] });
  });

  it('writes heartbeats the PLC sees, so the line stays attended', async () => {
    const sim = { opcuaUrl: run.ready.endpoints['opcua-line']!, namespaceUri: 'urn:linekeeper:sim' } as unknown as Simulator;
    const raw = await rawOpcUaSession(sim);
    try {
      const read = async (id: string) => (await raw.session.read({ nodeId: raw.nodeId(id), attributeId: AttributeIds.Value })).value.value as unknown;
      const first = (await read('press.Supervisor.Heartbeat')) as number;
      expect(await waitFor(async () => ((await read('press.Supervisor.Heartbeat')) as number) > first + 1, 60_000, 200)).toBe(true);
      expect(await read('press.Supervisor.SupervisorState')).toBe('ATTENDED');
      expect(await read('coater.Supervisor.RevertCount')).toBe(0);
    } finally {
      await raw.close();
    }
  });

  it('logs live values and stops cleanly on SIGTERM', async () => {
    expect(await waitFor(() => run.stderr().includes('"msg":"live values"'), 60_000, 100)).toBe(true);
    expect(run.stderr()).toMatch(/"press\.Hardness":"[\d.]+ N"/);
    expect(run.stderr()).toMatch(/"nir\.Spectrum":"\[\d+ values\]"/);
    run.child.kill('SIGTERM');
    expect(await exited(run.child, 15_000)).toBe(0);
    expect(run.stderr()).toContain('"msg":"stopped"');
    // stdout is for machines: the demo identities of a first start, the review console's address, the ready line,
    // and nothing else (node-opcua's console output is routed to the log)
    const lines = run.stdout().trim().split('\n');
    expect(lines).toHaveLength(3);
    expect(lines[0]).toMatch(/^linekeeper demo-users \[\{"user":"/);
    expect(lines[1]).toMatch(new RegExp(`^linekeeper console ${run.ready.api!.replace(/[.]/g, '\\.')}/console `));
    expect(lines[2]).toBe(`linekeeper ready ${JSON.stringify(run.ready)}`);
  });

  it('recorded its own life on the site chain, which verifies', () => {
    expect(run.ready.policy).toMatch(/^[0-9a-f]{64}$/);
    const actions = siteActions(data);
    expect(actions[0]).toBe('site.start');
    expect(actions).toContain('policy.accepted');
    expect(actions).toContain('connector.connected');
    expect(actions.at(-1)).toBe('site.stop');
    const v = cli('audit', 'verify', '--data', data);
    expect(v.status, v.stderr).toBe(0);
    expect(v.stdout).toMatch(/site/);
  });

  it('on restart the same bundle is only loaded; a changed bundle without a new change reference is refused, leaving no bundle in force (fail closed)', async () => {
    const again = await serve(['--data', data]);
    expect(again.ready.policy).toBe(run.ready.policy);
    // the demo identities exist already: no password is printed again
    expect(again.stdout()).not.toContain('demo-users');
    again.child.kill('SIGTERM');
    expect(await exited(again.child, 15_000)).toBe(0);
    expect(siteActions(data).filter((a) => a.startsWith('policy.'))).toEqual(['policy.signed', 'policy.accepted', 'policy.loaded']);

    // a changed bundle nobody signed (same change reference, different content) is refused (fail closed)
    const dir = mkdtempSync(join(tmpdir(), 'lk-serve-policy-'));
    try {
      cpSync(join(defaultConfigFile(), '..', 'policy'), join(dir, 'policy'), { recursive: true });
      const ds = join(dir, 'policy', 'design-space.yaml');
      writeFileSync(ds, readFileSync(ds, 'utf8').replace('press.MainForce:          { min: 8,    max: 18,', 'press.MainForce:          { min: 8,    max: 19,'));
      const site = join(dir, 'site.yaml');
      writeFileSync(site, readFileSync(defaultConfigFile(), 'utf8'));
      const changed = await serve(['--config', site, '--data', data]);
      expect(changed.ready.policy).toBeNull();
      changed.child.kill('SIGTERM');
      expect(await exited(changed.child, 15_000)).toBe(0);
      expect(siteActions(data).filter((a) => a.startsWith('policy.'))).toEqual(['policy.signed', 'policy.accepted', 'policy.loaded', 'policy.refused']);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

function cli(...args: string[]) {
  return spawnSync(process.execPath, [...CLI, ...args], { encoding: 'utf8', timeout: 150_000 });
}

/**
 * Actions on the site chain, oldest first: the query `linekeeper audit query --tenant site` makes, read in this
 * process (a CLI child costs seconds of start-up per call, and the CLI's query has its own tests).
 */
function siteActions(data: string): string[] {
  const store = openStore({ dataDir: data, readonly: true });
  try {
    return queryAudit(store.db, 'site', {}, { limit: 1000 }).entries.map((e) => e.action);
  } finally {
    store.close();
  }
}

describe('linekeeper serve with a bad configuration', () => {
  it('exits 78 naming file and path, starts nothing, and records the failure on an existing site chain', () => {
    const dir = mkdtempSync(join(tmpdir(), 'lk-serve-bad-'));
    try {
      cpSync(join(defaultConfigFile(), '..', 'policy'), join(dir, 'policy'), { recursive: true });
      const bad = join(dir, 'site.yaml');
      writeFileSync(
        bad,
        readFileSync(defaultConfigFile(), 'utf8')
          .replace('poll_ms: 500', 'poll_ms: 500\n    baud: 9600')
          .replace('data_dir: ./data', `data_dir: ${JSON.stringify(join(dir, 'data'))}`),
      );
      const r = spawnSync(process.execPath, [...CLI, 'serve', '--config', bad, '--data', join(dir, 'data')], { encoding: 'utf8', timeout: 150_000 });
      expect(r.status).toBe(78);
      expect(r.stderr).toMatch(/site\.yaml:\d+: connections\[1\]\.baud: unknown key "baud"/);
      expect(r.stdout).not.toContain('ready');
      expect(r.stderr).not.toContain('simulator started');
      // no data directory yet: nothing is created
      expect(existsSync(join(dir, 'data'))).toBe(false);
      // with an existing site database, the failure is an audited event of the edge node
      openStore({ dataDir: join(dir, 'data') }).close();
      // no --data: the data directory the invalid file names is where its failure is recorded
      const r2 = spawnSync(process.execPath, [...CLI, 'serve', '--config', bad], { encoding: 'utf8', timeout: 150_000 });
      expect(r2.status).toBe(78);
      expect(siteActions(join(dir, 'data'))).toContain('config.invalid');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 320_000);
});
