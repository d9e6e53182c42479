/**
 * A worker module for bench/worker-memory.bench.ts: what printing a PDF/A report costs a fresh thread — pdfkit
 * and its fonts loaded (as at the first report) and one document rendered through the report primitives the release
 * report uses (src/audit/pdfa.ts): sixty headings, each with eight lines and a fixed-width hash. A stand-in of about
 * a batch report's length, not the release report itself (its tables are not drawn here). Compiled modules (dist/),
 * as the daemon's release worker loads them.
 */
import { openPdfA, PdfReport } from '../dist/src/audit/pdfa.js';

const doc = openPdfA({ title: 'Release report B-1042 (memory probe)', createdAt: new Date(Date.UTC(2026, 10, 20, 8)) });
const report = new PdfReport(doc);
const bytes = [];
doc.on('data', (c) => bytes.push(c));
const ended = new Promise((resolve) => doc.on('end', resolve));
for (let i = 0; i < 60; i++) {
  report.heading(`${String(i + 1).padStart(2, '0')} step — press.MainForce 12.5 kN → 12.0 kN`);
  for (let j = 0; j < 8; j++) report.line(`event ${i}.${j}: hardness 118 N (80–150 N), weight 301.5 mg on a 300 mg target, capping 0.16 % < 1.5 %`);
  report.exact('record SHA-256', 'ab'.repeat(32));
}
doc.end();
await ended;
if (Buffer.concat(bytes).subarray(0, 5).toString() !== '%PDF-') throw new Error('the probe rendered no PDF');
