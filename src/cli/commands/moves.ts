/**
 * `linekeeper moves list|approve|reject`: setpoint moves that wait for a person (an L2 move for the batch's
 * assigned reviewer, a move outside the design space for QA), decided from the command line exactly as the
 * console does it — through POST /approvals/{id}, signed by the signed-in person with the password typed now
 * (re-authentication at signing, never an argument) and a meaning of the site's list (checked before the password;
 * `--comment` for the signer's own words), bound to the vector hash shown by GET
 * /approvals. A withdrawn move (superseded, or its step or run ended) is refused: LK_MOVE_WITHDRAWN.
 *
 * `linekeeper escalations list|decide`: arbitration deadlocks that wait for a person (they hold their setpoint
 * until one decides), and the decision with a reason (audited with who and why).
 */
import type { Command } from 'commander';
import type { z } from 'zod';
import type { ApprovalList } from '../../api/schemas.js';
import { MEANING_VALUES } from '../../domain/signature-meanings.js';
import { siteIso } from '../../domain/site-time.js';
import { safeText } from '../../engine/genealogy-text.js';
import { LkError } from '../../errors.js';
import type { MoveDecision } from '../../sdk/types.js';
import { meaningFromList, meaningLine } from '../meanings.js';
import { readPassword } from '../prompt.js';
import { escalationLines } from '../run-transcript.js';
import { connect } from '../session.js';
import { daemonZone } from '../site-zone.js';
import { manifestation } from './approve.js';

type Item = z.output<typeof ApprovalList>['items'][number];

interface Conn { tenant?: string; url?: string; json?: boolean }

const val = (v: unknown): string => (typeof v === 'object' && v !== null && 'value' in v ? `${String((v as { value: unknown }).value)} ${String((v as { unit?: unknown }).unit ?? '')}`.trim() : String(v));

/** `pw_…  waits for p.bianchi since …  agent.compress_fill: press.MainForce → 10.5 kN  (run …, batch …)`; since when on the site's clock (`tz`, default UTC). */
export function moveLine(m: Item, tz?: string): string {
  const d = m.detail as { agent?: unknown; moves?: { setpoint?: unknown; value?: unknown }[]; reasons?: unknown[] };
  const who = m.needs === 'qa' ? 'QA' : (m.reviewer ?? 'the batch\'s reviewer (none assigned)');
  const what = (d.moves ?? []).map((x) => `${safeText(String(x.setpoint))} → ${safeText(val(x.value))}`).join(', ');
  return `${m.id}  waits for ${safeText(who)} since ${siteIso(m.requestedAt, tz)}  ${safeText(String(d.agent ?? '?'))}: ${what}  (run ${m.run ?? '-'}, batch ${safeText(m.batch ?? '-')}; ${(d.reasons ?? []).map(String).join(', ')})`;
}

const connOpts = (c: Command): Command =>
  c.option('--tenant <id>', 'tenant (default: the session\'s)').option('--url <url>', 'the daemon\'s REST API (default: LINEKEEPER_URL, else the session\'s)').option('--json', 'print JSON');

