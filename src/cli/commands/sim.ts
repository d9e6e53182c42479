/**
 * `linekeeper sim`: run the plant simulator (OPC UA + Modbus TCP servers with
 * the PLC-side watchdog) until SIGTERM/SIGINT. Prints ONE JSON line with the
 * endpoints on stdout — `{"opcua":"opc.tcp://127.0.0.1:P/linekeeper/sim","modbus":"127.0.0.1:Q"}`
 * — so a script can start it on free ports and read where it listens; logs go to stderr.
 */
import { writeFileSync } from 'node:fs';
import { InvalidArgumentError, type Command } from 'commander';
import { defaultConfigFile, loadConfig } from '../../config/load.js';
import { createLogger, parseLogLevel } from '../../log.js';
import { integer, positive } from '../option-parsers.js';

/**
 * Load the simulator lazily: node-opcua is heavy and runs an RSA self-test at
 * import, which other subcommands (and usage errors) should not pay for.
 * node-opcua prints warnings with console.log (stdout); stdout of
 * `linekeeper sim` is one machine-read JSON line, so they go to stderr.
 */
async function loadSim(): Promise<typeof import('../../../connectors/sim/index.js')> {
  const [sim, { routeOpcUaConsole }] = await Promise.all([import('../../../connectors/sim/index.js'), import('../../../connectors/opcua/index.js')]);
  routeOpcUaConsole();
  return sim;
}

interface SimOptions {
  config: string;
  opcuaPort?: number;
  modbusPort?: number;
  timeScale?: number;
  seed?: number;
  watchdogTimeoutMs?: number;
  data?: string;
  printRegisterMap?: boolean | string;
  logLevel?: string;
  skewPress?: Record<string, number>;
}

/** `sigma0=1.4,bulkDensity=1.05` → factors on the press's true parameters (the plant checks the names). */
const factors = (v: string): Record<string, number> => {
  const out: Record<string, number> = {};
  for (const part of v.split(',')) {
    const m = /^\s*([A-Za-z][A-Za-z0-9]*)\s*=\s*([0-9.eE+-]+)\s*$/.exec(part);
    const f = m ? Number(m[2]) : Number.NaN;
    if (!m || !(Number.isFinite(f) && f > 0)) throw new InvalidArgumentError(`"${part}" is not <parameter>=<positive factor>`);
    out[m[1]!] = f;
  }
  return out;
};

const port = (v: string): number => {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 0 || n > 65535) throw new InvalidArgumentError('must be an integer 0..65535 (0 = any free port)');
  return n;
};

export function registerSim(program: Command): void {
  program
    .command('sim')
    .description('Run the plant simulator: OPC UA (press, coater, NIR, vision, PLC) and Modbus TCP (blender, fluid bed) with the PLC heartbeat watchdog')
    .option('--config <file>', 'site configuration file', defaultConfigFile())
    .option('--opcua-port <n>', 'OPC UA port (0 = any free port)', port, 0)
    .option('--modbus-port <n>', 'Modbus TCP port (0 = any free port)', port, 0)
    .option('--time-scale <x>', 'process time runs x times faster than wall time (default: config simulator.time_scale)', positive)
    .option('--seed <s>', 'seed of the hidden process parameters and noise (default: config simulator.seed)', integer)
    .option('--watchdog-timeout-ms <ms>', 'PLC watchdog timeout, wall ms (default: config simulator.watchdog_timeout_ms)', positive)
    .option('--data <dir>', 'folder for the server PKI (default: a temp dir removed at exit)')
    .option('--log-level <level>', 'log level on stderr (default: config log.level)')
    .option('--skew-press <parameter=factor,...>', 'for fault tests only: run the press on its true parameters times these factors (e.g. sigma0=1.4: tablets 40 % stronger than the fitted twin predicts)', factors)
    .option('--print-register-map [file]', 'print (or write) the Modbus register map (Markdown) and exit')
    .action(async (opts: SimOptions) => {
      const loaded = loadConfig(opts.config);
      const { registerMapMarkdown, startSimulator } = await loadSim();
      if (opts.printRegisterMap !== undefined) {
        const text = registerMapMarkdown(loaded.config);
        if (typeof opts.printRegisterMap === 'string') writeFileSync(opts.printRegisterMap, text);
        else process.stdout.write(text);
        return;
      }
      const log = createLogger(opts.logLevel === undefined ? loaded.config.log.level : parseLogLevel(opts.logLevel), 2).child({ component: 'sim' });
      const sim = await startSimulator({
        config: loaded,
        opcuaPort: opts.opcuaPort,
        modbusPort: opts.modbusPort,
        timeScale: opts.timeScale,
        seed: opts.seed,
        watchdogTimeoutMs: opts.watchdogTimeoutMs === undefined ? undefined : Math.round(opts.watchdogTimeoutMs),
        dataDir: opts.data,
        log,
      });
      if (opts.skewPress) {
        try {
          sim.faults.skewPress(opts.skewPress);
        } catch (err) {
          await sim.close();
          throw err;
        }
        log.warn({ skew: opts.skewPress }, 'fault test: the press runs on skewed true parameters (a plant the fitted twin no longer describes)');
      }
      process.stdout.write(`${sim.endpointsJson()}\n`);
      log.info({ opcua: sim.opcuaUrl, modbus: sim.modbusEndpoint, timeScale: sim.plant.timeScale, seed: sim.plant.truth.seed }, 'simulator running');
      await new Promise<void>((resolve) => {
        const stop = (signal: NodeJS.Signals): void => {
          log.info({ signal }, 'simulator stopping');
          process.off('SIGTERM', stop);
          process.off('SIGINT', stop);
          resolve();
        };
        process.on('SIGTERM', stop);
        process.on('SIGINT', stop);
      });
      await sim.close();
    });
}
