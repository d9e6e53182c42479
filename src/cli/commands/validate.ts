/**
 * `linekeeper validate iq | oq | verify`: the qualification of an installed node, executed by the node itself, and
 * the offline check of a report. `iq` checks the installation (files against the package manifest, Node ABI, unit
 * file, data directory, configuration and policy bundle, audit chains, clock); `oq` runs the operational cases on a
 * scratch data directory with the embedded simulator (never the production data). Each writes a report signed with
 * the site key by the person named with `--as` (password typed now, never an argument) and puts it on the audit
 * trail; a failed check is a failed qualification (exit 1), signed and kept like a passed one. `verify` checks a
 * report's signature offline (src/validation/report.ts).
 */
import type { Command } from 'commander';
import { parsePublicKey } from '../../audit/keys.js';
import { defaultConfigFile, loadConfig } from '../../config/load.js';
import { LkError } from '../../errors.js';
import { readInputFile } from '../../files.js';
import { runIq } from '../../validation/iq.js';
import { assertReportPlace, countSummary, makeReport, type MadeReport } from '../../validation/make.js';
import { installRoot, productAt, STATUS_WORDS, verifyReport, type ReportCheck } from '../../validation/report.js';
import { reportMeaning } from '../../validation/signer.js';
import { traceData, traceSections } from '../../validation/trace.js';
import { CliExit, readPassword } from '../prompt.js';

interface Common { config: string; data?: string; as: string; out: string; meaning?: string; comment?: string; json?: boolean }

function common(cmd: Command): Command {
  return cmd
    .option('-c, --config <file>', 'the site configuration the service runs with (an installed node: /etc/linekeeper/site.yaml); its data directory holds the store whose person signs, the site key and the audit trail the report is recorded on (default: the package\'s template)', defaultConfigFile())
    .option('-d, --data <dir>', 'data directory (default: data_dir of the configuration)')
    .requiredOption('--as <user>', 'the person who signs the report (a QA reviewer or process engineer of the site); the password is asked')
    .requiredOption('-o, --out <dir>', 'folder the signed report (JSON and PDF/A) is written to')
    .option('--meaning <id|text>', 'the signature\'s meaning, from the site\'s list for validation reports (`linekeeper signature-meanings --for validation_report`; default: the first that fits)')
    .option('--comment <text>', 'a comment beside the signature (deviations, the protocol reference)')
    .option('--json', 'machine-readable output');
}


function print(made: MadeReport, json: boolean | undefined): void {
  const r = made.signed.record;
  if (json) {
    process.stdout.write(`${JSON.stringify({ result: r.result, files: made.files, recordHash: made.signed.recordHash, auditSeq: made.auditSeq, checks: r.checks })}\n`);
    return;
  }
  const lines = r.checks.map((c: ReportCheck) => `  ${STATUS_WORDS[c.status].padEnd(4)} ${c.id} [${c.requirements.join(' ')}] ${c.detail}`);
  lines.push('', `${r.kind.toUpperCase()} ${r.result === 'pass' ? 'PASSED' : 'FAILED'}: ${r.summary}`);
  lines.push(`signed by ${r.signer.name} (${r.signer.user}, ${r.signer.role}) at ${r.signer.timestamp}: ${r.signer.meaning}`);
  lines.push(`report: ${made.files.json}`, `        ${made.files.pdf}`, `record SHA-256 ${made.signed.recordHash}, site chain #${made.auditSeq}`);
  process.stdout.write(`${lines.join('\n')}\n`);
}

