/**
 * `release.pdf`: the human-readable batch release report of a release
 * package (pdfkit, like src/audit/export-pdf.ts). It shows what QA signs on:
 * the run, its steps, the evidence chain (each NIR spectrum's hash and model
 * version, potency and content-uniformity verdicts, inspection, QC), losing
 * arbitration requests, every signature's manifestation (21 CFR 11.50:
 * printed name, date and time, meaning, and the user id), and the anchors
 * that tie the paper to the evidence: the audit chain head, its signed
 * checkpoint, the bundle's and release.json's SHA-256.
 *
 * Rendering is synchronous and a pure function of its arguments: the
 * document's CreationDate is the run's end, pdfkit derives the file ID from
 * the info dictionary, and the standard fonts carry no random subset tags, so
 * the same record gives the same bytes (with the same pdfkit version).
 */
import PDFDocument from 'pdfkit';
import { LkError } from '../errors.js';
import { formatNumber, genealogyRows } from './genealogy-text.js';
import { RELEASE_FILES, type ReleaseRecord, type SignatureManifest } from './release-types.js';

export interface ReleasePdfOptions {
  /** Deflate content streams (default true); tests turn it off to read the text back. */
  compress?: boolean;
}

type Doc = PDFKit.PDFDocument;

const MARGIN = 50;
const MONO = 'Courier';

/** pdfkit's standard fonts speak WinAnsi: keep Latin-1 on one line, replace the rest visibly. */
function pdfText(s: string): string {
  return s.replace(/→/g, '->').replace(/[\t\n\r]/g, ' ').replace(/[^\x20-\x7e\xa0-\xff]/g, '?');
}

const utcIso = (iso: string): string => `${iso.replace('T', ' ').replace('Z', '')} UTC`;
const utcMs = (ms: number): string => utcIso(new Date(ms).toISOString());
const verdict = (pass: boolean): string => (pass ? 'PASS' : 'FAIL');

/** A number of the batch record's specifications, when the record has it. */
function spec(rec: Record<string, unknown>, ...path: string[]): number | undefined {
  let v: unknown = rec.specifications;
  for (const k of path) v = typeof v === 'object' && v !== null ? (v as Record<string, unknown>)[k] : undefined;
  return typeof v === 'number' ? v : undefined;
}

/** QA's decision as the signatures state it; a rejection anywhere wins over approvals. */
export function disposition(signatures: readonly SignatureManifest[]): string {
  const names = (d: 'approve' | 'reject'): string => signatures.filter((s) => s.decision === d).map((s) => `${s.name} (${s.user})`).join(', ');
  if (signatures.some((s) => s.decision === 'reject')) return `REJECTED by ${names('reject')}: the batch is not released`;
  if (signatures.some((s) => s.decision === 'approve')) return `APPROVED FOR RELEASE by ${names('approve')}`;
  return 'NO QA DECISION: the batch is not released';
}

function heading(doc: Doc, s: string): void {
  if (doc.y > doc.page.height - 140) doc.addPage();
  doc.moveDown(0.6).font('Helvetica-Bold').fontSize(11).text(pdfText(s), MARGIN);
  doc.font('Helvetica').fontSize(8.5).moveDown(0.2);
}

function line(doc: Doc, s: string): void {
  doc.font('Helvetica').fontSize(8.5).text(pdfText(s), MARGIN);
}

/** A label and a value that must be read exactly (hashes, signatures): the value in a fixed-width font. */
function exact(doc: Doc, label: string, value: string): void {
  doc.font('Helvetica').fontSize(8.5).text(pdfText(`${label}:`), MARGIN);
  doc.font(MONO).fontSize(8).text(pdfText(value), MARGIN + 12);
  doc.font('Helvetica').fontSize(8.5);
}

function table(doc: Doc, header: readonly string[], widths: readonly (number | '*')[], rows: readonly (readonly string[])[]): void {
  if (rows.length === 0) {
    line(doc, 'none');
    return;
  }
  doc.font('Helvetica').fontSize(7.5);
  doc.table({
    columnStyles: widths.map((w) => ({ width: w })),
    defaultStyle: { border: 0.5, borderColor: '#999999', padding: 2 },
    data: [
      header.map((h) => ({ text: pdfText(h), font: { src: 'Helvetica-Bold' }, backgroundColor: '#eeeeee', type: 'TH' as const })),
      ...rows.map((r) => r.map((c) => pdfText(c))),
    ],
  });
  doc.x = MARGIN;
  doc.font('Helvetica').fontSize(8.5).moveDown(0.3);
}

