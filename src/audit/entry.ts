/**
 * What an audit entry is, and exactly which bytes its hash covers.
 *
 * The hashed object of an entry is every field of {@link AuditEntry} except
 * `hash` (so `prev_hash` is inside it), serialised as RFC 8785 canonical JSON
 * (the `canonicalize` package), UTF-8 encoded; `hash` is the lowercase hex
 * SHA-256 of those bytes. Absent optional fields are omitted, never `null`.
 * docs/audit.md states the same definition for auditors, and
 * tools/verify-audit-bundle.mjs re-implements it without this code.
 */
import { hash } from 'node:crypto';
import canonicalize from 'canonicalize';
import { isMainThread } from 'node:worker_threads';
import type { z } from 'zod';
import { LkError } from '../errors.js';
import { jsonProblem, LONE_SURROGATE, type Json } from './json-value.js';
import type * as Schema from './entry-schema.js';

export { jsonProblem, type Json } from './json-value.js';

/**
 * The entry's schema (zod, entry-schema.ts), loaded on the main thread, where entries are appended. linekeeper's
 * worker threads only read the store (the release package's seal, the parallel verifier): they do not load it —
 * about 9 MB of each such thread's peak is compiling zod — and refuse an append the plain checks below do not
 * accept (nothing is written).
 */
const schema: typeof Schema | undefined = isMainThread ? await import('./entry-schema.js') : undefined;

export type AuditSubject = z.infer<typeof Schema.AuditSubject>;
/** Part 11 §11.50 signature manifestation: printed name, date/time, meaning; `value` is the signature itself (base64). */
export type AuditSignature = z.infer<typeof Schema.AuditSignature>;
/** What a caller hands to `audit.append`: validated (entry-schema.ts); nothing is written when it fails. */
export type AuditEntryInput = z.input<typeof Schema.AuditEntryInput>;
type ValidEntryInput = z.output<typeof Schema.AuditEntryInput>;

/** prev_hash of the first entry of every chain. */
export const GENESIS_HASH = '0'.repeat(64);
/** Version of the hashed object's shape (field `v`). */
export const ENTRY_FORMAT = 1;
/** The chain of the edge node's own events (start, stop, connectors, watchdog, config). */
export const SITE_TENANT = 'site';
/** Subject references, in canonical (sorted) order. */
export const SUBJECT_KEYS = ['agent', 'batch', 'reviewer', 'run', 'setpoint', 'tool'] as const;
export type SubjectKey = (typeof SUBJECT_KEYS)[number];

/** Kinds the rest of linekeeper writes; the schema accepts any snake_case kind so later issues need no change here. */
export const KNOWN_KINDS = [
  'tool_call', 'tool_result', 'policy_decision', 'approval', 'autonomy_change', 'config_change',
  'watchdog', 'heartbeat', 'connector', 'system', 'intent', 'outcome', 'state_change', 'audit_access',
] as const;

const MAX_JSON_CHARS = 256 * 1024;

/** The hashed object: exactly what SHA-256 covers (after RFC 8785 canonicalisation). */
export interface HashedEntry {
  v: typeof ENTRY_FORMAT;
  tenant: string;
  seq: number;
  /** UTC, ISO 8601 with milliseconds, from the store's clock. */
  ts: string;
  actor: string;
  kind: string;
  action: string;
  subject: AuditSubject;
  args?: Json;
  result?: Json;
  reason?: string;
  old?: Json;
  new?: Json;
  /** For `outcome` entries: seq of the `intent` entry they close. */
  intent?: number;
  signature?: AuditSignature;
  prev_hash: string;
}

export interface AuditEntry extends HashedEntry {
  hash: string;
}

/**
 * Validate an input entry.
 * @throws LkError LK_VALIDATION naming the first bad field; nothing has been written.
 */
