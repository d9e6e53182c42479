/**
 * `release.pdf`: the human-readable batch release report of a release
 * package (pdfkit, like src/audit/export-pdf.ts).
 *
 * Page 1 is the verdict, so that a reviewer cannot be shown "PASS" for a batch
 * whose specification failed: the batch, product and decision (RELEASED /
 * REJECTED / NOT A RELEASE), every specification as the quality evaluator
 * judged it (FAIL and NOT_EVALUATED rows marked in colour and in words), every
 * exception with who closed it and why, the reconciliation, and every
 * signature's manifestation (21 CFR 11.50: printed name, user id, role,
 * meaning, date and time). A package without a quality section says so in so
 * many words; nothing is an implicit pass. Then, from page 2: the run, its
 * steps, the raw evidence chain (each NIR spectrum's hash and model version,
 * potency, content uniformity, inspection, QC), losing arbitration requests,
 * the anchors that tie the paper to the evidence (audit chain head, signed
 * checkpoint, the bundle's and release.json's SHA-256) and the genealogy.
 *
 * The file is PDF/A-2b for archiving (EU GMP Annex 11 §17): every font is
 * embedded (DejaVu TrueType from the `dejavu-fonts-ttf` package, which also
 * shows "≤ – … µ ± °" that the standard fonts cannot), the XMP metadata
 * declares the conformance and carries title and author, and an sRGB output
 * intent is attached. A character no embedded font has is printed as "?"
 * (PDF/A forbids showing the .notdef glyph); release.json keeps the exact text.
 *
 * Rendering is synchronous and a pure function of its arguments: the
 * document's CreationDate (and the XMP CreateDate) is the run's end, pdfkit
 * derives the file ID from the info dictionary, the XMP packet carries no
 * random document or instance id, and the font subset tags come from the font
 * resource names, so the same record gives the same bytes (with the same
 * pdfkit and font versions).
 */
import { type Cell, finishPdf, MARGIN, openPdfA, PDFA, PdfReport, RED, SANS } from '../audit/pdfa.js';
import { formatNumber, genealogyRows } from './genealogy-text.js';
import { isUtcZone, printedTime } from '../domain/site-time.js';
import { abortStatement, RELEASE_FILES, type ReleaseException, type ReleaseQuality, type ReleaseRecord, type ReleaseSpecResult, type SignatureManifest } from './release-types.js';

export interface ReleasePdfOptions {
  /** Deflate content streams (default true); tests turn it off to read the text back. */
  compress?: boolean;
}

const AMBER = '#8a5a00';
const FAIL_BG = '#fde8e8';
const NE_BG = '#fff4d6';

/** The PDF/A conformance the report declares (ISO 19005-2, level B). */
export const RELEASE_PDFA = PDFA;


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

/** The one-word decision of the title line, from the same signatures as {@link disposition}. */
export function decision(signatures: readonly SignatureManifest[]): 'RELEASED' | 'REJECTED' | 'NOT A RELEASE' {
  if (signatures.some((s) => s.decision === 'reject')) return 'REJECTED';
  if (signatures.some((s) => s.decision === 'approve')) return 'RELEASED';
  return 'NOT A RELEASE';
}

/** n, mean, min–max (or the single value) of a specification's data, with SD / RSD when given. */
export function dataSummary(d: ReleaseSpecResult['data']): string {
  const u = d.unit ? ` ${d.unit}` : '';
  if (d.n === 0) return 'no data';
  const single = d.values?.length === 1 ? d.values[0] : d.n === 1 ? (d.mean ?? d.min ?? d.max) : undefined;
  if (d.n === 1 && single !== undefined) return `value ${formatNumber(single)}${u}`;
  const parts = [`n ${d.n}`];
  if (d.mean !== undefined) parts.push(`mean ${formatNumber(d.mean)}${u}`);
  if (d.min !== undefined && d.max !== undefined) parts.push(`${formatNumber(d.min)}–${formatNumber(d.max)}${u}`);
  else if (d.min !== undefined) parts.push(`min ${formatNumber(d.min)}${u}`);
  else if (d.max !== undefined) parts.push(`max ${formatNumber(d.max)}${u}`);
  if (d.sd !== undefined) parts.push(`SD ${formatNumber(d.sd)}${u}`);
  if (d.rsdPct !== undefined) parts.push(`RSD ${formatNumber(d.rsdPct)} %`);
  return parts.join(', ');
}

/** Status and closure of an exception as one cell: who closed it, when, their comment and the deviation reference. */
function closure(e: ReleaseException): string {
  const c = e.closedBy;
  if (!c) return 'OPEN';
  return `closed by ${c.name} (${c.user}) ${utcIso(c.at)}: "${c.comment}"${c.deviation ? `; deviation ${c.deviation}` : ''}`;
}

