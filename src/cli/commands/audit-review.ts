/**
 * `linekeeper audit review --run <run> | --from <t> --to <t> [--comment "…"]`: the audit trail of a run or a
 * period as a reviewer reads it (EU GMP Annex 11 §9) — GMP-relevant changes first (signatures, setpoint writes,
 * changes, reverts, exceptions), the routine traffic counted — and, with `--comment`, the signed record that the
 * signed-in QA reviewer reviewed it (the password is typed now, never an argument). `audit reviews` lists them.
 * Both go through the daemon (src/api/routes-trail-review.ts): a review is a signature, which only the daemon makes.
 */
import type { Command } from 'commander';
import { siteIso } from '../../domain/site-time.js';
import { safeText } from '../../engine/genealogy-text.js';
import type { TrailScope } from '../../sdk/types.js';
import { readPassword } from '../prompt.js';
import { connect } from '../session.js';
import { daemonZone } from '../site-zone.js';

interface Entry { seq: number; ts: string; actor: string; kind: string; action: string; subject?: Record<string, string>; reason?: string; signature?: { name: string; meaning: string } }
interface Review { seq: number; at: string; record: { name: string; user: string; role: string; meaning: string; comment: string; entries: number; first: number; last: number; digest: string }; recordHash: string; keyId: string }
interface View {
  scope: { run?: string; from?: string; to?: string }; batch: string | null; entries: number; first: number; last: number; digest: string;
  counts: Record<string, number>; shown: { category: string; entry: Entry }[]; truncated: boolean; routine: Record<string, number>; reviews: Review[];
}
interface Opts { run?: string; from?: string; to?: string; comment?: string; meaning?: string; tenant?: string; url?: string; json?: boolean }

/** One recorded review, its time on the site's clock with its offset (`tz`, default UTC). */
function reviewLine(r: Review, tz?: string): string {
  return `#${r.seq} ${siteIso(r.at, tz)} ${safeText(r.record.name)} (${r.record.user}, ${r.record.role}): ${safeText(r.record.meaning)} — entries #${r.record.first}–#${r.record.last} (${r.record.entries}); comment: ${safeText(r.record.comment)}`;
}

/**
 * The review view as text: counts, the GMP-relevant entries by category, the routine actions counted, the reviews
 * so far; each time on the site's clock with its offset (`tz`, default UTC). A period is printed as it was asked.
 */
export function formatTrailReview(v: View, tz?: string): string {
  const what = v.scope.run ? `run ${v.scope.run}${v.batch ? ` (batch ${v.batch})` : ''}` : `${v.scope.from} – ${v.scope.to}`;
  const lines = [`audit trail of ${what}: ${v.entries} entries (#${v.first}–#${v.last}), digest ${v.digest}`];
  lines.push(`  ${Object.entries(v.counts).map(([c, n]) => `${c} ${n}`).join(' · ')}`);
  let cat = '';
  for (const s of v.shown) {
    if (s.category !== cat) lines.push('', `${(cat = s.category)}:`);
    const e = s.entry;
    const subj = Object.entries(e.subject ?? {}).map(([k, x]) => `${k}=${x}`).join(' ');
    lines.push(`  #${e.seq} ${siteIso(e.ts, tz)} ${e.actor} ${e.action}${subj ? ` [${safeText(subj)}]` : ''}${e.signature ? ` signed "${safeText(e.signature.meaning)}"` : ''}${e.reason ? ` — ${safeText(e.reason)}` : ''}`);
  }
  if (v.truncated) lines.push('  … more entries than shown: narrow the scope, or export the trail');
  const routine = Object.entries(v.routine).sort((a, b) => b[1] - a[1]);
  if (routine.length > 0) lines.push('', `routine (counted, not listed): ${routine.map(([a, n]) => `${a} ×${n}`).join(', ')}`);
  lines.push('', v.reviews.length === 0 ? 'not reviewed yet' : `reviews:\n${v.reviews.map((r) => `  ${reviewLine(r, tz)}`).join('\n')}`);
  return lines.join('\n');
}

export function registerAuditReview(audit: Command): void {
  audit.command('review')
    .description('Show a run\'s or a period\'s audit trail as a reviewer reads it (GMP-relevant changes first); with --comment, sign that you reviewed it (Annex 11 §9; prompts for your password)')
    .option('--run <run>', 'the run whose trail is reviewed')
    .option('--from <iso>', 'start of a period (UTC, inclusive), with --to')
    .option('--to <iso>', 'end of a period (UTC, exclusive)')
    .option('--comment <text>', 'sign the review with this comment (what you found; "no findings" is a finding)')
    .option('--meaning <id|text>', 'the meaning signed: one of the site\'s trail_review meanings that fits the scope (default: the first); a wrong one lists them')
    .option('--tenant <id>', 'tenant (default: the session\'s)')
    .option('--url <url>', 'the daemon\'s REST API (default: LINEKEEPER_URL, else the session\'s)')
    .option('--json', 'print JSON')
    .action(async (o: Opts) => {
      const { session, client } = connect(o, Date.now());
      // as given: the daemon says what is missing or too much (a run, or a period from and to)
      const scope = { ...(o.run ? { run: o.run } : {}), ...(o.from ? { from: o.from } : {}), ...(o.to ? { to: o.to } : {}) } as TrailScope;
      // the API types an entry as an object of any keys; this command prints those of an audit entry
      const [view, tz] = await Promise.all([client.auditTrailForReview(scope) as unknown as Promise<View>, daemonZone(client)]);
      if (o.comment === undefined) {
        process.stdout.write(o.json ? `${JSON.stringify(view, null, 2)}\n` : `${formatTrailReview(view, tz)}\n`);
        return;
      }
      process.stderr.write(`${formatTrailReview(view, tz)}\n\nlinekeeper: signing the review as ${safeText(session.name)} (${session.user}, ${session.role}): ${safeText(o.comment)}\n`);
      // what is signed is what was printed: the entries through its last one, with its digest (409 when they differ)
      const password = await readPassword(`password for ${session.user} (re-authentication): `);
      const r: Review = await client.reviewAuditTrail(scope, { ...(view.entries > 0 ? { through: view.last, digest: view.digest } : {}), comment: o.comment, ...(o.meaning !== undefined ? { meaning: o.meaning } : {}), password });
      process.stdout.write(o.json ? `${JSON.stringify(r, null, 2)}\n` : `reviewed: ${reviewLine(r, tz)}\n  record SHA-256 ${r.recordHash}, signed by key ${r.keyId}\n`);
    });

  audit.command('reviews')
    .description('List the audit-trail reviews recorded (of one run with --run)')
    .option('--run <run>', 'only the reviews of this run')
    .option('--tenant <id>', 'tenant (default: the session\'s)')
    .option('--url <url>', 'the daemon\'s REST API (default: LINEKEEPER_URL, else the session\'s)')
    .option('--json', 'print JSON')
    .action(async (o: Opts) => {
      const { client } = connect(o, Date.now());
      const [items, tz]: [Review[], string] = await Promise.all([client.auditTrailReviews(o.run), o.json ? 'UTC' : daemonZone(client)]);
      process.stdout.write(o.json ? `${JSON.stringify(items, null, 2)}\n` : `${items.length === 0 ? 'no reviews recorded' : items.map((r) => reviewLine(r, tz)).join('\n')}\n`);
    });
}
