/**
 * The canonical bytes of a stored row, built by SQLite itself: the fast path
 * of `audit verify`.
 *
 * body.ts assembles the hashed bytes in JavaScript from twenty columns, and on
 * a long trail reading those columns into JavaScript values costs more than
 * serialising and hashing them. The same envelope can be built inside the
 * query, in C, so that one string per row crosses into JavaScript: keys in
 * RFC 8785 order, strings quoted by `json_quote` (which escapes exactly what
 * JSON.stringify escapes for the text append stores), the JSON columns spliced
 * in as stored, integers printed as SQLite prints them.
 *
 * It is a fast path only, never the authority, and it can only say "intact"
 * where body.ts says "intact". The argument, in three parts:
 * 1. The SQL expression is NULL for any row append could not have written: a
 *    column of another type, an integer beyond 2^53, or a JSON column that is not
 *    exactly one JSON value. For the last, `json_valid` alone is not enough: it
 *    reads a text only up to its first NUL (so `1\u0000,"intent":3` passes it), so
 *    a JSON column holding a NUL is refused outright (`instr(c, char(0))`, which
 *    does count past a NUL). Without a NUL, `json_valid` accepts what JSON.parse
 *    accepts (property-tested).
 * 2. `json_valid` accepts every spelling of a value (`1.0`, `1e2`, `5e324`, `1 `,
 *    `"\u0041"`, keys out of order), but append stores each JSON column in its
 *    RFC 8785 canonical form and body.ts refuses any other: the hash covers the
 *    canonical entry, and the auditors' verifier re-canonicalises. SQLite cannot
 *    tell canonical text from other text, so the query also returns the row's JSON
 *    columns joined by NUL (none holds one: see 1), and {@link fastIntact} asks
 *    `canonicalSegments` (canonical-text.ts) of them. The envelope around the JSON
 *    columns is canonical by construction (the property test below holds the SQL
 *    bytes equal to body.ts's), and each JSON column is one complete value in it,
 *    so the bytes are canonical exactly when every JSON column is. Scanning the
 *    columns rather than the whole body keeps the check to the part that can be
 *    other than canonical (a fifth of a typical row).
 * 3. Bytes that pass both are exactly rowBody's bytes for the row; a row they do
 *    not hash to the stored hash of is handed to body.ts, which stays the authority.
 *    A difference costs speed, never a verdict. A property test holds `fastBody` of
 *    the SQL bytes equal to rowBody on random intact, tampered and mistyped rows,
 *    and undefined exactly where rowBody refuses.
 */
import { hash } from 'node:crypto';
import { canonicalSegments } from './canonical-text.js';
import { ENTRY_FORMAT, SUBJECT_KEYS } from './entry.js';

// json_valid stops reading at a NUL: a JSON column holding one is refused before json_valid is asked
const jsonCol = (c: string): string => `(${c} IS NULL OR (typeof(${c}) = 'text' AND instr(${c}, char(0)) = 0 AND json_valid(${c})))`;
const textCol = (c: string, nullable: boolean): string => (nullable ? `(${c} IS NULL OR typeof(${c}) = 'text')` : `typeof(${c}) = 'text'`);
/** `,"key":<v>`, or NULL when `v` is NULL (SQL `||` with NULL is NULL), which concat() skips. */
const opt = (key: string, v: string): string => `',"${key}":' || ${v}`;
const SUBJECT_COL: Record<(typeof SUBJECT_KEYS)[number], string> = { agent: 'agent', batch: 'batch', reviewer: 'reviewer', run: 'run', setpoint: 'setpoint', tool: 'tool' };

const SAFE = Number.MAX_SAFE_INTEGER;
const WELL_TYPED = [
  // body.ts takes only safe integers (what a JavaScript number holds exactly); so does this
  `typeof(seq) = 'integer' AND seq BETWEEN ${-SAFE} AND ${SAFE}`,
  ...['ts', 'actor', 'kind', 'action', 'prev_hash'].map((c) => textCol(c, false)),
  ...['reason', ...Object.values(SUBJECT_COL)].map((c) => textCol(c, true)),
  `(intent IS NULL OR (typeof(intent) = 'integer' AND intent BETWEEN ${-SAFE} AND ${SAFE}))`,
  ...['args', 'result', 'old_value', 'new_value', 'signature'].map(jsonCol),
].join(' AND ');

