/**
 * The embedded plant simulator as a child process of `linekeeper serve` (started through
 * `startSimulatorProcess`, child-process.ts): the OPC UA and Modbus servers and the plant model live in
 * their own heap, so the daemon's memory is the daemon's.
 *
 * Protocol over the IPC channel (JSON messages):
 * - child → parent: `{ type: 'ready', opcuaUrl, modbusHost, modbusPort, timeScale }` once both servers
 *   listen, or `{ type: 'failed', code, message }` (then it exits 1);
 * - parent → child: `{ type: 'startPhase', phase }` (the engine's notice to the simulated HMI operator),
 *   `{ type: 'stop' }` (close the servers, exit 0).
 * The channel closing (the daemon died) stops the simulator too: no plant outlives its daemon. SIGINT and
 * SIGTERM are ignored: a Ctrl-C reaches the whole process group, and the daemon closes its connectors
 * before it stops the plant, as it does in-process.
 */
import { LkError } from '../../src/errors.js';
import { loadConfig } from '../../src/config/load.js';
import { createLogger, parseLogLevel } from '../../src/log.js';
import { routeOpcUaConsole } from '../opcua/console.js';
import { startSimulator, type Simulator } from './index.js';

interface Args {
  readonly configFile: string;
  readonly dataDir: string;
  readonly logLevel: string;
}

const send = (m: unknown): Promise<void> =>
  new Promise((resolve) => {
    if (!process.send || !process.connected) return resolve();
    process.send(m, undefined, undefined, () => resolve());
  });

async function main(): Promise<void> {
  if (!process.send) {
    process.stderr.write('linekeeper: the simulator child runs under `linekeeper serve` (use `linekeeper sim` on its own)\n');
    process.exit(64);
  }
  const args = JSON.parse(process.argv[2] ?? '{}') as Args;
  const log = createLogger(parseLogLevel(args.logLevel), 2).child({ component: 'sim' });
  routeOpcUaConsole(log);
  process.on('SIGINT', () => undefined);
  process.on('SIGTERM', () => undefined);
  let sim: Simulator | undefined;
  let closing = false;
  const close = async (code: number): Promise<never> => {
    if (!closing) {
      closing = true;
      await sim?.close().catch((err: unknown) => log.error({ err }, 'simulator did not close cleanly'));
    }
    process.exit(code);
  };
  process.on('disconnect', () => {
    log.warn('the daemon is gone: the simulator stops');
    void close(0);
  });
  process.on('message', (m: { type?: string; phase?: unknown }) => {
    if (m.type === 'stop') void close(0);
    else if (m.type === 'startPhase' && typeof m.phase === 'string' && sim) {
      try {
        sim.plant.startPhase(m.phase);
      } catch (err) {
        log.error({ err, phase: m.phase }, 'the simulated operator could not start the phase');
      }
    }
  });
  try {
    const loaded = loadConfig(args.configFile, { dataDir: args.dataDir });
    sim = await startSimulator({ config: loaded, dataDir: loaded.dataDir, log });
  } catch (err) {
    await send({ type: 'failed', code: LkError.is(err) ? err.code : 'LK_INTERNAL', message: err instanceof Error ? err.message : String(err) });
    process.exit(1);
  }
  await send({ type: 'ready', opcuaUrl: sim.opcuaUrl, modbusHost: sim.modbusHost, modbusPort: sim.modbusPort, timeScale: sim.plant.timeScale });
}

await main();
