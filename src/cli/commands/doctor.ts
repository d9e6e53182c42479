/**
 * `linekeeper doctor`: the edge node's readiness checks (src/ops/doctor.ts), one line each with what to do.
 * Exit code 0 all ok, 1 a warning, 2 a failure — the worst check decides.
 */
import type { Command } from 'commander';
import { defaultConfigFile } from '../../config/load.js';
import { exitCodeOf, runDoctor, type CheckResult } from '../../ops/doctor.js';
import { CliExit } from '../prompt.js';

function line(c: CheckResult): string {
  return `${c.status.toUpperCase().padEnd(4)} ${c.id.padEnd(22)} ${c.message}${c.action ? `\n     ${''.padEnd(22)} → ${c.action}` : ''}`;
}

export function registerDoctor(program: Command): void {
  program
    .command('doctor')
    .description('Check the edge node: configuration and policy, data directory, free space, audit chain, equipment endpoints, certificates, clock, ports (exit 0 ok, 1 warn, 2 fail)')
    .option('-c, --config <file>', 'site configuration file', defaultConfigFile())
    .option('-d, --data <dir>', 'data directory (overrides data_dir of the config)')
    .option('--timeout <ms>', 'TCP connect timeout per equipment endpoint', (v) => Number(v), 2000)
    .option('--json', 'print the report as JSON')
    .action(async (opts: { config: string; data?: string; timeout: number; json?: boolean }) => {
      const report = await runDoctor({ configFile: opts.config, ...(opts.data !== undefined ? { dataDir: opts.data } : {}), connectTimeoutMs: opts.timeout });
      if (opts.json) process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
      else process.stdout.write(`${report.checks.map(line).join('\n')}\n${report.status === 'ok' ? 'all checks ok' : `worst: ${report.status}`}\n`);
      const code = exitCodeOf(report.status);
      if (code !== 0) throw new CliExit(code);
    });
}
