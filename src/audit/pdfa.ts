/**
 * The PDF/A-2b documents linekeeper prints (the release report, the validation reports): pdfkit with the DejaVu
 * fonts embedded (PDF/A forbids a font that is not), a text filter that never shows .notdef, and a few layout
 * primitives (heading, line, a value to read exactly, a table). Synchronous: pdfkit writes every object as it goes,
 * so a document's bytes are complete when `finishPdf` returns.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { LkError } from '../errors.js';
import { pdfDocument } from './pdfkit.js';

export type Doc = PDFKit.PDFDocument;

/** The PDF/A conformance the documents declare (ISO 19005-2, level B). */
export const PDFA = 'PDF/A-2b';
export const MARGIN = 50;
export const SANS = 'Sans';
export const BOLD = 'Sans-Bold';
export const MONO = 'Mono';
export const RED = '#b00020';

/** A table cell: text, or text with emphasis. */
export type Cell = string | { text: string; bold?: boolean; mono?: boolean; color?: string; bg?: string };

/** A font as fontkit parsed it: pdfkit takes it in place of a file (anything with `layout`). */
interface FontkitFont { layout(text: string): unknown }

let fontObjects: Record<typeof SANS | typeof BOLD | typeof MONO, FontkitFont> | undefined;

/**
 * The DejaVu TrueType fonts, read from the `dejavu-fonts-ttf` package (resolved like an import, so no path of this
 * machine is written anywhere) and parsed by fontkit once per process (or worker thread). pdfkit is given the parsed
 * fonts, not the files: its table cells put the previous font back by its source, and a file source is parsed again
 * each time, which was most of a report's rendering time.
 * @throws LkError LK_INTERNAL when the package is not installed.
 */
export function fonts(): Record<typeof SANS | typeof BOLD | typeof MONO, FontkitFont> {
  if (fontObjects) return fontObjects;
  let dir: string;
  try {
    dir = join(dirname(createRequire(import.meta.url).resolve('dejavu-fonts-ttf/package.json')), 'ttf');
  } catch (err) {
    throw new LkError('LK_INTERNAL', "linekeeper's PDF reports need the npm package dejavu-fonts-ttf (its fonts are embedded for PDF/A)", {}, { cause: err });
  }
  // loaded with the first document, as pdfkit is (src/audit/pdfkit.ts); the same fontkit pdfkit depends on
  const fontkit = createRequire(import.meta.url)('fontkit') as { create(file: Buffer): FontkitFont };
  fontObjects = {
    [SANS]: fontkit.create(readFileSync(join(dir, 'DejaVuSans.ttf'))),
    [BOLD]: fontkit.create(readFileSync(join(dir, 'DejaVuSans-Bold.ttf'))),
    [MONO]: fontkit.create(readFileSync(join(dir, 'DejaVuSansMono.ttf'))),
  };
  return fontObjects;
}

/** The part of pdfkit's embedded font we read: fontkit's glyph coverage (not in @types/pdfkit). */
interface GlyphCoverage { hasGlyphForCodePoint?: (cp: number) => boolean }

/**
 * The text filter of one document: one line per call (tabs and line breaks become spaces), and a
 * character that one of the embedded fonts lacks (or a control character) becomes "?" so no text
 * operator shows .notdef (PDF/A-2 §6.2.11.8) whichever of the three fonts prints it.
 */
function textFilter(doc: Doc): (s: string) => string {
  const covers: ((cp: number) => boolean)[] = [];
  for (const f of [SANS, BOLD, MONO]) {
    doc.font(f);
    const fk = (doc as unknown as { _font: { font?: GlyphCoverage } })._font.font;
    if (typeof fk?.hasGlyphForCodePoint === 'function') covers.push((cp) => fk.hasGlyphForCodePoint!(cp));
  }
  doc.font(SANS);
  const known = new Map<number, boolean>();
  const ok = (cp: number): boolean => {
    let v = known.get(cp);
    if (v === undefined) {
      v = cp >= 0x20 && !(cp >= 0x7f && cp < 0xa0) && covers.every((c) => c(cp));
      known.set(cp, v);
    }
    return v;
  };
  return (s) => {
    let out = '';
    for (const ch of s.replace(/[\t\n\r]/g, ' ')) out += ok(ch.codePointAt(0)!) ? ch : '?';
    return out;
  };
}

