/**
 * `linekeeper audit verify | query | export | key`: the audit trail for QA,
 * auditors and operators. Verification and queries open the database
 * read-only; a bundle export signs a checkpoint of the head first.
 */
import { accessSync, constants, readFileSync, writeFileSync } from 'node:fs';
import type { Command } from 'commander';
import { systemClock } from '../../clock.js';
import { loadConfig } from '../../config/load.js';
import { siteIso } from '../../domain/site-time.js';
import { LkError } from '../../errors.js';
import { checkDataDirPath, checkOutputFile, fileError, isSystemError, readInputFile } from '../../files.js';
import { resolve } from 'node:path';
import { openStore, type Store } from '../../store/store.js';
import { exportBundle, verifyBundle } from '../../audit/bundle.js';
import { registerAuditReview } from './audit-review.js';
import { exportCsv } from '../../audit/export-csv.js';
import { exportPdf } from '../../audit/export-pdf.js';
import { loadSitePublicKey, parsePublicKey } from '../../audit/keys.js';
import { parseFilter, queryAudit, type AuditFilter, type ValidFilter } from '../../audit/query.js';
import { verifyStoreParallel } from '../../audit/verify-parallel.js';
import type { AuditEntry } from '../../audit/entry.js';

interface Common {
  data?: string;
  config?: string;
}
type FilterOpts = Partial<Record<keyof AuditFilter, string>>;

function dataDirOf(o: Common): string {
  if (o.data === undefined) return loadConfig(...(o.config ? [o.config] : [])).dataDir;
  checkDataDirPath(o.data);
  return o.data;
}

/**
 * The site's time zone for times printed to people: the configuration's when it is read (no `--data`, or an
 * explicit `--config`); with `--data` alone (an auditor's copy without its configuration), UTC.
 */
function zoneOf(o: Common): string | undefined {
  return o.data === undefined || o.config !== undefined ? loadConfig(...(o.config ? [o.config] : [])).config.site.timezone : undefined;
}

function withStore<T>(o: Common, readonly: boolean, fn: (s: Store) => T): T {
  const s = openStore({ dataDir: dataDirOf(o), readonly });
  try {
    return fn(s);
  } finally {
    s.close();
  }
}

/** A write-protected data directory (an auditor's copy) is read, never written: no new checkpoint is signed there. */
function writableDir(dir: string): boolean {
  try {
    accessSync(dir, constants.W_OK);
    return true;
  } catch {
    return false;
  }
}

/** Progress of a long verify on stderr, only when it is a terminal (scripts and pipes stay quiet). */
function progressOnTty(): { onProgress?: (done: number, total: number) => void } {
  if (process.stderr.isTTY !== true) return {};
  let shown = -1;
  return {
    onProgress: (done, total) => {
      const pct = Math.floor((100 * done) / total);
      if (total < 100_000 || pct === shown) return;
      shown = pct;
      process.stderr.write(`\rverifying: ${done.toLocaleString('en-US')} / ${total.toLocaleString('en-US')} entries (${pct} %)${done >= total ? '\n' : ''}`);
    },
  };
}

const FILTER_KEYS = ['batch', 'run', 'agent', 'tool', 'setpoint', 'reviewer', 'actor', 'kind', 'action', 'from', 'to'] as const;
/** The filter options, validated (a bad time or from ≥ to is refused before anything is opened). */
function filterOf(o: FilterOpts): ValidFilter {
  const f: AuditFilter = {};
  for (const k of FILTER_KEYS) if (o[k] !== undefined) f[k] = o[k];
  return parseFilter(f);
}

function addFilterOptions(c: Command): Command {
  return c
    .option('--batch <id>', 'batch id').option('--run <id>', 'run id').option('--agent <id>', 'agent id (agent.<role>)')
    .option('--tool <name>', 'tool name').option('--setpoint <tag>', 'setpoint tag').option('--reviewer <user>', 'reviewer id')
    .option('--actor <id>', 'actor').option('--kind <kind>', 'entry kind').option('--action <action>', 'action, e.g. run.start')
    .option('--from <iso>', 'from time (inclusive, UTC ISO 8601; a date alone is the start of that day)').option('--to <iso>', 'to time (exclusive, UTC ISO 8601; a date alone is the end of that day)');
}

function addCommon(c: Command): Command {
  return c.option('--data <dir>', 'data directory (default: data_dir of the configuration)').option('--config <file>', 'site configuration file');
}

const out = (s: string): void => {
  process.stdout.write(`${s}\n`);
};

