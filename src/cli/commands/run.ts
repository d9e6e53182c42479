/**
 * `linekeeper run "<request>"`: start a supervised run on the daemon and follow it live (the spec's
 * command-line program), and `linekeeper runs watch <id>`: attach to a run again. Both talk to the running
 * daemon's REST API with the session of `linekeeper login`; Ctrl-C detaches and the run goes on.
 */
import { Option, type Command } from 'commander';
import { attach, type AttachResult } from '../attach.js';
import type { LinekeeperClient } from '../../sdk/client.js';
import { statusText, type ApiRun, type TranscriptState } from '../run-transcript.js';
import { connect, cursorFile, readCursor, removeCursor, renewSession, saveCursor, type Session } from '../session.js';

interface Common {
  tenant?: string;
  url?: string;
  json?: boolean;
}

const AUTONOMY = ['L0', 'L1', 'L2', 'L3'] as const;

/** Follow `run` with the saved transcript state, saving it as it goes; forget it once the run ended. */
async function follow(client: LinekeeperClient, session: Session, tenant: string, run: ApiRun, how: 'started' | 'attached' | 'resumed', state?: TranscriptState): Promise<AttachResult> {
  // only an operator's presence counts (R5); someone else attached is told, not refused
  const presence = session.role === 'operator';
  let live = session;
  if (!presence) process.stderr.write(`linekeeper: ${session.user} is a ${session.role}: no operator presence is sent while attached; L2/L3 moves need an attended operator (R5)\n`);
  const result = await attach({
    client, run, how, ...(state ? { state } : {}), presence, out: process.stdout, err: process.stderr, tty: process.stdout.isTTY === true,
    save: (s) => saveCursor(run.id, s),
    // the token is renewed while attached (up to the session's maximum age), so a long watch outlives it
    renew: async () => {
      live = await renewSession(live, client, Date.now());
    },
  });
  if (result.how === 'ended') {
    removeCursor(run.id);
    return result;
  }
  // a last look at the run for the message (never blocking the exit for long)
  let now = result.run;
  try {
    now = await client.getRun(run.id, { signal: AbortSignal.timeout(2000) });
  } catch {
    // the last view is good enough
  }
  process.stderr.write(`linekeeper: detached from ${run.id}; the run goes on: ${statusText(now)}\nlinekeeper: re-attach with: linekeeper runs watch ${run.id}${tenant !== session.tenant ? ` --tenant ${tenant}` : ''}\n`);
  return result;
}

export function registerRun(program: Command): void {
  program
    .command('run')
    .description('start a supervised batch run on the daemon and follow it live: plan, twin, policy, each step, the approval gate, completion (Ctrl-C detaches; the run goes on)')
    .argument('<request>', 'the free-text run request, e.g. "run batch B-1042 on line-3, keep weight and hardness on target, capping risk under 1.5%"')
    .addOption(new Option('--autonomy <level>', 'cap every agent of the run at this level (never raises one)').choices(AUTONOMY))
    .option('--tenant <id>', 'tenant of the batch (default: the session\'s)')
    .option('--url <url>', 'the daemon\'s REST API (default: LINEKEEPER_URL, else the session\'s)')
    .option('--json', 'print the started run as JSON and exit (no stream)')
    .action(async (request: string, opts: Common & { autonomy?: (typeof AUTONOMY)[number] }) => {
      const { session, client, tenant } = connect(opts, Date.now());
      const run = (await client.startRun({ request, ...(opts.autonomy ? { autonomy: opts.autonomy } : {}) })).record!;
      if (opts.json) {
        process.stdout.write(`${JSON.stringify(run, null, 2)}\n`);
        return;
      }
      await follow(client, session, tenant, run, 'started');
    });
}

/** `runs watch <id>`, registered under the `runs` command. */
export function registerWatch(runs: Command): void {
  runs
    .command('watch')
    .description('attach to a run on the daemon: what happened since you detached (nothing printed twice), then live until it completes (Ctrl-C detaches)')
    .argument('<run_id>', 'the run')
    .option('--from-start', 'print the run from its first line, not from where this user detached')
    .option('--tenant <id>', 'tenant of the run (default: the session\'s)')
    .option('--url <url>', 'the daemon\'s REST API (default: LINEKEEPER_URL, else the session\'s)')
    .action(async (id: string, opts: Common & { fromStart?: boolean }) => {
      cursorFile(id); // a run id, before anything is sent
      const { session, client, tenant } = connect(opts, Date.now());
      const run = await client.getRun(id);
      const saved = opts.fromStart ? null : readCursor(id);
      await follow(client, session, tenant, run, saved ? 'resumed' : 'attached', saved ?? undefined);
    });
}
