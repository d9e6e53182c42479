/**
 * pdfkit, loaded at the first document rather than at the daemon's start: its module graph (fontkit, the
 * standard-font metrics, the PNG/JPEG codecs) holds about 27 MB of resident memory that a daemon printing no
 * report — most of its life — does not need. Synchronous (the CommonJS build, through `require`), so the
 * renderers stay synchronous.
 */
import { createRequire } from 'node:module';
import type PDFDocumentClass from 'pdfkit';

let ctor: typeof PDFDocumentClass | undefined;

/** pdfkit's `PDFDocument`, loaded once on first use. */
export function pdfDocument(): typeof PDFDocumentClass {
  return (ctor ??= createRequire(import.meta.url)('pdfkit') as typeof PDFDocumentClass);
}
