// The package manifest of linekeeper's install media: MANIFEST.json at the root of the application folder, naming
// every regular file of it with its SHA-256 and mode, so that `linekeeper validate iq` on the edge node can show
// that the installed files are the shipped ones, byte for byte (src/validation/iq.ts reads it; the signed IQ report
// carries the SHA-256 of MANIFEST.json itself, which names the exact files).
//
// Plain Node, no dependency: tools/package.mjs writes the manifest when the application folder is complete; the tests
// write one for a folder of their own with the same function, so the IQ is tested against what packaging writes.
import { createHash } from 'node:crypto';
import { lstatSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export const MANIFEST_FILE = 'MANIFEST.json';
export const MANIFEST_FORMAT = 'linekeeper.package-manifest';

const sha256 = (bytes) => createHash('sha256').update(bytes).digest('hex');

/**
 * Every regular file under `dir`, as `/`-separated paths relative to it, sorted. A symbolic link, socket or device in
 * the folder throws: the manifest covers regular files, and the package copies its dependencies dereferenced.
 */
export function listFiles(dir) {
  const out = [];
  const walk = (abs, rel) => {
    for (const name of readdirSync(abs)) {
      const a = join(abs, name);
      const r = rel === '' ? name : `${rel}/${name}`;
      const st = lstatSync(a);
      if (st.isDirectory()) walk(a, r);
      else if (st.isFile()) out.push(r);
      else throw new Error(`${a}: not a regular file or folder; the package manifest covers regular files only`);
    }
  };
  walk(dir, '');
  return out.sort();
}

/** The manifest of `dir`: every regular file but MANIFEST.json itself, keys sorted, mode as four octal digits. */
export function buildManifest(dir, { name, version }) {
  const files = {};
  for (const rel of listFiles(dir)) {
    if (rel === MANIFEST_FILE) continue;
    const abs = join(dir, ...rel.split('/'));
    files[rel] = { sha256: sha256(readFileSync(abs)), mode: (lstatSync(abs).mode & 0o7777).toString(8).padStart(4, '0') };
  }
  return { format: MANIFEST_FORMAT, name, version, files };
}

/** Write `dir`/MANIFEST.json; returns the manifest and the SHA-256 of the file as written (the package's hash). */
export function writeManifest(dir, meta) {
  const manifest = buildManifest(dir, meta);
  const text = `${JSON.stringify(manifest, null, 2)}\n`;
  writeFileSync(join(dir, MANIFEST_FILE), text, { mode: 0o644 });
  return { manifest, sha256: sha256(text) };
}
