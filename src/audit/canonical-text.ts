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
 * The rare cases (a string holding a surrogate, a key with an escape, a number that
 * is not a plain decimal of at most 15 significant digits) are decided by the
 * definition itself on that one token.
 *
 * Speed: verify asks this of every row, so it allocates nothing on the common path:
 * runs of plain string characters are skipped by one sticky regular expression,
 * keys are compared in place, and a plain decimal of at most 15 significant digits
 * is canonical without formatting it (15 digits round-trip through a double, so no
 * shorter spelling names the same number).
 */

import canonicalize from 'canonicalize';

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const MAX_DEPTH = 64;
/** A run of characters a canonical string holds as themselves: no quote, backslash, control character or surrogate. */
const PLAIN_RUN = /[^"\\\x00-\x1f\ud800-\udfff]*/y;
const LOWER_HEX = /^[0-9a-f]{4}$/;

const isDigit = (c: number): boolean => c >= 0x30 && c <= 0x39;

/**
 * A canonical string at `i` (its opening quote). Returns the index after its closing quote, times two, plus one
 * when it held an escape (keys with an escape are compared decoded); -1 when it is not canonical.
 */
function string(s: string, i: number): number {
  let j = i + 1;
  let escaped = 0;
  for (;;) {
    PLAIN_RUN.lastIndex = j;
    PLAIN_RUN.test(s);
    j = PLAIN_RUN.lastIndex;
    const c = s.charCodeAt(j);
    if (c === QUOTE) return (j + 1) * 2 + escaped;
    if (c !== BACKSLASH) return c >= 0xd800 && c <= 0xdfff ? byDefinition(s, i) : -1; // a control character, the end, or a surrogate
    escaped = 1;
    const e = s.charCodeAt(j + 1);
    if (e === QUOTE || e === BACKSLASH || e === 0x62 || e === 0x66 || e === 0x6e || e === 0x72 || e === 0x74) {
      j += 2;
      continue;
    }
    if (e !== 0x75) return -1; // only \u remains
    const hex = s.slice(j + 2, j + 6);
    if (!LOWER_HEX.test(hex)) return -1;
    const code = parseInt(hex, 16);
    if (code >= 0xd800 && code <= 0xdfff) return byDefinition(s, i);
    // \u00xx only for a control character without a two-character escape (\b \t \n \f \r)
    if (code >= 0x20 || code === 0x08 || code === 0x09 || code === 0x0a || code === 0x0c || code === 0x0d) return -1;
    j += 6;
  }
}

/** The string at `i` judged by the definition: canonicalize(JSON.parse(text)) === text (a lone surrogate is refused). */
function byDefinition(s: string, i: number): number {
  let j = i + 1;
  while (j < s.length && s.charCodeAt(j) !== QUOTE) j += s.charCodeAt(j) === BACKSLASH ? 2 : 1;
  if (j >= s.length) return -1;
  const text = s.slice(i, j + 1);
  try {
    if (canonicalize(JSON.parse(text)) !== text) return -1;
  } catch {
    return -1;
  }
  return (j + 1) * 2 + 1;
}

/**
 * A canonical number at `i`; the index after it, or -1. A plain decimal (no exponent, no leading zero, no
 * trailing zero in its fraction, at most 15 significant digits, not -0, between 1e-6 and 1e21 in magnitude) is
 * what Number::toString writes for its value; anything else is decided by `String(Number(t)) === t`.
 */
function number(s: string, i: number): number {
  let j = i;
  if (s.charCodeAt(j) === 0x2d) j++;
  const intStart = j;
  while (isDigit(s.charCodeAt(j))) j++;
  const intLen = j - intStart;
  if (intLen === 0) return -1;
  let fracLen = 0;
  let fracZeros = 0;
  if (s.charCodeAt(j) === 0x2e) {
    j++;
    const f = j;
    while (isDigit(s.charCodeAt(j))) j++;
    fracLen = j - f;
    if (fracLen === 0) return -1;
    while (fracZeros < fracLen && s.charCodeAt(f + fracZeros) === 0x30) fracZeros++;
  }
  let plain = true;
  const c = s.charCodeAt(j);
  if (c === 0x65 || c === 0x45 || c === 0x2b || c === 0x2d) {
    plain = false; // an exponent (or a stray sign): the definition decides
    while (j < s.length && /[0-9eE+-]/.test(s[j]!)) j++;
  }
  if (plain) {
    const zeroInt = intLen === 1 && s.charCodeAt(intStart) === 0x30;
    const leadingZero = intLen > 1 && s.charCodeAt(intStart) === 0x30;
    const trailingZero = fracLen > 0 && s.charCodeAt(j - 1) === 0x30;
    const significant = zeroInt ? fracLen - fracZeros : intLen + fracLen;
    const negZero = zeroInt && fracLen === 0 && intStart !== i;
    if (!leadingZero && !trailingZero && !negZero && significant <= 15 && intLen <= 15 && !(zeroInt && fracZeros >= 6)) return j;
  }
  const t = s.slice(i, j);
  return String(Number(t)) === t ? j : -1;
}

/** True when key s[a0..a1) < key s[b0..b1) by UTF-16 code units (both without escapes: the text is the key). */
function keyLess(s: string, a0: number, a1: number, b0: number, b1: number): boolean {
  const n = Math.min(a1 - a0, b1 - b0);
  for (let k = 0; k < n; k++) {
    const d = s.charCodeAt(a0 + k) - s.charCodeAt(b0 + k);
    if (d !== 0) return d < 0;
  }
  return a1 - a0 < b1 - b0;
}

/** A canonical value at `i`; the index after it, or -1. */
function value(s: string, i: number, depth: number): number {
  if (depth > MAX_DEPTH) return -1;
  const c = s.charCodeAt(i);
  if (c === QUOTE) {
    const r = string(s, i);
    return r < 0 ? -1 : r >> 1;
  }
  if (c === 0x7b) return object(s, i, depth);
  if (c === 0x5b) return array(s, i, depth);
  if (c === 0x74) return s.startsWith('true', i) ? i + 4 : -1;
  if (c === 0x66) return s.startsWith('false', i) ? i + 5 : -1;
  if (c === 0x6e) return s.startsWith('null', i) ? i + 4 : -1;
  if (c === 0x2d || isDigit(c)) return number(s, i);
  return -1;
}

function array(s: string, i: number, depth: number): number {
  let j = i + 1;
  if (s.charCodeAt(j) === 0x5d) return j + 1;
  for (;;) {
    j = value(s, j, depth + 1);
    if (j < 0) return -1;
    const c = s.charCodeAt(j++);
    if (c === 0x5d) return j;
    if (c !== 0x2c) return -1;
  }
}

function object(s: string, i: number, depth: number): number {
  let j = i + 1;
  if (s.charCodeAt(j) === 0x7d) return j + 1;
  // the previous key: its text range, or its decoded value when it held an escape
  let p0 = -1;
  let p1 = -1;
  let prevDecoded: string | undefined;
  for (;;) {
    if (s.charCodeAt(j) !== QUOTE) return -1;
    const r = string(s, j);
    if (r < 0) return -1;
    const end = r >> 1;
    const escaped = (r & 1) === 1;
    if (escaped || prevDecoded !== undefined) {
      // a key with an escape is compared decoded (rare): both sides as strings
      const key = JSON.parse(s.slice(j, end)) as string;
      const prev = prevDecoded ?? (p0 >= 0 ? s.slice(p0, p1) : undefined);
      if (prev !== undefined && !(prev < key)) return -1;
      prevDecoded = escaped ? key : undefined;
    } else if (p0 >= 0 && !keyLess(s, p0, p1, j + 1, end - 1)) return -1;
    p0 = j + 1;
    p1 = end - 1;
    j = end;
    if (s.charCodeAt(j++) !== 0x3a) return -1;
    j = value(s, j, depth + 1);
    if (j < 0) return -1;
    const c = s.charCodeAt(j++);
    if (c === 0x7d) return j;
    if (c !== 0x2c) return -1;
  }
}

/** True exactly when `t` is a string and `canonicalize(JSON.parse(t)) === t`. */
export function isCanonicalJson(t: unknown): t is string {
  if (typeof t !== 'string' || t.length === 0) return false;
  return value(t, 0, 0) === t.length;
}

/** The chain position a stored entry states in its own hashed bytes. */
export interface EntryPosition {
  readonly tenant: string;
  readonly seq: number;
  readonly prevHash: string;
}

// The members of a hashed entry (docs/audit.md), in canonical (sorted) order, with their type and whether required;
// as parallel arrays of primitives: this table is walked once per entry verified.
const STRING = 0;
const JSON_VALUE = 1;
const INTEGER = 2;
const SUBJECT = 3;
const V = 4;
const MEMBER_NAMES = ['action', 'actor', 'args', 'intent', 'kind', 'new', 'old', 'prev_hash', 'reason', 'result', 'seq', 'signature', 'subject', 'tenant', 'ts', 'v'];
const MEMBER_TYPES = [STRING, STRING, JSON_VALUE, INTEGER, STRING, JSON_VALUE, JSON_VALUE, STRING, STRING, JSON_VALUE, INTEGER, JSON_VALUE, SUBJECT, STRING, STRING, V];
const MEMBER_REQUIRED = [true, true, false, false, true, false, false, true, false, false, true, false, true, true, true, true];
const TENANT = MEMBER_NAMES.indexOf('tenant');
const PREV_HASH = MEMBER_NAMES.indexOf('prev_hash');
const SEQ = MEMBER_NAMES.indexOf('seq');
const SUBJECT_MEMBERS = ['agent', 'batch', 'reviewer', 'run', 'setpoint', 'tool'];

/** The string value of a canonical string token s[i..end) (its quotes included). */
const stringValue = (s: string, i: number, end: number, escaped: boolean): string => (escaped ? (JSON.parse(s.slice(i, end)) as string) : s.slice(i + 1, end - 1));

/** The key of the object member at `i` (an opening quote) when it is `name`, unescaped; the index after it, else -1. */
function keyIs(s: string, i: number, name: string): number {
  const end = i + name.length + 2;
  return s.charCodeAt(i + 1) === name.charCodeAt(0) && s.charCodeAt(end - 1) === QUOTE && s.charCodeAt(i) === QUOTE && s.startsWith(name, i + 1) ? end : -1;
}

/** Members of a canonical object at `i` (`{`) whose keys are drawn, in order, from `names`, each a canonical string; the index after it, or -1. */
function stringMembers(s: string, i: number, names: readonly string[]): number {
  let j = i + 1;
  if (s.charCodeAt(j) === 0x7d) return j + 1;
  let k = 0;
  for (;;) {
    let end = -1;
    while (k < names.length && (end = keyIs(s, j, names[k]!)) < 0) k++;
    if (end < 0 || s.charCodeAt(end) !== 0x3a || s.charCodeAt(end + 1) !== QUOTE) return -1;
    k++;
    const r = string(s, end + 1);
    if (r < 0) return -1;
    j = r >> 1;
    const c = s.charCodeAt(j++);
    if (c === 0x7d) return j;
    if (c !== 0x2c) return -1;
  }
}

/**
 * When `t` is the stored record of an audit entry as append writes it — RFC 8785 canonical JSON (as
 * {@link isCanonicalJson}) of an object with exactly the members of a hashed entry, each of its type: strings,
 * safe integers for `seq` and `intent`, `v` 1, `subject` an object of strings under its six keys, any JSON value
 * for the free-form members — the chain position it states; else undefined. One pass, as isCanonicalJson: it is
 * what `audit verify` asks of every entry before hashing it.
 */
export function canonicalEntry(t: unknown): EntryPosition | undefined {
  if (typeof t !== 'string' || t.charCodeAt(0) !== 0x7b) return undefined;
  const s = t;
  let j = 1;
  let k = 0;
  let tenant: string | undefined;
  let prevHash: string | undefined;
  let seq: number | undefined;
  for (;;) {
    // the next member's key: one of the entry's, after the previous one (so sorted, none twice), none required skipped
    let end = -1;
    for (; k < MEMBER_NAMES.length; k++) {
      end = keyIs(s, j, MEMBER_NAMES[k]!);
      if (end >= 0) break;
      if (MEMBER_REQUIRED[k]) return undefined;
    }
    if (end < 0 || s.charCodeAt(end) !== 0x3a) return undefined;
    const member = k++;
    const v = end + 1;
    switch (MEMBER_TYPES[member]) {
      case STRING: {
        if (s.charCodeAt(v) !== QUOTE) return undefined;
        const r = string(s, v);
        if (r < 0) return undefined;
        j = r >> 1;
        if (member === TENANT) tenant = stringValue(s, v, j, (r & 1) === 1);
        else if (member === PREV_HASH) prevHash = stringValue(s, v, j, (r & 1) === 1);
        break;
      }
      case INTEGER: {
        j = number(s, v);
        if (j < 0) return undefined;
        const n = Number(s.slice(v, j));
        if (!Number.isSafeInteger(n)) return undefined;
        if (member === SEQ) seq = n;
        break;
      }
      case V:
        // exactly `1`: whatever follows it other than the end of the object is refused below
        if (s.charCodeAt(v) !== 0x31) return undefined;
        j = v + 1;
        break;
      case SUBJECT:
        if (s.charCodeAt(v) !== 0x7b) return undefined;
        j = stringMembers(s, v, SUBJECT_MEMBERS);
        break;
      default:
        j = value(s, v, 1);
    }
    if (j < 0) return undefined;
    const c = s.charCodeAt(j++);
    if (c === 0x7d) break;
    if (c !== 0x2c) return undefined;
  }
  for (; k < MEMBER_NAMES.length; k++) if (MEMBER_REQUIRED[k]) return undefined;
  if (j !== s.length || tenant === undefined || prevHash === undefined || seq === undefined) return undefined;
  return { tenant, seq, prevHash };
}
