/**
 * Human-readable PDF report of one tenant's audit entries (pdfkit), for QA
 * and inspectors: each entry with actor, time, action, old -> new value,
 * reason and signature manifestation (printed name, date/time, meaning, Part
 * 11 §11.50), and the Annex 11 §8.2 statement whether it changed since it was
 * first recorded — answered by verifying the chain before printing, not assumed.
 */
import { isUtcZone, printedTime } from '../domain/site-time.js';
import { createWriteStream } from 'node:fs';
import { pdfDocument } from './pdfkit.js';
import { LkError } from '../errors.js';
import { canonicalJson, type AuditEntry, type Json } from './entry.js';
import { iterateAudit, parseFilter } from './query.js';
import { verifyStore, type ChainReport } from './verify.js';
import type { Database } from 'better-sqlite3';

export interface PdfOptions {
  /** Uncompressed content streams (tests read the text back). */
  compress?: boolean;
  /** Printed in the title block. */
  siteName?: string;
  /** Time printed as "generated at" (from the caller's clock). */
  now: number;
  /** The site's time zone (IANA, `site.timezone`): shown beside each UTC time (src/domain/site-time.ts). */
  timezone?: string;
}

/** pdfkit's standard fonts speak WinAnsi: keep Latin-1, replace the rest visibly. */
function pdfText(s: string): string {
  return s.replace(/→/g, '->').replace(/[^\x20-\x7e\xa0-\xff\n]/g, '?');
}

const clip = (s: string, n = 400): string => (s.length > n ? `${s.slice(0, n)}… (${s.length} chars)` : s);
const show = (v: Json | undefined): string => (v === undefined ? '-' : clip(canonicalJson(v), 200));

/**
 * Write the report for `tenant`'s entries matching `filter` to `file`.
 * @throws LkError LK_VALIDATION for a bad filter; LK_NOT_FOUND when the tenant has no chain.
 */
export async function exportPdf(src: { db: Database; dataDir: string }, tenant: string, filter: unknown, file: string, opts: PdfOptions): Promise<{ entries: number; pages: number }> {
  const f = parseFilter(filter);
  let chain: ChainReport | undefined;
  let verifyError: string | undefined;
  try {
    chain = verifyStore(src, { tenant }).chains.find((c) => c.tenant === tenant);
  } catch (err) {
    if (LkError.is(err, 'LK_NOT_FOUND')) throw err;
    verifyError = LkError.is(err) ? `${err.code}: ${err.message}` : String(err);
  }
  const firstBad = chain?.damage?.seq ?? (chain?.ok ? Number.POSITIVE_INFINITY : 0);
  const changed = (e: AuditEntry): string =>
    verifyError !== undefined ? `CANNOT BE CONFIRMED: verification failed (${verifyError})`
    : e.seq < firstBad ? `No. The entry matches its recorded hash ${e.hash.slice(0, 16)}... in an intact chain.`
    : `CANNOT BE CONFIRMED: the chain is damaged from seq ${firstBad} (${chain?.damage?.kind ?? 'unknown'}).`;

  const doc = new (pdfDocument())({ size: 'A4', margin: 50, bufferPages: true, compress: opts.compress ?? true, info: { Title: `Audit trail report: ${tenant}`, Creator: 'linekeeper' } });
  const out = createWriteStream(file);
  const done = new Promise<void>((resolve, reject) => {
    out.on('finish', resolve);
    out.on('error', reject);
  });
  doc.pipe(out);
  const generated = new Date(opts.now).toISOString();
  const utc = (iso: string): string => printedTime(iso, opts.timezone);
  doc.font('Helvetica-Bold').fontSize(16).text(pdfText(`Audit trail report: tenant ${tenant}`));
  doc.font('Helvetica').fontSize(9).moveDown(0.3);
  if (opts.siteName) doc.text(pdfText(`Site: ${opts.siteName}`));
  doc.text(`Generated: ${utc(generated)}`);
  if (!isUtcZone(opts.timezone)) doc.text(pdfText(`Times are UTC as recorded; the site's time (${opts.timezone}) is shown in brackets.`));
  doc.text(pdfText(`Filter: ${Object.keys(f).length ? canonicalJson(f) : 'none (all entries)'}`));
  const status = verifyError !== undefined ? `NOT VERIFIED (${verifyError})`
    : chain?.ok ? `intact: ${chain.count} entries, head #${chain.head.seq} ${chain.head.hash}`
    : `DAMAGED: ${chain?.damage?.kind} at seq ${chain?.damage?.seq ?? '-'}: ${chain?.damage?.detail}`;
  doc.font('Helvetica-Bold').text(pdfText(`Chain verification: ${status}`));
  doc.font('Helvetica').moveDown(0.8);

  let n = 0;
  for (const e of iterateAudit(src.db, tenant, f)) {
    n++;
    if (doc.y > doc.page.height - 150) doc.addPage();
    doc.font('Helvetica-Bold').fontSize(10).text(pdfText(`#${e.seq}   ${utc(e.ts)}   ${e.kind}   ${e.action}`));
    doc.font('Helvetica').fontSize(9);
    const subj = Object.entries(e.subject).map(([k, v]) => `${k} ${v}`).join(', ');
    doc.text(pdfText(`Actor: ${e.actor}${subj ? `    Subject: ${subj}` : ''}`));
    if (e.old !== undefined || e.new !== undefined) doc.text(pdfText(`Value: ${show(e.old)} -> ${show(e.new)}`));
    doc.text(pdfText(`Reason: ${e.reason ?? '-'}`));
    const s = e.signature;
    doc.text(pdfText(s ? `Signature: ${s.name} (${s.user}), ${utc(s.time)}, meaning: ${s.meaning}` : 'Signature: none (not a signed record)'));
    if (e.args !== undefined) doc.text(pdfText(`Arguments: ${show(e.args)}`));
    if (e.result !== undefined) doc.text(pdfText(`Result: ${show(e.result)}`));
    if (e.intent !== undefined) doc.text(`Outcome of intent #${e.intent}`);
    doc.text(pdfText(`Changed since original entry: ${changed(e)}`));
    doc.moveDown(0.6);
  }
  if (n === 0) doc.text('No entries match the filter.');

  const range = doc.bufferedPageRange();
  for (let i = range.start; i < range.start + range.count; i++) {
    doc.switchToPage(i);
    const bottom = doc.page.margins.bottom;
    doc.page.margins.bottom = 0; // writing in the margin must not start a new page
    doc.fontSize(8).text(pdfText(`linekeeper audit report, tenant ${tenant}, generated ${utc(generated)}, page ${i + 1} of ${range.count}`), 50, doc.page.height - 35, { lineBreak: false });
    doc.page.margins.bottom = bottom;
  }
  doc.end();
  await done;
  return { entries: n, pages: range.count };
}
