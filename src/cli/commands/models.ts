/**
 * `linekeeper models list | seed | promote | retire`: the model registry in
 * the data directory's store (what GET /models returns), the default models
 * of a fresh install (registered as drafts, offline, by a local user whose
 * password is checked), and status changes under change control, which go
 * through the daemon as the signed-in person (as `policy autonomy set`): no
 * name or role is taken on trust.
 */
import { existsSync } from 'node:fs';
import { basename, join } from 'node:path';
import type { Command } from 'commander';
import { defaultConfigFile, loadConfig, type LoadedConfig } from '../../config/load.js';
import { LkError } from '../../errors.js';
import { LinekeeperError } from '../../sdk/errors.js';
import type { ModelChange } from '../../sdk/types.js';
import { listModels, parseStatus, type ModelSummary } from '../../models/registry.js';
import { seedDefaultModels } from '../../models/seed.js';
import { fitSiteTwin, parseRecordedBatches, siteDataKind } from '../../models/site-fit.js';
import { fitSiteNir, parseNirCalibration } from '../../models/site-nir.js';
import { readInputFile } from '../../files.js';
import { type PolicyBundle } from '../../policy/index.js';
import { loadPolicyBundle } from '../../config/policy-bundle.js';
import { Identity, identitySettings } from '../../api/identity.js';
import { DB_FILE, openStore, type Store } from '../../store/store.js';
import { readPassword, readSecrets } from '../prompt.js';
import { connect } from '../session.js';
import { approvedTwinSpace } from '../design-space.js';
import { integer } from '../option-parsers.js';

const SIGNED = 'As the signed-in person (linekeeper login), in a role the bundle\'s approvers.change permits, with a change reference; signed with your password typed again, audited on the tenant\'s chain.';

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

function withStore<T>(loaded: LoadedConfig, fn: (store: Store) => T): T {
  const store = openStore({ dataDir: loaded.dataDir });
  try {
    return fn(store);
  } finally {
    store.close();
  }
}

interface ChangeOpts {
  changeRef: string;
  reason: string;
  meaning?: string;
  tenant?: string;
  url?: string;
  json?: boolean;
}

/** The golden-dataset evaluation of a promotion to validated, as POST /models/{id}/promote answers it (null otherwise). */
type Evaluation = { dataset: { file: string; sha256: string }; criteria: unknown[] } | null;

function changeOptions(cmd: Command): Command {
  return cmd
    .requiredOption('--change-ref <ref>', 'change-control reference, e.g. CC-2026-0214')
    .requiredOption('--reason <text>', 'why (signed beside the meaning)')
    .option('--meaning <id|text>', 'the meaning signed: one of the site\'s model_change meanings for the status it goes to (default: the first); a wrong one lists them, before any password')
    .option('--tenant <id>', 'tenant the model belongs to (default: the session\'s)')
    .option('--url <url>', 'the daemon\'s REST API (default: LINEKEEPER_URL, else the session\'s)')
    .option('--json', 'print the change (with the evaluation and signature) as JSON');
}

/**
 * A status change on the daemon as the signed-in person (`linekeeper login`). The daemon checks the model, the
 * role and the lifecycle first and answers 428 LK_REAUTH_REQUIRED; only then is the password asked (a refused
 * change never prompts), and the change is sent again with it: a signature.
 */
async function runChange(id: string, action: 'promote' | 'retire', to: string | undefined, opts: ChangeOpts): Promise<void> {
  const { session, client } = connect(opts, Date.now());
  const sent = { changeRef: opts.changeRef, reason: opts.reason, ...(opts.meaning !== undefined ? { meaning: opts.meaning } : {}) };
  // the target status as parsed: the daemon answers LK_MODEL_TRANSITION for one that is not the next step
  const send = (password?: string): Promise<ModelChange> => {
    const signed = { ...sent, ...(password !== undefined ? { password } : {}) };
    return action === 'promote' ? client.promoteModel(id, { to: to as 'shadow' | 'validated', ...signed }) : client.retireModel(id, signed);
  };
  let c: ModelChange;
  try {
    c = await send();
  } catch (err) {
    if (!LinekeeperError.is(err, 'LK_REAUTH_REQUIRED')) throw err;
    const password = await readPassword(`password for ${session.user} (a model status change is signed): `);
    c = await send(password);
  }
  if (opts.json) {
    process.stdout.write(`${JSON.stringify(c, null, 2)}\n`);
    return;
  }
  const e = c.evaluation as Evaluation;
  const ev = e ? `; golden ${e.dataset.file} (${e.dataset.sha256.slice(0, 12)}…) passed ${e.criteria.length} criteria` : '';
  process.stdout.write(`${c.tenant}/${c.id}: ${c.from} → ${c.to} by ${c.signature.user} (${c.changeRef})${ev}; signed "${c.signature.meaning}" at ${c.signature.time}; audit ${c.tenant} #${c.auditSeq}\n`);
}

/**
 * The person registering models offline (`models seed`): never a free-text name. `--as <id>` names a local
 * process engineer or QA reviewer of the tenant, whose password is typed now and checked against the store (a
 * failure is audited and counts toward the account's lock-out, as for `users --as`).
 * @throws LkError LK_FORBIDDEN (another role, or not of this tenant), LK_REAUTH_FAILED, LK_PASSWORD_CHANGE_REQUIRED.
 */
