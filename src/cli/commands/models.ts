/**
 * `linekeeper models list|seed`: the model registry under the data directory
 * (what GET /models returns), and the default models of a fresh install.
 */
import type { Command } from 'commander';
import { InvalidArgumentError } from 'commander';
import { systemClock } from '../../clock.js';
import { defaultConfigFile, loadConfig } from '../../config/load.js';
import { LkError } from '../../errors.js';
import { listModels, type ModelSummary } from '../../models/registry.js';
import { seedDefaultModels } from '../../models/seed.js';
import { approvedTwinSpace } from '../design-space.js';

const integer = (v: string): number => {
  const n = Number(v);
  if (!Number.isSafeInteger(n)) throw new InvalidArgumentError('must be an integer');
  return n;
};

function headline(m: ModelSummary): string {
  const k = m.card.metrics;
  switch (m.kind) {
    case 'twin':
      return `rmse capping ${k['rmse.cappingPct']?.toFixed(3)} %, weight ${k['rmse.tabletWeightMg']?.toFixed(2)} mg, hardness ${k['rmse.hardnessN']?.toFixed(2)} N`;
    case 'nir-pls':
      return `${k['latentVariables']} LV, RMSEC ${k['rmsec']?.toFixed(2)}, RMSEP ${k['rmsep']?.toFixed(2)} % LC`;
    case 'vision-softmax': {
      const recalls = Object.entries(k).filter(([n]) => n.startsWith('recall.'));
      return `min recall ${Math.min(...recalls.map(([, v]) => v)).toFixed(3)} over ${recalls.length} classes`;
    }
  }
}

export function registerModels(program: Command): void {
  const models = program.command('models').description('List and seed the fitted and trained models (model registry)');
  models
    .command('list')
    .description('List models with version, validation status, pinned sites and card headline figures')
    .option('--config <file>', 'site configuration file', defaultConfigFile())
    .option('--data <dir>', 'data directory (default: the configuration data_dir)')
    .option('--tenant <id>', 'only this tenant’s models')
    .option('--json', 'print the list (with full model cards) as JSON')
    .action((opts: { config: string; data?: string; tenant?: string; json?: boolean }) => {
      const loaded = loadConfig(opts.config, opts.data ? { dataDir: opts.data } : {});
      const list = listModels(loaded.dataDir, opts.tenant);
      if (opts.json) {
        process.stdout.write(`${JSON.stringify(list, null, 2)}\n`);
        return;
      }
      if (list.length === 0) {
        process.stdout.write(`no models under ${loaded.dataDir} (linekeeper models seed --tenant <id> creates the defaults)\n`);
        return;
      }
      for (const m of list) {
        process.stdout.write(`${m.tenant}  ${m.id}  ${m.status}  sites: ${m.sites.join(',') || '-'}  sha256 ${m.sha256.slice(0, 12)}  ${headline(m)}\n`);
      }
    });
  models
    .command('seed')
    .description('Fit the twin and train the NIR PLS and vision models on simulator data (fixed seeds) and register them, validated and pinned to the site')
    .requiredOption('--tenant <id>', 'tenant the models belong to (must be in the configuration)')
    .option('--config <file>', 'site configuration file', defaultConfigFile())
    .option('--data <dir>', 'data directory (default: the configuration data_dir)')
    .option('--site <id>', 'site to pin the models to (default: the configuration site id)')
    .option('--seed <s>', 'seed of the simulated plant and generators (default: configuration simulator.seed)', integer)
    .option('--draft', 'register as draft instead of validated')
    .option('--json', 'print the manifests as JSON')
    .action((opts: { tenant: string; config: string; data?: string; site?: string; seed?: number; draft?: boolean; json?: boolean }) => {
      const loaded = loadConfig(opts.config, opts.data ? { dataDir: opts.data } : {});
      if (!loaded.config.tenants.some((t) => t.id === opts.tenant)) {
        throw new LkError('LK_VALIDATION', `tenant "${opts.tenant}" is not in ${loaded.file}`, { tenant: opts.tenant });
      }
      const seed = opts.seed ?? (loaded.config as { simulator?: { seed?: number } }).simulator?.seed ?? 20261121;
      const manifests = seedDefaultModels(loaded.dataDir, {
        tenant: opts.tenant,
        site: opts.site ?? loaded.config.site.id,
        seed,
        at: systemClock.now(),
        by: process.env['USER'] ?? 'linekeeper',
        draft: opts.draft === true,
        // the twin must cover the tenant's approved design space, or rehearsal would flag most candidates
        designSpace: approvedTwinSpace(loaded, opts.tenant).space,
      });
      if (opts.json) process.stdout.write(`${JSON.stringify(manifests, null, 2)}\n`);
      else for (const m of manifests) process.stdout.write(`registered ${m.tenant}/${m.id} (${m.status}, pinned to ${m.sites.join(',')}), sha256 ${m.sha256}\n`);
    });
}
