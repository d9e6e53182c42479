/**
 * Query the audit trail of ONE tenant (R1/R9: the tenant is the first
 * parameter, never a filter field) by batch, run, agent, tool, setpoint,
 * reviewer, actor, kind, action and time, with cursor pagination in chain order.
 * The REST route (surfaces issue) and `linekeeper audit query` call this.
 */
import { createHash } from 'node:crypto';
import type { Database, Statement } from 'better-sqlite3';
import { z } from 'zod';
import { LkError } from '../errors.js';
import { mapSqliteError } from '../store/sqlite-errors.js';
import { ENTRY_COLUMNS, rowToEntry, type AuditEntry, type EntryRow } from './entry.js';
import { fromIso, selectEntries, toIso, validatedFilter, whereOf, type ValidFilter } from './select.js';

export { filterBounds, type ValidFilter } from './select.js';

const ref = z.string().min(1).max(200);
// a time bound: an instant (UTC ISO 8601), or a date alone (YYYY-MM-DD), meaning that whole day in UTC
const bound = z.union([z.iso.datetime({ offset: false }), z.iso.date()], { error: 'an ISO 8601 UTC date-time (2026-11-26T08:00:00Z) or a date (2026-11-26)' });

export const AuditFilter = z.strictObject({
  batch: ref.optional(),
  run: ref.optional(),
  agent: ref.optional(),
  tool: ref.optional(),
  setpoint: ref.optional(),
  reviewer: ref.optional(),
  actor: ref.optional(),
  kind: ref.optional(),
  action: ref.optional(),
  /** Inclusive, UTC ISO 8601; a date alone is the start of that day (UTC). */
  from: bound.optional().describe('inclusive: an ISO 8601 UTC date-time, or a date alone (2026-11-26) meaning the start of that day, UTC'),
  /** Exclusive, UTC ISO 8601; a date alone is the end of that day (UTC), so from=to=that date is the whole day. */
  to: bound.optional().describe('exclusive: an ISO 8601 UTC date-time, or a date alone (2026-11-26) meaning the end of that day, UTC — from=2026-11-26&to=2026-11-26 is that whole day'),
});
export type AuditFilter = z.infer<typeof AuditFilter>;

export interface AuditPage {
  readonly entries: AuditEntry[];
  /** Pass back as `cursor` for the next page; absent on the last page. */
  readonly next?: string;
}

export const MAX_PAGE = 1000;

/**
 * Validate a filter (unknown keys, bad times and from ≥ to are refused).
 * @throws LkError LK_VALIDATION
 */
export function parseFilter(filter: unknown): ValidFilter {
  const r = AuditFilter.safeParse(filter ?? {});
  if (!r.success) {
    const i = r.error.issues[0]!;
    throw new LkError('LK_VALIDATION', `audit filter ${i.path.join('.') || '(root)'}: ${i.message}`);
  }
  if (r.data.from && r.data.to && fromIso(r.data.from) >= toIso(r.data.to)) throw new LkError('LK_VALIDATION', 'audit filter: from must be before to');
  return validatedFilter(r.data);
}

const filterTag = (tenant: string, f: AuditFilter): string => createHash('sha256').update(JSON.stringify([tenant, f])).digest('base64url').slice(0, 12);

function decodeCursor(cursor: string, tag: string): number {
  const m = /^([A-Za-z0-9_-]{12})\.(\d{1,15})$/.exec(cursor);
  if (!m || m[1] !== tag) throw new LkError('LK_VALIDATION', 'cursor does not belong to this tenant and filter');
  return Number(m[2]);
}

const cache = new WeakMap<Database, Map<string, Statement>>();
function prepared(db: Database, sql: string): Statement {
  let m = cache.get(db);
  if (!m) cache.set(db, (m = new Map()));
  let s = m.get(sql);
  if (!s) m.set(sql, (s = db.prepare(sql).raw()));
  return s;
}

/**
 * One page of `tenant`'s entries matching `filter`, in chain order.
 * @throws LkError LK_VALIDATION for a bad filter, limit or cursor (a cursor only works with the
 *   tenant and filter it came from); LK_STORE_CORRUPT when the file is damaged.
 */
export function queryAudit(db: Database, tenant: string, filter: unknown = {}, opts: { cursor?: string; limit?: number } = {}): AuditPage {
  const f = parseFilter(filter);
  return pageOf(db, tenant, filterTag(tenant, f), whereOf(f), opts);
}

