/**
 * SQLite failures as stable LK_* codes. Its own module so that the audit
 * trail (which the store composes into every transaction) can map the errors
 * of its own statements without importing the store that imports it.
 */
import { LkError } from '../errors.js';

/**
 * Map SQLite failures to stable codes: a damaged file is LK_STORE_CORRUPT, a trigger refusal LK_AUDIT_IMMUTABLE,
 * a full disk LK_STORE_FULL (the transaction rolled back: nothing of it was written).
 */
export function mapSqliteError(err: unknown): unknown {
  if (LkError.is(err)) return err;
  const e = err as { code?: unknown; message?: unknown };
  const code = typeof e?.code === 'string' ? e.code : '';
  const msg = typeof e?.message === 'string' ? e.message : '';
  if (msg.includes('LK_AUDIT_IMMUTABLE')) return new LkError('LK_AUDIT_IMMUTABLE', msg.replace(/^.*LK_AUDIT_IMMUTABLE: /, ''), undefined, { cause: err });
  if (code === 'SQLITE_FULL' || (code.startsWith('SQLITE_IOERR') && /no space|disk is full/i.test(msg))) {
    return new LkError('LK_STORE_FULL', `the data directory's disk is full: nothing was written (${code})`, { sqlite: code }, { cause: err });
  }
  if (code.startsWith('SQLITE_CORRUPT') || code === 'SQLITE_NOTADB') {
    return new LkError('LK_STORE_CORRUPT', `database file is damaged or not a database (${code})`, { sqlite: code }, { cause: err });
  }
  return err;
}
