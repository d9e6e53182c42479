import { existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Command } from 'commander';
import { checkOutputFile, fileError } from '../../files.js';
import { defaultConfigFile, loadConfig } from '../../config/load.js';
import { LkError } from '../../errors.js';
import { missingRoles, roleMapOf, ROLES, STEP_ROLES } from '../../domain/roles.js';
import { CliExit, readLine, readPassword } from '../prompt.js';
import { readPolicyBundle } from '../../config/policy-bundle.js';
import { policySignatureStatus } from '../../engine/policy-gate.js';

/**
 * The documents linekeeper reads from other systems, whose JSON Schemas `config schema --of` prints (the schemas
 * themselves: src/cli/config-schemas.ts, loaded when asked for).
 */
export const SCHEMA_KINDS = ['site', 'batch-record', 'qc-result', 'recorded-batches', 'nir-calibration'] as const;
export type SchemaKind = (typeof SCHEMA_KINDS)[number];

export function registerConfig(program: Command): void {
  const config = program.command('config').description('Validate and inspect the site configuration');
  config
    .command('check')
    .description('Validate a site configuration file (the same validation `serve` runs at start; exits 78 on any error) and the policy bundle it names against its equipment (LK_POLICY_BUNDLE, exit 1); report the bundle\'s signature')
    .argument('[file]', 'configuration file', defaultConfigFile())
    .option('--json', 'print the validated configuration as JSON')
    .action((file: string, opts: { json?: boolean }) => {
      const loaded = loadConfig(file);
      // the policy bundle the configuration names, against its equipment: every setpoint, agent, product
      // and tooling it names must exist (LK_POLICY_BUNDLE naming file:line: path otherwise)
      const bundle = readPolicyBundle(loaded.policyDir, loaded.config);
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
      const sig = policySignatureStatus(loaded, bundle);
      // reported, not failed: the daemon starts with an unsigned bundle refused (every write denied, audited)
      // the roles the plan's steps need that this site does not map: those steps are skipped or held at run time
      const roles = roleMapOf(c);
      process.stdout.write(`roles: ${roles.entries.size} of ${Object.keys(ROLES).length} mapped${c.roles ? ` (${Object.keys(c.roles).length} in roles:, the rest by the same tag id)` : ' (by the same tag id)'}\n`);
      for (const [step, rule] of Object.entries(STEP_ROLES)) {
        const missing = missingRoles(step, roles);
        if (missing.length > 0) process.stdout.write(`  ${step}: ${rule.missing === 'skip' ? 'skipped' : 'HELD'} — ${rule.without}; not mapped: ${missing.join(', ')}\n`);
      }
      process.stdout.write(`${loaded.policyDir}: ok — policy bundle ${bundle.version}, ${Object.keys(bundle.content.designSpaces).length} design spaces, ${Object.keys(bundle.content.agents).length} agents; signature: ${sig.status === 'fail' ? 'REFUSED — ' : ''}${sig.text}\n`);
    });
  config
    .command('apply')
    .description('Change-controlled configuration change: validate FILE, show the diff, re-authenticate a named approver (admin or process_engineer), audit it, replace the file in force; then `systemctl reload linekeeper`')
    .argument('<file>', 'the new configuration')
    .requiredOption('--change <ref>', 'change reference of the approved change record, e.g. CC-2026-0301')
    .option('-c, --config <file>', 'the configuration file in force (replaced)', defaultConfigFile())
    .option('-d, --data <dir>', 'data directory (overrides data_dir of the config)')
    .option('--approver <user>', 'user id of the approver (asked for when not given)')
    .option('--reason <text>', 'why (recorded with the approval)')
    .option('--meaning <id|text>', 'the meaning of the approval: one of the config_change signature meanings of the configuration in force (default: the first); a wrong one lists them, before any password')
    .option('--dry-run', 'validate and show the diff only')
    .action(async (file: string, opts: { change: string; config: string; data?: string; approver?: string; reason?: string; meaning?: string; dryRun?: boolean }) => {
      const dd = opts.data !== undefined ? { dataDir: opts.data } : {};
      // the change control's modules (the store, the trail, the diff) when a change is applied, not at every `config check`
      const { applyConfigChange, changedSections, configChangeMeaning, lineDiff, LIVE_SECTIONS } = await import('../../ops/config-change.js');
      const current = loadConfig(opts.config, dd);
      const next = loadConfig(file, dd);
      const sections = changedSections(current.config, next.config);
      const restart = sections.filter((x) => !(LIVE_SECTIONS as readonly string[]).includes(x));
      process.stdout.write(`--- ${current.file}\n+++ ${next.file}\n${lineDiff(readFileSync(current.file, 'utf8'), readFileSync(next.file, 'utf8'))}\n`);
      process.stdout.write(`sections changed: ${sections.join(', ') || 'none'}${restart.length ? ` (${restart.join(', ')} take effect at the next restart only)` : ' (applied live on reload)'}\n`);
      if (opts.dryRun) return;
      // the meaning from the list in force before anyone types a password
      const meaning = configChangeMeaning(current, opts.meaning, opts.change);
      process.stdout.write(`meaning: ${meaning.text} (${meaning.id})\n`);
      const approver = opts.approver ?? (await readLine('approver (user id): '));
      if (!approver) throw new LkError('LK_VALIDATION', 'an approver is required');
      const password = await readPassword(`password of ${approver}: `);
      const { openStore } = await import('../../store/store.js');
      const { Identity, identitySettings } = await import('../../api/identity.js');
      const store = openStore({ dataDir: current.dataDir });
      try {
        const identity = new Identity({ store, clock: store.clock, ...identitySettings(current.config.api) });
        const r = await applyConfigChange({ store, identity, current, next, changeRef: opts.change, approver, password, meaning: meaning.id, ...(opts.reason ? { reason: opts.reason } : {}) });
        process.stdout.write(`approved by ${approver} under ${opts.change} (site audit seq ${r.seq}); ${current.file} replaced (previous kept as ${current.file}.prev)\n`);
        process.stdout.write(restart.length ? 'restart to apply: systemctl restart linekeeper\n' : 'apply now: systemctl reload linekeeper (SIGHUP)\n');
      } finally {
        store.close();
      }
    });
  config
    .command('report')
    .description(
      'The configuration specification as a signed report (JSON + PDF/A) for the validation lead: site, connections, equipment and every tag, roles, the policy bundle ' +
        '(design spaces, allow-lists, autonomy, approvers, signature), users and roles, models with their cards, MQTT and OIDC settings (a secret shows as "(set)"), ' +
        'with consistency checks; signed by --as (a QA reviewer or process engineer, password typed now), put on the audit trail. --diff: what changed since a previous ' +
        'report, whose signature is verified with this site\'s key first. Exit 0 pass, 1 a failed check (the report is signed and kept all the same), 65 a --diff report that does not verify',
    )
    .option('-c, --config <file>', 'site configuration file', defaultConfigFile())
    .option('-d, --data <dir>', 'data directory (overrides data_dir of the config)')
    .requiredOption('-o, --out <dir>', 'folder for the report\'s JSON and PDF (created; a report is never overwritten)')
    .requiredOption('--as <user>', 'you: a local QA reviewer or process engineer (your password is asked: typed without echo, or the first line of stdin)')
    .option('--meaning <id|text>', 'the signature\'s meaning, from the site\'s list for validation reports (default: the first that fits)')
    .option('--comment <text>', 'a comment signed with the report')
    .option('--diff <report>', 'a previous configuration report (its .json) to compare with')
    .option('--json', 'print the outcome as JSON')
    .action(async (opts: { config: string; data?: string; out: string; as: string; meaning?: string; comment?: string; diff?: string; json?: boolean }) => {
      const startedAt = Date.now();
      const loaded = loadConfig(opts.config, opts.data !== undefined ? { dataDir: opts.data } : {});
      const { DB_FILE, openStore } = await import('../../store/store.js');
      if (!existsSync(join(loaded.dataDir, DB_FILE))) throw new LkError('LK_NOT_FOUND', `no linekeeper database in ${loaded.dataDir}: the report is signed by a user of the site's store (--data)`, { dataDir: loaded.dataDir });
      if (existsSync(opts.out) && !statSync(opts.out).isDirectory()) throw new LkError('LK_OUTPUT_INVALID', `report folder (--out) ${opts.out}: is not a directory`, { file: opts.out });
      const { configReportContent, diffLines, previousConfigReport } = await import('../../validation/config-report.js');
      const { makeReport } = await import('../../validation/make.js');
      const { installRoot, productAt } = await import('../../validation/report.js');
      const { reportMeaning } = await import('../../validation/signer.js');
      const { loadSitePublicKey } = await import('../../audit/keys.js');
      // a meaning not on the site's list is refused before anything is asked
      reportMeaning(loaded, 'config', productAt(installRoot()).version, opts.meaning);
      // the previous report is verified before anything is asked or computed: a report that does not verify compares with nothing
      const previous = opts.diff !== undefined ? previousConfigReport(opts.diff, loadSitePublicKey(loaded.dataDir)) : undefined;
      const store = openStore({ dataDir: loaded.dataDir, readonly: true });
      let content: ReturnType<typeof configReportContent>;
      try {
        content = configReportContent({ loaded, store, startedAt, ...(previous ? { previous } : {}) });
      } finally {
        store.close();
      }
      const password = await readPassword(`password of ${opts.as} (signing the configuration report): `);
      const made = await makeReport(content, { loaded, root: installRoot(), user: opts.as, password, ...(opts.meaning ? { meaning: opts.meaning } : {}), ...(opts.comment ? { comment: opts.comment } : {}), outDir: opts.out });
      const r = made.signed.record;
      const failed = r.checks.filter((ch) => ch.status === 'fail');
      if (opts.json) {
        process.stdout.write(`${JSON.stringify({ result: r.result, summary: r.summary, files: made.files, recordHash: made.signed.recordHash, auditSeq: made.auditSeq, checks: r.checks.map((ch) => ({ id: ch.id, status: ch.status, detail: ch.detail })), diff: content.data['diffAgainst'] ?? null }, null, 2)}\n`);
      } else {
        for (const l of diffLines(content)) process.stdout.write(`${l}\n`);
        process.stdout.write(`configuration report: ${r.result.toUpperCase()} — ${r.summary}\n`);
        for (const ch of r.checks.filter((x) => x.status === 'fail' || x.status === 'warn')) process.stdout.write(`  ${ch.status.toUpperCase()} ${ch.id}: ${ch.detail}\n`);
        process.stdout.write(`  ${made.files.json}\n  ${made.files.pdf}\n`);
        process.stdout.write(`record sha256 ${made.signed.recordHash}, signed by ${r.signer.name} (${r.signer.user}, ${r.signer.role}) at ${r.signer.timestamp}; site audit seq ${made.auditSeq}\n`);
      }
      if (failed.length > 0) throw new CliExit(1, `the configuration report records ${failed.length} failed check${failed.length === 1 ? '' : 's'} (${failed.map((ch) => ch.id).join(', ')}); it is signed and kept`);
    });
  config
    .command('schema')
    .description('Print (or write) the JSON Schema of the site configuration (for editors), of a batch record or a QC result (for an MES or LIMS integration), or of the site data `models fit` takes (recorded batches, NIR calibration spectra)')
    .option('-o, --output <file>', 'write to a file instead of stdout')
    .option('--of <kind>', `which document: ${SCHEMA_KINDS.join(', ')}`, 'site')
    .action(async (opts: { output?: string; of: string }) => {
      if (!(SCHEMA_KINDS as readonly string[]).includes(opts.of)) throw new LkError('LK_VALIDATION', `--of must be one of ${SCHEMA_KINDS.join(', ')}, not ${JSON.stringify(opts.of)}`);
      const { jsonSchemaOf } = await import('../config-schemas.js');
      const text = `${JSON.stringify(jsonSchemaOf(opts.of as SchemaKind), null, 2)}\n`;
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
