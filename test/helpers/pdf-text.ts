/**
 * The text a pdfkit PDF shows, page by page, read without any outside tool. With an embedded
 * TrueType font pdfkit writes text as hex glyph ids (Identity-H) and maps them back to Unicode in
 * each font's ToUnicode CMap; this decodes every TJ operator of every page's content stream through
 * the CMap of the font selected by the last Tf. Streams may be deflated or not. Only the subset of
 * PDF that pdfkit writes is understood (direct objects, flat page tree, one content stream a page).
 */
import { inflateSync } from 'node:zlib';

interface PdfObject { dict: string; stream?: Buffer }

/** Every `n 0 obj … endobj` of the file, with its stream inflated when it is FlateDecode. */
export function pdfObjects(pdf: Buffer): Map<number, PdfObject> {
  const raw = pdf.toString('latin1');
  const out = new Map<number, PdfObject>();
  for (const m of raw.matchAll(/(?:^|\n)(\d+) 0 obj\n([\s\S]*?)\nendobj/g)) {
    const body = m[2]!;
    const at = body.indexOf('\nstream\n');
    if (at < 0) {
      out.set(Number(m[1]), { dict: body });
      continue;
    }
    const dict = body.slice(0, at);
    const data = Buffer.from(body.slice(at + 8, body.lastIndexOf('\nendstream')), 'latin1');
    out.set(Number(m[1]), { dict, stream: /\/Filter \/FlateDecode/.test(dict) ? inflateSync(data) : data });
  }
  return out;
}

const ref = (dict: string, key: string): number | undefined => {
  const m = new RegExp(`/${key} (\\d+) 0 R`).exec(dict);
  return m ? Number(m[1]) : undefined;
};

/** glyph code -> Unicode text, from a ToUnicode CMap (bfrange with arrays or offsets, and bfchar). */
export function parseCmap(cmap: string): Map<number, string> {
  const map = new Map<number, string>();
  const uni = (hex: string): string => hex.trim().split(/\s+/).map((h) => String.fromCharCode(...(h.match(/.{4}/g) ?? []).map((u) => parseInt(u, 16)))).join('');
  for (const block of cmap.matchAll(/beginbfrange\n([\s\S]*?)endbfrange/g)) {
    for (const m of block[1]!.matchAll(/<([0-9a-fA-F]+)>\s*<([0-9a-fA-F]+)>\s*(\[[^\]]*\]|<[0-9a-fA-F]+>)/g)) {
      const lo = parseInt(m[1]!, 16);
      const hi = parseInt(m[2]!, 16);
      if (m[3]!.startsWith('[')) [...m[3]!.matchAll(/<([0-9a-fA-F ]+)>/g)].forEach((e, i) => map.set(lo + i, uni(e[1]!)));
      else for (let c = lo, u = parseInt(m[3]!.slice(1, -1), 16); c <= hi; c++, u++) map.set(c, String.fromCharCode(u));
    }
  }
  for (const block of cmap.matchAll(/beginbfchar\n([\s\S]*?)endbfchar/g)) {
    for (const m of block[1]!.matchAll(/<([0-9a-fA-F]+)>\s*<([0-9a-fA-F ]+)>/g)) map.set(parseInt(m[1]!, 16), uni(m[2]!));
  }
  return map;
}

/** The text of each page, in page order: one line per TJ operator. */
export function pdfPages(pdf: Buffer): string[] {
  const objs = pdfObjects(pdf);
  const catalog = [...objs.values()].find((o) => /\/Type \/Catalog/.test(o.dict))!;
  const pages = objs.get(ref(catalog.dict, 'Pages')!)!;
  const kids = [.../\/Kids \[([^\]]*)\]/.exec(pages.dict)![1]!.matchAll(/(\d+) 0 R/g)].map((k) => Number(k[1]));
  const cmaps = new Map<number, Map<number, string>>();
  return kids.map((k) => {
    const page = objs.get(k)!.dict;
    const resources = objs.get(ref(page, 'Resources')!)!.dict;
    const fonts = new Map<string, Map<number, string>>();
    for (const f of /\/Font <<([\s\S]*?)>>/.exec(resources)?.[1]?.matchAll(/\/(\w+) (\d+) 0 R/g) ?? []) {
      const id = Number(f[2]);
      if (!cmaps.has(id)) {
        const tu = ref(objs.get(id)!.dict, 'ToUnicode');
        cmaps.set(id, tu === undefined ? new Map() : parseCmap(objs.get(tu)!.stream!.toString('latin1')));
      }
      fonts.set(f[1]!, cmaps.get(id)!);
    }
    const content = objs.get(ref(page, 'Contents')!)!.stream!.toString('latin1');
    let cmap = new Map<number, string>();
    const lines: string[] = [];
    for (const m of content.matchAll(/\/(\w+) [\d.]+ Tf|\[([^\]]*)\] TJ/g)) {
      if (m[1] !== undefined) cmap = fonts.get(m[1]) ?? new Map();
      else lines.push([...m[2]!.matchAll(/<([0-9a-fA-F]*)>/g)].map((h) => (h[1]!.match(/.{4}/g) ?? []).map((g) => cmap.get(parseInt(g, 16)) ?? '\uFFFD').join('')).join(''));
    }
    return lines.join('\n');
  });
}

/** All pages' text, one line per TJ operator. */
export function pdfText(pdf: Buffer): string {
  return pdfPages(pdf).join('\n');
}

/** The same with every run of white space (and line wraps) as one space, for phrases a table or a long line may wrap. */
export const flat = (s: string): string => s.replace(/\s+/g, ' ');
