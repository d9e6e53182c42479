/**
 * File-system paths people hand to linekeeper (a key, a bundle, an export target, a data directory),
 * checked at the boundary so that a wrong path is a clear `LK_*` error and a documented exit code — never a
 * raw Node error with a stack trace. I/O code: the pure modules never import this.
 */
import { closeSync, existsSync, fsyncSync, openSync, readFileSync, statSync, writeSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { LkError, type ErrorCode } from './errors.js';

/** Errno codes of Node's file-system errors that mean "you may not" rather than "it is not there". */
const DENIED = new Set(['EACCES', 'EPERM', 'EROFS']);

/** True for a Node system error (it carries an errno `code` such as ENOENT and usually a `path`). */
export function isSystemError(err: unknown): err is NodeJS.ErrnoException {
  return err instanceof Error && typeof (err as NodeJS.ErrnoException).code === 'string' && /^E[A-Z0-9]+$/.test((err as NodeJS.ErrnoException).code!);
}

/**
 * Turn a Node file-system error about `file` (what it is: "site public key", "bundle", …) into an LkError.
 * Reading: LK_FILE_NOT_FOUND, LK_FILE_NOT_A_FILE, LK_FILE_UNREADABLE. Writing (`output`): LK_OUTPUT_INVALID.
 */
export function fileError(err: unknown, file: string, what: string, mode: 'input' | 'output' = 'input'): LkError {
  const errno = isSystemError(err) ? err.code! : 'UNKNOWN';
  const reason = errno === 'ENOENT' ? 'does not exist' : errno === 'EISDIR' ? 'is a directory' : errno === 'ENOTDIR' ? 'has a part that is not a directory' : DENIED.has(errno) ? 'permission denied' : `cannot be used (${errno})`;
  const detail = { file, errno };
  if (mode === 'output') return new LkError('LK_OUTPUT_INVALID', `${what} ${file}: ${reason}`, detail, { cause: err });
  const code: ErrorCode = errno === 'ENOENT' || errno === 'ENOTDIR' ? 'LK_FILE_NOT_FOUND' : errno === 'EISDIR' ? 'LK_FILE_NOT_A_FILE' : 'LK_FILE_UNREADABLE';
  return new LkError(code, `${what} ${file}: ${reason}`, detail, { cause: err });
}

/**
 * Read a text file a person named on the command line.
 * @throws LkError LK_FILE_NOT_FOUND, LK_FILE_NOT_A_FILE (a directory, a device, a FIFO), LK_FILE_UNREADABLE,
 *   LK_FILE_TOO_LARGE (over `maxBytes`, default 256 MiB — past that a string cannot be built anyway).
 */
export function readInputFile(file: string, what: string, maxBytes = 256 * 1024 * 1024): string {
  let size: number;
  try {
    const st = statSync(file);
    if (!st.isFile()) throw new LkError('LK_FILE_NOT_A_FILE', `${what} ${file}: ${st.isDirectory() ? 'is a directory' : 'is not a regular file'}`, { file });
    size = st.size;
  } catch (err) {
    if (LkError.is(err)) throw err;
    throw fileError(err, file, what);
  }
  if (size > maxBytes) throw new LkError('LK_FILE_TOO_LARGE', `${what} ${file}: ${size} bytes, more than the ${maxBytes} linekeeper reads`, { file, size, maxBytes });
  try {
    return readFileSync(file, 'utf8');
  } catch (err) {
    throw fileError(err, file, what);
  }
}

/**
 * Check that `file` can be created or replaced: its folder exists and is a folder, and it is not a folder
 * itself. Checked before any work, so an export does not sign a checkpoint and then fail to write.
 * @throws LkError LK_OUTPUT_INVALID
 */
export function checkOutputFile(file: string, what: string): void {
  const abs = resolve(file);
  const dir = dirname(abs);
  let dirOk = false;
  try {
    dirOk = statSync(dir).isDirectory();
  } catch {
    dirOk = false;
  }
  if (!dirOk) throw new LkError('LK_OUTPUT_INVALID', `${what} ${file}: folder ${dir} does not exist`, { file, dir });
  if (existsSync(abs) && !statSync(abs).isFile()) {
    throw new LkError('LK_OUTPUT_INVALID', `${what} ${file}: ${statSync(abs).isDirectory() ? 'is a directory' : 'is not a regular file'}`, { file });
  }
}

/**
 * A data directory given on the command line or in the configuration must be a directory when it exists
 * (a missing one is created by `serve`; offline commands report the missing database themselves).
 * @throws LkError LK_DATA_DIR_NOT_A_DIRECTORY
 */
export function checkDataDirPath(dir: string): void {
  let isDir = true;
  try {
    isDir = statSync(dir).isDirectory();
  } catch (err) {
    if (isSystemError(err) && err.code === 'ENOTDIR') isDir = false;
    // ENOENT: created later (serve) or reported as "no database" (offline commands)
  }
  if (!isDir) throw new LkError('LK_DATA_DIR_NOT_A_DIRECTORY', `data directory ${dir}: is not a directory`, { dir });
}

/** fsync a file, or a folder so the names in it (a rename) are durable too. */
export function fsyncPath(path: string): void {
  const fd = openSync(path, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/**
 * Write `bytes` to a new file (never over an existing one) with `mode`, on disk when this returns (fsync): what a
 * record linekeeper keeps (a release package's files, a report, an archive's files) is written with.
 * @throws LkError LK_CONFLICT when `file` exists (nothing is written); a Node error otherwise.
 */
export function writeNewFile(file: string, bytes: Buffer, mode: number): void {
  let fd: number;
  try {
    fd = openSync(file, 'wx', mode);
  } catch (err) {
    if (isSystemError(err) && err.code === 'EEXIST') throw new LkError('LK_CONFLICT', `${file} exists; it is never overwritten`, {}, { cause: err });
    throw err;
  }
  try {
    for (let off = 0; off < bytes.length; ) off += writeSync(fd, bytes, off);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}
