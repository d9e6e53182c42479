/**
 * The review of an audit trail (EU GMP Annex 11 §9: "audit trails need to be available … and regularly
 * reviewed"): what a reviewer is shown, and the signed record that says they reviewed it.
 *
 * The review view puts the GMP-relevant changes first — signatures, setpoint writes, bundle/model/
 * configuration changes, reverts to the last known-good recipe, exceptions — then the run's own state
 * changes and the accesses to the trail, and leaves the routine traffic (the agents' tool calls and
 * results, allowed policy decisions, arbitration rounds) out as counts per action: those entries stay in
 * the trail and in every export, they are only not what a reviewer reads line by line.
 *
 * The review itself is a signed audit entry (`audit_review` / `audit.review`) on the tenant's chain:
 * the record names the scope (one run, or a period), the first and last entry and how many, the SHA-256
 * over the hashes of every entry in scope in chain order (so the signature binds exactly the entries
 * that were in scope, routine ones included), the chain head at that moment, who, what the signature
 * means, when, and the reviewer's comment; the site's Ed25519 key signs the record's RFC 8785 canonical
 * JSON. Entries appended after the review (the release decision, the package) are not covered, and the
 * release package says so.
 *
 * Pure functions of their inputs except {@link scopeEntries} and {@link reviewsOf}, which read the store.
 */
import { createHash } from 'node:crypto';
import type { Database } from 'better-sqlite3';
import { LkError } from '../errors.js';
import { chooseMeaning, DEFAULT_SIGNATURE_MEANINGS, MEANING_VALUES } from '../domain/signature-meanings.js';
import { mapSqliteError } from '../store/sqlite-errors.js';
import { canonicalJson, ENTRY_COLUMNS, rowToEntry, type AuditEntry, type EntryRow } from './entry.js';
import { signBytes, verifyBytes, type PublicSiteKey, type SiteKey } from './keys.js';
import { iterateAudit } from './query.js';

/** What an entry is to a reviewer. The first five are the GMP-relevant changes, shown first. */
export const TRAIL_CATEGORIES = ['signature', 'setpoint', 'change', 'revert', 'exception', 'run', 'access', 'routine'] as const;
export type TrailCategory = (typeof TRAIL_CATEGORIES)[number];
export const GMP_CATEGORIES: readonly TrailCategory[] = ['signature', 'setpoint', 'change', 'revert', 'exception'];

const CHANGE_KINDS = new Set(['config_change', 'model_change', 'autonomy_change', 'policy_change']);
const CHANGE_PREFIXES = ['policy.signed', 'policy.refused', 'policy.apply', 'config.', 'model.', 'autonomy.', 'site.restore', 'archive.prune'];
const REVERT_ACTIONS = new Set(['setpoint.revert', 'plc.revert_lkg', 'plc.rearm', 'heartbeat.failing', 'heartbeat.recovered', 'connector.lost', 'site.unclean_stop']);

type Classified = Pick<AuditEntry, 'kind' | 'action' | 'signature' | 'result'>;

/** The category of one entry (see the file comment). Unknown kinds are never routine: they are shown. */
export function categoryOf(e: Classified): TrailCategory {
  const a = e.action;
  if (e.signature !== undefined || e.kind === 'approval' || e.kind === 'batch_release' || e.kind === 'audit_review') return 'signature';
  if (a.startsWith('exception.') || e.kind === 'exception') return 'exception';
  if (REVERT_ACTIONS.has(a) || e.kind === 'watchdog') return 'revert';
  if (CHANGE_KINDS.has(e.kind) || CHANGE_PREFIXES.some((p) => a.startsWith(p))) return 'change';
  if (e.kind === 'intent' || e.kind === 'outcome' || a.startsWith('setpoint.')) return 'setpoint';
  if (e.kind === 'policy_decision') return outcomeOf(e.result) === 'allow' ? 'routine' : 'setpoint';
  if (e.kind === 'tool_call' || e.kind === 'tool_result' || e.kind === 'arbitration' || e.kind === 'heartbeat') return 'routine';
  if (e.kind === 'audit_access' || e.kind === 'identity') return 'access';
  return 'run';
}

function outcomeOf(result: unknown): string | undefined {
  return result !== null && typeof result === 'object' && !Array.isArray(result) ? (result as { outcome?: unknown }).outcome as string | undefined : undefined;
}

/** One run, or a period [from, to) in UTC. */
export interface RunScope { readonly run: string }
export interface PeriodScope { readonly from: string; readonly to: string }
export type TrailScope = RunScope | PeriodScope;

