/**
 * `linekeeper twin simulate`: rehearse candidate setpoint vectors on the
 * tenant's validated twin (from the model registry in the data directory's store)
 * and print them ranked, with the discarded ones and why.
 *
 * Candidates are drawn inside the policy bundle's approved design space
 * (`DesignSpace.approved(product, tooling)`, product and tooling defaulting to
 * the tenant's first product and its first tooling) and the capping threshold
 * is the bundle's, unless `--design-space FILE` (a JSON map
 * `{ "<tag id>": { min, max, unit } }`) or `--capping-threshold` say otherwise.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { Command } from 'commander';
import { defaultConfigFile, loadConfig } from '../../config/load.js';
import { LkError } from '../../errors.js';
import { twinModelOf } from '../../models/artefacts.js';
import { loadValidated } from '../../models/registry.js';
import { DB_FILE, openStore } from '../../store/store.js';
import { approvedTwinSpace, instrumentRanges } from '../design-space.js';
import { checkDesignSpace, checkWithinInstruments, SETPOINT_IDS, type DesignSpaceRanges } from '../../twin/setpoints.js';
import { readInputFile } from '../../files.js';
import { simulate, type DiscardedCandidate, type RankedCandidate, type SimulationResult, type TwinModel } from '../../twin/simulate.js';
import { cloneParams, NOMINAL_PARAMS } from '../../twin/params.js';
import { integer, positive } from '../option-parsers.js';

interface SimulateOptions {
  candidates: number;
  horizon: string;
  seed: number;
  json?: boolean;
  config: string;
  data?: string;
  tenant?: string;
  site?: string;
  cappingThreshold?: number;
  product?: string;
  tooling?: string;
  designSpace?: string;
  nominal?: boolean;
  top: number;
}


function readDesignSpace(file: string): DesignSpaceRanges {
  const text = readInputFile(file, 'design space (--design-space)', 1024 * 1024);
  try {
    return JSON.parse(text) as DesignSpaceRanges;
  } catch (err) {
    throw new LkError('LK_VALIDATION', `${file}: design space is not a readable JSON file`, { file }, { cause: err });
  }
}

const fmt = (x: number, d = 2): string => (Math.abs(x) >= 1000 ? x.toFixed(0) : x.toFixed(d));

function setpointsLine(c: RankedCandidate | DiscardedCandidate): string {
  return SETPOINT_IDS.map((id) => `${id}=${fmt(c.setpoints[id].value)} ${c.setpoints[id].unit}`).join(', ');
}

/** The human-readable report of a rehearsal (what `twin simulate` prints without --json). */
export function formatSimulation(r: SimulationResult, top: number): string {
  const lines: string[] = [];
  const capping = r.discarded.filter((d) => d.reasons.some((x) => x.code === 'capping_risk')).length;
  const outside = r.discarded.filter((d) => d.reasons.some((x) => x.code === 'outside_valid_range')).length;
  const notFinite = r.discarded.filter((d) => d.reasons.some((x) => x.code === 'not_finite')).length;
  const horizon = r.horizon.kind === 'full_batch' ? 'full batch' : `${fmt(r.horizon.minutes)} min`;
  lines.push(
    `twin ${r.model.id}: ${r.requested} candidates, horizon ${horizon}, seed ${r.seed}, capping threshold ${r.cappingThresholdPct} % — ` +
      `${r.ranked.length} ranked, ${r.discarded.length} discarded (${capping} capping risk, ${outside} outside the model's valid ranges, ${notFinite} non-finite predictions)`,
  );
  const show = top > 0 ? top : Number.POSITIVE_INFINITY;
  lines.push('', 'ranked (best first):');
  for (const c of r.ranked.slice(0, show)) {
    const a = c.predicted;
    lines.push(
      `  #${c.rank} (candidate ${c.index}) score ${fmt(c.score, 3)}: AV ${fmt(a.contentUniformityAv)}, capping ${fmt(a.cappingRiskPct)} %, ` +
        `weight ${fmt(a.tabletWeightMg, 1)} mg, hardness ${fmt(a.hardnessN, 0)} N, Q30 ${fmt(a.dissolutionQ30Pct, 1)} %, f2 ${fmt(a.dissolutionF2, 1)}, ` +
        `takt ${fmt(a.taktMin, 1)} min, ${fmt(a.tabletsPerHour, 0)} tablets/h`,
      `      ${setpointsLine(c)}`,
    );
  }
  if (r.ranked.length > show) lines.push(`  … ${r.ranked.length - show} more (--top 0 prints all)`);
  lines.push('', 'discarded:');
  for (const d of r.discarded.slice(0, show)) {
    lines.push(`  candidate ${d.index}: ${d.reasons.map((x) => `[${x.code}] ${x.message}`).join('; ')}`, `      ${setpointsLine(d)}`);
  }
  if (r.discarded.length > show) lines.push(`  … ${r.discarded.length - show} more (--top 0 prints all)`);
  if (r.discarded.length === 0) lines.push('  none');
  return `${lines.join('\n')}\n`;
}

