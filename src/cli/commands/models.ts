/**
 * `linekeeper models list | seed | promote | retire`: the model registry in
 * the data directory's store (what GET /models returns), the default models
 * of a fresh install (registered as drafts), and status changes under change
 * control. The person and role of a change are taken from `--by` / `--role`
 * on trust until the surfaces issue brings sign-in (as `policy autonomy set`).
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { Command } from 'commander';
import { defaultConfigFile, loadConfig, type LoadedConfig } from '../../config/load.js';
import { lastAcceptedBundle } from '../../engine/policy-gate.js';
import { LkError } from '../../errors.js';
import { changeStatus, type ModelChange } from '../../models/change.js';
import { listModels, parseStatus, type ModelSummary } from '../../models/registry.js';
import { seedDefaultModels } from '../../models/seed.js';
import { type PolicyBundle } from '../../policy/index.js';
import { loadPolicyBundle } from '../../config/policy-bundle.js';
import { DB_FILE, openStore, type Store } from '../../store/store.js';
import { approvedTwinSpace } from '../design-space.js';
import { integer } from '../option-parsers.js';

const TRUST = 'The person and role are taken on trust until sign-in arrives with the surfaces issue; the audit entry records what was claimed, signed with the site key.';

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

interface DataOpts {
  config: string;
  data?: string;
  json?: boolean;
}

function configOf(opts: DataOpts): LoadedConfig {
  return loadConfig(opts.config, opts.data ? { dataDir: opts.data } : {});
}

function checkTenant(loaded: LoadedConfig, tenant: string): void {
  if (!loaded.config.tenants.some((t) => t.id === tenant)) throw new LkError('LK_VALIDATION', `tenant "${tenant}" is not in ${loaded.file}`, { tenant });
}

/** The bundle on disk, which must be the one the daemon accepted in this data directory (when any). */
function acceptedBundle(loaded: LoadedConfig, store: Store): PolicyBundle {
  const { bundle } = loadPolicyBundle(loaded.policyDir, { site: loaded.config });
  const accepted = lastAcceptedBundle(store);
  if (accepted && accepted.version !== bundle.version) {
    throw new LkError('LK_CONFLICT', `the bundle in ${loaded.policyDir} (${bundle.version.slice(0, 12)}…) is not the one accepted in ${loaded.dataDir} (${accepted.version.slice(0, 12)}…): start the daemon to accept it first`);
  }
  return bundle;
}

function withStore<T>(loaded: LoadedConfig, fn: (store: Store) => T): T {
  const store = openStore({ dataDir: loaded.dataDir });
  try {
    return fn(store);
  } finally {
    store.close();
  }
}

function printChange(c: ModelChange, json?: boolean): void {
  if (json) {
    process.stdout.write(`${JSON.stringify(c, null, 2)}\n`);
    return;
  }
  const ev = c.evaluation ? `; golden ${c.evaluation.dataset.file} (${c.evaluation.dataset.sha256.slice(0, 12)}…) passed ${c.evaluation.criteria.length} criteria` : '';
  process.stdout.write(`${c.model.tenant}/${c.model.id}: ${c.from} → ${c.to} by ${c.signature.user} (${c.model.changeRef})${ev}; audit ${c.model.tenant} #${c.auditSeq}, signed\n`);
}

interface ChangeOpts extends DataOpts {
  tenant: string;
  by: string;
  role: string;
  name?: string;
  changeRef: string;
  reason: string;
}

function changeOptions(cmd: Command): Command {
  return cmd
    .requiredOption('--tenant <id>', 'tenant the model belongs to')
    .requiredOption('--by <person>', 'the person making the change (on trust until sign-in arrives)')
    .requiredOption('--role <role>', 'their role; must be in the bundle\'s approvers.change')
    .option('--name <printed name>', 'printed name for the signature manifestation (default: --by)')
    .requiredOption('--change-ref <ref>', 'change-control reference, e.g. CC-2026-0214')
    .requiredOption('--reason <text>', 'why')
    .option('--config <file>', 'site configuration file', defaultConfigFile())
    .option('--data <dir>', 'data directory (default: the configuration data_dir)')
    .option('--json', 'print the change (with the evaluation and signature) as JSON');
}

