/**
 * Tokenizer of free-text run requests (see `run-request.ts` for the grammar).
 *
 * The text is cut into chunks of letters, digits, `.`, `_` and hyphens; a
 * chunk that reads as a number (`2`, `1.5`, `90-140`, `0.14kN`, `-2`) is split
 * into its pieces so `hardness 90-140N` and `hardness 90 - 140 N` give the same
 * tokens, every other chunk stays one word (`B-1042`, `line-3`). Every token
 * keeps its chunk number and its offset in the original text: a batch id after
 * the word `batch` is read back from the raw chunk, and errors point at the
 * operator's own characters. Pure: no I/O, no clock.
 */
import { LkError } from '../errors.js';

export type TokenKind = 'word' | 'num' | 'sym' | 'sep';

export interface Token {
  readonly kind: TokenKind;
  /** The text as written (symbols normalised: `+/-` → `±`, `–` → `-`, `≤`/`<=` kept apart). */
  readonly text: string;
  /** Lower-case `text`, what phrases are matched against. */
  readonly lower: string;
  /** UTF-16 offset of the first character in the original text. */
  readonly at: number;
  /** Offset just past the last character. */
  readonly end: number;
  /** Index of the whitespace/punctuation-delimited chunk the token came from. */
  readonly chunk: number;
}

/** Letters, digits, `.`, `_`, hyphen, and the dashes operators paste from documents (‐ ‑ ‒ – −). */
const CHUNK_CHAR = /[\p{L}\p{N}_.\-\u2010-\u2013\u2212]/u;
const DASH = '[-\\u2010-\\u2013\\u2212]';
const NUM = '(\\d+(?:\\.\\d+)?|\\.\\d+)';
/** sign? number (dash number)? unit? — e.g. `-2`, `1.5`, `90-140`, `0.09–0.14kN`, `305mg`. */
const NUMERIC_CHUNK = new RegExp(`^(${DASH})?${NUM}(?:(${DASH})${NUM})?([A-Za-z]+)?$`, 'd');

/** Two-character symbols first, so `<=` is not read as `<` then `=`. */
const SYMBOLS: readonly (readonly [string, string])[] = [
  ['+/-', '±'],
  ['+/\u2212', '±'],
  ['+-', '±'],
  ['<=', '≤'],
  ['=<', '≤'],
  ['>=', '≥'],
  ['=>', '≥'],
  ['\u2266', '≤'],
  ['\u2267', '≥'],
  ['≤', '≤'],
  ['≥', '≥'],
  ['<', '<'],
  ['>', '>'],
  ['±', '±'],
  ['%', '%'],
  [':', ':'],
  ['#', '#'],
];

/** Clause separators; `&` reads as the word "and", an em dash as a comma. */
const SEPARATORS: Readonly<Record<string, string>> = { ',': ',', ';': ';', '!': '!', '&': 'and', '\u2014': ',' };

function invalid(message: string, unrecognised: string, at: number): LkError {
  return new LkError('LK_RUN_REQUEST_INVALID', message, { unrecognised, at });
}

/**
 * Tokens of `text`.
 * @throws LkError `LK_RUN_REQUEST_INVALID` on a character no clause uses (quotes, brackets, `=` …)
 *   or a decimal comma (`1,5`): read as two numbers it would change a limit, so it is refused.
 */
export function tokenize(text: string): Token[] {
  const out: Token[] = [];
  let chunk = 0;
  let i = 0;
  const push = (kind: TokenKind, t: string, at: number, end: number): void => {
    out.push({ kind, text: t, lower: t.toLowerCase(), at, end, chunk });
  };
  while (i < text.length) {
    const c = text[i]!;
    if (/\s/u.test(c)) {
      i++;
      continue;
    }
    if (CHUNK_CHAR.test(c)) {
      let j = i;
      while (j < text.length && CHUNK_CHAR.test(text[j]!)) j++;
      let k = j;
      while (k > i && text[k - 1] === '.') k--; // a sentence's full stop is not part of `line-3.`
      if (k > i) pushChunk(text.slice(i, k), i, push);
      chunk++;
      for (let d = k; d < j; d++) {
        push('sep', '.', d, d + 1);
        chunk++;
      }
      i = j;
      continue;
    }
    if (c === ',' && /\d/.test(text[i - 1] ?? '') && /\d/.test(text[i + 1] ?? '')) {
      const m = /[\d.]*$/.exec(text.slice(0, i))![0] + ',' + /^[\d.]*/.exec(text.slice(i + 1))![0];
      throw invalid(`"${m}" at ${i - m.indexOf(',')}: write decimals with a point (1.5, not 1,5)`, m, i - m.indexOf(','));
    }
    const sep = SEPARATORS[c];
    if (sep !== undefined) {
      push(sep === 'and' ? 'word' : 'sep', sep, i, i + 1);
      chunk++;
      i++;
      continue;
    }
    const sym = SYMBOLS.find(([s]) => text.startsWith(s, i));
    if (sym) {
      push('sym', sym[1], i, i + sym[0].length);
      chunk++;
      i += sym[0].length;
      continue;
    }
    const ch = String.fromCodePoint(text.codePointAt(i)!);
    throw invalid(`cannot read the character "${ch}" at ${i}`, ch, i);
  }
  return out;
}

function pushChunk(raw: string, at: number, push: (kind: TokenKind, t: string, at: number, end: number) => void): void {
  if (/^[-\u2010-\u2013\u2212]$/.test(raw)) {
    push('sym', '-', at, at + 1);
    return;
  }
  const m = NUMERIC_CHUNK.exec(raw);
  if (!m?.indices) {
    push('word', raw, at, at + raw.length);
    return;
  }
  // groups: 1 sign, 2 number, 3 range dash, 4 second number, 5 unit
  for (let g = 1; g <= 5; g++) {
    const span = m.indices[g];
    if (!span) continue;
    const kind: TokenKind = g === 2 || g === 4 ? 'num' : g === 5 ? 'word' : 'sym';
    push(kind, kind === 'sym' ? '-' : m[g]!, at + span[0], at + span[1]);
  }
}
