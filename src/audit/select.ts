/**
 * Selecting a tenant's entries by a filter that has already been validated (query.ts's `parseFilter`): the SQL
 * of a filter, the instants its bounds mean, and the entries it selects in chain order. No schema library here:
 * this is what the release package's worker thread reads the trail with, and the filter's schema (zod) stays on
 * the thread that received the filter, where a bad one is refused (src/engine/release-worker.ts).
 */
import type { Database } from 'better-sqlite3';
import { mapSqliteError } from '../store/sqlite-errors.js';
import { ENTRY_COLUMNS, rowToEntry, type AuditEntry, type EntryRow } from './entry.js';
import type { AuditFilter } from './query.js';

declare const validated: unique symbol;
/** A filter `parseFilter` accepted (unknown keys, bad times and from ≥ to refused): only it selects entries. */
export type ValidFilter = AuditFilter & { readonly [validated]: true };

/** The filter of every entry of the chain (an unfiltered export). */
export const EVERY_ENTRY: ValidFilter = Object.freeze({}) as ValidFilter;

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