export function isRunScope(s: TrailScope): s is RunScope {
  return 'run' in s;
}

/**
 * The most entries a period under review may hold. Reading and classifying an entry costs ~10 µs on the
 * daemon's main thread, which also beats the PLCs' heartbeats: a period is reviewed in parts of at most this
 * many entries (a run always fits).
 */
export const MAX_PERIOD_ENTRIES = 50_000;

/**
 * How many entries of `tenant` fall in `period` (the ts index answers it).
 * @throws LkError LK_VALIDATION when there are more than `max` (default {@link MAX_PERIOD_ENTRIES}).
 */
export function checkPeriodSize(db: Database, tenant: string, period: PeriodScope, o: { max?: number; path?: string } = {}): number {
  const max = o.max ?? MAX_PERIOD_ENTRIES;
  let n: number;
  try {
    n = db.prepare('SELECT count(*) FROM audit_entry WHERE tenant = ? AND ts >= ? AND ts < ?').pluck().get(tenant, period.from, period.to) as number;
  } catch (err) {
    throw mapSqliteError(err);
  }
  if (n > max) {
    throw new LkError('LK_VALIDATION', `the period holds ${n} audit entries; review it in parts of at most ${max} (a shorter period)`, { issues: [{ path: o.path ?? 'to', message: `at most ${max} entries in the period` }], entries: n });
  }
  return n;
}

/**
 * The entries of `scope` in chain order: for a run, every entry naming the run and the outcome of each of
 * its write intents (an outcome names its intent, not the run); for a period, every entry in it.
 * @throws LkError LK_VALIDATION for a bad period; LK_STORE_CORRUPT when the file is damaged.
 */
export function* scopeEntries(db: Database, tenant: string, scope: TrailScope): Generator<AuditEntry> {
  if (!isRunScope(scope)) {
    yield* iterateAudit(db, tenant, { from: scope.from, to: scope.to });
    return;
  }
  const intents: number[] = [];
  const own = [...iterateAudit(db, tenant, { run: scope.run })];
  for (const e of own) if (e.kind === 'intent') intents.push(e.seq);
  let outcomes: AuditEntry[] = [];
  if (intents.length > 0) {
    try {
      const stmt = db.prepare(`SELECT ${ENTRY_COLUMNS.join(', ')} FROM audit_entry WHERE tenant = ? AND intent = ? AND run IS NULL`).raw();
      outcomes = intents.flatMap((i) => (stmt.all(tenant, i) as EntryRow[]).map((r) => rowToEntry(tenant, r)));
    } catch (err) {
      throw mapSqliteError(err);
    }
  }
  yield* [...own, ...outcomes].sort((x, y) => x.seq - y.seq);
}

/** What the reviewer is shown and what a review of it signs. */
export interface TrailReviewView {
  tenant: string;
  scope: TrailScope;
  /** Entries in scope (routine ones included) and the first and last seq; 0 when none. */
  entries: number;
  first: number;
  last: number;
  /** SHA-256 (hex) over the hashes of every entry in scope, in chain order, each followed by a line feed. */
  digest: string;
  counts: Record<TrailCategory, number>;
  /** GMP-relevant entries first (by category, then chain order), then the run's and the access entries. */
  shown: { category: TrailCategory; entry: AuditEntry }[];
  /** True when more than `limit` entries would be shown (the counts and the digest still cover all). */
  truncated: boolean;
  /** The routine entries left out, counted per action. */
  routine: Record<string, number>;
}

/** Build the review view of `entries` (chain order). Pure. */
export function reviewView(tenant: string, scope: TrailScope, entries: Iterable<AuditEntry>, limit = 5000): TrailReviewView {
  const counts = Object.fromEntries(TRAIL_CATEGORIES.map((c) => [c, 0])) as Record<TrailCategory, number>;
  const byCat = new Map<TrailCategory, AuditEntry[]>();
  const routine: Record<string, number> = {};
  const h = createHash('sha256');
  let n = 0;
  let first = 0;
  let last = 0;
  let kept = 0;
  let truncated = false;
  for (const e of entries) {
    n += 1;
    if (first === 0) first = e.seq;
    last = e.seq;
    h.update(`${e.hash}\n`);
    const c = categoryOf(e);
    counts[c] += 1;
    if (c === 'routine') {
      routine[e.action] = (routine[e.action] ?? 0) + 1;
      continue;
    }
    if (kept >= limit) {
      truncated = true;
      continue;
    }
    kept += 1;
    const list = byCat.get(c) ?? [];
    list.push(e);
    byCat.set(c, list);
  }
  const shown = TRAIL_CATEGORIES.filter((c) => c !== 'routine').flatMap((c) => (byCat.get(c) ?? []).map((entry) => ({ category: c, entry })));
  return { tenant, scope, entries: n, first, last, digest: h.digest('hex'), counts, shown, truncated, routine };
}

