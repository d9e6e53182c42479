import type { Command } from 'commander';
import { readHelpManifest, registerHelpManifest } from './help-manifest.js';

type Register = (program: Command) => void;

/**
 * Every subcommand of `linekeeper`, in the order `--help` lists them: the names each module registers, and the
 * module, loaded only when it is needed. A command line names one command, and only that command's module (and
 * what it imports) is loaded: starting the CLI for `linekeeper runs show` does not load the daemon, the store, the
 * models and the twin, a third of a second of module loading on an edge box at every invocation. Help and a name
 * that is no command load them all (the help lists them; commander suggests the nearest name); the version none.
 */
const COMMANDS: readonly (readonly [readonly string[], () => Promise<Register>])[] = [
  [['serve'], async () => (await import('./serve.js')).registerServe],
  [['login', 'logout'], async () => (await import('./login.js')).registerLogin],
  [['run'], async () => (await import('./run.js')).registerRun],
  [['approve', 'signature-meanings'], async () => (await import('./approve.js')).registerApprove],
  [['moves', 'escalations'], async () => (await import('./moves.js')).registerMoves],
  [['config'], async () => (await import('./config.js')).registerConfig],
  [['doctor'], async () => (await import('./doctor.js')).registerDoctor],
  [['discover'], async () => (await import('./discover.js')).registerDiscover],
  [['backup', 'restore'], async () => (await import('./backup.js')).registerBackup],
  [['archive'], async () => (await import('./archive.js')).registerArchive],
  [['validate'], async () => (await import('./validate.js')).registerValidate],
  [['audit'], async () => (await import('./audit.js')).registerAudit],
  [['policy'], async () => (await import('./policy.js')).registerPolicy],
  [['sim'], async () => (await import('./sim.js')).registerSim],
  [['certs'], async () => (await import('./certs.js')).registerCerts],
  [['twin'], async () => (await import('./twin.js')).registerTwin],
  [['models'], async () => (await import('./models.js')).registerModels],
  [['runs'], async () => (await import('./runs.js')).registerRuns],
  [['line'], async () => (await import('./line.js')).registerLine],
  [['exceptions'], async () => (await import('./exceptions.js')).registerExceptions],
  [['replay'], async () => (await import('./replay.js')).registerReplay],
  [['users'], async () => (await import('./users.js')).registerUsers],
];

/** The names of every subcommand (a test holds this table to what the modules register). */
export const COMMAND_NAMES: readonly string[] = COMMANDS.flatMap(([names]) => names);

/** Register every subcommand, in the order `--help` lists them. */
export async function registerAll(program: Command): Promise<void> {
  const registers = await Promise.all(COMMANDS.map(([, load]) => load()));
  for (const register of registers) register(program);
}

/** The program's version options: commander answers them as soon as it meets them, before any command runs. */
const VERSION_OPTIONS: ReadonlySet<string> = new Set(['-V', '--version']);
/** Command lines that ask for the program's own help and nothing else (no command named, no other option). */
const PROGRAM_HELP: ReadonlySet<string> = new Set(['', '-h', '--help', 'help']);

/**
 * Register what the command line `args` (the arguments after the program's name) needs: the module of the command
 * it names first; none for the version (`-V`, `--version` first: printed before any command is looked at); for the
 * program's help alone, the build's help manifest (help-manifest.ts) when there is one; else every command (help
 * without a manifest, another option, an unknown name).
 */
export async function registerFor(program: Command, args: readonly string[]): Promise<void> {
  const first = args[0];
  if (first !== undefined && VERSION_OPTIONS.has(first)) return;
  if (args.length <= 1 && PROGRAM_HELP.has(first ?? '')) {
    const manifest = readHelpManifest(COMMAND_NAMES);
    if (manifest) return registerHelpManifest(program, manifest);
  }
  const entry = first === undefined ? undefined : COMMANDS.find(([names]) => names.includes(first));
  if (entry) (await entry[1]())(program);
  else await registerAll(program);
}
