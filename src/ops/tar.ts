/**
 * A folder as a gzip-compressed POSIX tar (ustar) file: what `tar -xzf` (GNU, BSD, busybox) and any archive
 * tool reads, for an archive that travels as one file. Written here rather than through the system's `tar`
 * (the edge node may have none, and its options differ between implementations) or an npm package (one more
 * dependency for sixty lines). Regular files and folders only; entries in sorted order, owner 0, the given time,
 * so the same folder gives the same bytes. A ustar size is 11 octal digits: a file of 8 GiB or more cannot be
 * described, and is refused rather than written with a size that wraps (GNU's base-256 sizes are not used).
 */
import { closeSync, createWriteStream, fsyncSync, linkSync, lstatSync, openSync, readdirSync, readSync, unlinkSync } from 'node:fs';
import { basename, join } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGzip } from 'node:zlib';
import { LkError } from '../errors.js';

const BLOCK = 512;

function field(h: Buffer, off: number, len: number, s: string): void {
  h.write(s, off, Math.min(len, Buffer.byteLength(s)), 'utf8');
}
const octal = (n: number, len: number): string => `${n.toString(8).padStart(len - 1, '0')}\0`;

/** The largest size a ustar header holds: 11 octal digits, 8 GiB less one byte. */
export const MAX_TAR_FILE = 8 ** 11 - 1;

/** A ustar header; a path longer than 100 bytes is split at a `/` into prefix and name. */
function header(path: string, o: { size: number; mode: number; mtime: number; dir: boolean }): Buffer {
  let name = path;
  let prefix = '';
  if (Buffer.byteLength(name) > 100) {
    const cut = path.lastIndexOf('/', path.length - 2);
    prefix = path.slice(0, Math.max(0, cut));
    name = path.slice(cut + 1);
    if (cut < 0 || Buffer.byteLength(name) > 100 || Buffer.byteLength(prefix) > 155) throw new LkError('LK_INTERNAL', `${path}: too long a path for a tar header`);
  }
  const h = Buffer.alloc(BLOCK);
  field(h, 0, 100, name);
  field(h, 100, 8, octal(o.mode, 8));
  field(h, 108, 8, octal(0, 8));
  field(h, 116, 8, octal(0, 8));
  field(h, 124, 12, octal(o.size, 12));
  field(h, 136, 12, octal(Math.floor(o.mtime / 1000), 12));
  h.fill(' ', 148, 156);
  field(h, 156, 1, o.dir ? '5' : '0');
  field(h, 257, 8, 'ustar\x0000');
  field(h, 265, 32, 'root');
  field(h, 297, 32, 'root');
  field(h, 345, 155, prefix);
  let sum = 0;
  for (const b of h) sum += b;
  field(h, 148, 8, `${sum.toString(8).padStart(6, '0')}\0 `);
  return h;
}

function* entries(root: string, top: string, mtime: number): Generator<Buffer> {
  const walk = function* (rel: string): Generator<Buffer> {
    for (const name of readdirSync(join(root, rel)).sort()) {
      const r = rel ? `${rel}/${name}` : name;
      const abs = join(root, r);
      const st = lstatSync(abs);
      if (st.isDirectory()) {
        yield header(`${top}/${r}/`, { size: 0, mode: st.mode & 0o777, mtime, dir: true });
        yield* walk(r);
      } else if (st.isFile()) {
        if (st.size > MAX_TAR_FILE) throw new LkError('LK_FILE_TOO_LARGE', `${top}/${r} is ${st.size} bytes: a tar file (ustar) holds files under 8 GiB only; no tar file is written`, { file: `${top}/${r}`, bytes: st.size });
        yield header(`${top}/${r}`, { size: st.size, mode: st.mode & 0o777, mtime, dir: false });
        const fd = openSync(abs, 'r');
        try {
          const buf = Buffer.allocUnsafe(1 << 20);
          for (let n = readSync(fd, buf, 0, buf.length, null); n > 0; n = readSync(fd, buf, 0, buf.length, null)) yield Buffer.from(buf.subarray(0, n));
        } finally {
          closeSync(fd);
        }
        if (st.size % BLOCK !== 0) yield Buffer.alloc(BLOCK - (st.size % BLOCK));
      }
    }
  };
  yield header(`${top}/`, { size: 0, mode: lstatSync(root).mode & 0o777, mtime, dir: true });
  yield* walk('');
  yield Buffer.alloc(2 * BLOCK);
}

/**
 * Write folder `dir` as `file` (.tar.gz) holding one top folder of the same name; never over an existing file
 * (written beside it, then hard-linked into place, which fails when the name is taken).
 * @throws LkError LK_CONFLICT when `file` exists; LK_FILE_TOO_LARGE for a file of 8 GiB or more; file system errors
 *   as they come (nothing is left behind).
 */
export async function writeTarGz(dir: string, file: string, o: { mtime: number }): Promise<void> {
  const tmp = `${file}.tmp-${process.pid}`;
  // created here, before anything is read: a stream's own open is asynchronous and, when the walk fails at once (a
  // file too large), could create the file after the cleanup below had already looked for it. A name already taken
  // (another write of the same archive in this process) is refused and left to its owner.
  const out = openSync(tmp, 'wx', 0o444);
  try {
    await pipeline(Readable.from(entries(dir, basename(dir), o.mtime)), createGzip({ level: 6 }), createWriteStream(tmp, { fd: out }));
    const fd = openSync(tmp, 'r');
    try {
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    try {
      linkSync(tmp, file);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'EEXIST') throw new LkError('LK_CONFLICT', `${basename(file)} exists already; it is never overwritten`, { file: basename(file) }, { cause: err });
      throw err;
    }
  } finally {
    try {
      unlinkSync(tmp);
    } catch {
      // already gone
    }
  }
}