export function parseEntryInput(input: unknown): ValidEntryInput {
  // the entries linekeeper writes itself pass the plain checks below; zod (the authority, and the one that says
  // what is wrong) runs only for what they do not accept: a hot-path append skips building a parse context
  if (plainlyValid(input)) return input;
  if (!schema) throw new LkError('LK_INTERNAL', 'an audit entry with a signature, or one the plain checks refuse, is validated on the main thread only: nothing was written');
  return schema.parseWithSchema(input);
}

const TENANT_RE = /^[a-z][a-z0-9-]{0,63}$/;
const ACTOR_RE = /^(system|agent\.[a-z][a-z0-9_]*|(?!agent\.)[A-Za-z0-9][A-Za-z0-9._@-]{0,127})$/;
const KIND_RE = /^[a-z][a-z0-9_]{0,39}$/;
const INPUT_KEYS = new Set(['tenant', 'actor', 'kind', 'action', 'subject', 'args', 'result', 'reason', 'old', 'new']);
const SUBJECT_KEY_SET = new Set<string>(SUBJECT_KEYS);
const isText = (v: unknown, max: number): boolean => typeof v === 'string' && v.length >= 1 && v.length <= max && !LONE_SURROGATE.test(v);
const isJsonOrAbsent = (v: unknown): boolean => v === undefined || jsonProblem(v) === undefined;

/**
 * True only when the schema's `AuditEntryInput` accepts `input` as it is: the same rules written as plain checks, for
 * entries without a signature (those, and anything these checks do not accept, go through zod). Never accepts
 * what zod refuses; a unit test holds the two together.
 */
export function plainlyValid(input: unknown): input is ValidEntryInput {
  if (typeof input !== 'object' || input === null || Object.getPrototypeOf(input) !== Object.prototype) return false;
  for (const k in input) if (!INPUT_KEYS.has(k)) return false;
  const e = input as Record<string, unknown>;
  if (typeof e.tenant !== 'string' || !TENANT_RE.test(e.tenant)) return false;
  if (typeof e.actor !== 'string' || !ACTOR_RE.test(e.actor)) return false;
  if (typeof e.kind !== 'string' || !KIND_RE.test(e.kind)) return false;
  if (!isText(e.action, 200)) return false;
  if (e.reason !== undefined && !isText(e.reason, 4000)) return false;
  const s = e.subject;
  if (s !== undefined) {
    if (typeof s !== 'object' || s === null || Object.getPrototypeOf(s) !== Object.prototype) return false;
    for (const k in s) {
      const v = (s as Record<string, unknown>)[k];
      if (!SUBJECT_KEY_SET.has(k) || (v !== undefined && !isText(v, 200))) return false;
    }
  }
  return isJsonOrAbsent(e.args) && isJsonOrAbsent(e.result) && isJsonOrAbsent(e.old) && isJsonOrAbsent(e.new);
}

/** Build the hashed object from validated input and its chain position. */
export function toHashed(input: ValidEntryInput, seq: number, ts: string, prevHash: string, intent?: number): HashedEntry {
  const subject: AuditSubject = {};
  for (const k of SUBJECT_KEYS) if (input.subject?.[k] !== undefined) subject[k] = input.subject[k];
  const e: HashedEntry = { v: ENTRY_FORMAT, tenant: input.tenant, seq, ts, actor: input.actor, kind: input.kind, action: input.action, subject, prev_hash: prevHash };
  if (input.args !== undefined) e.args = input.args;
  if (input.result !== undefined) e.result = input.result;
  if (input.reason !== undefined) e.reason = input.reason;
  if (input.old !== undefined) e.old = input.old;
  if (input.new !== undefined) e.new = input.new;
  if (intent !== undefined) e.intent = intent;
  if (input.signature !== undefined) e.signature = input.signature;
  return e;
}

/** RFC 8785 canonical JSON of any JSON value (the `canonicalize` package). */
export function canonicalJson(v: unknown): string {
  const s = canonicalize(v);
  if (s === undefined) throw new LkError('LK_INTERNAL', 'value has no JSON form');
  return s;
}