function signatureBlock(doc: Doc, s: SignatureManifest, i: number): void {
  if (doc.y > doc.page.height - 170) doc.addPage();
  doc.font('Helvetica-Bold').fontSize(9).text(pdfText(`Signature ${i + 1}: ${s.decision === 'approve' ? 'APPROVE' : 'REJECT'}`), MARGIN);
  doc.font('Helvetica').fontSize(8.5);
  line(doc, `Printed name: ${s.name}`);
  if (pdfText(s.name) !== s.name) line(doc, '(the printed name has characters this font cannot show; its exact form is in release.json)');
  line(doc, `User ID: ${s.user}`);
  line(doc, `Role: ${s.role}`);
  line(doc, `Meaning: ${s.meaning}`);
  line(doc, `Date and time of signing: ${utcIso(s.at)}`);
  line(doc, `Approval: ${s.approvalId}`);
  exact(doc, 'Signed record (SHA-256)', s.recordHash);
  exact(doc, `Signature (Ed25519, key ${s.keyId})`, s.signature);
  doc.moveDown(0.4);
}

/**
 * Render the release report of `record` (the content of release.json, whose SHA-256 is `jsonSha256`).
 * @throws LkError LK_INTERNAL when pdfkit did not finish the document synchronously (a pdfkit change
 *   that would make a truncated file look complete).
 */
