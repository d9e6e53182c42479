/**
 * `linekeeper archive run | period | verify | prune` (EU GMP Annex 11 §17; src/ops/archive.ts, src/ops/retention.ts): a
 * self-contained archive of a run or a period, verifiable without linekeeper; its check; and the one deletion of
 * GMP records, after the retention period and an archive.
 *
 * Offline on the data directory, like `backup`: the daemon may run. Writing an archive is an operating-system act
 * (a copy, like a backup), recorded on the tenant's chain as `system` with the operating-system user. A prune drops
 * records, so a named person does it: `--as` a QA reviewer of the tenant, whose password is typed now (as for
 * `users --as`), with `--reason` in their own words; the password is asked only once the prune has passed its
 * checks, so a refusal asks for nothing.
 *
 * Every command that reads the data directory first finishes what an interrupted prune left aside
 * (`releases/.pruning-*`, recoverPruning in src/ops/retention.ts) and says so on stderr; `--dry-run` only says.
 */
import type { Command } from 'commander';
import { Identity, identitySettings } from '../../api/identity.js';
import { parsePublicKey } from '../../audit/keys.js';
import { defaultConfigFile, loadConfig, type LoadedConfig } from '../../config/load.js';
import { LkError } from '../../errors.js';
import { readInputFile } from '../../files.js';
import { verifyArchive } from '../../ops/archive-manifest.js';
import { writeArchive, type ArchiveResult, type ArchiveScope } from '../../ops/archive.js';
import { planPrune, prunePackages, recoverPruning, type PruneLeftover, type PrunePlan } from '../../ops/retention.js';
import { openStore } from '../../store/store.js';
import { runDocuments } from '../archive-documents.js';
import { readSecrets } from '../prompt.js';

interface Common {
  config: string;
  data?: string;
  json?: boolean;
}

/** Who may drop records after their retention period (a QA decision, never an administrator's). */
const PRUNERS: readonly string[] = ['qa_reviewer'];

function common(c: Command): Command {
  return c
    .option('-c, --config <file>', 'site configuration file (retention.years, data_dir)', defaultConfigFile())
    .option('-d, --data <dir>', 'data directory (overrides data_dir of the config)')
    .option('--json', 'print the result as JSON');
}

const site = (o: Common): LoadedConfig => loadConfig(o.config, o.data !== undefined ? { dataDir: o.data } : {});
const osUser = (): string => process.env['SUDO_USER'] ?? process.env['USER'] ?? 'unknown';
const out = (s: string): void => {
  process.stdout.write(`${s}\n`);
};
const warn = (s: string): void => {
  process.stderr.write(`linekeeper: ${s}\n`);
};

/** What recoverPruning did (or, dry, would do) with each package an interrupted prune left aside. */
function sayLeftovers(found: readonly PruneLeftover[], dry: boolean): void {
  for (const l of found) {
    if (l.action === 'leave') warn(`an interrupted prune left ${[l.folder, l.tenant, l.run].filter(Boolean).join('/')} aside; left as it is: ${l.why}`);
    else if (l.action === 'restore') warn(`an interrupted prune left releases/${l.tenant}/${l.run} aside in ${l.folder}: ${dry ? 'the next archive command (without --dry-run) puts it back' : 'put back'} (${l.why})`);
    else warn(`an interrupted prune left releases/${l.tenant}/${l.run} aside in ${l.folder}: ${dry ? 'the next archive command (without --dry-run) removes it' : 'removed, finishing the prune'} (${l.why})`);
  }
}

function mb(n: number): string {
  return n < 1024 * 1024 ? `${(n / 1024).toFixed(1)} KiB` : `${(n / 1024 / 1024).toFixed(1)} MiB`;
}