/** The record a reviewer signs (21 CFR 11.50 manifestation: user, printed name, meaning, time). */
export interface TrailReviewRecord {
  format: 1;
  kind: 'audit_trail_review';
  tenant: string;
  scope: TrailScope;
  /** The batch of a run scope, for the manifestation. */
  batch?: string;
  entries: number;
  first: number;
  last: number;
  digest: string;
  /** Entries per category, as shown to the reviewer. */
  counts: Record<TrailCategory, number>;
  /** The tenant chain's head when the review was signed. */
  head: { seq: number; hash: string };
  user: string;
  name: string;
  role: string;
  /** The meaning from the site's list, filled for the scope. */
  meaning: string;
  /** Its id in the site's signature meanings (absent on reviews signed before meanings were a controlled list). */
  meaningId?: string;
  comment: string;
  /** ISO 8601 UTC with milliseconds. */
  timestamp: string;
}

export interface SignedTrailReview {
  record: TrailReviewRecord;
  /** SHA-256 (hex) of the record's canonical JSON. */
  recordHash: string;
  /** Base64 Ed25519 signature of the record's canonical JSON by the site key. */
  signature: string;
  keyId: string;
}

/**
 * The built-in meaning of a review signature, in words, from its scope (a site's own list may word it otherwise:
 * the route takes the meaning from the list in force).
 */
export function reviewMeaning(scope: TrailScope, batch?: string): string {
  return chooseMeaning(DEFAULT_SIGNATURE_MEANINGS, 'trail_review', undefined, MEANING_VALUES.trail_review(scope, batch)).text;
}

const sha256Hex = (text: string): string => createHash('sha256').update(text, 'utf8').digest('hex');

/** Sign a review record with the site key. */
export function signTrailReview(key: SiteKey, record: TrailReviewRecord): SignedTrailReview {
  const text = canonicalJson(record);
  return { record, recordHash: sha256Hex(text), signature: signBytes(key, text), keyId: key.keyId };
}

/** True when `s` is a review signed by `key` over exactly its record. */
export function verifyTrailReview(key: PublicSiteKey, s: SignedTrailReview): boolean {
  if (s.keyId !== key.keyId) return false;
  const text = canonicalJson(s.record);
  return sha256Hex(text) === s.recordHash && verifyBytes(key, text, s.signature);
}

/** A review as the trail keeps it: the audit entry's seq and time, and the signed record. */
export interface TrailReview extends SignedTrailReview {
  seq: number;
  at: string;
}

/** The reviews recorded on `tenant`'s chain, oldest first; of one run when `run` is given. */
export function reviewsOf(db: Database, tenant: string, run?: string): TrailReview[] {
  const out: TrailReview[] = [];
  for (const e of iterateAudit(db, tenant, { kind: 'audit_review', ...(run ? { run } : {}) })) {
    const r = e.result as unknown as SignedTrailReview | undefined;
    if (e.action !== 'audit.review' || !r || typeof r !== 'object' || !r.record) continue;
    out.push({ seq: e.seq, at: e.ts, record: r.record, recordHash: r.recordHash, signature: r.signature, keyId: r.keyId });
  }
  return out;
}

/** A period as the reviewer may give it: ISO date-times, `to` after `from`, at most a year. */
export function parsePeriod(from: string, to: string, where = 'body'): { from: string; to: string } {
  const f = Date.parse(from);
  const t = Date.parse(to);
  if (!Number.isFinite(f) || !Number.isFinite(t)) throw new LkError('LK_VALIDATION', 'a review period needs from and to as ISO 8601 date-times', { issues: [{ path: `${where}.from`, message: 'ISO 8601 date-time' }] });
  if (t <= f) throw new LkError('LK_VALIDATION', 'a review period\'s to must be after its from', { issues: [{ path: `${where}.to`, message: 'after from' }] });
  if (t - f > 366 * 86_400_000) throw new LkError('LK_VALIDATION', 'a review period is at most a year', { issues: [{ path: `${where}.to`, message: 'at most 366 days after from' }] });
  return { from: new Date(f).toISOString(), to: new Date(t).toISOString() };
}
