/** SQLite's structural check of the database file, as `audit verify` runs it (verify.ts, and its workers). */
import type { Database } from 'better-sqlite3';

/**
 * `PRAGMA quick_check(1)`: 'ok', or what is wrong. Reading a damaged page can also fail outright — an entry's
 * record whose bytes are no longer JSON fails the columns generated from it ("malformed JSON") — which says the
 * same: the file is damaged.
 */
export function quickCheck(db: Database): string {
  try {
    return String(db.pragma('quick_check(1)', { simple: true }));
  } catch (err) {
    if ((err as { name?: unknown }).name !== 'SqliteError') throw err;
    return `quick_check could not read it: ${(err as Error).message}`;
  }
}