async function archiveAction(scope: ArchiveScope, o: Common & { tenant: string; out: string; tar?: boolean }): Promise<void> {
  const loaded = site(o);
  if (!loaded.config.tenants.some((t) => t.id === o.tenant)) throw new LkError('LK_VALIDATION', `no tenant ${o.tenant} on this site (${loaded.config.tenants.map((t) => t.id).join(', ')})`);
  const store = openStore({ dataDir: loaded.dataDir });
  let r: ArchiveResult;
  try {
    // a package an interrupted prune left aside is back in place before the archive looks for it
    sayLeftovers(recoverPruning(store), false);
    r = await writeArchive(store, {
      tenant: o.tenant, scope, out: o.out, retentionYears: loaded.config.retention.years, osUser: osUser(), site: loaded.config.site.id,
      documents: runDocuments(store, loaded.config.site.timezone), ...(o.tar ? { tar: true } : {}),
    });
  } finally {
    store.close();
  }
  for (const w of r.warnings) warn(w);
  if (o.json) return out(JSON.stringify(r, null, 2));
  const what = 'run' in scope ? `run ${scope.run}` : `${scope.from} .. ${scope.to} (${r.runs.length} runs)`;
  out(`${o.out}: archive of ${what}, tenant ${o.tenant}: ${r.files} files, ${mb(r.bytes)}, audit entries through #${r.bundle.head?.seq ?? 0}; manifest sha256 ${r.manifestSha256}; recorded on ${o.tenant} #${r.auditSeq}`);
  if (r.tarFile) out(`${o.out}.tar.gz: the same folder as one file`);
  out(`verify it without linekeeper: cd ${o.out} && node verify-audit-bundle.mjs --archive . --key SITE-PUBLIC-KEY.pem (README.txt says more)`);
}

function planText(p: PrunePlan): string[] {
  return p.candidates.map((c) => `  ${c.run}  batch ${c.batch}  ended ${c.endedAt}  kept until ${c.retainUntil}  archived (${p.tenant} #${c.archivedIn?.seq}, ${c.archivedIn?.archive})`);
}