/** XMP (an XML packet pdfkit writes without escaping) and the info dictionary hold the same title: keep it markup-free. */
export const xmlSafe = (s: string): string => s.replace(/[<>&"'\p{Cc}]/gu, '_');


/**
 * A new A4 PDF/A-2b document with the embedded fonts registered and `title` in its metadata.
 * @throws LkError LK_INTERNAL when the fonts package is missing.
 */
export function openPdfA(o: { title: string; createdAt: Date; compress?: boolean }): Doc {
  const f = fonts();
  const doc = new (pdfDocument())({
    size: 'A4', margin: MARGIN, bufferPages: true, compress: o.compress ?? true,
    subset: PDFA, pdfVersion: '1.7', lang: 'en',
    // no initial font: pdfkit would load Helvetica, a standard (non-embedded) font; the embedded one is set below,
    // by its registered name
    font: null as unknown as string,
    info: { Title: xmlSafe(o.title), Author: 'linekeeper', Creator: 'linekeeper', Producer: 'linekeeper (pdfkit)', CreationDate: o.createdAt },
  });
  // Each font registered with its own name as its family, and the first font opened by that name: pdfkit caches a
  // font under the name it was opened by, and a table cell puts the previous font back by its source and family —
  // with the family a name it finds the cached font. Opened otherwise (the initial font given to the constructor,
  // no family), every `font(SANS)` and every cell's put-back made pdfkit wrap the font anew and compare name tables
  // by JSON (a fifth of a report's rendering), and a value that began a page after a table printed in the
  // proportional font (test/integration/pdfa-fonts.int.spec.ts).
  for (const name of [SANS, BOLD, MONO] as const) doc.registerFont(name, f[name] as unknown as string, name);
  doc.font(SANS);
  return doc;
}

/** Layout primitives over one pdfkit document, every text through the document's text filter. */
export class PdfReport {
  readonly show: (s: string) => string;
  constructor(readonly doc: Doc, readonly tz?: string) {
    this.show = textFilter(doc);
  }

  heading(s: string): void {
    const { doc } = this;
    if (doc.y > doc.page.height - 140) doc.addPage();
    doc.moveDown(0.6).font(BOLD).fontSize(11).fillColor('black').text(this.show(s), MARGIN);
    doc.font(SANS).fontSize(8.5).moveDown(0.2);
  }

  line(s: string, o: { bold?: boolean; color?: string; size?: number } = {}): void {
    this.doc.font(o.bold ? BOLD : SANS).fontSize(o.size ?? 8.5).fillColor(o.color ?? 'black').text(this.show(s), MARGIN);
    this.doc.font(SANS).fillColor('black');
  }

  /** A label and a value that must be read exactly (hashes, signatures): the value in a fixed-width font. */
  exact(label: string, value: string): void {
    const { doc } = this;
    doc.font(SANS).fontSize(8.5).text(this.show(`${label}:`), MARGIN);
    doc.font(MONO).fontSize(8).text(this.show(value), MARGIN + 12);
    doc.font(SANS).fontSize(8.5);
  }

  table(header: readonly string[], widths: readonly (number | '*')[], rows: readonly (readonly Cell[])[]): void {
    const { doc } = this;
    if (rows.length === 0) {
      this.line('none');
      return;
    }
    doc.font(SANS).fontSize(7.5).fillColor('black');
    doc.table({
      columnStyles: widths.map((w) => ({ width: w })),
      defaultStyle: { border: 0.5, borderColor: '#999999', padding: 2 },
      data: [
        header.map((h) => ({ text: this.show(h), font: { src: BOLD }, backgroundColor: '#eeeeee', type: 'TH' as const })),
        ...rows.map((r) => r.map((c) => (typeof c === 'string'
          ? this.show(c)
          : { text: this.show(c.text), ...(c.bold ? { font: { src: BOLD } } : c.mono ? { font: { src: MONO, size: 7 } } : {}), ...(c.color ? { textColor: c.color } : {}), ...(c.bg ? { backgroundColor: c.bg } : {}) }))),
      ],
    });
    doc.x = MARGIN;
    doc.font(SANS).fontSize(8.5).fillColor('black').moveDown(0.3);
  }
}

/**
 * End the document and take its bytes. pdfkit writes every object synchronously (deflateSync), so
 * after `end()` the whole file sits in the stream's buffer; the %%EOF check makes sure of it.
 */
export function finishPdf(doc: Doc, what = 'report'): Buffer {
  doc.end();
  const chunks: Buffer[] = [];
  for (let c = doc.read() as Buffer | null; c !== null; c = doc.read() as Buffer | null) chunks.push(c);
  const pdf = Buffer.concat(chunks);
  if (!pdf.subarray(-7).toString('latin1').includes('%%EOF')) throw new LkError('LK_INTERNAL', `pdfkit did not finish the ${what} synchronously`);
  return pdf;
}
