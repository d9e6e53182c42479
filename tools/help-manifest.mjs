#!/usr/bin/env node
// Writes dist/src/cli/commands/help-manifest.json: what `linekeeper --help` lists for each command, taken from the
// compiled command modules (src/cli/commands/help-manifest.ts says why). Run after every compile of the checkout, by
// tools/build.mjs (the build `npm run build`, the package, the tests and the benches run); alone:
//   node tools/help-manifest.mjs
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Command } from 'commander';

const DIR = new URL('../dist/src/cli/commands/', import.meta.url);

/** Write the manifest of the compiled build; returns the file written. */
export async function writeHelpManifest() {
  const { registerAll } = await import(new URL('index.js', DIR).href);
  const { helpManifestOf, HELP_MANIFEST_FILE } = await import(new URL('help-manifest.js', DIR).href);
  const program = new Command('linekeeper');
  await registerAll(program);
  const file = fileURLToPath(new URL(HELP_MANIFEST_FILE, DIR));
  writeFileSync(file, `${JSON.stringify(helpManifestOf(program), null, 2)}\n`);
  return file;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await writeHelpManifest();
