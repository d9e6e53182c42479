/**
 * Is a text exactly the RFC 8785 canonical form of the JSON value it holds?
 *
 * `isCanonicalJson(t)` is true exactly when `canonicalize(JSON.parse(t)) === t`
 * (property-tested against that definition), but it reads the text once,
 * left to right, without building a value: the verify fast path asks it of
 * every row's bytes, and parsing and re-serialising each row would cost as
 * much as the rest of verification together.
 *
 * What canonical means here, token by token (RFC 8785 §3.2):
 * - no whitespace outside strings;
 * - strings as ECMAScript JSON.stringify writes them: `\"`, `\\`, `\b \f \n \r \t`,
 *   `\u00xx` in lower-case hex for the other control characters, every other character as
 *   itself (so `\/`, `\u0041`, `\u001F` and an escaped surrogate pair are not canonical); a
 *   lone surrogate, escaped or not, is not canonical at all (the canonicaliser refuses it, and
 *   append never stores one);
 * - numbers as ECMAScript Number::toString writes them (`String(Number(t)) === t`: so
 *   `1.0`, `1e2`, `-0`, `1E2` and `5e324`, which overflows to Infinity, are not);
 * - object members sorted by their keys' UTF-16 code units, no key twice.
 * The rare cases (a string holding a surrogate, a key with an escape) are decided by
 * the definition itself on that one string.
 */

import canonicalize from 'canonicalize';

const QUOTE = 0x22;
const BACKSLASH = 0x5c;

/** Escapes JSON.stringify writes as two characters: `"` `\` b f n r t. */
const SHORT_ESCAPE = new Set([QUOTE, BACKSLASH, 0x62, 0x66, 0x6e, 0x72, 0x74]);
/** Control characters that have a short escape, so `\u00xx` is not canonical for them. */
const HAS_SHORT = new Set([0x08, 0x09, 0x0a, 0x0c, 0x0d]);
const LOWER_HEX = /^[0-9a-f]{4}$/;
const NUMBER = /-?[0-9][0-9.eE+-]*/y;
const MAX_DEPTH = 64;

class Scan {
  i = 0;
  constructor(readonly s: string) {}

  /** A canonical string starting at `i` (at its opening quote); returns whether it contained an escape, or -1 when not canonical. */
  string(): number {
    const s = this.s;
    const start = this.i;
    let escaped = 0;
    let i = start + 1;
    for (;;) {
      if (i >= s.length) return -1;
      const c = s.charCodeAt(i);
      if (c === QUOTE) break;
      if (c < 0x20) return -1;
      if (c >= 0xd800 && c <= 0xdfff) return this.byDefinition(start);
      if (c === BACKSLASH) {
        const e = s.charCodeAt(i + 1);
        escaped = 1;
        if (SHORT_ESCAPE.has(e)) {
          i += 2;
          continue;
        }
        if (e !== 0x75) return -1; // \u
        const hex = s.slice(i + 2, i + 6);
        if (!LOWER_HEX.test(hex)) return -1;
        const code = parseInt(hex, 16);
        if (code >= 0xd800 && code <= 0xdfff) return this.byDefinition(start);
        if (code >= 0x20 || HAS_SHORT.has(code)) return -1;
        i += 6;
        continue;
      }
      i++;
    }
    this.i = i + 1;
    return escaped;
  }

  /** The string at `start` judged by the definition: canonicalize(JSON.parse(text)) === text (a lone surrogate is refused). */
  private byDefinition(start: number): number {
    const s = this.s;
    let i = start + 1;
    while (i < s.length && s.charCodeAt(i) !== QUOTE) i += s.charCodeAt(i) === BACKSLASH ? 2 : 1;
    if (i >= s.length) return -1;
    const text = s.slice(start, i + 1);
    try {
      if (canonicalize(JSON.parse(text)) !== text) return -1;
    } catch {
      return -1;
    }
    this.i = i + 1;
    return 1;
  }

  value(depth: number): boolean {
    if (depth > MAX_DEPTH) return false;
    const s = this.s;
    const c = s.charCodeAt(this.i);
    if (c === QUOTE) return this.string() >= 0;
    if (c === 0x7b) return this.object(depth);
    if (c === 0x5b) return this.array(depth);
    if (c === 0x74) return this.literal('true');
    if (c === 0x66) return this.literal('false');
    if (c === 0x6e) return this.literal('null');
    NUMBER.lastIndex = this.i;
    const m = NUMBER.exec(s);
    if (m === null) return false;
    const t = m[0];
    if (String(Number(t)) !== t) return false;
    this.i += t.length;
    return true;
  }

  private literal(word: string): boolean {
    if (!this.s.startsWith(word, this.i)) return false;
    this.i += word.length;
    return true;
  }

  private array(depth: number): boolean {
    const s = this.s;
    this.i++;
    if (s.charCodeAt(this.i) === 0x5d) {
      this.i++;
      return true;
    }
    for (;;) {
      if (!this.value(depth + 1)) return false;
      const c = s.charCodeAt(this.i++);
      if (c === 0x5d) return true;
      if (c !== 0x2c) return false;
    }
  }

  private object(depth: number): boolean {
    const s = this.s;
    this.i++;
    if (s.charCodeAt(this.i) === 0x7d) {
      this.i++;
      return true;
    }
    let prev: string | undefined;
    for (;;) {
      if (s.charCodeAt(this.i) !== QUOTE) return false;
      const start = this.i;
      const escaped = this.string();
      if (escaped < 0) return false;
      // keys compare by their decoded UTF-16 code units; without an escape the text between the quotes is the key
      const key = escaped ? (JSON.parse(s.slice(start, this.i)) as string) : s.slice(start + 1, this.i - 1);
      if (prev !== undefined && !(prev < key)) return false;
      prev = key;
      if (s.charCodeAt(this.i++) !== 0x3a) return false;
      if (!this.value(depth + 1)) return false;
      const c = s.charCodeAt(this.i++);
      if (c === 0x7d) return true;
      if (c !== 0x2c) return false;
    }
  }
}

/** True exactly when `t` is a string and `canonicalize(JSON.parse(t)) === t`. */
export function isCanonicalJson(t: unknown): t is string {
  if (typeof t !== 'string' || t.length === 0) return false;
  const scan = new Scan(t);
  return scan.value(0) && scan.i === t.length;
}
