import { writeFileSync } from 'node:fs';
import type { Command } from 'commander';
import { z } from 'zod';
import { checkOutputFile, fileError } from '../../files.js';
import { defaultConfigFile, loadConfig } from '../../config/load.js';
import { SiteConfig } from '../../config/schema.js';

export function registerConfig(program: Command): void {
  const config = program.command('config').description('Validate and inspect the site configuration');
  config
    .command('check')
    .description('Validate a site configuration file (the same validation `serve` runs at start); exits 78 on any error')
    .argument('[file]', 'configuration file', defaultConfigFile())
    .option('--json', 'print the validated configuration as JSON')
    .action((file: string, opts: { json?: boolean }) => {
      const loaded = loadConfig(file);
      if (opts.json) {
        process.stdout.write(`${JSON.stringify(loaded.config, null, 2)}\n`);
        return;
      }
      const c = loaded.config;
      const tags = c.equipment.reduce((n, e) => n + e.tags.length, 0);
      process.stdout.write(
        `${loaded.file}: ok — site ${c.site.id}, line ${c.line.id}, ${c.equipment.length} equipment, ${tags} tags, ` +
          `${c.connections.length} connections, ${c.tenants.length} tenants; sha256 ${loaded.hash}\n`,
      );
    });
  config
    .command('schema')
    .description('Print (or write) the JSON Schema of the site configuration, for editors')
    .option('-o, --output <file>', 'write to a file instead of stdout')
    .action((opts: { output?: string }) => {
      const text = `${JSON.stringify(configJsonSchema(), null, 2)}\n`;
      if (opts.output) {
        checkOutputFile(opts.output, 'schema file (--output)');
        try {
          writeFileSync(opts.output, text);
        } catch (err) {
          throw fileError(err, opts.output, 'schema file (--output)', 'output');
        }
      }
      else process.stdout.write(text);
    });
}

/** JSON Schema (draft 2020-12) of the site configuration, as editors consume it. */
export function configJsonSchema(): Record<string, unknown> {
  return {
    ...z.toJSONSchema(SiteConfig, { io: 'input' }),
    $id: 'https://linekeeper.invalid/schema/site-config-v1.json',
    title: 'linekeeper site configuration',
  };
}