/** The tenant's newest validated twin pinned to the site, from the registry in the data directory. */
function registryTwin(dataDir: string, tenant: string, site: string): TwinModel {
  if (!existsSync(join(dataDir, DB_FILE))) throw new LkError('LK_MODEL_MISSING', `no model registry in ${dataDir} (linekeeper models seed, then promote)`, { tenant });
  const store = openStore({ dataDir, readonly: true });
  try {
    return twinModelOf(loadValidated(store, dataDir, tenant, site, 'process', 'twin'));
  } finally {
    store.close();
  }
}

export function registerTwin(program: Command): void {
  const twin = program.command('twin').description('Rehearse candidate setpoint vectors on the fitted digital twin');
  twin
    .command('simulate')
    .description('Rank candidate setpoint vectors inside the design space by predicted quality and takt; discard those over the capping threshold')
    .requiredOption('--candidates <n>', 'number of candidates to rehearse (1…100000)', integer)
    .option('--horizon <h>', '"full batch" or a compression window such as "30 min"', 'full batch')
    .option('--seed <s>', 'seed of the candidate generator (same seed + model version = same result)', integer, 1)
    .option('--json', 'print the result as one JSON document')
    .option('--config <file>', 'site configuration file', defaultConfigFile())
    .option('--data <dir>', 'data directory (default: the configuration data_dir)')
    .option('--tenant <id>', 'tenant whose twin is used (default: the first tenant of the configuration)')
    .option('--site <id>', 'site the model must be pinned to (default: the configuration site id)')
    .option('--capping-threshold <pct>', 'threshold of predicted capping, % (default: the policy bundle\'s site threshold)', positive)
    .option('--product <id>', 'product family of the approved design space (default: the tenant\'s first product)')
    .option('--tooling <id>', 'tooling family of the approved design space (default: the product\'s first tooling)')
    .option('--design-space <file>', 'JSON map { "<tag id>": { min, max, unit } } instead of the approved design space (what-if studies)')
    .option('--nominal', 'use the un-fitted nominal twin instead of the registry (demonstration only)')
    .option('--top <k>', 'ranked and discarded candidates to print (0 = all)', integer, 10)
    .action((opts: SimulateOptions) => {
      const loaded = loadConfig(opts.config, opts.data ? { dataDir: opts.data } : {});
      const tenant = opts.tenant ?? loaded.config.tenants[0]!.id;
      const site = opts.site ?? loaded.config.site.id;
      const model: TwinModel = opts.nominal
        ? { id: 'process-twin-nominal', version: 0, params: cloneParams(NOMINAL_PARAMS), validRanges: {} }
        : registryTwin(loaded.dataDir, tenant, site);
      // The design space is a limit, not a target: candidates come from the approved one (fail closed without a bundle).
      const approved = approvedTwinSpace(loaded, tenant, { ...(opts.product ? { product: opts.product } : {}), ...(opts.tooling ? { tooling: opts.tooling } : {}) });
      const designSpace = opts.designSpace ? readDesignSpace(opts.designSpace) : approved.space;
      // a what-if space may leave the approved one, never the instruments' (a MainForce of −4e306 kN was ranked)
      checkWithinInstruments(checkDesignSpace(designSpace), instrumentRanges(loaded.config));
      const result = simulate(model, {
        candidates: opts.candidates,
        horizon: opts.horizon,
        seed: opts.seed,
        designSpace,
        cappingThresholdPct: opts.cappingThreshold ?? approved.bundle.content.cappingRiskThreshold * 100,
      });
      process.stdout.write(opts.json ? `${JSON.stringify(result)}\n` : formatSimulation(result, opts.top));
    });
}
