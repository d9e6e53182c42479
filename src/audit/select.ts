/**
 * Selecting a tenant's entries by a filter that has already been validated (query.ts's `parseFilter`): the SQL
 * of a filter, the instants its bounds mean, and the entries it selects in chain order. No schema library here:
 * the release package's worker thread reads the trail with this (its bundle takes every entry), and the filter's
 * schema (zod) stays with whoever received the filter — the API route, the CLI, the archive — where a bad one is
 * refused. A validated filter is known at run time too, not only to the compiler: `parseFilter` registers the
 * (frozen) object it returns, and {@link assertValidFilter} refuses any other, even a copy of one.
 */
import type { Database } from 'better-sqlite3';
import { LkError } from '../errors.js';
import { mapSqliteError } from '../store/sqlite-errors.js';
import { ENTRY_COLUMNS, rowToEntry, type AuditEntry, type EntryRow } from './entry.js';
import type { AuditFilter } from './query.js';

declare const validated: unique symbol;
/** A filter `parseFilter` accepted (unknown keys, bad times and from ≥ to refused): only it selects entries. */
export type ValidFilter = AuditFilter & { readonly [validated]: true };

const VALIDATED = new WeakSet<object>();

/** Mark `f` validated (frozen, so it stays what was checked). For `parseFilter`, once its schema accepted `f`. */
export function validatedFilter(f: AuditFilter): ValidFilter {
  VALIDATED.add(Object.freeze(f));
  return f as ValidFilter;
}

/**
 * @throws LkError LK_INTERNAL when `f` is not an object `parseFilter` returned (the type says it is; a cast, a
 *   spread copy or plain JavaScript could say so too): nothing is selected by an unchecked filter.
 */
export function assertValidFilter(f: unknown): asserts f is ValidFilter {
  if (typeof f !== 'object' || f === null || !VALIDATED.has(f)) throw new LkError('LK_INTERNAL', 'an audit filter that parseFilter did not return: nothing is selected by an unchecked filter');
}

/** The filter of every entry of the chain (an unfiltered export). */
export const EVERY_ENTRY: ValidFilter = validatedFilter({});

export const COLUMN_FILTERS = ['batch', 'run', 'agent', 'tool', 'setpoint', 'reviewer', 'actor', 'kind', 'action'] as const;
const DATE_ONLY = /^\d{4}-\d{2}-\d{2}$/;

/** Entries are stored with millisecond ISO times; compare filters in the same form. A date alone starts its day. */
export function fromIso(s: string): string {
  return new Date(DATE_ONLY.test(s) ? `${s}T00:00:00Z` : s).toISOString();
}

/** The exclusive upper bound: a date alone ends its day (the next day's start, UTC). */
export function toIso(s: string): string {
  if (!DATE_ONLY.test(s)) return new Date(s).toISOString();
  const d = new Date(`${s}T00:00:00Z`);
  d.setUTCDate(d.getUTCDate() + 1);
  return d.toISOString();
}

/**
 * The instants a validated filter's bounds mean, as the query compares them: `from` inclusive, `to` exclusive, a
 * date alone being its whole UTC day. For what selects other records by the same period (an archive's runs).
 */
export function filterBounds(f: Pick<AuditFilter, 'from' | 'to'>): { from?: string; to?: string } {
  return { ...(f.from ? { from: fromIso(f.from) } : {}), ...(f.to ? { to: toIso(f.to) } : {}) };
}

/** The WHERE clause (after the chain's `tenant = ?`) and its parameters. */
export function whereOf(f: AuditFilter): { sql: string; params: unknown[] } {
  const parts = ['tenant = ?'];
  const params: unknown[] = [];
  for (const k of COLUMN_FILTERS) {
    if (f[k] !== undefined) {
      parts.push(`${k} = ?`);
      params.push(f[k]);
    }
  }
  if (f.from) {
    parts.push('ts >= ?');
    params.push(fromIso(f.from));
  }
  if (f.to) {
    parts.push('ts < ?');
    params.push(toIso(f.to));
  }
  return { sql: parts.join(' AND '), params };
}

/** Every entry of `tenant` that `f` selects, in chain order, streamed; `range` bounds the seqs (inclusive). */
export function* selectEntries(db: Database, tenant: string, f: ValidFilter, range: { fromSeq?: number; toSeq?: number } = {}): Generator<AuditEntry> {
  assertValidFilter(f);
  const w = whereOf(f);
  const sql = `SELECT ${ENTRY_COLUMNS.join(', ')} FROM audit_entry WHERE ${w.sql} AND seq >= ? AND seq <= ? ORDER BY seq`;
  try {
    for (const r of db.prepare(sql).raw().iterate(tenant, ...w.params, range.fromSeq ?? 1, range.toSeq ?? Number.MAX_SAFE_INTEGER) as IterableIterator<EntryRow>) {
      yield rowToEntry(tenant, r);
    }
  } catch (err) {
    throw mapSqliteError(err);
  }
}
