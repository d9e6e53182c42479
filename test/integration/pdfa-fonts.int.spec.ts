/**
 * The PDF/A primitives' fonts (src/audit/pdfa.ts), read back by an independent reader, poppler's `pdftotext -bbox`
 * (.ci/run installs poppler-utils): a value printed to be read exactly — a hash, a signature — is in the fixed-width
 * font wherever it falls, at the top of a new page after a table as anywhere else. Found while making the rendering
 * faster: a release report printed a signature that began a page in the proportional font, since pdfkit's table cells
 * put the previous font back by its source and the embedded fonts were not cached under their registered names.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { finishPdf, MARGIN, openPdfA, PdfReport } from '../../src/audit/pdfa.js';

/** DejaVu Sans Mono's advance width (1233 of 2048 units to the em): every character of a value is this wide. */
const MONO_EM = 1233 / 2048;
const VALUE = 'ubQvMbIhHTb6LG8WA/BM4xtRmtbaPz3pW84rkCC7ZggAsurmfQ+32asnYWE6g9YLox';
const dir = mkdtempSync(join(tmpdir(), 'lk-pdfa-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

interface Word { page: number; width: number; text: string }
function words(pdf: Buffer, name: string): Word[] {
  const file = join(dir, `${name}.pdf`);
  writeFileSync(file, pdf);
  const r = spawnSync('pdftotext', ['-bbox', file, '-'], { encoding: 'utf8' });
  expect(r.status, r.stderr).toBe(0);
  const out: Word[] = [];
  let page = 0;
  for (const line of r.stdout.split('\n')) {
    if (line.includes('<page ')) page++;
    const m = /<word xMin="([\d.]+)" yMin="[\d.]+" xMax="([\d.]+)" yMax="[\d.]+">([^<]*)<\/word>/.exec(line);
    if (m) out.push({ page, width: Number(m[2]) - Number(m[1]), text: m[3]! });
  }
  return out;
}

describe('the PDF/A report primitives', () => {
  it('[A11.8] print a value to be read exactly in the fixed-width font, also when it begins a page after a table', () => {
    let broke = 0;
    // the label on one page and the value on the next for some of these fillings, both on one page for others
    for (let extra = 0; extra < 24; extra += 3) {
      const doc = openPdfA({ title: 'fonts', createdAt: new Date(Date.UTC(2026, 10, 29)) });
      const r = new PdfReport(doc);
      r.table(['step', 'status', 'hash'], [60, 80, '*'], [['01', 'SUCCEEDED', { text: 'a1b2', mono: true }], ['02', { text: 'FAILED', bold: true }, 'c3d4']]);
      while (doc.y < doc.page.height - MARGIN - 24 - extra) r.line('filler line');
      r.exact('Signature', VALUE);
      const ws = words(finishPdf(doc), `fill-${extra}`);
      const label = ws.find((w) => w.text === 'Signature:')!;
      const value = ws.find((w) => w.text === VALUE);
      expect(value, `the value is one word of the text (filling ${extra})`).toBeDefined();
      if (value!.page !== label.page) broke++;
      expect(value!.width, `page ${value!.page} of the label's ${label.page}, filling ${extra}`).toBeCloseTo(VALUE.length * 8 * MONO_EM, 0);
    }
    expect(broke).toBeGreaterThan(0);
  });
});
