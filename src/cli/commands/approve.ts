/**
 * `linekeeper approve <approval_id>`: a QA reviewer signs a batch release (21 CFR 11.50/11.200). The signer is
 * the signed-in person, re-authenticated at signing with the password typed now (never an argument); the
 * daemon signs the record and returns the signature, whose manifestation is printed: printed name, user,
 * meaning, date and time, and the key that signed. The meaning is one of the site's list (src/cli/meanings.ts),
 * checked before the password is asked for; `--comment` adds the reviewer's own words beside it.
 */
import { Option, type Command } from 'commander';
import type { z } from 'zod';
import type { ApprovalList, SignatureView } from '../../api/schemas.js';
import { siteIso } from '../../domain/site-time.js';
import { MEANING_VALUES, SIGNATURE_PURPOSES, type SignaturePurpose } from '../../domain/signature-meanings.js';
import { safeText } from '../../engine/genealogy-text.js';
import { LkError } from '../../errors.js';
import { meaningFromList, meaningLine } from '../meanings.js';
import { readPassword } from '../prompt.js';
import { connect } from '../session.js';
import { daemonZone } from '../site-zone.js';

type Signature = z.output<typeof SignatureView>;
type Pending = z.output<typeof ApprovalList>['items'][number];

/**
 * The manifestation of a signature (21 CFR 11.50): what a person reads of it, its date and time on the site's
 * clock with the offset (`tz`, default UTC: the time as recorded).
 */
export function manifestation(s: Signature, tz?: string): string {
  return [
    `signed: ${s.decision} ${s.approval} (batch ${s.batch}, run ${s.run})`,
    `  name:      ${safeText(s.name)}`,
    `  user:      ${s.user} (${s.role})`,
    `  meaning:   ${safeText(s.meaning)}${s.meaningId ? ` (${s.meaningId})` : ''}`,
    ...(s.comment ? [`  comment:   ${safeText(s.comment)}`] : []),
    `  date/time: ${siteIso(s.timestamp, tz)}`,
    `  key id:    ${s.keyId}`,
    `  record:    sha256 ${s.recordHash}`,
  ].join('\n');
}

export function registerApprove(program: Command): void {
  program
    .command('approve')
    .description('sign a batch release at the approval gate as the signed-in QA reviewer: prompts for your password (re-authentication at signing) and prints the signature')
    .argument('<approval_id>', 'the approval (apr_…), as `run` and `runs watch` print it')
    .addOption(new Option('--decision <decision>', 'approve or reject the release').choices(['approve', 'reject']).makeOptionMandatory())
    .requiredOption('--meaning <id|text>', 'what your signature means: one of the site\'s release meanings for the decision, by id (qa-release) or text ("QA release of batch B-1042"); a wrong one lists them')
    .option('--comment <text>', 'your own words beside the meaning (signed and audited with it)')
    .option('--tenant <id>', 'tenant of the batch (default: the session\'s)')
    .option('--url <url>', 'the daemon\'s REST API (default: LINEKEEPER_URL, else the session\'s)')
    .option('--json', 'print the signature as JSON')
    .action(async (id: string, opts: { decision: 'approve' | 'reject'; meaning: string; comment?: string; tenant?: string; url?: string; json?: boolean }) => {
      const { session, client } = connect(opts, Date.now());
      // what is about to be signed, when the daemon lets this person see it (the signature route decides anyway)
      let pending: Pending | undefined;
      try {
        pending = (await client.approvals()).items.find((a) => a.id === id);
      } catch {
        pending = undefined;
      }
      const what = pending ? `${pending.kind} of batch ${pending.batch ?? '?'} (run ${pending.run ?? '?'}), record sha256 ${pending.recordHash ?? '?'}` : id;
      // the meaning from the site's list, checked before the password is asked for (the daemon checks it again)
      const meaning = pending ? await meaningFromList(client, 'release', opts.meaning, MEANING_VALUES.release({ batch: pending.batch, run: pending.run, approval: id }), opts.decision) : null;
      process.stderr.write(`linekeeper: signing as ${safeText(session.name)} (${session.user}, ${session.role}): ${opts.decision} ${what}\nlinekeeper: meaning: ${safeText(meaning ? meaningLine(meaning) : opts.meaning)}\n${opts.comment ? `linekeeper: comment: ${safeText(opts.comment)}\n` : ''}`);
      const password = await readPassword(`password for ${session.user} (re-authentication at signing): `);
      // the words printed, not the entry's id: a list changed by a reload meanwhile refuses them, never signs other words
      const sig = await client.approve(id, { decision: opts.decision, meaning: meaning?.text ?? opts.meaning, ...(opts.comment !== undefined ? { comment: opts.comment } : {}), password });
      process.stdout.write(opts.json ? `${JSON.stringify(sig, null, 2)}\n` : `${manifestation(sig, await daemonZone(client))}\n`);
    });
  program
    .command('signature-meanings')
    .description('the site\'s controlled list of signature meanings (GET /signature-meanings): what --meaning accepts, by id or text, for each kind of signature')
    .option('--for <purpose>', `only the meanings for one purpose (${SIGNATURE_PURPOSES.join(', ')})`)
    .option('--tenant <id>', 'tenant (default: the session\'s)')
    .option('--url <url>', 'the daemon\'s REST API (default: LINEKEEPER_URL, else the session\'s)')
    .option('--json', 'print the list as JSON')
    .action(async (opts: { for?: string; tenant?: string; url?: string; json?: boolean }) => {
      if (opts.for !== undefined && !(SIGNATURE_PURPOSES as readonly string[]).includes(opts.for)) throw new LkError('LK_VALIDATION', `--for must be one of ${SIGNATURE_PURPOSES.join(', ')}`);
      const { client } = connect(opts, Date.now());
      const list = await client.signatureMeanings(opts.for as SignaturePurpose | undefined);
      if (opts.json) {
        process.stdout.write(`${JSON.stringify(list, null, 2)}\n`);
        return;
      }
      const lines = list.purposes.flatMap((p) => [
        `${p.purpose}: ${p.title}${p.placeholders.length ? ` — fills ${p.placeholders.map((x) => `{${x}}`).join(', ')}` : ''}`,
        ...list.items.filter((m) => m.for.includes(p.purpose)).map((m) => `  ${m.id.padEnd(22)} ${m.decision ? `[${m.decision}] ` : ''}${safeText(m.text)}${m.source === 'default' ? '  (built-in)' : ''}`),
      ]);
      process.stdout.write(`${lines.join('\n')}\n`);
    });
}