/**
 * One page of chain `chain`'s rows matching `where` (its SQL starts with the chain's `tenant = ?`), after the
 * cursor, in chain order; the next cursor carries `tag`, so it works only with the question it came from.
 * @throws LkError LK_VALIDATION for a bad limit or cursor; LK_STORE_CORRUPT when the file is damaged.
 */
function pageOf(db: Database, chain: string, tag: string, where: { sql: string; params: unknown[] }, opts: { cursor?: string; limit?: number }): AuditPage {
  const limit = opts.limit ?? 100;
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_PAGE) throw new LkError('LK_VALIDATION', `limit must be 1..${MAX_PAGE}`);
  const after = opts.cursor === undefined ? 0 : decodeCursor(opts.cursor, tag);
  try {
    const rows = prepared(db, `SELECT ${ENTRY_COLUMNS.join(', ')} FROM audit_entry WHERE ${where.sql} AND seq > ? ORDER BY seq LIMIT ?`).all(chain, ...where.params, after, limit + 1) as EntryRow[];
    const entries = rows.slice(0, limit).map((r) => rowToEntry(chain, r));
    const last = entries[entries.length - 1];
    return rows.length > limit && last ? { entries, next: `${tag}.${last.seq}` } : { entries };
  } catch (err) {
    throw mapSqliteError(err);
  }
}

/**
 * The site chain's account entries (kind `identity`: sign-ins, failed attempts, re-authentications for a
 * signature, sign-outs, password changes, locks, accounts created or disabled) about the people of `tenant`: the
 * account the entry is about (`args.user`, else its actor) is one of `people` (the tenant's local users) or a
 * person the identity provider signed in for this tenant. An administrator's change to another tenant's account
 * is that tenant's, not this one's, even when the administrator also works for this one. An entry that names
 * another tenant (a re-authentication for a signature there, `args.tenant`; an account or a provider sign-in for
 * several tenants, `args.tenants`) is not shown either, even about a person of this tenant who also works for
 * that one: R1 before completeness (such entries are the site administrator's to read). Nothing else of the site chain: another tenant's people, the
 * node's own events, and a failed attempt at an id that is nobody of this tenant (a password typed into the
 * user field stays where it is) are not returned.
 *
 * `filter.actor` here means the person: entries they made and entries about their account (a failed attempt is
 * made by `system` and names the account). The other filters are as in {@link queryAudit}.
 * @throws LkError LK_VALIDATION for a bad filter, limit or cursor; LK_STORE_CORRUPT when the file is damaged.
 */
export function querySitePeople(db: Database, siteTenant: string, tenant: string, people: readonly string[], filter: unknown = {}, opts: { cursor?: string; limit?: number } = {}): AuditPage {
  const f = parseFilter(filter);
  const { actor, ...rest } = f;
  const w = whereOf(rest);
  const person = "coalesce(json_extract(args, '$.user'), actor)";
  // the tenant's people: its local users (a JSON array parameter), and whoever the provider signed in for it
  const ofTenant = `(${person} IN (SELECT value FROM json_each(?))
    OR ${person} IN (SELECT s.actor FROM audit_entry s WHERE s.tenant = ? AND s.action = 'auth.sso_sign_in'
      AND EXISTS (SELECT 1 FROM json_each(s.args, '$.tenants') WHERE value = ?)))`;
  // the person: what they did, and what was done about their account (a failed attempt is made by `system`)
  const who = actor === undefined ? '' : ` AND (actor = ? OR ${person} = ?)`;
  // nothing that names another tenant
  const own = ` AND (json_extract(args, '$.tenant') IS NULL OR json_extract(args, '$.tenant') = ?)
    AND NOT EXISTS (SELECT 1 FROM json_each(args, '$.tenants') WHERE value <> ?)`;
  const where = {
    sql: `${w.sql} AND kind = 'identity' AND ${ofTenant}${who}${own}`,
    params: [...w.params, JSON.stringify(people), siteTenant, tenant, ...(actor === undefined ? [] : [actor, actor]), tenant, tenant],
  };
  return pageOf(db, siteTenant, filterTag(`${siteTenant}/${tenant}`, f), where, opts);
}

/** Every matching entry of `tenant` in chain order, streamed (exports). Same validation as {@link queryAudit}. */
export function* iterateAudit(db: Database, tenant: string, filter: unknown = {}, range: { fromSeq?: number; toSeq?: number } = {}): Generator<AuditEntry> {
  yield* selectEntries(db, tenant, parseFilter(filter), range);
}
