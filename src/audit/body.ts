/**
 * The canonical bytes of an entry, assembled straight from its column values:
 * the hot path of `audit append`, which stores them as the entry's record
 * (migration 14; what `audit verify` asks of a stored record is record.ts).
 *
 * The hashed object is defined as RFC 8785 canonical JSON of the entry
 * (`canonicalJson`, the `canonicalize` package). Its free-form parts (args,
 * result, old, new, signature) are canonicalised by that package when the row
 * is built and stored as canonical text; only the fixed envelope around them
 * (keys in RFC 8785 order, strings by JSON.stringify, as RFC 8785 specifies)
 * is assembled here. A property test holds this byte-identical to
 * `canonicalJson(hashedObject)` on random entries.
 *
 * For a row append could not have written (a column of the wrong type, a JSON
 * column that is not exactly one JSON value in its canonical form) it returns
 * undefined: so no tampered set of columns can splice into the bytes of a
 * different, valid row. (Before schema 14, verify hashed these bytes of each
 * row's columns; migration 14's copy of a version-13 row is tested against
 * them.) A JSON column
 * must be canonical, not merely parseable (`1.0`, `1 `, `{"b":1,"a":2}` are
 * refused): the hash is defined over the canonical form of the entry, and the
 * auditors' standalone verifier re-canonicalises what it reads, so bytes over
 * any other spelling of the same value would be damage there and must be here.
 */
import { hash } from 'node:crypto';
import { isCanonicalJson } from './canonical-text.js';
import { COL as C, ENTRY_FORMAT, type EntryRow } from './entry.js';

/** Strings JSON.stringify leaves as they are between its quotes: no `"`, `\\`, control character or surrogate. */
const PLAIN = /^[^"\\\x00-\x1f\ud800-\udfff]*$/;

/**
 * `JSON.stringify(s)` (what RFC 8785 §3.2.2.2 specifies for strings), without the call for the common string
 * that needs no escape: one regular-expression test instead of a JSON.stringify per column is most of what
 * serialising a row costs. Property-tested equal to JSON.stringify on arbitrary strings.
 */
export function jsonString(s: string): string {
  return PLAIN.test(s) ? `"${s}"` : JSON.stringify(s);
}
const q = jsonString;

const isString = (v: unknown): v is string => typeof v === 'string';

const VALUE_COLS = [['new', C.new_value], ['old', C.old_value]] as const;

/**
 * Canonical JSON of the hashed object of row `r` of chain `tenant`. Undefined when the row is malformed.
 * `trusted`: the JSON columns were just produced by the canonicaliser, skip re-parsing them.
 */
export function rowBody(tenant: string, r: EntryRow, trusted = false): string | undefined {
  const isJson = trusted ? isString : isCanonicalJson;
  const seq = r[C.seq];
  if (typeof seq !== 'number' || !Number.isSafeInteger(seq)) return undefined;
  const { [C.ts]: ts, [C.actor]: actor, [C.kind]: kind, [C.action]: action, [C.prev_hash]: prev } = r;
  if (typeof ts !== 'string' || typeof actor !== 'string' || typeof kind !== 'string' || typeof action !== 'string' || typeof prev !== 'string') return undefined;
  let s = `{"action":${q(action)},"actor":${q(actor)}`;
  const args = r[C.args];
  if (args !== null) {
    if (!isJson(args)) return undefined;
    s += `,"args":${args}`;
  }
  const intent = r[C.intent];
  if (intent !== null) {
    if (typeof intent !== 'number' || !Number.isSafeInteger(intent)) return undefined;
    s += `,"intent":${intent}`;
  }
  s += `,"kind":${q(kind)}`;
  for (const [key, i] of VALUE_COLS) {
    const v = r[i];
    if (v === null) continue;
    if (!isJson(v)) return undefined;
    s += `,"${key}":${v}`;
  }
  s += `,"prev_hash":${q(prev)}`;
  const reason = r[C.reason];
  if (reason !== null) {
    if (typeof reason !== 'string') return undefined;
    s += `,"reason":${q(reason)}`;
  }
  const result = r[C.result];
  if (result !== null) {
    if (!isJson(result)) return undefined;
    s += `,"result":${result}`;
  }
  s += `,"seq":${seq}`;
  const sig = r[C.signature];
  if (sig !== null) {
    if (!isJson(sig)) return undefined;
    s += `,"signature":${sig}`;
  }
  s += ',"subject":{';
  let sep = '';
  for (const [key, i] of SUBJECT_COLS) {
    const v = r[i];
    if (v === null) continue;
    if (typeof v !== 'string') return undefined;
    s += `${sep}"${key}":${q(v)}`;
    sep = ',';
  }
  return `${s}},"tenant":${q(tenant)},"ts":${q(ts)},"v":${ENTRY_FORMAT}}`;
}

const SUBJECT_COLS = [['agent', C.agent], ['batch', C.batch], ['reviewer', C.reviewer], ['run', C.run], ['setpoint', C.setpoint], ['tool', C.tool]] as const;

/**
 * The record append is about to insert: the canonical bytes of row `r` (built by {@link entryToRow} a moment ago,
 * so its JSON columns came from the `canonicalize` package and are not re-parsed) and their SHA-256.
 */
export function newRecord(tenant: string, r: EntryRow): { body: string; hash: string } {
  const body = rowBody(tenant, r, true);
  if (body === undefined) throw new Error('row is malformed'); // append built it: a bug, not input
  return { body, hash: hash('sha256', body) };
}
