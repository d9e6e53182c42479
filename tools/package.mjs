#!/usr/bin/env node
// `npm run package`: the offline install media of linekeeper — one tar.gz and one .deb — holding the compiled
// JavaScript (dist), the production node_modules (better-sqlite3's native addon as built here), the
// configuration templates, the systemd unit and an install script. Installing needs no network.
//
// Native code: better-sqlite3 (and any other addon) is copied as built in this checkout, so the package is for
// THIS machine's CPU architecture and Node ABI (recorded in BUILDINFO; install.sh refuses a mismatch). Build
// it on the target's architecture and Node major (a container of the target image will do).
//
// Why the production subset is copied rather than `npm ci --omit=dev` into a staging folder: `npm ci` offline
// works only when every tarball is in npm's cache, and it rebuilds native addons (needs a compiler and Node
// headers); copying what `npm ls --omit=dev` lists from the node_modules that the tests just ran against is
// offline by construction and ships exactly what was tested.
//
// Options: --out <dir> (default build/), --skip-build (reuse dist/), --no-deb.
import { execFileSync } from 'node:child_process';
import { chmodSync, cpSync, existsSync, mkdirSync, readdirSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { basename, dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { writeManifest } from './manifest.mjs';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const args = process.argv.slice(2);
const opt = (name) => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : undefined;
};
const out = resolve(opt('--out') ?? join(root, 'build'));
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
const arch = process.arch;
const nodeMajor = process.versions.node.split('.')[0];
const name = `linekeeper-${pkg.version}`;
const say = (m) => process.stderr.write(`package: ${m}\n`);

if (!args.includes('--skip-build') || !existsSync(join(root, 'dist/src/cli/main.js'))) {
  say('building (tools/build.mjs: tsc -p tsconfig.build.json, the help manifest)');
  execFileSync(process.execPath, [join(root, 'tools/build.mjs')], { stdio: 'inherit', cwd: root });
}

const stage = join(out, 'stage');
const app = join(stage, name);
rmSync(stage, { recursive: true, force: true });
mkdirSync(app, { recursive: true });

// what a running node never reads: sources, maps, docs, tests, native build intermediates. Folders are skipped
// only at the top of a package (a `doc/` deeper down may be code: yaml has one).
const SKIP_TOP = new Set(['test', 'tests', '__tests__', 'docs', 'example', 'examples', '.github', 'benchmark', 'deps', 'src-native']);
const SKIP_FILE = /(\.map|\.ts|\.mts|\.cts|\.md|\.markdown|\.tsbuildinfo|\.gyp|\.gypi|\.cc|\.cpp|\.h|\.c|\.o|\.a|Makefile)$/i;
const keeper = (pkgRoot) => (src) => {
  const rel = relative(pkgRoot, src);
  if (rel === '') return true;
  const parts = rel.split(sep);
  if (parts.includes('node_modules')) return false; // nested packages are listed (and copied) on their own lines
  if (parts.length >= 1 && SKIP_TOP.has(parts[0])) return false;
  if (parts.includes('obj.target') || parts.includes('.deps')) return false;
  return /\.node$/.test(src) || !SKIP_FILE.test(basename(src));
};

say('copying dist, bin, configuration templates, unit');
cpSync(join(root, 'dist'), join(app, 'dist'), { recursive: true, filter: (s) => !/\.(map|tsbuildinfo)$/.test(s) && !s.includes(`${sep}test${sep}`) });
for (const f of ['bin', 'systemd', 'console', 'package.json', 'package-lock.json', 'README.md']) cpSync(join(root, f), join(app, f), { recursive: true });
mkdirSync(join(app, 'config'));
// every shipped JSON Schema (config/<kind>.schema.json, one per `linekeeper config schema --of` kind)
const schemas = readdirSync(join(root, 'config')).filter((f) => f.endsWith('.schema.json'));
// config/models: the default seed's trained vision classifier (src/models/seed.ts); without it the first start of
// every installed node renders and trains on 700 six-camera frame sets (~6.5 s of CPU) for the same bytes
for (const f of ['site.yaml', ...schemas, 'policy', 'batches', 'golden', 'models']) cpSync(join(root, 'config', f), join(app, 'config', f), { recursive: true });
// the standalone audit verifier: `linekeeper archive` puts a copy in every archive it writes (src/ops/archive.ts)
mkdirSync(join(app, 'tools'));
cpSync(join(root, 'tools/verify-audit-bundle.mjs'), join(app, 'tools/verify-audit-bundle.mjs'));
// the requirements and their trace to the supplier's tests: `linekeeper validate oq` reports every requirement with its
// evidence from them (src/validation/trace.ts)
mkdirSync(join(app, 'validation'));
for (const f of ['requirements.yaml', 'traceability.json']) cpSync(join(root, 'validation', f), join(app, 'validation', f));

say('copying the production node_modules (npm ls --omit=dev)');
const modules = realpathSync(join(root, 'node_modules'));
const listed = execFileSync('npm', ['ls', '--omit=dev', '--all', '--parseable'], { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'], maxBuffer: 64 << 20 })
  .split('\n').filter((l) => l.includes(`${sep}node_modules${sep}`));
for (const p of new Set(listed)) {
  const real = realpathSync(p);
  const rel = relative(modules, real);
  if (rel.startsWith('..')) continue;
  cpSync(real, join(app, 'node_modules', rel), { recursive: true, dereference: true, filter: keeper(real) });
}
if (!existsSync(join(app, 'node_modules/better-sqlite3/build/Release/better_sqlite3.node'))) throw new Error('better-sqlite3 native addon missing from the copy');

writeFileSync(join(app, 'BUILDINFO'), `${JSON.stringify({ name: pkg.name, version: pkg.version, arch, node: process.versions.node, abi: process.versions.modules, built_at: new Date().toISOString() }, null, 2)}\n`);
cpSync(join(root, 'tools/install.sh'), join(app, 'install.sh'));
chmodSync(join(app, 'install.sh'), 0o755);
chmodSync(join(app, 'bin/linekeeper.js'), 0o755);

// the last step of the application folder: MANIFEST.json names every file in it with its SHA-256 and mode, for
// `linekeeper validate iq` on the node (tools/manifest.mjs); whatever else goes into the folder goes in before this
const manifest = writeManifest(app, { name: pkg.name, version: pkg.version });
say(`MANIFEST.json: ${Object.keys(manifest.manifest.files).length} files, sha256 ${manifest.sha256}`);

mkdirSync(out, { recursive: true });
const tarball = join(out, `${name}-linux-${arch}-node${nodeMajor}.tar.gz`);
say(`writing ${tarball}`);
execFileSync('tar', ['-czf', tarball, '--owner=0', '--group=0', '-C', stage, name], { stdio: 'inherit' });

if (!args.includes('--no-deb')) {
  const debArch = { x64: 'amd64', arm64: 'arm64', arm: 'armhf' }[arch] ?? arch;
  const debRoot = join(stage, 'deb');
  mkdirSync(join(debRoot, 'opt'), { recursive: true });
  cpSync(app, join(debRoot, 'opt/linekeeper'), { recursive: true });
  mkdirSync(join(debRoot, 'lib/systemd/system'), { recursive: true });
  cpSync(join(root, 'systemd/linekeeper.service'), join(debRoot, 'lib/systemd/system/linekeeper.service'));
  mkdirSync(join(debRoot, 'DEBIAN'));
  const size = execFileSync('du', ['-sk', join(debRoot, 'opt')], { encoding: 'utf8' }).split('\t')[0];
  writeFileSync(join(debRoot, 'DEBIAN/control'), [
    'Package: linekeeper', `Version: ${pkg.version}`, `Architecture: ${debArch}`, 'Maintainer: linekeeper <linekeeper@localhost>',
    `Depends: nodejs (>= ${nodeMajor}), systemd, adduser`, `Installed-Size: ${size}`, 'Section: misc', 'Priority: optional',
    `Description: ${pkg.description.slice(0, 70)}`, ` Built for Node ABI ${process.versions.modules} (${process.versions.node}); see /opt/linekeeper/README.md, "Operations".`, '',
  ].join('\n'));
  writeFileSync(join(debRoot, 'DEBIAN/postinst'), `#!/bin/sh
set -e
if [ "$1" = configure ]; then
  /opt/linekeeper/install.sh --from-deb
fi
exit 0
`);
  writeFileSync(join(debRoot, 'DEBIAN/prerm'), `#!/bin/sh
set -e
if [ -d /run/systemd/system ] && [ "$1" = remove ]; then systemctl stop linekeeper.service || true; fi
exit 0
`);
  chmodSync(join(debRoot, 'DEBIAN/postinst'), 0o755);
  chmodSync(join(debRoot, 'DEBIAN/prerm'), 0o755);
  const deb = join(out, `linekeeper_${pkg.version}_${debArch}.deb`);
  say(`writing ${deb}`);
  execFileSync('dpkg-deb', ['--root-owner-group', '-Zgzip', '-z6', '--build', debRoot, deb], { stdio: ['ignore', 'ignore', 'inherit'] });
}
rmSync(stage, { recursive: true, force: true });
process.stdout.write(`${tarball}\n`);
