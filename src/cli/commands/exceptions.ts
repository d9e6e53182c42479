/**
 * `linekeeper exceptions close <exception_id> --comment "…" [--deviation DEV-…]`: a named person closes an
 * exception of a run (review by exception) — a QA reviewer for a critical or major one, whose closure is a Part
 * 11 signature, QA or a process engineer for a minor one. The password is typed now (re-authentication), never
 * an argument. `linekeeper runs exceptions <run>` lists a run's exceptions and its specification table
 * (formatExceptions below).
 */
import type { Command } from 'commander';
import type { z } from 'zod';
import type { CloseExceptionView, ExceptionList } from '../../api/schemas.js';
import { siteIso } from '../../domain/site-time.js';
import { safeText } from '../../engine/genealogy-text.js';
import { readPassword } from '../prompt.js';
import { connect } from '../session.js';
import { daemonZone } from '../site-zone.js';

type List = z.output<typeof ExceptionList>;
type Closed = z.output<typeof CloseExceptionView>;
type Item = List['items'][number];

interface SpecRow { title?: unknown; limits?: unknown; verdict?: unknown; reason?: unknown; data?: { n?: unknown; mean?: unknown; min?: unknown; max?: unknown; unit?: unknown } }

/**
 * One line of an exception as people read it: `! OOS major open  05 compress.press  OOS press.Hardness 162 N > 150 N  exc_…`;
 * the time of its closure on the site's clock with its offset (`tz`, default UTC).
 */
export function exceptionLine(e: Item, tz?: string): string {
  const mark = e.status === 'open' ? (e.blocking ? '!' : '~') : '✓';
  const closed = e.closure ? ` — closed by ${safeText(e.closure.name)} (${e.closure.user}) ${siteIso(e.closure.at, tz)}: ${safeText(e.closure.comment)}${e.closure.deviation ? ` [${e.closure.deviation}]` : ''}` : '';
  return `${mark} ${e.kind.padEnd(9)} ${e.severity.padEnd(8)} ${e.status.padEnd(6)} ${(e.step ?? '-').padEnd(28)} ${safeText(e.title)}  ${e.id}${closed}`;
}

function num(v: unknown): string {
  return typeof v === 'number' && Number.isFinite(v) ? String(+v.toPrecision(4)) : '?';
}

/** A run's specification table and exceptions as text (times on the site's clock: `tz`, default UTC). */
export function formatExceptions(l: List, tz?: string): string {
  const lines: string[] = [];
  const table = l.specTable as { verdict?: unknown; results?: SpecRow[] } | null;
  if (table?.results) {
    lines.push(`specifications of batch ${l.batch}: ${String(table.verdict)}`);
    for (const r of table.results) {
      const d = r.data ?? {};
      const data = typeof d.n === 'number' && d.n > 0 ? `n ${d.n}, mean ${num(d.mean)}${d.min !== undefined ? `, ${num(d.min)}–${num(d.max)}` : ''} ${String(d.unit ?? '')}` : 'no data';
      lines.push(`  ${String(r.verdict).padEnd(13)} ${safeText(String(r.title)).padEnd(22)} ${safeText(String(r.limits)).padEnd(28)} ${data.padEnd(34)} ${safeText(String(r.reason ?? ''))}`);
    }
  } else {
    lines.push(`specifications of batch ${l.batch}: not evaluated yet (evaluated before the approval gate)`);
  }
  lines.push('', `exceptions of ${l.run}: ${l.counts.total} (${l.counts.open} open, ${l.counts.blocking} blocking release)`);
  for (const e of l.items) lines.push(`  ${exceptionLine(e, tz)}`);
  if (l.counts.blocking > 0) lines.push('', `a QA reviewer closes each with: linekeeper exceptions close <exception_id> --comment "…" [--deviation DEV-…]`);
  return lines.join('\n');
}

export function registerExceptions(program: Command): void {
  const ex = program.command('exceptions').description('review by exception: close an exception of a run with a comment (runs exceptions <run> lists them)');
  ex.command('close')
    .description('close an exception as the signed-in person: a critical or major one by a QA reviewer (a signature: prompts for your password), a minor one by QA or a process engineer')
    .argument('<exception_id>', 'the exception (exc_…), as `runs exceptions` and `runs watch` print it')
    .requiredOption('--comment <text>', 'what was found and why the batch may proceed (printed in the release package)')
    .option('--deviation <ref>', 'the deviation or CAPA record that covers it, e.g. DEV-2026-0142')
    .option('--meaning <id|text>', 'a signed closure\'s meaning: one of the site\'s exception_close signature meanings (default: the first); the comment is signed beside it')
    .option('--tenant <id>', 'tenant of the run (default: the session\'s)')
    .option('--url <url>', 'the daemon\'s REST API (default: LINEKEEPER_URL, else the session\'s)')
    .option('--json', 'print the closed exception and its signature as JSON')
    .action(async (id: string, opts: { comment: string; deviation?: string; meaning?: string; tenant?: string; url?: string; json?: boolean }) => {
      const { session, client } = connect(opts, Date.now());
      process.stderr.write(`linekeeper: closing ${id} as ${safeText(session.name)} (${session.user}, ${session.role}): ${safeText(opts.comment)}\n`);
      const password = await readPassword(`password for ${session.user} (re-authentication): `);
      const out: Closed = await client.closeException(id, { comment: opts.comment, password, ...(opts.deviation ? { deviation: opts.deviation } : {}), ...(opts.meaning !== undefined ? { meaning: opts.meaning } : {}) });
      if (opts.json) {
        process.stdout.write(`${JSON.stringify(out, null, 2)}\n`);
        return;
      }
      const tz = await daemonZone(client);
      const at = out.signature?.['timestamp'];
      process.stdout.write(`${exceptionLine(out.exception, tz)}\n${out.signature ? `  signed: key ${String(out.signature['keyId'])} at ${typeof at === 'string' ? siteIso(at, tz) : String(at)}\n` : ''}`);
    });
}
