/**
 * What `audit verify` asks of a stored entry (migration 14: each row holds its record, the exact bytes its hash
 * covers; every other column is generated from them). Kept apart from the rest of the audit module so that
 * verify's worker threads load this and nothing else of it.
 */
import { hash } from 'node:crypto';
import { canonicalEntry, type EntryPosition } from './canonical-text.js';

/**
 * The position an entry's stored record states, when the record is intact: canonical JSON of a hashed entry
 * ({@link canonicalEntry}) whose SHA-256 is the stored `hash`. Undefined for anything else. This is all
 * `audit verify` asks of a row (migration 14: every other column is generated from the record); the caller
 * compares the position with the row's chain, seq and predecessor.
 */
export function intactRecord(body: unknown, storedHash: unknown): EntryPosition | undefined {
  const at = canonicalEntry(body);
  return at !== undefined && hash('sha256', body as string) === storedHash ? at : undefined;
}

/** True when a stored record is intact as entry `seq` of chain `tenant` (wherever the row now sits). */
export function recordVerifiesAt(tenant: string, body: unknown, storedHash: unknown, seq: number): boolean {
  const at = intactRecord(body, storedHash);
  return at !== undefined && at.tenant === tenant && at.seq === seq;
}