export function renderReleasePdf(record: ReleaseRecord, jsonSha256: string, opts: ReleasePdfOptions = {}): Buffer {
  const { input, audit } = record;
  const { run, evidence: ev } = input;
  const rec = input.batchRecord;
  const doc = new PDFDocument({
    size: 'A4', margin: MARGIN, bufferPages: true, compress: opts.compress ?? true,
    info: { Title: `Batch release report ${run.batch}`, Author: 'linekeeper', Creator: 'linekeeper', Producer: 'linekeeper (pdfkit)', CreationDate: new Date(run.endedAt) },
  });

  doc.font('Helvetica-Bold').fontSize(16).text(pdfText(`Batch release report: batch ${run.batch}`));
  doc.font('Helvetica').fontSize(9).moveDown(0.3);
  line(doc, `Product ${run.product}   Tooling ${run.tooling}   Line ${run.line}   Site ${input.site}   Tenant ${input.tenant}`);
  line(doc, `Run ${run.id}   Status ${run.status}   Started ${utcMs(run.startedAt)}   Ended ${utcMs(run.endedAt)}`);
  line(doc, `Goal: ${run.goal}`);
  if (typeof rec.mes_ref === 'string') line(doc, `MES reference: ${rec.mes_ref}`);
  exact(doc, 'Batch record as ingested (SHA-256)', input.batchRecordSha256);
  doc.moveDown(0.3).font('Helvetica-Bold').fontSize(10).text(pdfText(`QA disposition: ${disposition(input.signatures)}`), MARGIN);

  heading(doc, `Steps (${input.steps.length})`);
  table(doc, ['Seq', 'Step', 'Agent', 'Tool', 'Status', 'Duration', 'Detail'], [20, 96, 86, 106, 56, 42, '*'],
    input.steps.map((s) => [s.seq, s.name, s.agent, s.tool, s.status, s.duration, s.detail]));

  heading(doc, 'Evidence chain');
  line(doc, `NIR spectra (${ev.nir.length}): each spectrum's SHA-256 and the model version that scored it`);
  table(doc, ['Spectrum', 'Potency %', 'Spectrum SHA-256', 'Model'], [48, 48, 290, '*'],
    ev.nir.map((s) => [String(s.spectrumId), formatNumber(s.potencyPct), s.spectrumSha256, `${s.model.id} v${s.model.version}`]));
  const p = ev.potency;
  const pMin = spec(rec, 'potency', 'min_pct');
  const pMax = spec(rec, 'potency', 'max_pct');
  const pLim = pMin !== undefined && pMax !== undefined ? ` (specification ${formatNumber(pMin)}-${formatNumber(pMax)} %)` : '';
  line(doc, `Potency: n ${p.n}, mean ${formatNumber(p.meanPct)} %, SD ${formatNumber(p.sdPct)} %, confidence interval ${formatNumber(p.ciLowPct)}-${formatNumber(p.ciHighPct)} %${pLim}: ${verdict(p.pass)}`);
  const avMax = spec(rec, 'content_uniformity', 'av_max');
  line(doc, `Content uniformity (USP <905>): AV ${formatNumber(ev.contentUniformity.av)}${avMax !== undefined ? ` (L1 ${formatNumber(avMax)})` : ''}: ${verdict(ev.contentUniformity.pass)}`);
  const i = ev.inspection;
  const dMax = spec(rec, 'defect_rate_max_pct');
  line(doc, `Inspection: ${i.inspected} inspected, ${i.rejected} rejected, defect rate ${formatNumber(i.defectRatePct)} %${dMax !== undefined ? ` (max ${formatNumber(dMax)} %)` : ''}: ${verdict(i.pass)}`);
  doc.moveDown(0.3);
  line(doc, `QC results from LIMS (${ev.qc.length})`);
  table(doc, ['Test', 'Result', 'Status', 'LIMS reference'], [150, 110, 80, '*'],
    ev.qc.map((q) => [q.test, `${typeof q.result === 'number' ? formatNumber(q.result) : q.result}${q.unit ? ` ${q.unit}` : ''}`, q.status, q.lims_ref]));

  heading(doc, `Losing arbitration requests (${input.losingRequests.length})`);
  table(doc, ['Time (UTC)', 'Agent', 'Setpoint', 'Score', 'Reason'], [92, 88, 100, 40, '*'],
    input.losingRequests.map((l) => [utcMs(l.at).replace(' UTC', ''), l.agent, l.setpoint, formatNumber(l.score), l.reason]));

  heading(doc, `Electronic signatures (21 CFR 11.50) (${input.signatures.length})`);
  if (input.signatures.length === 0) line(doc, 'none: no QA reviewer has signed this batch');
  input.signatures.forEach((s, n) => signatureBlock(doc, s, n));

  heading(doc, 'Audit trail anchor');
  line(doc, `Tenant chain ${input.tenant}: head #${audit.head.seq}`);
  exact(doc, 'Head hash', audit.head.hash);
  const cp = audit.checkpoint;
  line(doc, `Signed checkpoint: seq ${cp.seq}, ${utcIso(cp.ts)}`);
  exact(doc, 'Site key id', cp.key_id);
  exact(doc, 'Checkpoint signature (Ed25519)', cp.sig);
  exact(doc, `Audit bundle ${audit.bundle.file} (${audit.bundle.entries} entries), SHA-256`, audit.bundle.sha256);
  exact(doc, `${RELEASE_FILES.json} SHA-256`, jsonSha256);
  line(doc, `Verify offline with the site public key: node verify-audit-bundle.mjs ${audit.bundle.file} --key site-public-key.pem`);

  const rows = genealogyRows(input.genealogy, input.losingRequests);
  heading(doc, `Appendix: genealogy (${rows.length} entries, times UTC)`);
  table(doc, ['Time', 'Kind', 'Step', 'Agent / tag', 'Summary'], [82, 80, 56, 110, '*'],
    rows.map((r) => [`${r.date} ${r.time}`, r.losing ? 'arbitration (LOSING)' : r.kind, r.step, r.who, r.summary]));

  const range = doc.bufferedPageRange();
  for (let n = range.start; n < range.start + range.count; n++) {
    doc.switchToPage(n);
    const bottom = doc.page.margins.bottom;
    doc.page.margins.bottom = 0; // writing in the margin must not start a new page
    doc.font('Helvetica').fontSize(7).text(
      pdfText(`Batch ${run.batch}, run ${run.id}, release.json SHA-256 ${jsonSha256.slice(0, 16)}..., page ${n + 1} of ${range.count}`),
      MARGIN, doc.page.height - 35, { lineBreak: false },
    );
    doc.page.margins.bottom = bottom;
  }
  return finish(doc);
}

/**
 * End the document and take its bytes. pdfkit writes every object synchronously (deflateSync), so
 * after `end()` the whole file sits in the stream's buffer; the %%EOF check makes sure of it.
 */
function finish(doc: Doc): Buffer {
  doc.end();
  const chunks: Buffer[] = [];
  for (let c = doc.read() as Buffer | null; c !== null; c = doc.read() as Buffer | null) chunks.push(c);
  const pdf = Buffer.concat(chunks);
  if (!pdf.subarray(-7).toString('latin1').includes('%%EOF')) throw new LkError('LK_INTERNAL', 'pdfkit did not finish the release report synchronously');
  return pdf;
}
