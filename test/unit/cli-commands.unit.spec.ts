/**
 * The CLI loads only the module of the command a command line names (src/cli/commands/index.ts): the table of
 * names it picks the module by must be what the modules register, or a command would be missing from its own
 * command line.
 */
import { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import { COMMAND_NAMES, registerAll, registerFor } from '../../src/cli/commands/index.js';
import { buildProgram } from '../../src/cli/main.js';
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
});