export function registerArchive(program: Command): void {
  const archive = program.command('archive').description('Archive a run or a period (release package, audit bundle, key, spec table, the standalone verifier) to verify without linekeeper; check an archive; drop release packages after the retention period');

  common(archive.command('run'))
    .description('Write the archive of one ended run into a new folder (never over anything), verified, read-only, recorded on the tenant\'s chain')
    .argument('<run_id>', 'the run (run_…)')
    .requiredOption('--tenant <id>', 'tenant of the run')
    .requiredOption('-o, --out <dir>', 'the archive folder to create (absent or empty; its parent must exist)')
    .option('--tar', 'also write <dir>.tar.gz')
    .action((run: string, o: Common & { tenant: string; out: string; tar?: boolean }) => archiveAction({ run }, o));

  common(archive.command('period'))
    .description('Write the archive of the runs a tenant started in a period, and its audit entries of the period')
    .requiredOption('--tenant <id>', 'tenant')
    .requiredOption('--from <date>', 'inclusive: UTC ISO 8601, or a date alone (the start of that day)')
    .requiredOption('--to <date>', 'exclusive: UTC ISO 8601, or a date alone (the end of that day: --from D --to D is day D)')
    .requiredOption('-o, --out <dir>', 'the archive folder to create (absent or empty; its parent must exist)')
    .option('--tar', 'also write <dir>.tar.gz')
    .action((o: Common & { tenant: string; from: string; to: string; out: string; tar?: boolean }) => archiveAction({ from: o.from, to: o.to }, o));

  archive.command('verify')
    .description('Check an archive: every file against its manifest, the manifest\'s signature, every audit bundle, each release.json; exit 65 naming each damaged file')
    .argument('<dir>', 'the archive folder')
    .option('--key <file>', 'the site public key (PEM) as you hold it; default: the archive\'s own site-public-key.pem')
    .option('--json', 'print the report as JSON')
    .action((dir: string, o: { key?: string; json?: boolean }) => {
      const publicKey = o.key ? parsePublicKey(readInputFile(o.key, 'site public key (--key)', 1024 * 1024), o.key) : undefined;
      const r = verifyArchive(dir, publicKey ? { publicKey } : {});
      if (o.json) out(JSON.stringify(r));
      else if (r.ok) {
        const s = r.archive?.scope as { run?: string; from?: string; to?: string } | null | undefined;
        // without --key the archive vouched for itself: whole, but not shown to be the site's (as validate verify says)
        out(`ok: archive of ${s?.run ? `run ${s.run}` : `${s?.from} .. ${s?.to}`} (tenant ${r.archive?.tenant ?? '?'}), ${r.files} files, key ${r.keyId}${publicKey ? ' (pinned)' : ' (carried by the archive: pin it with --key)'}`);
      } else for (const p of r.problems) out(`DAMAGED: ${p.file}: ${p.kind}: ${p.detail}`);
      if (!r.ok) throw new LkError('LK_AUDIT_BROKEN', `the archive is damaged: ${r.problems[0]!.file} (${r.problems[0]!.kind})${r.problems.length > 1 ? ` and ${r.problems.length - 1} more` : ''}`, { problems: r.problems });
    });

  common(archive.command('prune'))
    .description('Drop the release packages of runs that ended before a date, only after the retention period and only when an archive holds them byte for byte; the audit trail is never pruned')
    .requiredOption('--tenant <id>', 'tenant')
    .requiredOption('--before <date>', 'runs that ended before this instant (a date alone: the start of that day, UTC)')
    .option('--as <id>', 'you: a QA reviewer of the tenant (your password is asked); not needed with --dry-run')
    .option('--reason <text>', 'why, in your own words (recorded with the prune); not needed with --dry-run')
    .option('--dry-run', 'show what would be dropped (or why nothing may be), change nothing')
    .action(async (o: Common & { tenant: string; before: string; as?: string; reason?: string; dryRun?: boolean }) => {
      const loaded = site(o);
      if (!o.dryRun && !o.as) throw new LkError('LK_VALIDATION', '--as <id> is required: a QA reviewer of the tenant drops records, with their password');
      if (!o.dryRun && !o.reason?.trim()) throw new LkError('LK_VALIDATION', '--reason "…" is required: why these records are dropped, in your own words (recorded with the prune)');
      const years = loaded.config.retention.years;
      const store = openStore({ dataDir: loaded.dataDir, ...(o.dryRun ? { readonly: true } : {}) });
      try {
        sayLeftovers(recoverPruning(store, { dryRun: o.dryRun === true }), o.dryRun === true);
        const plan = planPrune(store, { tenant: o.tenant, before: o.before, years, now: store.clock.now() });
        if (o.dryRun || plan.candidates.length === 0) {
          if (o.json) return out(JSON.stringify({ dryRun: o.dryRun === true, ...plan }, null, 2));
          out(plan.candidates.length === 0 ? `nothing to drop: no release package of ${o.tenant} of a run that ended before ${plan.before}` : `would drop ${plan.candidates.length} release packages of ${o.tenant} (retention ${years} years):`);
          for (const l of planText(plan)) out(l);
          return;
        }
        const identity = new Identity({ store, clock: store.clock, ...identitySettings(loaded.config.api) });
        const u = identity.users.get(o.as!);
        if (u && (!PRUNERS.includes(u.role) || !u.tenants.includes(o.tenant))) throw new LkError('LK_FORBIDDEN', `${o.as} (${u.role}) may not drop records of ${o.tenant} (needs ${PRUNERS.join(' or ')} of the tenant)`);
        const [pw] = await readSecrets([`password for ${o.as}: `]);
        const by = (await identity.reauthenticate(o.as!, pw!, { tenant: o.tenant, purpose_detail: 'archive prune' })).id;
        const { seq, warnings } = prunePackages(store, plan, { actor: by, reason: o.reason!.trim(), osUser: osUser() });
        for (const w of warnings) warn(w);
        if (o.json) return out(JSON.stringify({ dropped: plan.candidates, by, auditSeq: seq, warnings }, null, 2));
        out(`dropped ${plan.candidates.length} release packages of ${o.tenant} by ${by}; recorded on ${o.tenant} #${seq}:`);
        for (const l of planText(plan)) out(l);
      } finally {
        store.close();
      }
    });
}
