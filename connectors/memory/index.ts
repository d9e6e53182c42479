/**
 * The in-memory plant and its connectors, as one thing the daemon starts when its embedded simulator runs in
 * `memory` mode (DaemonOptions.embeddedSimulator): the simulated plant, scanned on the daemon's clock, served by
 * in-memory connectors instead of OPC UA and Modbus servers. For the core simulator and logic tests, on a
 * ManualClock; never for a line (a site's connections name real endpoints).
 */
import { every, type Clock } from '../../src/clock.js';
import type { LoadedConfig } from '../../src/config/load.js';
import { Plant } from '../sim/plant.js';
import { createMemoryConnectors, type MemoryConnector } from './connector.js';

export { MemoryConnector, createMemoryConnectors, type MemoryConnectorOptions, type MemoryFaults } from './connector.js';

export interface MemoryLine {
  readonly plant: Plant;
  readonly connectors: readonly MemoryConnector[];
  /** Stop the PLC scan. */
  close(): void;
}

/**
 * The plant of the configuration's `simulator` section (seed, time scale, watchdog), scanned every `scanMs` of
 * `clock`; or `o.plant`, a plant the caller keeps (and scans) across daemons: the equipment outlives a restart of
 * linekeeper, as on a line.
 */
export function startMemoryLine(loaded: LoadedConfig, clock: Clock, o: { readonly scanMs?: number; readonly seed?: number; readonly plant?: Plant } = {}): MemoryLine {
  const { config } = loaded;
  const plant =
    o.plant ??
    new Plant({
      equipment: config.equipment,
      clock,
      timeScale: config.simulator.time_scale,
      seed: o.seed ?? config.simulator.seed,
      watchdogTimeoutMs: config.simulator.watchdog_timeout_ms,
      punchDiameterMm: config.tooling[0]?.punch_diameter_mm,
      drift: true,
    });
  const stop = o.plant ? () => undefined : every(clock, o.scanMs ?? 50, () => plant.tick());
  return { plant, connectors: createMemoryConnectors(config, plant, clock), close: stop };
}