/** One entry as a line of `audit query`, its time on the site's clock with its offset (`tz`, default UTC). */
function line(e: AuditEntry, tz?: string): string {
  const subj = Object.entries(e.subject).map(([k, v]) => `${k}=${v}`).join(' ');
  const change = e.old !== undefined || e.new !== undefined ? ` ${JSON.stringify(e.old ?? null)} → ${JSON.stringify(e.new ?? null)}` : '';
  return `#${e.seq} ${siteIso(e.ts, tz)} ${e.actor} ${e.kind} ${e.action}${subj ? ` [${subj}]` : ''}${change}${e.reason ? ` — ${e.reason}` : ''}`;
}

export function registerAudit(program: Command): void {
  const audit = program.command('audit').description('Verify, query and export the hash-chained audit trail (Part 11 / Annex 11)');

  addCommon(audit.command('verify'))
    .description('Recompute every chain and check every signed checkpoint; exit 0 when intact, 65 naming the first bad seq and the damage')
    .option('--tenant <id>', 'verify only this chain')
    .option('--bundle <file>', 'verify an exported bundle instead of the database')
    .option('--key <file>', 'site public key (PEM) to check signatures with, instead of the one beside the data / in the bundle')
    .option('--json', 'print the report as JSON')
    .action(async (o: Common & { tenant?: string; bundle?: string; key?: string; json?: boolean }) => {
      const publicKey = o.key ? parsePublicKey(readInputFile(o.key, 'site public key (--key)', 1024 * 1024), o.key) : undefined;
      if (o.bundle) {
        if (o.data) throw new LkError('LK_VALIDATION', 'use either --data or --bundle');
        const r = verifyBundle(readInputFile(o.bundle, 'audit bundle (--bundle)'), publicKey ? { publicKey } : {});
        if (o.json) out(JSON.stringify(r));
        else if (r.ok) out(`ok: tenant ${r.tenant}, ${r.entries} entries, head ${r.head ? `#${r.head.seq} ${r.head.hash}` : '(none)'}, key ${r.keyId}`);
        else out(`DAMAGED: tenant ${r.tenant}: ${r.damage!.kind} at seq ${r.damage!.seq ?? '-'}: ${r.damage!.detail}`);
        if (!r.ok) throw new LkError('LK_AUDIT_BROKEN', `bundle is damaged: ${r.damage!.kind} at seq ${r.damage!.seq ?? '-'}`, { ...r.damage });
        return;
      }
      const s = openStore({ dataDir: dataDirOf(o), readonly: true });
      let r;
      try {
        r = await verifyStoreParallel(s, { ...(o.tenant ? { tenant: o.tenant } : {}), ...(publicKey ? { publicKey } : {}), ...progressOnTty() });
      } finally {
        s.close();
      }
      if (o.json) out(JSON.stringify(r));
      else {
        for (const c of r.chains) {
          if (c.ok) {
            const tail = c.unanchored > 0 ? `, ${c.unanchored} after the last checkpoint` : '';
            out(`${c.tenant}: ok, ${c.count} entries, head #${c.head.seq} ${c.head.hash}, ${c.checkpoints} checkpoints${tail}`);
          } else out(`${c.tenant}: DAMAGED: ${c.damage!.kind} at seq ${c.damage!.seq ?? '-'}: ${c.damage!.detail}`);
        }
        for (const p of r.problems) out(`${p.kind === 'triggers_missing' || p.kind === 'schema_altered' ? 'schema' : 'checkpoint log'}: DAMAGED: ${p.kind}: ${p.detail}`);
        if (r.chains.length === 0) out('no audit chains');
      }
      if (!r.ok) {
        const bad = r.chains.find((c) => !c.ok);
        const d = bad?.damage ?? r.problems[0];
        throw new LkError('LK_AUDIT_BROKEN', `audit trail is damaged${bad ? ` in chain ${bad.tenant}` : ''}: ${d?.kind} at seq ${d?.seq ?? '-'}`, { tenant: bad?.tenant, ...d });
      }
    });

  addFilterOptions(addCommon(audit.command('query')))
    .description("Show one tenant's entries, filtered, a page at a time")
    .requiredOption('--tenant <id>', 'tenant (or "site" for the edge node\'s own events)')
    .option('--limit <n>', 'entries per page (1..1000)', '50')
    .option('--cursor <c>', 'continue after the page that printed this cursor')
    .option('--json', 'print entries as JSON Lines')
    .action((o: Common & FilterOpts & { tenant: string; limit: string; cursor?: string; json?: boolean }) => {
      const limit = Number(o.limit);
      const page = withStore(o, true, (s) => queryAudit(s.db, o.tenant, filterOf(o), { limit, ...(o.cursor ? { cursor: o.cursor } : {}) }));
      const tz = o.json ? undefined : zoneOf(o);
      for (const e of page.entries) out(o.json ? JSON.stringify(e) : line(e, tz));
      if (page.next) process.stderr.write(`more: --cursor ${page.next}\n`);
    });

  addFilterOptions(addCommon(audit.command('export')))
    .description("Export one tenant's entries: a verifiable JSON Lines bundle, CSV, or a PDF report")
    .requiredOption('--tenant <id>', 'tenant')
    .requiredOption('--out <file>', 'output file')
    .option('--format <f>', 'bundle | csv | pdf', 'bundle')
    .action(async (o: Common & FilterOpts & { tenant: string; out: string; format: string }) => {
      try {
        await exportAction(o);
      } catch (err) {
        // the target checked out but writing it failed (permission, a full disk): name the file, no stack
        if (isSystemError(err) && err.path !== undefined && resolve(err.path) === resolve(o.out)) throw fileError(err, o.out, 'export target (--out)', 'output');
        throw err;
      }
    });

  registerAuditReview(audit);

  addCommon(audit.command('key'))
    .description("Print (or write) the site's Ed25519 public key and its id, for auditors to pin")
    .option('--export', 'output the public key PEM')
    .option('--out <file>', 'write the PEM to a file instead of stdout')
    .action((o: Common & { export?: boolean; out?: string }) => {
      const k = loadSitePublicKey(dataDirOf(o));
      if (o.out) {
        checkOutputFile(o.out, 'key file (--out)');
        try {
          writeFileSync(o.out, k.publicPem);
        } catch (err) {
          throw fileError(err, o.out, 'key file (--out)', 'output');
        }
        out(`${o.out}: key id ${k.keyId}`);
      } else if (o.export) process.stdout.write(k.publicPem);
      else out(`key id ${k.keyId}`);
    });
}

/** `audit export`: the target is checked before the store is opened or a checkpoint signed. */
async function exportAction(o: Common & FilterOpts & { tenant: string; out: string; format: string }): Promise<void> {
  const f = filterOf(o);
  if (!['bundle', 'csv', 'pdf'].includes(o.format)) throw new LkError('LK_VALIDATION', `--format must be bundle, csv or pdf, not "${o.format}"`);
  // before any work: a bundle export signs a checkpoint first, which must not happen for a file that cannot be written
  checkOutputFile(o.out, 'export target (--out)');
  if (o.format === 'bundle') {
    // a write-protected copy (an auditor's) exports up to its last checkpoint, since none can be signed
    const ro = !writableDir(dataDirOf(o));
    const { n, unsigned } = withStore(o, ro, (s) => {
      const lines = exportBundle(s, o.tenant, f, o.out);
      const lastCp = (s.db.prepare('SELECT MAX(seq) FROM audit_checkpoint WHERE tenant = ?').pluck().get(o.tenant) as number | null) ?? 0;
      return { n: lines, unsigned: s.audit.head(o.tenant).seq - lastCp };
    });
    out(`${o.out}: bundle of ${n - 1} lines (header, checkpoints, entries); verify with: linekeeper audit verify --bundle ${o.out}`);
    if (ro && unsigned > 0) process.stderr.write(`linekeeper: the data directory is write-protected, so no new checkpoint was signed: ${unsigned} ${unsigned === 1 ? 'entry' : 'entries'} after the last checkpoint ${unsigned === 1 ? 'is' : 'are'} not in the bundle\n`);
  } else if (o.format === 'csv') {
    const n = withStore(o, true, (s) => exportCsv(s.db, o.tenant, f, o.out));
    out(`${o.out}: ${n} entries as CSV`);
  } else if (o.format === 'pdf') {
    const s = openStore({ dataDir: dataDirOf(o), readonly: true });
    try {
      // the site's time beside UTC, from the configuration when it is read (with --data alone: UTC only)
      const tz = zoneOf(o);
      const r = await exportPdf(s, o.tenant, f, o.out, { now: systemClock.now(), ...(tz ? { timezone: tz } : {}) });
      out(`${o.out}: ${r.entries} entries on ${r.pages} pages`);
    } finally {
      s.close();
    }
  }
}