async function registrant(loaded: LoadedConfig, as: string, tenant: string): Promise<string> {
  const store = openStore({ dataDir: loaded.dataDir });
  try {
    const identity = new Identity({ store, clock: store.clock, ...identitySettings(loaded.config.api) });
    const u = identity.users.get(as);
    if (u && (!REGISTRANTS.includes(u.role) || !u.tenants.includes(tenant))) throw new LkError('LK_FORBIDDEN', `${as} (${u.role}) may not register models of ${tenant} (needs ${REGISTRANTS.join(' or ')} of the tenant)`);
    const [pw] = await readSecrets([`password for ${as}: `]);
    return (await identity.reauthenticate(as, pw!, { tenant, purpose_detail: 'models seed' })).id;
  } finally {
    store.close();
  }
}

const REGISTRANTS: readonly string[] = ['process_engineer', 'qa_reviewer'];

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
    .requiredOption('--as <id>', 'you: a local process engineer or QA reviewer of the tenant (your password is asked)')
    .option('--json', 'print the registered models as JSON')
    .action(async (opts: DataOpts & { tenant: string; site?: string; seed?: number; as: string }) => {
      const loaded = configOf(opts);
      checkTenant(loaded, opts.tenant);
      const by = await registrant(loaded, opts.as, opts.tenant);
      const seed = opts.seed ?? (loaded.config as { simulator?: { seed?: number } }).simulator?.seed ?? 20261121;
      // the twin must cover the tenant's approved design space, or rehearsal would flag most candidates
      const designSpace = approvedTwinSpace(loaded, opts.tenant).space;
      const registered = withStore(loaded, (store) =>
        seedDefaultModels(store, loaded.dataDir, { tenant: opts.tenant, site: opts.site ?? loaded.config.site.id, seed, by, designSpace }),
      );
      if (opts.json) process.stdout.write(`${JSON.stringify(registered, null, 2)}\n`);
      else for (const m of registered) process.stdout.write(`registered ${m.tenant}/${m.id} (${m.status}, pinned to ${m.sites.join(',')}), sha256 ${m.sha256}\n`);
    });
  models
    .command('fit')
    .description(
      'Fit a model on the site\'s own data and register it as a draft pinned to the site; FILE\'s `kind` says which: ' +
        '`recorded-batches` (a historian/LIMS export, `linekeeper config schema --of recorded-batches`) fits the process twin, every third batch by id held out to measure it; ' +
        '`nir-calibration` (NIR spectra on linekeeper\'s wavelength axis with their LIMS reference potency, `linekeeper config schema --of nir-calibration`) fits the NIR potency PLS model, every fourth spectrum by id held out as its test set. ' +
        'Promote it like any model: the golden-dataset gate decides',
    )
    .requiredOption('--tenant <id>', 'tenant the model belongs to (must be in the configuration)')
    .requiredOption('--from <file>', 'the site\'s data (JSON): recorded batches or NIR calibration spectra')
    .option('--config <file>', 'site configuration file', defaultConfigFile())
    .option('--data <dir>', 'data directory (default: the configuration data_dir)')
    .option('--site <id>', 'site to pin the model to (default: the configuration site id)')
    .requiredOption('--as <id>', 'you: a local process engineer or QA reviewer of the tenant (your password is asked)')
    .option('--json', 'print the registered model as JSON')
    .action(async (opts: DataOpts & { tenant: string; from: string; site?: string; as: string }) => {
      const loaded = configOf(opts);
      checkTenant(loaded, opts.tenant);
      // the file first: a wrong file costs nobody a password prompt
      const text = readInputFile(opts.from, 'site data (--from)');
      const kind = siteDataKind(text, opts.from);
      if (kind === 'nir-calibration') parseNirCalibration(text, opts.from);
      else parseRecordedBatches(text, opts.from);
      const by = await registrant(loaded, opts.as, opts.tenant);
      const input = { tenant: opts.tenant, site: opts.site ?? loaded.config.site.id, by, text, file: basename(opts.from) };
      const r = withStore(loaded, (store) => (kind === 'nir-calibration' ? fitSiteNir : fitSiteTwin)(store, loaded.dataDir, input));
      if (opts.json) process.stdout.write(`${JSON.stringify({ ...r.model, trained: r.trained, heldOut: r.heldOut }, null, 2)}\n`);
      else {
        const what = kind === 'nir-calibration' ? 'spectra' : 'batches';
        process.stdout.write(`registered ${r.model.tenant}/${r.model.id} (${r.model.status}, pinned to ${r.model.sites.join(',')}), sha256 ${r.model.sha256}\n`);
        process.stdout.write(`fitted on ${r.trained.length} ${what}, measured on ${r.heldOut.length} held out (${r.heldOut.join(', ')}): ${headline(r.model)}\n`);
      }
    });
  changeOptions(
    models
      .command('promote <id>')
      .description(`Promote a model one step (draft → shadow → validated) on the daemon after its golden-dataset evaluation passes. ${SIGNED}`)
      .requiredOption('--to <status>', 'shadow or validated'),
  ).action((id: string, opts: ChangeOpts & { to: string }) => runChange(id, 'promote', parseStatus(opts.to), opts));
  changeOptions(models.command('retire <id>').description(`Retire a model (from any status; final) on the daemon. ${SIGNED}`)).action((id: string, opts: ChangeOpts) =>
    runChange(id, 'retire', undefined, opts),
  );
}
