/**
 * `linekeeper line readiness` — is the line ready for a run, and if not every reason (the judgement `run` meets
 * as `LK_LINE_NOT_READY`); exit 0 when ready, 1 when not. `linekeeper line rearm <unit> --reason "…"` — re-arm a
 * LOST PLC as the signed-in person (a process engineer, or a role the policy bundle's approvers.reviewer names),
 * with a reason; audited with the person and the reason.
 */
import type { Command } from 'commander';
import type { z } from 'zod';
import type { ReadinessView, RearmView } from '../../api/routes-line.js';
import { siteIso } from '../../domain/site-time.js';
import { safeText } from '../../engine/genealogy-text.js';
import { CliExit } from '../prompt.js';
import { connect } from '../session.js';
import { daemonZone } from '../site-zone.js';

type Readiness = z.output<typeof ReadinessView>;
type Rearmed = z.output<typeof RearmView>;

/** The readiness as people read it: `line line-3: ready` or one `✗ CODE subject — message` line per reason. */
export function formatReadiness(r: Readiness): string {
  if (r.ready) return `line ${r.line}: ready for a run`;
  return [`line ${r.line}: not ready for a run (${r.reasons.length} reason${r.reasons.length === 1 ? '' : 's'})`, ...r.reasons.map((x) => `  ✗ ${x.code.padEnd(19)} ${safeText(x.subject).padEnd(12)} ${safeText(x.message)}`)].join('\n');
}

export function registerLine(program: Command): void {
  const line = program.command('line').description('the line: readiness for a run, and re-arming a LOST PLC');
  line.command('readiness')
    .description('is the line ready for a run (every PLC ATTENDED, connections up, models valid and pinned, no other run)? Exit 0 when ready, 1 when not')
    .option('--tenant <id>', 'tenant (default: the session\'s)')
    .option('--url <url>', 'the daemon\'s REST API (default: LINEKEEPER_URL, else the session\'s)')
    .option('--json', 'print the readiness as JSON')
    .action(async (opts: { tenant?: string; url?: string; json?: boolean }) => {
      const { client } = connect(opts, Date.now());
      const r: Readiness = await client.lineReadiness();
      process.stdout.write(`${opts.json ? JSON.stringify(r, null, 2) : formatReadiness(r)}\n`);
      if (!r.ready) throw new CliExit(1);
    });
  line.command('rearm')
    .description('re-arm a LOST PLC as the signed-in person (process engineer), with a reason: audited; the PLC refuses while no heartbeat arrives')
    .argument('<unit>', 'the equipment id, e.g. blender, fluidbed, press (as `line readiness` names it)')
    .requiredOption('--reason <text>', 'why the PLC may be supervised again (audited with your name)')
    .option('--tenant <id>', 'tenant (default: the session\'s)')
    .option('--url <url>', 'the daemon\'s REST API (default: LINEKEEPER_URL, else the session\'s)')
    .option('--json', 'print the result as JSON')
    .action(async (unit: string, opts: { reason: string; tenant?: string; url?: string; json?: boolean }) => {
      const { session, client } = connect(opts, Date.now());
      process.stderr.write(`linekeeper: re-arming ${safeText(unit)} as ${safeText(session.name)} (${session.user}, ${session.role}): ${safeText(opts.reason)}\n`);
      const r: Rearmed = await client.rearm(unit, { reason: opts.reason });
      if (opts.json) process.stdout.write(`${JSON.stringify(r, null, 2)}\n`);
      else process.stdout.write(`re-armed: ${r.equipment} ${r.state}${r.verified ? ' (verified by read-back)' : ''} by ${r.rearmedBy} (${r.role}) at ${siteIso(r.at, await daemonZone(client))}: ${safeText(r.reason)}\n`);
    });
}
