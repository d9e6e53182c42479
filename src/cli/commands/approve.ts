/**
 * `linekeeper approve <approval_id>`: a QA reviewer signs a batch release (21 CFR 11.50/11.200). The signer is
 * the signed-in person, re-authenticated at signing with the password typed now (never an argument); the
 * daemon signs the record and returns the signature, whose manifestation is printed: printed name, user,
 * meaning, date and time, and the key that signed.
 */
import { Option, type Command } from 'commander';
import type { z } from 'zod';
import type { ApprovalList, SignatureView } from '../../api/schemas.js';
import { safeText } from '../../engine/genealogy-text.js';
import { readPassword } from '../prompt.js';
import { connect } from '../session.js';

type Signature = z.output<typeof SignatureView>;
type Pending = z.output<typeof ApprovalList>['items'][number];

/** The manifestation of a signature (21 CFR 11.50): what a person reads of it. */
export function manifestation(s: Signature): string {
  return [
    `signed: ${s.decision} ${s.approval} (batch ${s.batch}, run ${s.run})`,
    `  name:      ${safeText(s.name)}`,
    `  user:      ${s.user} (${s.role})`,
    `  meaning:   ${safeText(s.meaning)}`,
    `  date/time: ${s.timestamp}`,
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
    .requiredOption('--meaning <text>', 'what your signature means, e.g. "QA release of batch B-1042"')
    .option('--tenant <id>', 'tenant of the batch (default: the session\'s)')
    .option('--url <url>', 'the daemon\'s REST API (default: LINEKEEPER_URL, else the session\'s)')
    .option('--json', 'print the signature as JSON')
    .action(async (id: string, opts: { decision: 'approve' | 'reject'; meaning: string; tenant?: string; url?: string; json?: boolean }) => {
      const { session, client } = connect(opts, Date.now());
      // what is about to be signed, when the daemon lets this person see it (the signature route decides anyway)
      let pending: Pending | undefined;
      try {
        pending = (await client.approvals()).items.find((a) => a.id === id);
      } catch {
        pending = undefined;
      }
      const what = pending ? `${pending.kind} of batch ${pending.batch ?? '?'} (run ${pending.run ?? '?'}), record sha256 ${pending.recordHash ?? '?'}` : id;
      process.stderr.write(`linekeeper: signing as ${safeText(session.name)} (${session.user}, ${session.role}): ${opts.decision} ${what}\nlinekeeper: meaning: ${safeText(opts.meaning)}\n`);
      const password = await readPassword(`password for ${session.user} (re-authentication at signing): `);
      const sig = await client.approve(id, { decision: opts.decision, meaning: opts.meaning, password });
      process.stdout.write(opts.json ? `${JSON.stringify(sig, null, 2)}\n` : `${manifestation(sig)}\n`);
    });
}