/** A table cell: plain text, or marked (bold, coloured, shaded), or `mono` for a value read exactly (a hash). */

/** The drawing helpers of one document, all through its text filter and embedded fonts. */
class Report extends PdfReport {
  signature(s: SignatureManifest, i: number): void {
    const { doc } = this;
    if (doc.y > doc.page.height - 170) doc.addPage();
    this.line(`Signature ${i + 1}: ${s.decision === 'approve' ? 'APPROVE' : 'REJECT'}`, { bold: true, size: 9 });
    this.line(`Printed name: ${s.name}`);
    if (this.show(s.name) !== s.name) this.line('(the printed name has characters this font cannot show; its exact form is in release.json)');
    this.line(`User ID: ${s.user}`);
    this.line(`Role: ${s.role}`);
    this.line(`Meaning: ${s.meaning}`);
    this.line(`Date and time of signing: ${printedTime(s.at, this.tz)}`);
    this.line(`Approval: ${s.approvalId}`);
    this.exact('Signed record (SHA-256)', s.recordHash);
    this.exact(`Signature (Ed25519, key ${s.keyId})`, s.signature);
    doc.moveDown(0.4);
  }
}

/** Page 1: the specification table, the exceptions and the reconciliation, or the plain statement that there are none. */
function verdictSections(r: Report, q: ReleaseQuality | undefined): void {
  if (!q) {
    r.doc.moveDown(0.5);
    r.line('No specification evaluation in this package.', { bold: true, color: RED, size: 11 });
    r.line('The specifications of this batch were not judged in this package and no exception record is attached: nothing here is a pass.', { color: RED });
    return;
  }
  const t = q.specTable;
  const fails = t.results.filter((x) => x.verdict === 'FAIL').length;
  const unjudged = t.results.filter((x) => x.verdict === 'NOT_EVALUATED').length;
  const open = q.exceptions.filter((e) => e.status === 'open');
  r.doc.moveDown(0.3);
  r.line(`Specification verdict: ${t.verdict} (${t.results.length} specifications: ${t.results.length - fails - unjudged} pass, ${fails} fail, ${unjudged} not evaluated)`,
    { bold: true, size: 10, color: t.verdict === 'PASS' ? 'black' : RED });
  r.line(`Exceptions: ${q.exceptions.length}, of which open ${open.length} (critical ${open.filter((e) => e.severity === 'critical').length}, major ${open.filter((e) => e.severity === 'major').length})`,
    { bold: true, size: 10, color: open.length > 0 ? RED : 'black' });

  r.heading(`Specifications (${t.results.length})`);
  r.table(['Specification', 'Limits', 'Data', 'Verdict', 'Reason'], [118, 70, 130, 56, '*'], t.results.map((x) => {
    const mark = x.verdict === 'FAIL' ? { color: RED, bg: FAIL_BG } : x.verdict === 'NOT_EVALUATED' ? { color: AMBER, bg: NE_BG } : undefined;
    const cells: Cell[] = [`${x.title} (${x.source})`, x.limits, dataSummary(x.data), x.verdict === 'NOT_EVALUATED' ? 'NOT EVALUATED' : x.verdict, x.reason];
    return mark ? cells.map((c, i) => ({ text: c as string, bg: mark.bg, ...(i === 3 ? { bold: true, color: mark.color } : {}) })) : cells;
  }));
  r.exact('Specification table (SHA-256)', t.sha256);

  r.heading(`Exceptions (${q.exceptions.length})`);
  r.table(['Kind', 'Severity', 'Step', 'Exception', 'Raised (UTC)', 'Status'], [62, 44, 72, 118, 62, '*'], q.exceptions.map((e) => {
    const openBad = e.status === 'open';
    const cells: Cell[] = [e.kind, e.severity, e.step ?? '-', e.title, utcMs(e.raisedAt).replace(/\.\d{3} UTC$/, ''), closure(e)];
    return openBad ? cells.map((c, i) => ({ text: c as string, bg: FAIL_BG, ...(i === 5 || (i === 1 && e.severity !== 'minor') ? { bold: true, color: RED } : {}) })) : cells;
  }));

  r.heading('Reconciliation');
  const rc = q.reconciliation;
  if (!rc) r.line('No reconciliation in this package.');
  else {
    r.line(`Reconciliation: ${rc.ok ? 'OK' : 'MISMATCH'}`, { bold: true, color: rc.ok ? 'black' : RED });
    r.table(['Quantity', 'Expected', 'Actual', 'Difference', 'OK'], [160, 80, 80, 80, '*'], rc.lines.map((l) => {
      const cells = [l.name, formatNumber(l.expected), formatNumber(l.actual), formatNumber(l.diff), l.ok ? 'OK' : 'MISMATCH'];
      return l.ok ? cells : cells.map((c, i) => ({ text: c, bg: FAIL_BG, ...(i === 4 ? { bold: true, color: RED } : {}) }));
    }));
  }
}