// json_quote(NULL) is the text 'null', not NULL: optional strings are quoted only when present.
const quotedOpt = (c: string): string => `CASE WHEN ${c} IS NULL THEN NULL ELSE json_quote(${c}) END`;

// concat() copies every piece once into one result (it skips NULLs: an absent optional field is a NULL piece);
// a chain of `||` would copy the growing prefix again at every step
const ENVELOPE = `concat(${[
  `'{"action":'`, 'json_quote(action)',
  `',"actor":'`, 'json_quote(actor)',
  opt('args', 'args'),
  opt('intent', 'intent'),
  `',"kind":'`, 'json_quote(kind)',
  opt('new', 'new_value'),
  opt('old', 'old_value'),
  `',"prev_hash":'`, 'json_quote(prev_hash)',
  opt('reason', quotedOpt('reason')),
  opt('result', 'result'),
  `',"seq":'`, 'seq',
  opt('signature', 'signature'),
  // the subject's members each start with a comma: drop the first
  `',"subject":{'`, `substr(concat(${SUBJECT_KEYS.map((k) => opt(k, quotedOpt(SUBJECT_COL[k]))).join(', ')}), 2)`, `'}'`,
  `',"tenant":'`, 'json_quote(tenant)',
  `',"ts":'`, 'json_quote(ts)',
  `',"v":${ENTRY_FORMAT}}'`,
].join(', ')})`;

/**
 * SQL expression over the columns of `audit_entry`: the canonical bytes of the row's hashed object (the
 * same text as `rowBody(tenant, row)` of body.ts), or NULL when the row is not one append could write.
 */
export const BODY_SQL = `CASE WHEN ${WELL_TYPED} THEN ${ENVELOPE} END`;

/** The row's JSON columns as stored, joined by NUL (absent ones skipped; the empty string when none is present). */
export const JSON_COLUMNS_SQL = "concat_ws(char(0), args, result, new_value, old_value, signature)";

/** Column positions of a row of {@link SELECT_BODIES}. */
export const B = Object.freeze({ seq: 0, prev_hash: 1, hash: 2, body: 3, json: 4 });

/** Rows of one chain in a seq range (lo, hi], ordered, each as `[seq, prev_hash, hash, body, json columns]`. */
export const SELECT_BODIES = `SELECT seq, prev_hash, hash, ${BODY_SQL}, ${JSON_COLUMNS_SQL} FROM audit_entry WHERE tenant = ? AND seq > ? AND seq <= ? ORDER BY seq`;
/** Every row of one chain, whatever its seq (a seq below 1 or of another type is damage the walk must see), as {@link SELECT_BODIES}. */
export const SELECT_CHAIN_BODIES = `SELECT seq, prev_hash, hash, ${BODY_SQL}, ${JSON_COLUMNS_SQL} FROM audit_entry WHERE tenant = ? ORDER BY seq`;

/**
 * The bytes the fast path stands behind: the SQL-built body when the row's JSON columns ({@link JSON_COLUMNS_SQL})
 * are each in the canonical form append writes, else undefined. Equal to `rowBody` of the same row wherever it is
 * defined (property-tested), and then itself canonical JSON.
 */
export function fastBody(sqlBody: unknown, jsonColumns: unknown): string | undefined {
  return typeof sqlBody === 'string' && canonicalSegments(jsonColumns) ? sqlBody : undefined;
}

/**
 * True when a row of {@link SELECT_BODIES} is intact by the fast path: its SQL-built bytes hash to its stored
 * hash and are canonical. False says nothing yet: the caller reads the row's columns and asks body.ts.
 */
export function fastIntact(r: readonly unknown[]): boolean {
  const body = r[B.body];
  // the hash first: it is what fails on a damaged row, and the canonical check only matters for bytes that match
  return typeof body === 'string' && hash('sha256', body) === r[B.hash] && canonicalSegments(r[B.json]);
}
