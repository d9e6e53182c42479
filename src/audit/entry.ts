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
import { z } from 'zod';
import { MANIFESTATION_MEANING_MAX } from '../domain/signature-meanings.js';
import { LkError } from '../errors.js';

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

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
const MAX_DEPTH = 32;
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** Why `v` is not a JSON value we can hash reproducibly, or undefined when it is. */
export function jsonProblem(v: unknown, depth = 0): string | undefined {
  if (depth > MAX_DEPTH) return `nested deeper than ${MAX_DEPTH}`;
  if (v === null || typeof v === 'boolean') return undefined;
  if (typeof v === 'number') return Number.isFinite(v) ? undefined : `number ${String(v)} is not finite`;
  if (typeof v === 'string') return LONE_SURROGATE.test(v) ? 'string has a lone surrogate' : undefined;
  if (Array.isArray(v)) {
    for (const x of v) {
      if (x === undefined) return 'array holds undefined';
      const p = jsonProblem(x, depth + 1);
      if (p) return p;
    }
    return undefined;
  }
  if (typeof v === 'object') {
    const proto = Object.getPrototypeOf(v) as unknown;
    if (proto !== Object.prototype && proto !== null) return 'only plain objects are allowed';
    for (const [k, x] of Object.entries(v)) {
      if (LONE_SURROGATE.test(k)) return 'key has a lone surrogate';
      if (x === undefined) continue;
      const p = jsonProblem(x, depth + 1);
      if (p) return `${k}: ${p}`;
    }
    return undefined;
  }
  return `${typeof v} is not a JSON type`;
}

const JsonValue = z.custom<Json>((v) => v !== undefined && jsonProblem(v) === undefined, { message: 'must be a JSON value: finite numbers, plain objects, well-formed strings' });
const text = (max: number) => z.string().min(1).max(max).refine((s) => !LONE_SURROGATE.test(s), 'has a lone surrogate');
const ref = text(200);
const tenantId = z.string().regex(/^[a-z][a-z0-9-]{0,63}$/, 'tenant must be lower-case letters, digits and dashes');

export const AuditSubject = z.strictObject({
  run: ref.optional(), batch: ref.optional(), agent: ref.optional(), tool: ref.optional(), setpoint: ref.optional(), reviewer: ref.optional(),
});
export type AuditSubject = z.infer<typeof AuditSubject>;

/** Part 11 §11.50 signature manifestation: printed name, date/time, meaning; `value` is the signature itself (base64). */
export const AuditSignature = z.strictObject({
  user: ref,
  name: text(200),
  // every meaning chooseMeaning returns fits whole, after the longest act (src/domain/signature-meanings.ts)
  meaning: text(MANIFESTATION_MEANING_MAX),
  time: z.iso.datetime({ offset: false, precision: 3 }),
  value: text(1024).optional(),
});
export type AuditSignature = z.infer<typeof AuditSignature>;

/** What a caller hands to `audit.append`: validated with zod; nothing is written when it fails. */
export const AuditEntryInput = z.strictObject({
  tenant: tenantId,
  /** user id, `agent.<role>` or `system`. */
  actor: z.string().regex(/^(system|agent\.[a-z][a-z0-9_]*|(?!agent\.)[A-Za-z0-9][A-Za-z0-9._@-]{0,127})$/, 'actor must be a user id, agent.<role> or system'),
  kind: z.string().regex(/^[a-z][a-z0-9_]{0,39}$/, 'kind must be snake_case'),
  /** What happened, e.g. the tool name or `setpoint.write`. */
  action: text(200),
  subject: AuditSubject.optional(),
  args: JsonValue.optional(),
  result: JsonValue.optional(),
  reason: text(4000).optional(),
  /** Value before a change (Annex 11 §9). */
  old: JsonValue.optional(),
  /** Value after a change. */
  new: JsonValue.optional(),
  signature: AuditSignature.optional(),
});
export type AuditEntryInput = z.input<typeof AuditEntryInput>;

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
export function parseEntryInput(input: unknown): z.output<typeof AuditEntryInput> {
  // the entries linekeeper writes itself pass the plain checks below; zod (the authority, and the one that says
  // what is wrong) runs only for what they do not accept: a hot-path append skips building a parse context
  if (plainlyValid(input)) return input;
  const r = AuditEntryInput.safeParse(input);
  if (!r.success) {
    const i = r.error.issues[0]!;
    throw new LkError('LK_VALIDATION', `audit entry ${i.path.join('.') || '(root)'}: ${i.message}`, { issues: r.error.issues.map((x) => ({ path: x.path.join('.'), message: x.message })) });
  }
  return r.data;
}

const TENANT_RE = /^[a-z][a-z0-9-]{0,63}$/;
const ACTOR_RE = /^(system|agent\.[a-z][a-z0-9_]*|(?!agent\.)[A-Za-z0-9][A-Za-z0-9._@-]{0,127})$/;
const KIND_RE = /^[a-z][a-z0-9_]{0,39}$/;
const INPUT_KEYS = new Set(['tenant', 'actor', 'kind', 'action', 'subject', 'args', 'result', 'reason', 'old', 'new']);
const SUBJECT_KEY_SET = new Set<string>(SUBJECT_KEYS);
const isText = (v: unknown, max: number): boolean => typeof v === 'string' && v.length >= 1 && v.length <= max && !LONE_SURROGATE.test(v);
const isJsonOrAbsent = (v: unknown): boolean => v === undefined || jsonProblem(v) === undefined;

/**
 * True only when {@link AuditEntryInput} accepts `input` as it is: the same rules written as plain checks, for
 * entries without a signature (those, and anything these checks do not accept, go through zod). Never accepts
 * what zod refuses; a unit test holds the two together.
 */
export function plainlyValid(input: unknown): input is z.output<typeof AuditEntryInput> {
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
export function toHashed(input: z.output<typeof AuditEntryInput>, seq: number, ts: string, prevHash: string, intent?: number): HashedEntry {
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
