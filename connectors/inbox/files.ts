/**
 * The file side of the folder connectors (MES inbox, LIMS results): a root
 * folder with one sub-folder per tenant holding `*.json` documents.
 *
 * Tenant isolation starts here (R1): a tenant is only ever a validated id, so
 * no caller can walk out of its folder (`../`), and symbolic links are not
 * followed anywhere below the root, so one tenant's folder cannot point into
 * another's or out of the data directory. Files are only read: an invalid file
 * stays where it is, unchanged, for a person to look at.
 */
import { createHash } from 'node:crypto';
import { type Stats, closeSync, constants, fstatSync, lstatSync, openSync, readSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { TENANT_ID_RE } from '../../src/domain/batch-record.js';
import { LkError } from '../../src/errors.js';

/** Larger documents are refused unread: no batch record or QC result comes near this. */
export const MAX_DOCUMENT_BYTES = 1 << 20;

/**
 * Refuse anything that is not a tenant id before it becomes part of a path.
 * @throws LkError(LK_VALIDATION) for `../x`, `a/b`, upper case, empty, non-strings.
 */
export function assertTenantId(tenant: unknown): asserts tenant is string {
  if (typeof tenant !== 'string' || !TENANT_ID_RE.test(tenant)) {
    throw new LkError('LK_VALIDATION', `${JSON.stringify(String(tenant)).slice(0, 80)} is not a tenant id (lower-case letters, digits and dashes)`, { field: 'tenant' });
  }
}

/** True when `path` is a real directory (not a symbolic link to one). */
export function isRealDir(path: string): boolean {
  try {
    return lstatSync(path).isDirectory();
  } catch {
    return false;
  }
}

/** Tenant folders under `root` (valid ids, real directories), sorted. */
export function tenantDirs(root: string): string[] {
  let names: string[];
  try {
    names = readdirSync(root);
  } catch {
    return [];
  }
  return names.filter((n) => TENANT_ID_RE.test(n) && isRealDir(join(root, n))).sort();
}

/**
 * Names of the documents in a tenant folder, sorted: `*.json`, not hidden
 * (writers put a temporary `.name.tmp` beside the target and rename it, so a
 * half-written file is never picked up). A missing or symlinked folder has none.
 */
export function documentNames(root: string, tenant: string): string[] {
  const dir = join(root, tenant);
  if (!isRealDir(dir)) return [];
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return [];
  }
  return names.filter((n) => n.endsWith('.json') && !n.startsWith('.')).sort();
}

export type ReadResult =
  | { readonly ok: true; readonly bytes: Buffer; readonly sha256: string }
  | { readonly ok: false; readonly reason: 'missing' | 'not_a_file' | 'too_large' | 'unreadable'; readonly message: string };

/** What a non-regular file is, in the words a person checking the folder would use. */
function kindOf(st: Stats): string {
  if (st.isFIFO()) return 'a FIFO (named pipe)';
  if (st.isDirectory()) return 'a directory';
  if (st.isSocket()) return 'a socket';
  if (st.isCharacterDevice() || st.isBlockDevice()) return 'a device';
  return 'of another kind';
}

/**
 * Read one document without following a symbolic link (O_NOFOLLOW, and the
 * descriptor's own stat, so a file swapped between checks is still refused).
 *
 * The open is non-blocking (O_NONBLOCK): a FIFO or a device named like a
 * document would otherwise hold the open — and with it the event loop, the API
 * and the PLC heartbeats — until something writes to it. Only a regular file is
 * read; O_NONBLOCK changes nothing for one.
 */
export function readDocument(path: string): ReadResult {
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK | (constants.O_NOFOLLOW ?? 0));
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return { ok: false, reason: 'missing', message: 'file not found' };
    if (code === 'ELOOP') return { ok: false, reason: 'not_a_file', message: 'is a symbolic link (not followed)' };
    // a FIFO or socket that cannot be opened for reading (ENXIO), a device that refuses a non-blocking open
    if (code === 'ENXIO' || code === 'EAGAIN' || code === 'EWOULDBLOCK') return { ok: false, reason: 'not_a_file', message: `is not a regular file (${code})` };
    return { ok: false, reason: 'unreadable', message: `cannot be read (${code ?? 'error'})` };
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile()) return { ok: false, reason: 'not_a_file', message: `is ${kindOf(st)}, not a regular file: not read` };
    if (st.size > MAX_DOCUMENT_BYTES) return { ok: false, reason: 'too_large', message: `is ${st.size} bytes (more than ${MAX_DOCUMENT_BYTES})` };
    const buf = Buffer.alloc(st.size);
    let off = 0;
    while (off < buf.length) {
      const n = readSync(fd, buf, off, buf.length - off, off);
      if (n === 0) break;
      off += n;
    }
    const bytes = buf.subarray(0, off);
    return { ok: true, bytes, sha256: createHash('sha256').update(bytes).digest('hex') };
  } catch (e) {
    return { ok: false, reason: 'unreadable', message: `cannot be read (${(e as NodeJS.ErrnoException).code ?? 'error'})` };
  } finally {
    closeSync(fd);
  }
}

/**
 * JSON text (a UTF-8 byte-order mark, as some Windows exports write, is allowed).
 * Returns the error message instead of throwing.
 */
export function parseJson(bytes: Buffer): { ok: true; value: unknown } | { ok: false; message: string } {
  try {
    return { ok: true, value: JSON.parse(bytes.toString('utf8').replace(/^\uFEFF/, '')) as unknown };
  } catch (e) {
    return { ok: false, message: `not valid JSON (${(e as Error).message.split('\n')[0]})` };
  }
}

/** The `tenant` field of a parsed document, if it has one that is a string. */
export function tenantField(value: unknown): string | undefined {
  const t = value && typeof value === 'object' ? (value as { tenant?: unknown }).tenant : undefined;
  return typeof t === 'string' ? t : undefined;
}
