/**
 * The CLI loads only the module of the command a command line names (src/cli/commands/index.ts): the table of
 * names it picks the module by must be what the modules register, or a command would be missing from its own
 * command line.
 */
import { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import { COMMAND_NAMES, registerAll, registerFor } from '../../src/cli/commands/index.js';
import { buildProgram } from '../../src/cli/main.js';
import { helpManifestOf, readHelpManifest, registerHelpManifest } from '../../src/cli/commands/help-manifest.js';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { VERSION } from '../../src/version.js';

const names = (p: Command): string[] => p.commands.map((c) => c.name());

describe('linekeeper: one command module per command line', () => {
  it('the table names exactly what the modules register, in the order help lists them', async () => {
    const all = new Command('linekeeper');
    await registerAll(all);
    expect(names(all)).toEqual(COMMAND_NAMES);
    expect(new Set(COMMAND_NAMES).size).toBe(COMMAND_NAMES.length);
  });

  it('a command line naming a command registers its module (and the names it brings), nothing else; help, another option or an unknown name registers all; the version none', async () => {
    for (const name of COMMAND_NAMES) {
      const p = new Command('linekeeper');
      await registerFor(p, [name, '--help']);
      expect(names(p)).toContain(name);
      expect(names(p).length).toBeLessThanOrEqual(2);
    }
    for (const args of [[], ['--help'], ['--json'], ['help', 'run'], ['rnus', 'show']]) {
      const p = new Command('linekeeper');
      await registerFor(p, args);
      expect(names(p), args.join(' ')).toEqual(COMMAND_NAMES);
    }
    for (const args of [['-V'], ['--version'], ['-V', 'run']]) {
      const p = new Command('linekeeper');
      await registerFor(p, args);
      expect(names(p), args.join(' ')).toEqual([]);
    }
  });

  it('the version is printed with no command module loaded, and exits 0', async () => {
    for (const flag of ['-V', '--version']) {
      const p = await buildProgram([flag]);
      let out = '';
      p.configureOutput({ writeOut: (s) => (out += s) });
      const exit = await p.parseAsync(['node', 'linekeeper', flag]).then(() => undefined, (err: { exitCode?: number }) => err.exitCode);
      expect([out.trim(), exit, names(p)]).toEqual([VERSION, 0, []]);
    }
  });

  it('the help manifest prints the program\'s help exactly as the commands themselves do; its placeholders never run', async () => {
    const program = (): Command => new Command('linekeeper').description('linekeeper, the program').version(VERSION, '-V, --version');
    const full = program();
    await registerAll(full);
    const manifest = helpManifestOf(full);
    expect(manifest.commands.map((c) => c.name)).toEqual(COMMAND_NAMES);
    const light = program();
    registerHelpManifest(light, manifest);
    expect(light.helpInformation()).toBe(full.helpInformation());
    // a placeholder is only for the list: run, it refuses rather than do nothing
    const ran = light.exitOverride().parseAsync(['node', 'linekeeper', 'runs']);
    await expect(ran).rejects.toMatchObject({ code: 'LK_INTERNAL' });
  });

  it('a help manifest is read only when it is one and names exactly the commands of this build', async () => {
    const full = new Command('linekeeper');
    await registerAll(full);
    const manifest = helpManifestOf(full);
    const dir = mkdtempSync(join(tmpdir(), 'lk-help-manifest-'));
    try {
      const file = (name: string, body: string): URL => {
        writeFileSync(join(dir, name), body);
        return pathToFileURL(join(dir, name));
      };
      expect(readHelpManifest(COMMAND_NAMES, file('good.json', JSON.stringify(manifest)))).toEqual(manifest);
      expect(readHelpManifest(COMMAND_NAMES, pathToFileURL(join(dir, 'missing.json')))).toBeUndefined();
      expect(readHelpManifest(COMMAND_NAMES, file('not-json.json', '{"format": 1, '))).toBeUndefined();
      expect(readHelpManifest(COMMAND_NAMES, file('format.json', JSON.stringify({ ...manifest, format: 2 })))).toBeUndefined();
      // a build with another command, or one fewer, or in another order: its help would lie, so every module loads
      expect(readHelpManifest(COMMAND_NAMES, file('fewer.json', JSON.stringify({ ...manifest, commands: manifest.commands.slice(1) })))).toBeUndefined();
      expect(readHelpManifest(COMMAND_NAMES, file('order.json', JSON.stringify({ ...manifest, commands: [...manifest.commands].reverse() })))).toBeUndefined();
      expect(readHelpManifest(COMMAND_NAMES, file('term.json', JSON.stringify({ ...manifest, commands: manifest.commands.map((c, i) => (i === 0 ? { ...c, term: 7 } : c)) })))).toBeUndefined();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