function runChange(id: string, to: string, opts: ChangeOpts): void {
  const loaded = configOf(opts);
  checkTenant(loaded, opts.tenant);
  const status = parseStatus(to);
  const change = withStore(loaded, (store) => {
    const bundle = acceptedBundle(loaded, store);
    return changeStatus(
      store,
      loaded.dataDir,
      { tenant: opts.tenant, id, to: status, by: opts.by, role: opts.role, ...(opts.name ? { name: opts.name } : {}), changeRef: opts.changeRef, reason: opts.reason },
      { approvers: bundle.content.approvers.change },
    );
  });
  printChange(change, opts.json);
}

export function registerModels(program: Command): void {
  const models = program.command('models').description('The model registry: list, seed the defaults (as drafts), promote and retire under change control');
  models
    .command('list')
    .description('List models with version, status (draft, shadow, validated, retired), pinned sites, SHA-256 and card headline figures')
    .option('--config <file>', 'site configuration file', defaultConfigFile())
    .option('--data <dir>', 'data directory (default: the configuration data_dir)')
    .option('--tenant <id>', 'only this tenant’s models')
    .option('--json', 'print the list (with full model cards) as JSON')
    .action((opts: DataOpts & { tenant?: string }) => {
      const loaded = configOf(opts);
      let list: ModelSummary[] = [];
      if (existsSync(join(loaded.dataDir, DB_FILE))) {
        const store = openStore({ dataDir: loaded.dataDir, readonly: true });
        try {
          list = listModels(store, opts.tenant);
        } finally {
          store.close();
        }
      }
      if (opts.json) {
        process.stdout.write(`${JSON.stringify(list, null, 2)}\n`);
        return;
      }
      if (list.length === 0) {
        process.stdout.write(`no models in ${loaded.dataDir} (linekeeper models seed --tenant <id> registers the defaults as drafts)\n`);
        return;
      }
      for (const m of list) {
        process.stdout.write(`${m.tenant}  ${m.id}  ${m.status}  sites: ${m.sites.join(',') || '-'}  sha256 ${m.sha256.slice(0, 12)}  ${headline(m)}\n`);
      }
    });
  models
    .command('seed')
    .description('Fit the twin and train the NIR PLS and vision models on simulator data (fixed seeds) and register them as drafts pinned to the site (promote them to use them)')
    .requiredOption('--tenant <id>', 'tenant the models belong to (must be in the configuration)')
    .option('--config <file>', 'site configuration file', defaultConfigFile())
    .option('--data <dir>', 'data directory (default: the configuration data_dir)')
    .option('--site <id>', 'site to pin the models to (default: the configuration site id)')
    .option('--seed <s>', 'seed of the simulated plant and generators (default: configuration simulator.seed)', integer)
    .option('--by <person>', 'who registers them (default: $USER)')
    .option('--json', 'print the registered models as JSON')
    .action((opts: DataOpts & { tenant: string; site?: string; seed?: number; by?: string }) => {
      const loaded = configOf(opts);
      checkTenant(loaded, opts.tenant);
      const seed = opts.seed ?? (loaded.config as { simulator?: { seed?: number } }).simulator?.seed ?? 20261121;
      // the twin must cover the tenant's approved design space, or rehearsal would flag most candidates
      const designSpace = approvedTwinSpace(loaded, opts.tenant).space;
      const registered = withStore(loaded, (store) =>
        seedDefaultModels(store, loaded.dataDir, { tenant: opts.tenant, site: opts.site ?? loaded.config.site.id, seed, by: opts.by ?? process.env['USER'] ?? 'linekeeper', designSpace }),
      );
      if (opts.json) process.stdout.write(`${JSON.stringify(registered, null, 2)}\n`);
      else for (const m of registered) process.stdout.write(`registered ${m.tenant}/${m.id} (${m.status}, pinned to ${m.sites.join(',')}), sha256 ${m.sha256}\n`);
    });
  changeOptions(
    models
      .command('promote <id>')
      .description(`Promote a model one step (draft → shadow → validated) after its golden-dataset evaluation passes; signed and audited with the change reference. ${TRUST}`)
      .requiredOption('--to <status>', 'shadow or validated'),
  ).action((id: string, opts: ChangeOpts & { to: string }) => runChange(id, opts.to, opts));
  changeOptions(models.command('retire <id>').description(`Retire a model (from any status; final); signed and audited with the change reference. ${TRUST}`)).action((id: string, opts: ChangeOpts) =>
    runChange(id, 'retired', opts),
  );
}
