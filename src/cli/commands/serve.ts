import { InvalidArgumentError, type Command } from 'commander';
import { parse } from 'yaml';
import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { configInvalid } from '../../audit/site-events.js';
import { defaultConfigFile, loadConfig, type ConfigIssue } from '../../config/load.js';
import { LkError } from '../../errors.js';
import { createLogger, parseLogLevel, type Logger } from '../../log.js';
import { DB_FILE, openStore } from '../../store/store.js';
import { systemdNotifier } from '../../ops/notify.js';

/** The data directory an invalid configuration names, read leniently (it may not even parse); else ./data. */
function rawDataDir(configFile: string): string {
  try {
    const raw = parse(readFileSync(configFile, 'utf8')) as { data_dir?: unknown } | null;
    if (raw && typeof raw.data_dir === 'string' && raw.data_dir.length > 0) return raw.data_dir;
  } catch {
    // unreadable or not YAML: fall back to the default
  }
  return './data';
}

/**
 * A configuration that fails validation is an event of the edge node: record it on the site chain
 * of the data directory that the node already has (never create a database in a random folder).
 */
function recordConfigFailure(dataDir: string, configFile: string, err: LkError, logger: Logger): void {
  if (!existsSync(join(dataDir, DB_FILE))) return;
  try {
    const store = openStore({ dataDir, logger });
    try {
      const issues = (err.detail?.['issues'] as ConfigIssue[] | undefined) ?? [];
      configInvalid(store.audit, { file: resolve(configFile), code: err.code, issues });
    } finally {
      store.close();
    }
  } catch (e) {
    logger.error({ err: e }, 'could not record the configuration failure in the audit trail');
  }
}

function apiPort(v: string): number {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 0 || n > 65535) throw new InvalidArgumentError('must be a port number 0…65535');
  return n;
}

export function registerServe(program: Command): void {
  program
    .command('serve')
    .description('Run the daemon: connect to the line, write supervisor heartbeats, log live values (SIGTERM stops it cleanly)')
    .option('-c, --config <file>', 'site configuration file', defaultConfigFile())
    .option('-d, --data <dir>', 'data directory (overrides data_dir of the config)')
    .option('--log-level <level>', 'fatal|error|warn|info|debug|trace|silent (default: the config log.level)')
    .option('--api-host <host>', 'address of the REST API (default: the config api.host, 127.0.0.1)')
    .option('--api-port <port>', 'port of the REST API, 0 for a free one (default: the config api.port, 8080)', apiPort)
    .option('--no-api', 'do not serve the REST API')
    .action(async (opts: { config: string; data?: string; logLevel?: string; api: boolean; apiHost?: string; apiPort?: number }) => {
      // Logs go to stderr as JSON lines; stdout carries only the ready line, for supervisors and scripts.
      const logger = createLogger(opts.logLevel === undefined ? 'info' : parseLogLevel(opts.logLevel));
      // Signal handlers come first: a supervisor may send SIGTERM during start-up, or the instant it
      // reads the ready line (a pipe write returns before the next statement runs).
      let signalled: NodeJS.Signals | undefined;
      let wake: () => void = () => undefined;
      const onSignal = (signal: NodeJS.Signals): void => {
        signalled ??= signal;
        wake();
      };
      process.on('SIGTERM', onSignal);
      process.on('SIGINT', onSignal);
      // systemd (Type=notify): READY=1 once serving, WATCHDOG=1 from the event loop, RELOADING=1 on SIGHUP
      const notify = systemdNotifier({ onError: (err, what) => logger.warn({ err, what }, 'systemd notification failed') });
      let reloadNow: () => void = () => undefined;
      const onHup = (): void => reloadNow();
      process.on('SIGHUP', onHup);
      let ping: NodeJS.Timeout | undefined;
      // a configuration error is recorded on the site chain of the data directory it names, then thrown (exit 78)
      const configFailure = (err: unknown): unknown => {
        if (LkError.is(err) && err.code.startsWith('LK_CONFIG')) recordConfigFailure(opts.data ?? rawDataDir(opts.config), opts.config, err, logger);
        return err;
      };
      try {
        // the configuration is checked before the daemon's modules load: a file that cannot start the daemon is
        // refused at once (exit 78) without loading the protocol stacks, the twin and the API (~2 s of CPU)
        try {
          loadConfig(opts.config, opts.data !== undefined ? { dataDir: opts.data } : {});
        } catch (err) {
          throw configFailure(err);
        }
        // loaded on demand: the protocol stacks are heavy and other subcommands do not need them
        const { startDaemon } = await import('../../daemon.js');
        let daemon: Awaited<ReturnType<typeof startDaemon>>;
        try {
          const api = opts.api ? { ...(opts.apiHost !== undefined ? { host: opts.apiHost } : {}), ...(opts.apiPort !== undefined ? { port: opts.apiPort } : {}) } : undefined;
          // the embedded simulator (demo default) in a child process: the plant's servers stay out of the daemon's memory
          daemon = await startDaemon({ processMetrics: true, embeddedSimulator: 'process', configFile: opts.config, ...(opts.data !== undefined ? { dataDir: opts.data } : {}), logger, ...(api ? { api } : {}) });
        } catch (err) {
          throw configFailure(err);
        }
        if (opts.logLevel === undefined) logger.level = daemon.loaded.config.log.level;
        if (signalled === undefined) {
          // the embedded default's demo identities, created at its first start: their one-time passwords, once
          if (daemon.demoUsers.length > 0) {
            process.stdout.write(`linekeeper demo-users ${JSON.stringify(daemon.demoUsers.map((u) => ({ user: u.id, name: u.name, role: u.role, tenants: u.tenants, password: u.password })))}\n`);
          }
          if (daemon.ready.api) process.stdout.write(`linekeeper console ${daemon.ready.api}/console (open it in a browser; sign in as a user above)\n`);
          process.stdout.write(`linekeeper ready ${JSON.stringify(daemon.ready)}\n`);
          const d = daemon;
          reloadNow = () => {
            void (async () => {
              await notify.reloading();
              const r = await d.reload().catch((err: unknown) => {
                logger.error({ err }, 'configuration reload failed; the configuration in force is kept');
                return { outcome: 'refused' as const };
              });
              if (r.outcome === 'applied' && opts.logLevel === undefined) logger.level = d.loaded.config.log.level;
              logger.info({ reload: r }, 'SIGHUP handled');
              await notify.ready(`reload ${r.outcome}`);
            })();
          };
          await notify.ready(`serving ${daemon.ready.site}/${daemon.ready.line}`);
          // a hung event loop stops these pings, and systemd restarts the daemon; the PLC watchdogs hold the line on LKG meanwhile
          if (notify.watchdogIntervalMs !== undefined) ping = setInterval(() => void notify.watchdog(), notify.watchdogIntervalMs);
          await new Promise<void>((resolve) => {
            wake = resolve;
          });
        }
        logger.info({ signal: signalled }, 'stopping');
        await notify.stopping();
        await daemon.stop(`signal ${signalled}`);
      } finally {
        if (ping) clearInterval(ping);
        process.off('SIGTERM', onSignal);
        process.off('SIGINT', onSignal);
        process.off('SIGHUP', onHup);
      }
    });
}
