/**
 * A daemon on virtual time, for tests of the run engine's logic: the embedded simulator in `memory` mode (the plant
 * in this process behind in-memory connectors, no protocol servers), one ManualClock for the daemon, the plant's
 * scan, the PLC watchdogs and heartbeats, and the engine's polls. A batch runs as fast as the CPU computes it, in the
 * same order on every machine: a loaded CI box cannot make a blender miss its end point.
 *
 * The plant is the test's: it outlives a restart of the daemon (`boot` again), as the equipment does on a line.
 * Protocol behaviour is tested against the real OPC UA and Modbus servers elsewhere (the connector contract test
 * holds the memory connector to the same cases).
 */
import { existsSync } from 'node:fs';
import { Plant } from '../../connectors/sim/plant.js';
import { every, ManualClock, settleMicrotasks, settleTurn } from '../../src/clock.js';
import { loadConfig } from '../../src/config/load.js';
import { startDaemon, type Daemon, type DaemonOptions } from '../../src/daemon.js';
import { silentLogger } from '../../src/log.js';
import { firstStart, TEST_HASH_LOG2N } from './first-start.js';
import { pollFor } from './run-site.js';

export interface VirtualLine {
  readonly clock: ManualClock;
  readonly plant: Plant;
  /** Start a daemon of the site on the virtual clock and the test's plant. */
  boot(extra?: Partial<DaemonOptions>): Promise<Daemon>;
  /**
   * Advance virtual time a second at a time (every timer due fires, each continuation settles) until `fn` returns a
   * truthy value; fail naming `what` and the last value after `maxMs` of virtual time (a hang, never a slow machine).
   */
  until<T>(what: string, fn: () => T | null | undefined | false, maxMs?: number): Promise<T>;
  /** Let `ms` of virtual time pass. */
  advance(ms: number): Promise<void>;
  /**
   * Let virtual time run by itself, at most `ratio` times the wall clock (fewer when the CPU cannot keep up: every
   * scan and poll still happens at its virtual time), for tests whose other party waits in real time (a child
   * process following a run over HTTP). Whatever the test must keep up meanwhile (an operator's presence) it keeps
   * on the virtual clock. Returns the stop, which resolves once the driver has stopped.
   */
  pace(ratio: number): () => Promise<void>;
  /** Stop the plant's scan (the daemon is the test's to stop). */
  close(): void;
}

/**
 * How many times faster than the wall clock the line of a test runs while paced ({@link VirtualLine.pace}). A paced
 * test's batch (30,000 tablets at time scale 300–600) takes under a minute of virtual time, so what such a test
 * waits for is its other party — a browser, a CLI child, an SDK client — while the driver keeps the plant scanning
 * and the daemon polling all the time (an idle paced node: ~2 ms of CPU per virtual second, 0.4 of a core at 200
 * times). The nine paced files run together (2026-11-29, 2 vCPU): at 200 times 276 s of CPU and 178 s of wall
 * time; at 50 times 226 s and 149 s, every test passing; at 20 times 205 s, and the console's abort missed its
 * wait once under load.
 */
export const TEST_PACE = 50;

/** 2026-11-02 06:00 UTC: a Monday morning shift. */
export const VIRTUAL_T0 = Date.UTC(2026, 10, 2, 6);

/**
 * Real work the daemon started and awaits (a worker thread sealing a release package, file I/O) takes no virtual
 * time: the clock stands still until it is done, as if it were instantaneous, so the plant does not scan through
 * virtual hours while a PDF is rendered. A resource of Node's that is active (ref'd) means such work is in flight.
 */
const REAL_WORK = (r: string): boolean => r === 'MessagePort' || r.startsWith('FSReq') || r === 'Zlib' || r === 'RANDOMBYTESREQUEST' || r === 'PBKDF2REQUEST' || r === 'SCRYPTREQUEST';
async function realWorkDone(limitMs = 300_000): Promise<void> {
  const deadline = Date.now() + limitMs;
  while (process.getActiveResourcesInfo().some(REAL_WORK)) {
    // a hang guard, not a speed limit: the work is the daemon's (a worker thread, a file), waited for in real time
    if (Date.now() > deadline) throw new Error(`real work still in flight after ${limitMs / 1000} s: ${process.getActiveResourcesInfo().filter(REAL_WORK).join(', ')}`);
    await new Promise((r) => setTimeout(r, 1));
  }
}

export function virtualLine(site: { readonly config: string; readonly data: string }, o: { readonly t0?: number; readonly scanMs?: number; readonly pollMs?: number } = {}): VirtualLine {
  const clock = new ManualClock(o.t0 ?? VIRTUAL_T0);
  const { config } = loadConfig(site.config, { dataDir: site.data });
  const plant = new Plant({
    equipment: config.equipment, clock, seed: config.simulator.seed, timeScale: config.simulator.time_scale,
    watchdogTimeoutMs: config.simulator.watchdog_timeout_ms, punchDiameterMm: config.tooling[0]?.punch_diameter_mm, drift: true,
  });
  // the PLC scan of the embedded simulator (connectors/sim: 50 wall ms)
  const stopScan = every(clock, o.scanMs ?? 50, () => plant.tick());
  let paced = 0;
  const step = async (ms: number): Promise<void> => {
    await clock.run(clock.now() + ms, settleMicrotasks);
    await settleTurn();
    await realWorkDone();
  };
  // while paced, the driver alone moves the clock (two loops running one ManualClock would interleave its timers):
  // an advance then waits for the driver to pass its target
  const advance = async (ms: number): Promise<void> => {
    if (paced === 0) return step(ms);
    const target = clock.now() + ms;
    while (paced > 0 && clock.now() < target) await new Promise((r) => setTimeout(r, 2));
  };
  return {
    clock,
    plant,
    async boot(extra = {}) {
      if (!existsSync(site.data)) await firstStart(site.config, site.data, o.t0 ?? VIRTUAL_T0);
      return startDaemon({
        configFile: site.config, dataDir: site.data, logger: silentLogger, clock, embeddedSimulator: 'memory', memoryPlant: plant,
        maintenance: false, connectTimeoutMs: 1, pollMs: o.pollMs ?? 500, passwordHashLog2N: TEST_HASH_LOG2N, ...extra,
      });
    },
    until<T>(what: string, fn: () => T | null | undefined | false, maxMs = 4 * 3_600_000): Promise<T> {
      return pollFor(fn, { now: () => clock.now(), limitMs: maxMs, pause: () => advance(1_000), timedOut: (last) => `${what}: not reached in ${maxMs / 60_000} virtual minutes (last: ${JSON.stringify(last)})` });
    },
    advance,
    pace(ratio) {
      if (paced > 0) throw new Error('the virtual line is paced already');
      let on = true;
      paced++;
      const wall0 = Date.now();
      const virtual0 = clock.now();
      const driver = (async () => {
        while (on) {
          const behind = virtual0 + (Date.now() - wall0) * ratio - clock.now();
          if (behind >= 1) await step(Math.min(50, Math.floor(behind)));
          else await new Promise((r) => setTimeout(r, 5));
        }
      })();
      return async () => {
        if (!on) return;
        on = false;
        await driver;
        paced--;
      };
    },
    close: stopScan,
  };
}
