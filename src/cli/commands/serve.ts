import type { Command } from 'commander';
import { defaultConfigFile } from '../../config/load.js';
import { createLogger } from '../../log.js';

export function registerServe(program: Command): void {
  program
    .command('serve')
    .description('Run the daemon: connect to the line, write supervisor heartbeats, log live values (SIGTERM stops it cleanly)')
    .option('-c, --config <file>', 'site configuration file', defaultConfigFile())
    .option('-d, --data <dir>', 'data directory (overrides data_dir of the config)')
    .option('--log-level <level>', 'fatal|error|warn|info|debug|trace|silent (default: the config log.level)')
    .action(async (opts: { config: string; data?: string; logLevel?: string }) => {
      // Logs go to stderr as JSON lines; stdout carries only the ready line, for supervisors and scripts.
      const logger = createLogger((opts.logLevel ?? 'info') as 'info');
      // loaded on demand: the protocol stacks are heavy and other subcommands do not need them
      const { startDaemon } = await import('../../daemon.js');
      const daemon = await startDaemon({ configFile: opts.config, ...(opts.data !== undefined ? { dataDir: opts.data } : {}), logger });
      if (opts.logLevel === undefined) logger.level = daemon.loaded.config.log.level;
      process.stdout.write(`linekeeper ready ${JSON.stringify(daemon.ready)}\n`);
      await new Promise<void>((resolve) => {
        const onSignal = (signal: NodeJS.Signals): void => {
          process.off('SIGTERM', onSignal);
          process.off('SIGINT', onSignal);
          logger.info({ signal }, 'stopping');
          daemon.stop(`signal ${signal}`).then(resolve, (err: unknown) => {
            logger.error({ err }, 'error while stopping');
            process.exitCode = 1;
            resolve();
          });
        };
        process.on('SIGTERM', onSignal);
        process.on('SIGINT', onSignal);
      });
    });
}
