/**
 * The canonical bytes of a stored row, assembled straight from its columns:
 * the hot path of `audit verify` (a million rows should take seconds).
 *
 * Append hashes `canonicalJson(hashedObject)` with the `canonicalize`
 * package; this function must yield the same string for every row append
 * wrote (a property test checks it on random entries). The JSON columns are
 * already canonical text (append stored them so), so only the fixed envelope
 * is assembled here. For a row append could not have written — a column of the
 * wrong type, a JSON column that is not exactly one JSON value — it returns
 * undefined: then no tampered set of columns can splice into the bytes of a
 * different, valid row, and verify reports the row as damaged.
 */
import { createHash } from 'node:crypto';
import { COL as C, ENTRY_FORMAT, type EntryRow } from './entry.js';

const q = JSON.stringify;

function isJsonText(v: unknown): v is string {
  if (typeof v !== 'string') return false;
  try {
    JSON.parse(v);
    return true;
  } catch {
    return false;
  }
}

/**
 * Canonical JSON of the hashed object of row `r` of chain `tenant`, taking the
 * position from `seq` (the row's own seq unless a diagnosis asks "would this row
 * verify at another position?"). Undefined when the row is malformed.
 */
export function rowBody(tenant: string, r: EntryRow, seq: unknown = r[C.seq]): string | undefined {
  if (typeof seq !== 'number' || !Number.isSafeInteger(seq)) return undefined;
  for (const i of [C.ts, C.actor, C.kind, C.action, C.prev_hash]) if (typeof r[i] !== 'string') return undefined;
  let s = `{"action":${q(r[C.action])},"actor":${q(r[C.actor])}`;
  const args = r[C.args];
  if (args !== null) {
    if (!isJsonText(args)) return undefined;
    s += `,"args":${args}`;
  }
  const intent = r[C.intent];
  if (intent !== null) {
    if (typeof intent !== 'number' || !Number.isSafeInteger(intent)) return undefined;
    s += `,"intent":${intent}`;
  }
  s += `,"kind":${q(r[C.kind])}`;
  for (const [key, i] of [['new', C.new_value], ['old', C.old_value]] as const) {
    const v = r[i];
    if (v === null) continue;
    if (!isJsonText(v)) return undefined;
    s += `,"${key}":${v}`;
  }
  s += `,"prev_hash":${q(r[C.prev_hash])}`;
  const reason = r[C.reason];
  if (reason !== null) {
    if (typeof reason !== 'string') return undefined;
    s += `,"reason":${q(reason)}`;
  }
  const result = r[C.result];
  if (result !== null) {
    if (!isJsonText(result)) return undefined;
    s += `,"result":${result}`;
  }
  s += `,"seq":${seq}`;
  const sig = r[C.signature];
  if (sig !== null) {
    if (!isJsonText(sig)) return undefined;
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
  return `${s}},"tenant":${q(tenant)},"ts":${q(r[C.ts])},"v":${ENTRY_FORMAT}}`;
}

const SUBJECT_COLS = [['agent', C.agent], ['batch', C.batch], ['reviewer', C.reviewer], ['run', C.run], ['setpoint', C.setpoint], ['tool', C.tool]] as const;

/** SHA-256 (hex) of a row's canonical bytes, or undefined when the row is malformed. */
export function rowHash(tenant: string, r: EntryRow, seq: unknown = r[C.seq]): string | undefined {
  const body = rowBody(tenant, r, seq);
  return body === undefined ? undefined : createHash('sha256').update(body).digest('hex');
}

/** True when row `r` is intact as entry `seq` of chain `tenant`: its columns hash to its stored hash. */
export function rowVerifiesAt(tenant: string, r: EntryRow, seq: number): boolean {
  return rowHash(tenant, r, seq) === r[C.hash];
}
