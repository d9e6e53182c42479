#!/usr/bin/env node
// The build of dist/: the TypeScript compile (tsconfig.build.json), then what is written from the compiled modules
// (the help manifest, tools/help-manifest.mjs). `npm run build` runs it, and so do tools/package.mjs and the tests' and
// the benches' rebuilds (test/helpers/bin.ts, bench/lib.ts): one build, whoever asks for it.
//   node tools/build.mjs
import { execFileSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { writeHelpManifest } from './help-manifest.mjs';

const root = fileURLToPath(new URL('..', import.meta.url));
execFileSync(process.execPath, [createRequire(import.meta.url).resolve('typescript/bin/tsc'), '-p', 'tsconfig.build.json'], { cwd: root, stdio: 'inherit' });
await writeHelpManifest();
