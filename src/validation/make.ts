/**
 * One way every validation report is made: the checks are run first (nothing is signed over a report still being
 * written), then the person is re-authenticated, the record signed with the site key, written as JSON and PDF/A
 * (never over an existing file) and put on the site chain of the audit trail. A report whose checks failed is
 * signed and kept all the same — a failed qualification is a record too — and its FAIL is on the first line.
 */
import type { Json } from '../audit/entry.js';
import { existsSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { LkError } from '../errors.js';
import type { LoadedConfig } from '../config/load.js';
import { DB_FILE, openStore } from '../store/store.js';
import { machineNow, productAt, recordReport, renderReportPdf, resultOf, signReport, writeReport, type ReportCheck, type ReportKind, type ReportSections, type SignedReport } from './report.js';
import { reportSigner } from './signer.js';

export interface MadeReport {
  signed: SignedReport;
  files: { json: string; pdf: string };
  /** The seq of the report's entry on the site chain. */
  auditSeq: number;
}

export interface ReportContent {
  kind: ReportKind;
  title: string;
  summary: (checks: readonly ReportCheck[]) => string;
  checks: ReportCheck[];
  data: { [key: string]: Json };
  startedAt: number;
  sections?: ReportSections;
}

/**
 * Sign and keep `content` as `user` (re-authenticated with `password`) in `outDir`, on the data directory of `loaded`
 * (its store and site key).
 * @throws LkError from the signer (forbidden role, wrong password) before anything is written.
 */
export async function makeReport(content: ReportContent, o: { loaded: LoadedConfig; root: string; user: string; password: string; meaning?: string; comment?: string; outDir: string; now?: () => number }): Promise<MadeReport> {
  assertReportPlace(o.loaded, o.outDir);
  const store = openStore({ dataDir: o.loaded.dataDir });
  try {
    const product = productAt(o.root);
    const signer = await reportSigner({ store, loaded: o.loaded, user: o.user, password: o.password, kind: content.kind, version: product.version, ...(o.meaning ? { meaning: o.meaning } : {}), ...(o.comment ? { comment: o.comment } : {}) });
    // the site's own key, as the store holds it (the key of its audit checkpoints)
    const key = store.audit.siteKey();
    const now = o.now ?? (() => store.clock.now());
    const signed = signReport(key, {
      format: 'linekeeper.signed-report', version: 1, kind: content.kind, title: content.title,
      site: o.loaded.config.site.id, timezone: o.loaded.config.site.timezone ?? 'UTC',
      product, machine: machineNow(),
      startedAt: new Date(content.startedAt).toISOString(), endedAt: new Date(now()).toISOString(),
      result: resultOf(content.checks), summary: content.summary(content.checks), checks: content.checks, data: content.data, signer,
    });
    const pdf = renderReportPdf(signed, content.sections ? { sections: content.sections } : {});
    const { files, recorded: auditSeq } = writeReport(o.outDir, signed, pdf, (f) => recordReport(store, signed, f));
    return { signed, files, auditSeq };
  } finally {
    store.close();
  }
}

/**
 * Where a report goes and whom it is signed by must exist before anything runs: the site's store (a report is signed
 * by a person of it and recorded on its trail — never a new, empty one made by mistake, say from the package's
 * configuration template) and an output folder that is not a file.
 * @throws LkError LK_NOT_FOUND (no store in the data directory), LK_OUTPUT_INVALID (`outDir` is a file).
 */
export function assertReportPlace(loaded: LoadedConfig, outDir: string): void {
  if (!existsSync(join(loaded.dataDir, DB_FILE))) {
    throw new LkError('LK_NOT_FOUND', `no linekeeper database in ${loaded.dataDir} (configuration ${loaded.file}): a report is signed by a person of the site's store — give the site's configuration (-c) or data directory (--data)`, { dataDir: loaded.dataDir });
  }
  if (existsSync(outDir) && !statSync(outDir).isDirectory()) throw new LkError('LK_OUTPUT_INVALID', `report folder (--out) ${outDir}: is not a directory`, { file: outDir });
}

/** "12 checks: 11 pass, 1 fail" */
export function countSummary(checks: readonly ReportCheck[]): string {
  const n = (s: ReportCheck['status']): number => checks.filter((c) => c.status === s).length;
  const parts = [`${n('pass')} pass`, `${n('fail')} fail`, ...(n('warn') ? [`${n('warn')} warn`] : []), ...(n('not_applicable') ? [`${n('not_applicable')} not applicable`] : [])];
  return `${checks.length} checks: ${parts.join(', ')}`;
}
