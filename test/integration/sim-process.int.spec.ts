/**
 * The embedded simulator in its own child process (`embeddedSimulator: 'process'`, what `linekeeper serve`
 * runs): the daemon connects to it like to any equipment, the engine's phase notices reach its simulated HMI
 * operator over the child's channel, a dying simulator is a lost line (its PLCs stop answering), and stopping
 * the daemon stops the child.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDaemon, type Daemon } from '../../src/daemon.js';
import { silentLogger } from '../../src/log.js';
import { firstStart } from '../helpers/first-start.js';
import { makeRunSite, waitFor, type RunSite } from '../helpers/run-site.js';

const T = 'acme-pharma';
let site: RunSite;
let d: Daemon | undefined;

const boot = (): Promise<Daemon> => startDaemon({ configFile: site.config, dataDir: site.data, logger: silentLogger, pollMs: 100, maintenance: false, embeddedSimulator: 'process' });

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

/** The line's phase as the PLC reports it over OPC UA (undefined while it does not answer). */
async function phase(daemon: Daemon): Promise<unknown> {
  for (const c of daemon.connectors) {
    const r = await c.read(['plc.BatchPhase']).catch(() => []);
    if (r[0]?.quality === 'good') return r[0].value;
  }
  return undefined;
}

beforeAll(async () => {
  site = makeRunSite({ timeScale: 600, batches: { 'B-1042': 8_000 } });
  await firstStart(site.config, site.data);
  d = await boot();
}, 300_000);

afterAll(async () => {
  await d?.stop('test done');
  site?.cleanup();
}, 60_000);

describe('the embedded simulator as a child process', () => {
  it('runs outside the daemon: the daemon holds no plant, the connectors reach the child\'s servers', async () => {
    const daemon = d!;
    expect(daemon.simulator).toBeUndefined();
    const child = daemon.simulatorProcess!;
    expect(child.pid).not.toBe(process.pid);
    expect(alive(child.pid)).toBe(true);
    expect(daemon.ready.endpoints['opcua-line']).toBe(child.opcuaUrl);
    expect(daemon.ready.endpoints['modbus-line']).toBe(`${child.modbusHost}:${child.modbusPort}`);
    expect(child.timeScale).toBe(600);
    await waitFor('both connections', () => daemon.connectors.every((c) => c.health().state === 'connected'));
  });

  it('the engine\'s phase notice reaches the simulated operator in the child: the line reports BLEND', async () => {
    const daemon = d!;
    expect(await phase(daemon)).not.toBe('BLEND');
    const run = daemon.engine.start({ tenant: T, request: 'run batch B-1042 on line-3, keep weight and hardness on target, capping risk under 1.5%, weight RSD under 1.4%', by: 'o.operator' });
    // a deadline only turns a hang into a readable failure
    let seen: unknown;
    for (const deadline = Date.now() + 180_000; (seen = await phase(daemon)) !== 'BLEND'; ) {
      if (Date.now() > deadline) throw new Error(`the line never reported BLEND (last ${String(seen)}); run ${JSON.stringify(daemon.engine.get(T, run.id).steps.map((s) => `${s.seq} ${s.status} ${s.detail}`))}`);
      await new Promise((r) => setTimeout(r, 250));
    }
    expect(seen).toBe('BLEND');
  }, 200_000);

  it('a simulator that dies is a lost line: the connectors lose their PLCs, the daemon keeps running', async () => {
    const daemon = d!;
    const child = daemon.simulatorProcess!;
    process.kill(child.pid, 'SIGKILL');
    expect((await child.exited).signal).toBe('SIGKILL');
    await waitFor('both connections to be lost', () => daemon.connectors.every((c) => c.health().state !== 'connected'), 60_000);
    expect(await phase(daemon)).toBeUndefined();
    // its own parts still answer
    expect(daemon.store.audit.head('site').seq).toBeGreaterThan(0);
    await daemon.stop('simulator gone');
    d = undefined;
  }, 90_000);

  it('stopping the daemon stops its simulator', async () => {
    d = await boot();
    const child = d.simulatorProcess!;
    expect(alive(child.pid)).toBe(true);
    await d.stop('test stop');
    d = undefined;
    const { code, signal } = await child.exited;
    expect({ code, signal }).toEqual({ code: 0, signal: null });
    expect(alive(child.pid)).toBe(false);
  }, 300_000);
});
