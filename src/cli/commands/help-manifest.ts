/**
 * What `linekeeper --help` lists, without loading the commands: each command's term (`run [options] <request>`) and
 * summary as commander prints them, written at build time from the compiled command modules into
 * `help-manifest.json` beside this module (`tools/help-manifest.mjs`, run by the build, `tools/build.mjs`, which
 * `npm run build`, the package, the tests and the benches run). The command line's own help — `linekeeper`, `-h`, `--help`, `help` — then registers placeholders
 * that print the same text; any other command line loads its command's module as before (index.ts).
 * Without the file (running from the sources) or with one that does not name exactly the commands of this build,
 * every module is loaded, as before. (What oclif calls its manifest, for the same reason.)
 */
import { readFileSync } from 'node:fs';
import { Help, type Command } from 'commander';
import { LkError } from '../../errors.js';

/** One command as the program's help lists it. */
export interface HelpEntry {
  readonly name: string;
  readonly aliases: readonly string[];
  /** The command's term in the list: name, alias, `[options]`, arguments. */
  readonly term: string;
  readonly summary: string;
}

export interface HelpManifest {
  readonly format: 1;
  readonly commands: readonly HelpEntry[];
}

/** The file's name, beside the compiled module. */
export const HELP_MANIFEST_FILE = 'help-manifest.json';

/** The manifest of a program whose commands are all registered: what its help lists for each. */
export function helpManifestOf(program: Command): HelpManifest {
  const help = program.createHelp();
  return {
    format: 1,
    commands: program.commands.map((c) => ({ name: c.name(), aliases: [...c.aliases()], term: help.subcommandTerm(c), summary: help.subcommandDescription(c) })),
  };
}

/** The manifest beside this module when it is one and names exactly `names`, in order; else undefined. */
export function readHelpManifest(names: readonly string[], file: URL = new URL(`./${HELP_MANIFEST_FILE}`, import.meta.url)): HelpManifest | undefined {
  let m: unknown;
  try {
    m = JSON.parse(readFileSync(file, 'utf8'));
  } catch {
    return undefined;
  }
  if (typeof m !== 'object' || m === null || (m as HelpManifest).format !== 1 || !Array.isArray((m as HelpManifest).commands)) return undefined;
  const commands = (m as HelpManifest).commands;
  const wellFormed = commands.every((c) => typeof c?.name === 'string' && typeof c.term === 'string' && typeof c.summary === 'string' && Array.isArray(c.aliases) && c.aliases.every((a) => typeof a === 'string'));
  if (!wellFormed || commands.length !== names.length || commands.some((c, i) => c.name !== names[i])) return undefined;
  return m as HelpManifest;
}

/**
 * Register a placeholder for each command of the manifest, printed by the program's help exactly as the command
 * itself would be. A placeholder never runs: only a command line that asks for the program's help gets them.
 */
export function registerHelpManifest(program: Command, m: HelpManifest): void {
  const terms = new Map<Command, string>();
  for (const e of m.commands) {
    const c = program.command(e.name).summary(e.summary).aliases([...e.aliases]);
    c.action(() => {
      throw new LkError('LK_INTERNAL', `the help's placeholder of "${e.name}" was run instead of the command`);
    });
    terms.set(c, e.term);
  }
  program.configureHelp({
    subcommandTerm(this: Help, cmd: Command): string {
      return terms.get(cmd) ?? Help.prototype.subcommandTerm.call(this, cmd);
    },
  });
}