export function registerMoves(program: Command): void {
  const moves = program.command('moves').description('setpoint moves that wait for a person: list them, approve or reject one (signed, like the console)');
  connOpts(moves.command('list').description('moves waiting for a person (an L2 move for the batch\'s reviewer, one outside the design space for QA): whom, what, since when'))
    .option('--run <id>', 'only the moves of this run')
    .action(async (opts: Conn & { run?: string }) => {
      const { client } = connect(opts, Date.now());
      const [list, tz] = await Promise.all([client.approvals(), opts.json ? 'UTC' : daemonZone(client)]);
      const items = list.items.filter((a) => a.kind === 'setpoint_write' && (opts.run === undefined || a.run === opts.run));
      if (opts.json) process.stdout.write(`${JSON.stringify({ items }, null, 2)}\n`);
      else process.stdout.write(items.length === 0 ? 'no move waits for a person\n' : `${items.map((m) => moveLine(m, tz)).join('\n')}\n`);
    });
  for (const decision of ['approve', 'reject'] as const) {
    connOpts(moves.command(decision).description(`${decision} a waiting move as the signed-in person: prompts for your password (re-authentication at signing) and prints the signature${decision === 'approve' ? ' and what the guarded writer did' : ''}`))
      .argument('<move_id>', 'the move (pw_…), as `moves list`, `run` and `runs watch` print it')
      .requiredOption('--meaning <id|text>', `what your signature means: one of the site's move meanings for ${decision}, by id (${decision === 'approve' ? 'move-approval' : 'move-rejection'}) or text; a wrong one lists them`)
      .option('--comment <text>', `your own words beside the meaning, e.g. "${decision === 'approve' ? 'weight back to target' : 'hardness already at its limit'}"`)
      .action(async (id: string, opts: Conn & { meaning: string; comment?: string }) => {
        const { session, client } = connect(opts, Date.now());
        // the exact vector the signature binds to, as the daemon shows it now; a move no longer listed is answered by the route
        // the line on stderr is for the person signing, --json or not: the site's clock
        const [list, tz] = await Promise.all([client.approvals(), daemonZone(client)]);
        const item = list.items.find((a) => a.id === id);
        if (item && item.kind !== 'setpoint_write') throw new LkError('LK_VALIDATION', `${id} is a ${item.kind}: sign it with linekeeper approve`);
        // the meaning from the site's list, checked before the password is asked for (the daemon checks it again)
        const meaning = item ? await meaningFromList(client, 'move', opts.meaning, MEANING_VALUES.move({ batch: item.batch, run: item.run, approval: id }), decision) : null;
        process.stderr.write(`linekeeper: signing as ${safeText(session.name)} (${session.user}, ${session.role}): ${decision} ${item ? moveLine(item, tz) : id}\nlinekeeper: meaning: ${safeText(meaning ? meaningLine(meaning) : opts.meaning)}\n${opts.comment ? `linekeeper: comment: ${safeText(opts.comment)}\n` : ''}`);
        const password = await readPassword(`password for ${session.user} (re-authentication at signing): `);
        // without a listed move there is no hash to send: the route answers what it finds (withdrawn, not found, or the hash missing);
        // the words printed, not the entry's id: a list changed by a reload meanwhile refuses them, never signs other words
        const out = await client.decideMove(id, { decision, meaning: meaning?.text ?? opts.meaning, ...(opts.comment !== undefined ? { comment: opts.comment } : {}), password, ...(item?.recordHash ? { recordHash: item.recordHash } : {}) } as MoveDecision);
        if (opts.json) process.stdout.write(`${JSON.stringify(out, null, 2)}\n`);
        else {
          const o = out.outcome;
          process.stdout.write(`${manifestation(out.signature, tz)}\nmove ${id}: ${o.status}${o.reasons.length ? ` (${o.reasons.join(', ')})` : ''}${o.error ? ` — ${o.error.code}: ${safeText(o.error.message)}` : ''}\n`);
        }
      });
  }

  const esc = program.command('escalations').description('arbitration deadlocks that wait for a person (they hold their setpoint): list them, decide one with a reason');
  connOpts(esc.command('list').description('deadlocks of equal rank waiting for a person: both sides, what is held, since when'))
    .action(async (opts: Conn) => {
      const { client } = connect(opts, Date.now());
      const [l, tz] = await Promise.all([client.escalations(), opts.json ? 'UTC' : daemonZone(client)]);
      if (opts.json) process.stdout.write(`${JSON.stringify(l, null, 2)}\n`);
      else process.stdout.write(l.items.length === 0 ? 'no deadlock waits for a person\n' : `${l.items.map((e) => [...escalationLines(e, tz), ...(e.runs.length ? [`    runs: ${e.runs.join(', ')}`] : [])].join('\n')).join('\n')}\n`);
    });
  connOpts(esc.command('decide').description('decide a deadlock as the signed-in person (a process engineer or QA reviewer), with a reason: the chosen side owns the setpoint, the others are declined; nothing is written to the equipment'))
    .argument('<setpoint>', 'the escalation (its setpoint), as `escalations list` prints it')
    .requiredOption('--choose <request_id>', 'the request id of the side that wins')
    .requiredOption('--reason <text>', 'why (audited with your name)')
    .action(async (id: string, opts: Conn & { choose: string; reason: string }) => {
      const { client } = connect(opts, Date.now());
      const out = await client.decideEscalation(id, { choose: opts.choose, reason: opts.reason });
      if (opts.json) process.stdout.write(`${JSON.stringify(out, null, 2)}\n`);
      else {
        process.stdout.write(`decided ${safeText(out.setpoint)} by ${out.decidedBy} (${out.role}): ${safeText(out.winner.agent)} wins with ${safeText(out.winner.target)} — ${safeText(out.reason)}\n`);
        for (const d of out.declined) process.stdout.write(`  declined: ${safeText(d.agent)} ${safeText(d.target)} (${d.reason})\n`);
      }
    });
}
