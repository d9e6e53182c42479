/**
 * Signed checkpoints: (tenant, seq, head hash, time) signed with the site key.
 * A hash chain alone cannot show that its tail was cut off or that a suffix
 * was rewritten with recomputed hashes; a signed statement "chain T had head
 * H at seq N", kept in the database AND in a log file outside it, can.
 *
 * The log file is written first and fsync'd, then the database row: a crash
 * between them leaves a checkpoint only in the log, which still verifies.
 */
import { closeSync, existsSync, fstatSync, fsyncSync, ftruncateSync, openSync, readFileSync, readSync, statSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { LkError } from '../errors.js';
import { canonicalJson } from './entry.js';
import { signBytes, verifyBytes, type PublicSiteKey, type SiteKey } from './keys.js';

export interface Checkpoint {
  v: 1;
  tenant: string;
  seq: number;
  head_hash: string;
  /** UTC ISO 8601 with milliseconds. */
  ts: string;
  key_id: string;
}

export interface SignedCheckpoint extends Checkpoint {
  /** Ed25519 signature (base64) of the canonical JSON of the checkpoint without `sig`. */
  sig: string;
}

export function checkpointLogFile(dataDir: string): string {
  return join(dataDir, 'audit-checkpoints.log');
}

/** The exact bytes a checkpoint signature covers. */
export function checkpointBytes(c: Checkpoint): string {
  return canonicalJson({ v: c.v, tenant: c.tenant, seq: c.seq, head_hash: c.head_hash, ts: c.ts, key_id: c.key_id });
}

export function signCheckpoint(key: SiteKey, c: Omit<Checkpoint, 'v' | 'key_id'>): SignedCheckpoint {
  const cp: Checkpoint = { v: 1, tenant: c.tenant, seq: c.seq, head_hash: c.head_hash, ts: c.ts, key_id: key.keyId };
  return { ...cp, sig: signBytes(key, checkpointBytes(cp)) };
}

/** True when the signature is valid for `key` (the key id must name that key too). */
export function checkpointSignatureValid(key: PublicSiteKey, c: SignedCheckpoint): boolean {
  return c.key_id === key.keyId && verifyBytes(key, checkpointBytes(c), c.sig);
}

/** A checkpoint read from a file or database, or undefined when its shape is wrong. */
export function asCheckpoint(o: unknown): SignedCheckpoint | undefined {
  if (typeof o !== 'object' || o === null) return undefined;
  const c = o as Record<string, unknown>;
  const str = (k: string): boolean => typeof c[k] === 'string';
  if (c.v !== 1 || !str('tenant') || !str('head_hash') || !str('ts') || !str('key_id') || !str('sig')) return undefined;
  if (typeof c.seq !== 'number' || !Number.isSafeInteger(c.seq) || c.seq < 1) return undefined;
  return { v: 1, tenant: c.tenant as string, seq: c.seq, head_hash: c.head_hash as string, ts: c.ts as string, key_id: c.key_id as string, sig: c.sig as string };
}

/**
 * Append one checkpoint line and fsync before returning (durable outside the database).
 * A crash mid-write can leave a torn last line. It never reached the database (the log is written
 * first) and carries no verifiable signature, so it is cut off before appending: left in place it
 * would become an interior line that verification must treat as damage.
 */
export function appendCheckpointLog(file: string, c: SignedCheckpoint): void {
  let fd: number;
  try {
    fd = openSync(file, 'a+', 0o644);
  } catch (err) {
    throw checkpointLogError(file, err);
  }
  try {
    const size = fstatSync(fd).size;
    let prefix = '';
    if (size > 0) {
      const tail = Buffer.alloc(Math.min(size, TORN_SCAN_BYTES));
      readSync(fd, tail, 0, tail.length, size - tail.length);
      if (tail[tail.length - 1] !== 0x0a) {
        const nl = tail.lastIndexOf(0x0a);
        // a torn line is short; an unterminated tail longer than the scan is not ours to cut: keep it, verify reports it
        if (nl >= 0 || size <= TORN_SCAN_BYTES) ftruncateSync(fd, size - tail.length + nl + 1);
        else prefix = '\n';
      }
    }
    writeSync(fd, `${prefix}${canonicalJson(c)}\n`);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/**
 * Largest checkpoint log read whole. A line is ~300 bytes and the defaults write one per 1000 entries or
 * 5 minutes (~30 MB a year); past this the file is not one linekeeper wrote, and reading it would exhaust memory.
 */
export const MAX_CHECKPOINT_LOG_BYTES = 256 * 1024 * 1024;

function checkpointLogError(file: string, err: unknown): LkError {
  const errno = (err as NodeJS.ErrnoException | undefined)?.code ?? 'UNKNOWN';
  const reason = errno === 'EISDIR' ? 'is a directory' : errno === 'EACCES' || errno === 'EPERM' ? 'permission denied' : errno;
  return new LkError('LK_AUDIT_CHECKPOINT_LOG', `audit checkpoint log ${file}: ${reason}`, { file, errno }, { cause: err });
}

/** A checkpoint line is a few hundred bytes; a torn one is shorter still. */
const TORN_SCAN_BYTES = 64 * 1024;

export interface CheckpointLog {
  readonly exists: boolean;
  readonly checkpoints: SignedCheckpoint[];
  /** Lines (1-based) that are not a checkpoint. A torn last line (crash mid-write) is not one of them. */
  readonly badLines: number[];
}

/**
 * Read the checkpoint log; a missing file is reported, not thrown (the caller decides whether that is damage).
 * @throws LkError LK_AUDIT_CHECKPOINT_LOG when the path is a directory, unreadable or over {@link MAX_CHECKPOINT_LOG_BYTES}.
 */
export function readCheckpointLog(file: string): CheckpointLog {
  if (!existsSync(file)) return { exists: false, checkpoints: [], badLines: [] };
  let text: string;
  try {
    const st = statSync(file);
    if (!st.isFile()) throw new LkError('LK_AUDIT_CHECKPOINT_LOG', `audit checkpoint log ${file}: ${st.isDirectory() ? 'is a directory' : 'is not a regular file'}`, { file });
    if (st.size > MAX_CHECKPOINT_LOG_BYTES) {
      throw new LkError('LK_AUDIT_CHECKPOINT_LOG', `audit checkpoint log ${file}: ${st.size} bytes, more than the ${MAX_CHECKPOINT_LOG_BYTES} a checkpoint log can hold`, { file, size: st.size });
    }
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw LkError.is(err) ? err : checkpointLogError(file, err);
  }
  const lines = text.split('\n');
  const checkpoints: SignedCheckpoint[] = [];
  const badLines: number[] = [];
  lines.forEach((line, i) => {
    if (line === '') return;
    let c: SignedCheckpoint | undefined;
    try {
      c = asCheckpoint(JSON.parse(line));
    } catch {
      c = undefined;
    }
    if (c) checkpoints.push(c);
    else if (!(i === lines.length - 1 && !text.endsWith('\n'))) badLines.push(i + 1);
  });
  return { exists: true, checkpoints, badLines };
}