export function registerValidate(program: Command): void {
  const validate = program.command('validate').description('Qualify this installation: IQ and OQ with signed reports; verify a report offline');

  common(validate.command('iq').description('Installation qualification: files against the package manifest, Node ABI, unit file and hardening, data directory, configuration and signed policy bundle, audit chains, clock'))
    .action(async (o: Common) => {
      const loaded = loadConfig(o.config, o.data !== undefined ? { dataDir: o.data } : {});
      const root = installRoot();
      // a meaning not on the site's list is refused before the password is asked and anything is run
      reportMeaning(loaded, 'iq', productAt(root).version, o.meaning);
      assertReportPlace(loaded, o.out);
      const password = await readPassword(`password of ${o.as} (to sign the IQ report): `);
      const startedAt = Date.now();
      const { checks, data } = await runIq({ loaded, root });
      const made = await makeReport({ kind: 'iq', title: `Installation qualification — linekeeper on ${loaded.config.site.id}`, summary: countSummary, checks, data: { ...data, ...traceData(root, checks) }, sections: traceSections, startedAt }, { loaded, root, user: o.as, password, ...(o.meaning ? { meaning: o.meaning } : {}), ...(o.comment ? { comment: o.comment } : {}), outDir: o.out });
      print(made, o.json);
      if (made.signed.record.result === 'fail') throw new CliExit(1);
    });

  common(validate.command('oq').description('Operational qualification: the operational cases on a scratch data directory and the embedded simulator (never the production data)'))
    .option('--only <ids>', 'comma-separated case ids (default: every case)')
    .option('--keep', 'keep the scratch data directory (its path is printed)')
    .action(async (o: Common & { only?: string; keep?: boolean }) => {
      const loaded = loadConfig(o.config, o.data !== undefined ? { dataDir: o.data } : {});
      const root = installRoot();
      const only = o.only?.split(',').map((x) => x.trim()).filter((x) => x.length > 0);
      // loaded here, not with the command table: the OQ starts a daemon (node-opcua and the simulator), the IQ does not;
      // node-opcua's own warnings go to stderr, so that --json leaves stdout to the report
      const [{ runOq, casesOf, OQ_CASES }, { routeOpcUaConsole }] = await Promise.all([import('../../validation/oq.js'), import('../../../connectors/opcua/index.js')]);
      // refused before the password is asked and anything is run: an unknown case, a meaning not on the list, no store
      const cases = casesOf(only ? { only } : {});
      reportMeaning(loaded, 'oq', productAt(root).version, o.meaning);
      assertReportPlace(loaded, o.out);
      const password = await readPassword(`password of ${o.as} (to sign the OQ report): `);
      const startedAt = Date.now();
      routeOpcUaConsole();
      const oq = await runOq({ ...(only ? { only } : {}), ...(o.keep ? { keep: true } : {}), progress: (l) => process.stderr.write(`${l}\n`) });
      if (o.keep) process.stderr.write(`scratch data directory kept: ${oq.scratch}\n`);
      const partial = cases.length < OQ_CASES.length ? ` (partial: ${cases.length} of ${OQ_CASES.length} cases)` : '';
      const made = await makeReport({ kind: 'oq', title: `Operational qualification${partial} — linekeeper on ${loaded.config.site.id}`, summary: countSummary, checks: oq.checks, data: { ...oq.data, ...traceData(root, oq.checks) }, sections: traceSections, startedAt }, { loaded, root, user: o.as, password, ...(o.meaning ? { meaning: o.meaning } : {}), ...(o.comment ? { comment: o.comment } : {}), outDir: o.out });
      print(made, o.json);
      if (made.signed.record.result === 'fail') throw new CliExit(1);
    });

  validate.command('verify <report>')
    .description('Verify a signed validation report offline: its record hash and Ed25519 signature, and the signing key when --key pins it')
    .option('--key <pem>', 'the site\'s public key (PEM) the report must be signed with')
    .option('--json', 'machine-readable output')
    .action((file: string, o: { key?: string; json?: boolean }) => {
      let doc: unknown;
      const text = readInputFile(file, 'report');
      try {
        doc = JSON.parse(text);
      } catch (err) {
        throw new LkError('LK_REPORT_INVALID', `${file}: not a signed report (not JSON: ${(err as Error).message})`);
      }
      const v = verifyReport(doc, o.key ? parsePublicKey(readInputFile(o.key, 'site public key'), o.key) : undefined);
      const r = (doc as { record?: { kind?: string; result?: string; signer?: { name?: string; user?: string; timestamp?: string } } }).record;
      if (o.json) process.stdout.write(`${JSON.stringify({ ok: v.ok, problems: v.problems, keyId: v.keyId, kind: r?.kind ?? null, result: r?.result ?? null })}\n`);
      else if (v.ok) process.stdout.write(`ok: ${r?.kind} report, result ${r?.result}, signed by ${r?.signer?.name} (${r?.signer?.user}) at ${r?.signer?.timestamp}, key ${v.keyId}${o.key ? ' (pinned)' : ' (carried by the report: pin it with --key)'}\n`);
      else process.stdout.write(`NOT VERIFIED: ${file}\n${v.problems.map((p) => `  ${p}`).join('\n')}\n`);
      if (!v.ok) throw new CliExit(65);
    });
}
