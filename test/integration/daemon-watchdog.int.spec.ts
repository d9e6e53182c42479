import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { queryAudit } from '../../src/audit/index.js';
import { startDaemon, type Daemon } from '../../src/daemon.js';
import { silentLogger } from '../../src/log.js';
import { waitFor } from '../helpers/sim.js';

let data: string;
let daemon: Daemon;
const watchdogEntries = () => queryAudit(daemon.store.db, 'site', { kind: 'watchdog' }, { limit: 1000 }).entries;

beforeAll(async () => {
  data = mkdtempSync(join(tmpdir(), 'lk-daemon-watchdog-'));
  daemon = await startDaemon({ dataDir: data, logger: silentLogger });
});
afterAll(async () => {
  await daemon?.stop('test done');
  rmSync(data, { recursive: true, force: true });
});

describe('the daemon records what the PLC watchdogs do [R8] on the site chain', () => {
  it('heartbeats flowing: no watchdog event', async () => {
    await new Promise((r) => setTimeout(r, 1500));
    expect(watchdogEntries()).toEqual([]);
  });

  it('[ERR-LKG] heartbeats of the Modbus connection stop: the blender and fluid bed revert by themselves, and each revert is audited with old and new state', async () => {
    const sim = daemon.simulator!;
    const modbus = daemon.connectors.find((c) => c.protocol === 'modbus')!;
    modbus.stopHeartbeat();
    // hang guards, not speed limits: when the watchdog fires is tested on the manual clock (sim-plant unit tests)
    const guardMs = 30_000 + daemon.loaded.config.simulator.watchdog_timeout_ms;
    expect(await waitFor(() => sim.plant.read('blender', 'SupervisorState') === 'LOST', guardMs, 50)).toBe(true);
    expect(await waitFor(() => watchdogEntries().length >= 2, 30_000, 50)).toBe(true);
    const byEquipment = new Map(watchdogEntries().map((e) => [(e.args as { equipment: string }).equipment, e]));
    for (const eq of ['blender', 'fluidbed']) {
      const e = byEquipment.get(eq)!;
      expect(e.action).toBe('watchdog.lkg_revert');
      expect(e.old).toMatchObject({ state: 'ATTENDED', revertCount: 0 });
      expect(e.new).toMatchObject({ state: 'LOST', revertCount: 1 });
    }
    // the OPC UA equipment still has its heartbeats: nothing happened there
    expect(byEquipment.has('press')).toBe(false);
    expect(sim.plant.read('press', 'SupervisorState')).toBe('ATTENDED');
  });

  it('[R8] a revert that falls between the reads of the state and the count is recorded with the state read after it (LOST), not the one before', async () => {
    const sim = daemon.simulator!;
    const plant = sim.plant;
    const modbus = daemon.connectors.find((c) => c.protocol === 'modbus')!;
    // an operator re-arms the blender at its panel once the heartbeats are back
    modbus.startHeartbeat();
    const rearmed = await waitFor(() => {
      try {
        plant.setSupervisorState('blender', 'ATTENDED');
        return true;
      } catch {
        return false;
      }
    }, 30_000, 50);
    expect(rearmed).toBe(true);
    expect(await waitFor(() => watchdogEntries().some((e) => e.action === 'watchdog.rearm' && (e.args as { equipment: string }).equipment === 'blender'), 30_000, 50)).toBe(true);
    const reverts = () => watchdogEntries().filter((e) => e.action === 'watchdog.lkg_revert' && (e.args as { equipment: string }).equipment === 'blender');
    expect(reverts()).toHaveLength(1);
    // Fault injection at the simulated PLC (not a mock of linekeeper): the blender reverts at the instant the poll,
    // which has read the state's register block (ATTENDED), asks for the count's block. The batch then holds the
    // new count and no new state.
    const read = plant.read.bind(plant);
    let armed = true;
    plant.read = (equipment, tag) => {
      if (armed && equipment === 'blender' && tag === 'RevertCount') {
        armed = false;
        plant.setSupervisorState('blender', 'LOST');
      }
      return read(equipment, tag);
    };
    try {
      expect(await waitFor(() => reverts().length === 2, 30_000, 50)).toBe(true);
    } finally {
      plant.read = read;
    }
    expect(armed).toBe(false);
    const e = reverts()[1]!;
    expect(e.old).toMatchObject({ state: 'ATTENDED', revertCount: 1 });
    expect(e.new).toMatchObject({ state: 'LOST', revertCount: 2, activeRecipe: String(plant.supervisor('blender').lkg.number) });
    expect(plant.read('blender', 'SupervisorState')).toBe('LOST');
  });
});