/**
 * SHA-256 (hex) of the canonical JSON of the hashed object, straight from the definition. Append uses the
 * equivalent, faster column serialisation in body.ts; tests hold the two equal.
 */
export function entryHash(e: HashedEntry): string {
  return hash('sha256', canonicalJson(e));
}

/** Columns of `audit_entry` after `tenant`, in the order every statement of the audit module uses. */
export const ENTRY_COLUMNS = [
  'seq', 'ts', 'actor', 'kind', 'action', 'run', 'batch', 'agent', 'tool', 'setpoint', 'reviewer',
  'args', 'result', 'reason', 'old_value', 'new_value', 'intent', 'signature', 'prev_hash', 'hash',
] as const;
export type EntryRow = unknown[];
const C = Object.fromEntries(ENTRY_COLUMNS.map((c, i) => [c, i])) as Record<(typeof ENTRY_COLUMNS)[number], number>;
export { C as COL };

function jsonCol(v: Json | undefined, field: string): string | null {
  if (v === undefined) return null;
  // A primitive's canonical form is its JSON.stringify (RFC 8785 §3.2.2); objects go through the package.
  const text = v === null || typeof v !== 'object' ? JSON.stringify(v) : canonicalJson(v);
  if (text.length > MAX_JSON_CHARS) throw new LkError('LK_VALIDATION', `audit entry ${field}: larger than ${MAX_JSON_CHARS} characters`);
  return text;
}

/**
 * Column values (in {@link ENTRY_COLUMNS} order) of an entry; JSON fields become their canonical text,
 * computed once here and reused for the hash (see body.ts).
 * @throws LkError LK_VALIDATION when a JSON field is too large (inside the append transaction: nothing commits).
 */
export function entryToRow(e: HashedEntry & { hash?: string }): (string | number | null)[] {
  const s = e.subject;
  return [
    e.seq, e.ts, e.actor, e.kind, e.action, s.run ?? null, s.batch ?? null, s.agent ?? null, s.tool ?? null, s.setpoint ?? null, s.reviewer ?? null,
    jsonCol(e.args, 'args'), jsonCol(e.result, 'result'), e.reason ?? null, jsonCol(e.old, 'old'), jsonCol(e.new, 'new'), e.intent ?? null,
    e.signature === undefined ? null : canonicalJson(e.signature), e.prev_hash, e.hash ?? null,
  ];
}

/** An entry read back from its row's columns, generated from its record (for query and export; verify reads the record itself). */
export function rowToEntry(tenant: string, r: EntryRow): AuditEntry {
  const subject: AuditSubject = {};
  const sub: [SubjectKey, number][] = [['agent', C.agent], ['batch', C.batch], ['reviewer', C.reviewer], ['run', C.run], ['setpoint', C.setpoint], ['tool', C.tool]];
  for (const [k, i] of sub) if (r[i] !== null) subject[k] = r[i] as string;
  const e: AuditEntry = {
    v: ENTRY_FORMAT, tenant, seq: r[C.seq] as number, ts: r[C.ts] as string, actor: r[C.actor] as string, kind: r[C.kind] as string,
    action: r[C.action] as string, subject, prev_hash: r[C.prev_hash] as string, hash: r[C.hash] as string,
  };
  const parse = (i: number): Json | undefined => (r[i] === null ? undefined : (JSON.parse(r[i] as string) as Json));
  const args = parse(C.args), result = parse(C.result), old = parse(C.old_value), nu = parse(C.new_value), sig = parse(C.signature);
  if (args !== undefined) e.args = args;
  if (result !== undefined) e.result = result;
  if (r[C.reason] !== null) e.reason = r[C.reason] as string;
  if (old !== undefined) e.old = old;
  if (nu !== undefined) e.new = nu;
  if (r[C.intent] !== null) e.intent = r[C.intent] as number;
  if (sig !== undefined) e.signature = sig as AuditSignature;
  return e;
}
