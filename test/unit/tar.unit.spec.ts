/**
 * The tar writer of archives (src/ops/tar.ts): a ustar header describes a file's size in 11 octal digits, so a file of
 * 8 GiB or more cannot be written as one; it is refused with its own code rather than given a size that wraps, which
 * a reader would take for a shorter file followed by garbage. The file is sparse: nothing of it is read.
 */
import { pbkdf2 } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, truncateSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_TAR_FILE, writeTarGz } from '../../src/ops/tar.js';
import { tempDir } from './audit-helpers.js';

let t: { dir: string; cleanup: () => void };
beforeAll(() => {
  t = tempDir('lk-tar-');
});
afterAll(() => t.cleanup());

describe('[A11.17] tar files of archives', () => {
  it('refuses a file of 8 GiB or more (LK_FILE_TOO_LARGE), leaving no tar file behind', async () => {
    expect(MAX_TAR_FILE).toBe(8 * 1024 ** 3 - 1);
    const dir = join(t.dir, 'A-big');
    mkdirSync(dir);
    writeFileSync(join(dir, 'a.txt'), 'before the large file\n');
    writeFileSync(join(dir, 'b.bin'), '');
    truncateSync(join(dir, 'b.bin'), MAX_TAR_FILE + 1);
    await expect(writeTarGz(dir, `${dir}.tar.gz`, { mtime: Date.UTC(2026, 0, 1) })).rejects.toMatchObject({ code: 'LK_FILE_TOO_LARGE', message: expect.stringMatching(/A-big\/b\.bin is 8589934592 bytes/) });
    expect(readdirSync(t.dir).sort()).toEqual(['A-big']);
    expect(existsSync(`${dir}.tar.gz`)).toBe(false);
  }, 30_000);

  it('leaves nothing behind either when the file system answers late: the tar file is created before the walk can fail', async () => {
    // libuv's thread pool busy with key derivations, so an asynchronous open queued now completes only after them;
    // the walk fails on the first large file long before (a stream opening its own file created it after the
    // cleanup had looked for it, which a loaded CI machine showed as a folder that could not be removed)
    const dir = join(t.dir, 'B-big');
    mkdirSync(dir);
    writeFileSync(join(dir, 'b.bin'), '');
    truncateSync(join(dir, 'b.bin'), MAX_TAR_FILE + 1);
    const busy = Array.from({ length: 8 }, () => new Promise((resolve) => pbkdf2('x', 'y', 200_000, 32, 'sha256', resolve)));
    await expect(writeTarGz(dir, `${dir}.tar.gz`, { mtime: Date.UTC(2026, 0, 1) })).rejects.toMatchObject({ code: 'LK_FILE_TOO_LARGE' });
    await Promise.all(busy);
    await new Promise((resolve) => setImmediate(resolve));
    expect(readdirSync(t.dir).filter((n) => n.startsWith('B-big')).sort()).toEqual(['B-big']);
  }, 60_000);
});
