/**
 * The `linekeeper` command. Subcommands live in src/cli/commands/, one file
 * each, registered in commands/index.ts. Errors with an `LK_*` code — raised
 * here or answered by the daemon as problem+json — are printed as
 * `linekeeper: <message> [LK_CODE]` (and a hint line when there is one) and
 * mapped to an exit code.
 */
import { Command, CommanderError } from 'commander';
import { LkError } from '../errors.js';
import { fileError, isSystemError } from '../files.js';
import { VERSION } from '../version.js';
import { LinekeeperError } from '../sdk/errors.js';
import { registerFor } from './commands/index.js';
import { cliError } from './daemon-client.js';
import { CliExit } from './prompt.js';

/** The program for the command line `args` (after the program's name): only the commands it needs are loaded. */
export async function buildProgram(args: readonly string[] = []): Promise<Command> {
  const program = new Command('linekeeper')
    .description('Supervisory daemon for a tablet line: OPC UA / Modbus connectors, policy-guarded setpoint writes, twin, Part 11 audit trail.')
    .version(VERSION, '-V, --version')
    .showHelpAfterError()
    .exitOverride();
  await registerFor(program, args);
  return program;
}

/** Input paths that cannot be read: sysexits EX_NOINPUT. */
const NO_INPUT: ReadonlySet<string> = new Set(['LK_FILE_NOT_FOUND', 'LK_FILE_NOT_A_FILE', 'LK_FILE_UNREADABLE', 'LK_FILE_TOO_LARGE', 'LK_DATA_DIR_NOT_A_DIRECTORY']);

/**
 * Exit codes (docs/cli.md; sysexits): 0 ok, 1 failure, 2 usage, 65 data error (audit broken, a bad row of a register table, a report that does not verify), 66 an input file
 * or data directory that is missing, not a file, unreadable or too large (EX_NOINPUT), 73 cannot create: an output
 * file, or a data directory that is not writable (EX_CANTCREAT), 74 I/O error: the checkpoint log, or a full disk
 * (EX_IOERR), 75 the data directory is held by another process (EX_TEMPFAIL), 77 not signed in or the session is
 * no longer accepted (EX_NOPERM), 78 configuration error, including a data directory writable by others
 * (EX_CONFIG; systemd's ExecStartPre relies on it).
 */
export function exitCodeFor(err: unknown): number {
  if (LkError.is(err)) {
    if (err.code.startsWith('LK_CONFIG')) return 78;
    if (err.code === 'LK_AUDIT_BROKEN' || err.code === 'LK_TAG_TABLE_INVALID' || err.code === 'LK_REPORT_INVALID') return 65;
    if (NO_INPUT.has(err.code)) return 66;
    if (err.code === 'LK_OUTPUT_INVALID' || err.code === 'LK_DATA_NOT_WRITABLE') return 73;
    if (err.code === 'LK_AUDIT_CHECKPOINT_LOG' || err.code === 'LK_STORE_FULL') return 74;
    if (err.code === 'LK_DATA_LOCKED') return 75;
    if (err.code === 'LK_DATA_INSECURE') return 78;
    if (err.code === 'LK_VALIDATION') return 2;
    if (err.code === 'LK_UNAUTHENTICATED') return 77;
    return 1;
  }
  if (err instanceof CliExit) return err.exitCode;
  return 1;
}

export async function main(argv: readonly string[] = process.argv): Promise<void> {
  try {
    const program = await buildProgram(argv.slice(2));
    await program.parseAsync([...argv]);
  } catch (caught) {
    // a file-system error no command anticipated still gets a code and a message, not a stack trace
    // the daemon's refusals, as the SDK's client hands them on, become the CLI's errors of their code (daemon-client.ts)
    const err = cliError(isSystemError(caught) && typeof caught.path === 'string' ? fileError(caught, caught.path, 'file') : caught);
    if (err instanceof CommanderError) {
      // help and version exit 0 through here; usage errors were already printed
      process.exitCode = err.exitCode === 0 ? 0 : 2;
      return;
    }
    if (LkError.is(err) || LinekeeperError.is(err)) {
      // LinekeeperError: a code this CLI does not know (a newer daemon)
      process.stderr.write(`linekeeper: ${LkError.is(err) ? err.message : err.detail} [${err.code}]\n`);
      const hint = LkError.is(err) ? err.detail?.['hint'] : undefined;
      if (typeof hint === 'string') process.stderr.write(`linekeeper: ${hint}\n`);
    } else if (err instanceof CliExit) {
      if (err.message) process.stderr.write(`linekeeper: ${err.message}\n`);
    } else {
      process.stderr.write(`linekeeper: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    }
    process.exitCode = exitCodeFor(err);
  }
}