/**
 * Render the release report of `record` (the content of release.json, whose SHA-256 is `jsonSha256`).
 * @throws LkError LK_INTERNAL when pdfkit did not finish the document synchronously (a pdfkit change
 *   that would make a truncated file look complete), or when the fonts package is missing.
 */
export function renderReleasePdf(record: ReleaseRecord, jsonSha256: string, opts: ReleasePdfOptions = {}): Buffer {
  const { input, audit } = record;
  const { run, evidence: ev } = input;
  const rec = input.batchRecord;
  const doc = openPdfA({ title: `Batch release report ${run.batch}`, createdAt: new Date(run.endedAt), ...(opts.compress !== undefined ? { compress: opts.compress } : {}) });
  const r = new Report(doc, input.timezone);
  const dec = input.abort ? 'NOT A RELEASE' : decision(input.signatures);

  // Page 1: the verdict.
  r.line(`Batch release report: batch ${run.batch}`, { bold: true, size: 16 });
  if (input.abort) {
    r.line(`ABORTED — NOT A RELEASE: this batch is not released`, { bold: true, size: 14, color: RED });
    r.line(abortStatement(input), { bold: true, size: 10, color: RED });
    r.line(`Abort signed by ${input.abort.name} (${input.abort.user}, ${input.abort.role}) at ${printedTime(input.abort.at, input.timezone)}; record SHA-256 ${input.abort.recordHash}`, { size: 9 });
    r.line(`Line on its last known-good recipe (read back): ${input.abort.reverted.map((p) => `${p.equipment} ${p.ok ? `ok${p.state ? ` (${p.state})` : ''}` : `NOT VERIFIED (${p.error ?? 'no read-back'})`}`).join(', ') || 'no PLC commanded'}`, { size: 9 });
  }
  r.line(`Product ${run.product}   Decision: ${dec}`, { bold: true, size: 14, color: dec === 'RELEASED' ? 'black' : RED });
  doc.moveDown(0.3);
  r.line(`Product ${run.product}   Tooling ${run.tooling}   Line ${run.line}   Site ${input.site}   Tenant ${input.tenant}`);
  r.line(`Run ${run.id}   Status ${run.status}   Started ${printedTime(new Date(run.startedAt).toISOString(), input.timezone)}   Ended ${printedTime(new Date(run.endedAt).toISOString(), input.timezone)}`);
  if (!isUtcZone(input.timezone)) r.line(`Times are UTC as recorded; the site's time (${input.timezone}) is shown in brackets where it is given.`, { size: 8 });
  r.line(`QA disposition: ${disposition(input.signatures)}`, { bold: true, size: 10 });
  verdictSections(r, input.quality);

  r.heading(`Electronic signatures (21 CFR 11.50) (${input.signatures.length})`);
  if (input.signatures.length === 0) r.line('none: no QA reviewer has signed this batch');
  input.signatures.forEach((s, n) => r.signature(s, n));

  r.heading('Audit-trail review (EU GMP Annex 11 §9)');
  if (!input.trailReview) r.line('not recorded: this package predates audit-trail reviews', { color: RED });
  else {
    r.line(input.trailReview.statement, { bold: !input.trailReview.reviewed, size: 9, color: input.trailReview.reviewed ? 'black' : RED });
    for (const v of input.trailReview.reviews) {
      r.line(`${v.name} (${v.user}, ${v.role}) at ${printedTime(v.at, input.timezone)}: "${v.meaning}"; comment: ${v.comment}; entries #${v.first}–#${v.last} (${v.entries}), digest ${v.digest}; audit entry #${v.seq}; record SHA-256 ${v.recordHash}`, { size: 8 });
    }
  }

  // From page 2: the record behind the verdict.
  doc.addPage();
  r.heading('Run');
  r.line(`Goal: ${run.goal}`);
  if (typeof rec.mes_ref === 'string') r.line(`MES reference: ${rec.mes_ref}`);
  r.exact('Batch record as ingested (SHA-256)', input.batchRecordSha256);

  r.heading(`Steps (${input.steps.length})`);
  r.table(['Seq', 'Step', 'Agent', 'Tool', 'Status', 'Duration', 'Detail'], [20, 96, 86, 106, 56, 42, '*'],
    input.steps.map((s) => [s.seq, s.name, s.agent, s.tool, s.status, s.duration, s.detail]));

  r.heading('Evidence chain (raw evidence)');
  r.line(`NIR spectra (${ev.nir.length}): each spectrum's SHA-256 and the model version that scored it`);
  r.table(['Spectrum', 'Potency %', 'Spectrum SHA-256', 'Model'], [48, 48, 290, '*'],
    ev.nir.map((s) => [String(s.spectrumId), formatNumber(s.potencyPct), { text: s.spectrumSha256, mono: true }, `${s.model.id} v${s.model.version}`]));
  const p = ev.potency;
  const pMin = spec(rec, 'potency', 'min_pct');
  const pMax = spec(rec, 'potency', 'max_pct');
  const pLim = pMin !== undefined && pMax !== undefined ? ` (specification ${formatNumber(pMin)}–${formatNumber(pMax)} %)` : '';
  r.line(`Potency: n ${p.n}, mean ${formatNumber(p.meanPct)} %, SD ${formatNumber(p.sdPct)} %, confidence interval ${formatNumber(p.ciLowPct)}–${formatNumber(p.ciHighPct)} %${pLim}: ${verdict(p.pass)}`);
  const avMax = spec(rec, 'content_uniformity', 'av_max');
  r.line(`Content uniformity (USP <905>): AV ${formatNumber(ev.contentUniformity.av)}${avMax !== undefined ? ` (L1 ${formatNumber(avMax)})` : ''}: ${verdict(ev.contentUniformity.pass)}`);
  const i = ev.inspection;
  const dMax = spec(rec, 'defect_rate_max_pct');
  r.line(`Inspection: ${i.inspected} inspected, ${i.rejected} rejected, defect rate ${formatNumber(i.defectRatePct)} %${dMax !== undefined ? ` (max ${formatNumber(dMax)} %)` : ''}: ${verdict(i.pass)}`);
  doc.moveDown(0.3);
  r.line(`QC results from LIMS (${ev.qc.length})`);
  r.table(['Test', 'Result', 'Status', 'LIMS reference'], [150, 110, 80, '*'],
    ev.qc.map((q) => [q.test, `${typeof q.result === 'number' ? formatNumber(q.result) : q.result}${q.unit ? ` ${q.unit}` : ''}`, q.status, q.lims_ref]));

  r.heading(`Losing arbitration requests (${input.losingRequests.length})`);
  r.table(['Time (UTC)', 'Agent', 'Setpoint', 'Score', 'Reason'], [92, 88, 100, 40, '*'],
    input.losingRequests.map((l) => [utcMs(l.at).replace(' UTC', ''), l.agent, l.setpoint, formatNumber(l.score), l.reason]));

  r.heading('Audit trail anchor');
  r.line(`Tenant chain ${input.tenant}: head #${audit.head.seq}`);
  r.exact('Head hash', audit.head.hash);
  const cp = audit.checkpoint;
  r.line(`Signed checkpoint: seq ${cp.seq}, ${utcIso(cp.ts)}`);
  r.exact('Site key id', cp.key_id);
  r.exact('Checkpoint signature (Ed25519)', cp.sig);
  r.exact(`Audit bundle ${audit.bundle.file} (${audit.bundle.entries} entries), SHA-256`, audit.bundle.sha256);
  r.exact(`${RELEASE_FILES.json} SHA-256`, jsonSha256);
  r.line(`Verify offline with the site public key: node verify-audit-bundle.mjs ${audit.bundle.file} --key site-public-key.pem`);

  const rows = genealogyRows(input.genealogy, input.losingRequests);
  r.heading(`Appendix: genealogy (${rows.length} entries, times UTC)`);
  r.table(['Time', 'Kind', 'Step', 'Agent / tag', 'Summary'], [82, 80, 56, 110, '*'],
    rows.map((g) => [`${g.date} ${g.time}`, g.losing ? 'arbitration (LOSING)' : g.kind, g.step, g.who, g.summary]));

  const range = doc.bufferedPageRange();
  for (let n = range.start; n < range.start + range.count; n++) {
    doc.switchToPage(n);
    const bottom = doc.page.margins.bottom;
    doc.page.margins.bottom = 0; // writing in the margin must not start a new page
    doc.font(SANS).fontSize(7).fillColor('black').text(
      r.show(`Batch ${run.batch}, run ${run.id}, ${dec}, release.json SHA-256 ${jsonSha256.slice(0, 16)}…, page ${n + 1} of ${range.count}`),
      MARGIN, doc.page.height - 35, { lineBreak: false },
    );
    doc.page.margins.bottom = bottom;
  }
  return finishPdf(doc, 'release report');
}
