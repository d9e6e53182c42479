import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync, cpSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AttributeIds } from 'node-opcua';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defaultConfigFile } from '../../src/config/load.js';
import type { ReadyInfo } from '../../src/daemon.js';
import { rawOpcUaSession, waitFor, type Simulator } from '../helpers/sim.js';

const CLI = ['--import', 'tsx', 'src/cli/bin.ts'];

/** Start `linekeeper serve` as a child and resolve with its ready line. */
function serve(args: string[]): Promise<{ child: ChildProcess; ready: ReadyInfo; stderr: () => string }> {
  const child = spawn(process.execPath, [...CLI, 'serve', ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  return new Promise((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`no ready line in 45 s; stderr:\n${err.slice(-2000)}`)), 45_000);
    child.on('exit', (code) => reject(new Error(`serve exited ${code} before ready; stderr:\n${err.slice(-2000)}`)));
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      const line = out.split('\n').find((l) => l.startsWith('linekeeper ready '));
      if (line) {
        clearTimeout(t);
        resolve({ child, ready: JSON.parse(line.slice('linekeeper ready '.length)) as ReadyInfo, stderr: () => err });
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
  });
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
  });

  it('writes heartbeats the PLC sees, so the line stays attended', async () => {
    const sim = { opcuaUrl: run.ready.endpoints['opcua-line']!, namespaceUri: 'urn:linekeeper:sim' } as unknown as Simulator;
    const raw = await rawOpcUaSession(sim);
    try {
      const read = async (id: string) => (await raw.session.read({ nodeId: raw.nodeId(id), attributeId: AttributeIds.Value })).value.value as unknown;
      const first = (await read('press.Supervisor.Heartbeat')) as number;
      expect(await waitFor(async () => ((await read('press.Supervisor.Heartbeat')) as number) > first + 1, 5000, 200)).toBe(true);
      expect(await read('press.Supervisor.SupervisorState')).toBe('ATTENDED');
      expect(await read('coater.Supervisor.RevertCount')).toBe(0);
    } finally {
      await raw.close();
    }
  });

  it('logs live values and stops cleanly on SIGTERM', async () => {
    expect(await waitFor(() => run.stderr().includes('"msg":"live values"'), 10_000, 100)).toBe(true);
    expect(run.stderr()).toMatch(/"press\.Hardness":"[\d.]+ N"/);
    run.child.kill('SIGTERM');
    expect(await exited(run.child, 15_000)).toBe(0);
    expect(run.stderr()).toContain('"msg":"stopped"');
  });
});

describe('linekeeper serve with a bad configuration', () => {
  it('exits 78 naming file and path, and starts nothing', () => {
    const dir = mkdtempSync(join(tmpdir(), 'lk-serve-bad-'));
    try {
      cpSync(join(defaultConfigFile(), '..', 'policy'), join(dir, 'policy'), { recursive: true });
      const bad = join(dir, 'site.yaml');
      writeFileSync(bad, readFileSync(defaultConfigFile(), 'utf8').replace('poll_ms: 500', 'poll_ms: 500\n    baud: 9600'));
      const r = spawnSync(process.execPath, [...CLI, 'serve', '--config', bad, '--data', join(dir, 'data')], { encoding: 'utf8', timeout: 30_000 });
      expect(r.status).toBe(78);
      expect(r.stderr).toMatch(/site\.yaml:\d+: connections\[1\]\.baud: unknown key "baud"/);
      expect(r.stdout).not.toContain('ready');
      expect(r.stderr).not.toContain('simulator started');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
