/**
 * `linekeeper runs resume|abort|reassign <run> --reason "…"`: the ways out of the states a run stops in, taken by
 * the signed-in person over the daemon's REST API. `resume` (a process engineer or QA reviewer) runs the stopped
 * step of a HELD or INTERRUPTED run again from its start; `abort` ends a run that is not final (a signature:
 * prompts for the password), with the line reverted to its last known-good recipe and a "not a release" package;
 * `reassign --to <user>` names another QA reviewer for the run (a signature: prompts for the password).
 */
import type { Command } from 'commander';
import type { z } from 'zod';
import type { AbortView } from '../../api/schemas.js';
import { safeText } from '../../engine/genealogy-text.js';
import { formatRunTable } from '../run-format.js';
import { readPassword } from '../prompt.js';
import { connect } from '../session.js';

interface Opts {
  reason: string;
  meaning?: string;
  tenant?: string;
  url?: string;
  json?: boolean;
}

/** The PLCs' revert as the abort read it back: `press ok (LOST on recipe …)` or `press NOT VERIFIED: …`. */
export function revertLines(reverted: z.output<typeof AbortView>['reverted']): string[] {
  return reverted.map((p) => `  ${p.equipment.padEnd(9)} ${p.ok ? `ok, read back ${safeText(p.state ?? '')}` : `NOT VERIFIED: ${safeText(p.error ?? 'no read-back')}`}`);
}

export function registerRunLifecycle(runs: Command): void {
  const common = (c: Command): Command =>
    c
      .requiredOption('--reason <text>', 'why, in words (audited; printed in the genealogy and the package)')
      .option('--tenant <id>', 'tenant of the run (default: the session\'s)')
      .option('--url <url>', 'the daemon\'s REST API (default: LINEKEEPER_URL, else the session\'s)')
      .option('--json', 'print the answer as JSON');

  common(runs.command('resume <run_id>').description('resume a HELD or INTERRUPTED run as the signed-in process engineer or QA reviewer: the step that stopped runs again from its start (fresh readings and decisions; no write is replayed)'))
    .action(async (id: string, opts: Opts) => {
      const { session, client } = connect(opts, Date.now());
      process.stderr.write(`linekeeper: resuming ${id} as ${safeText(session.name)} (${session.user}, ${session.role}): ${safeText(opts.reason)}\n`);
      const run = await client.resumeRun(id, { reason: opts.reason });
      process.stdout.write(opts.json ? `${JSON.stringify(run, null, 2)}\n` : `${formatRunTable(run)}\nfollow it with: linekeeper runs watch ${run.id}\n`);
    });

  common(runs.command('abort <run_id>').description('abort a run that is not final as the signed-in person (a signature: prompts for your password): the line goes to its last known-good recipe, a pending approval is withdrawn, the run ends ABORTED with a "not a release" package'))
    .option('--meaning <id|text>', 'the meaning signed: one of the site\'s run_abort signature meanings (default: the first); the reason is signed beside it')
    .action(async (id: string, opts: Opts) => {
      const { session, client } = connect(opts, Date.now());
      process.stderr.write(`linekeeper: aborting ${id} as ${safeText(session.name)} (${session.user}, ${session.role}): ${safeText(opts.reason)}\n`);
      const password = await readPassword(`password for ${session.user} (re-authentication: aborting a run is signed): `);
      const out = await client.abortRun(id, { reason: opts.reason, password, ...(opts.meaning !== undefined ? { meaning: opts.meaning } : {}) });
      if (opts.json) {
        process.stdout.write(`${JSON.stringify(out, null, 2)}\n`);
        return;
      }
      const verified = out.reverted.filter((p) => p.ok).length;
      process.stdout.write([
        `${out.run.id} ABORTED: ${safeText(out.run.reason ?? '')}`,
        `signed by ${safeText(out.signature.name)} (${out.signature.user}) at ${out.signature.timestamp}, key ${out.signature.keyId.slice(0, 12)}…`,
        `PLCs on their last known-good recipe, verified by read-back: ${verified}/${out.reverted.length}`,
        ...revertLines(out.reverted),
        ...(out.approvalWithdrawn ? [`approval ${out.approvalWithdrawn} withdrawn: it can no longer be signed`] : []),
        out.run.release ? `not a release: its package (release.json) downloads from ${out.run.release.json}` : 'not a release: the package could not be written (see the run\'s step 10)',
      ].join('\n') + '\n');
      if (verified < out.reverted.length) process.exitCode = 1;
    });

  common(runs.command('reassign <run_id>').description('name another QA reviewer for a run that is not final (a signature: prompts for your password); the new reviewer must hold a QA role for the tenant')
    .requiredOption('--to <user>', 'the new QA reviewer (user id)'))
    .option('--meaning <id|text>', 'the meaning signed: one of the site\'s run_reassign signature meanings (default: the first); the reason is signed beside it')
    .action(async (id: string, opts: Opts & { to: string }) => {
      const { session, client } = connect(opts, Date.now());
      process.stderr.write(`linekeeper: reassigning the QA reviewer of ${id} to ${safeText(opts.to)} as ${safeText(session.name)} (${session.user}, ${session.role}): ${safeText(opts.reason)}\n`);
      const password = await readPassword(`password for ${session.user} (re-authentication: a reassignment is signed): `);
      const out = await client.reassignReviewer(id, { to: opts.to, reason: opts.reason, password, ...(opts.meaning !== undefined ? { meaning: opts.meaning } : {}) });
      process.stdout.write(opts.json ? `${JSON.stringify(out, null, 2)}\n` : `${out.run.id}: QA reviewer ${out.from ?? 'none'} → ${out.to}${out.approval ? ` (approval ${out.approval} now waits for ${out.to})` : ''}; signed by ${safeText(out.signature.name)} (${out.signature.user}) at ${out.signature.timestamp}\n`);
    });
}
