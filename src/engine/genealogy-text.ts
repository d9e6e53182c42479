/**
 * The genealogy of a batch as a time-aligned plain-text table, for
 * `linekeeper runs show <id> --format genealogy`, and the same rows for the
 * release PDF's appendix (one reading of the genealogy, not two).
 *
 * Losing arbitration requests are merged into the timeline at their time and
 * marked, with score and reason (spec: arbitration rule 4). Text that came
 * from agents or equipment is made safe for a terminal: control and bidi
 * override characters are replaced, never passed through.
 *
 * Pure: no clock; times come from the events.
 */
import { isUtcZone, zonedParts } from '../domain/site-time.js';
import type { GenealogyEvent, LosingRequest } from './release-types.js';

/** One line of the genealogy, ready to print. */
export interface GenealogyRow {
  readonly at: number;
  /** UTC date, YYYY-MM-DD. */
  readonly date: string;
  /** UTC time of day, HH:MM:SS. */
  readonly time: string;
  readonly kind: string;
  readonly step: string;
  /** Agent and tag, whichever apply, space-separated. */
  readonly who: string;
  readonly summary: string;
  /** True for a losing arbitration request. */
  readonly losing: boolean;
}

export interface GenealogyTextOptions {
  /** Merged into the timeline and marked. */
  losingRequests?: readonly LosingRequest[];
  /** First line, e.g. "Genealogy of run run_7f3a, batch B-1042". */
  title?: string;
  /**
   * The site's time zone (IANA, `site.timezone`): the times are printed on the site's clock, each day line naming
   * the zone and its offset (a new one where the offset changes, at a change of summer time). Default: UTC.
   */
  timezone?: string;
}

/** Marks a losing request's row in the text table. */
export const LOSING_MARK = '!';

// C0/C1 controls and the bidi overrides/isolates that can make a terminal show something else than the bytes say.
const UNSAFE = /[\u0000-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/g;

/** One-line, terminal-safe text: whitespace controls become spaces, other unsafe characters '?'. */
export function safeText(s: string): string {
  return s.replace(UNSAFE, (c) => (c === '\n' || c === '\r' || c === '\t' ? ' ' : '?'));
}

/** "0.42", "12.5", "0.000413": enough digits to read, nothing invented. */
export function formatNumber(n: number): string {
  if (Number.isInteger(n)) return String(n);
  return Math.abs(n) >= 1 ? String(Number(n.toFixed(3))) : String(Number(n.toPrecision(3)));
}

function utcParts(at: number): { date: string; time: string } {
  const iso = new Date(at).toISOString();
  return { date: iso.slice(0, 10), time: iso.slice(11, 19) };
}

/**
 * The rows of a genealogy in time order. Sorting is stable: events keep their given order at equal
 * times, and a losing request follows the events of its instant.
 * @throws RangeError when a time is not a valid epoch-ms number (validated inputs never are).
 */
export function genealogyRows(events: readonly GenealogyEvent[], losing: readonly LosingRequest[] = []): GenealogyRow[] {
  const rows: GenealogyRow[] = [];
  for (const e of events) {
    const who = [e.agent, e.tag].filter((x): x is string => x !== undefined && x !== '').join(' ');
    rows.push({ at: e.at, ...utcParts(e.at), kind: e.kind, step: safeText(e.step ?? ''), who: safeText(who), summary: safeText(e.summary), losing: false });
  }
  for (const l of losing) {
    rows.push({
      at: l.at, ...utcParts(l.at), kind: 'arbitration', step: '', who: safeText(`${l.agent} ${l.setpoint}`),
      summary: safeText(`LOSING REQUEST (declined), score ${formatNumber(l.score)}: ${l.reason}`), losing: true,
    });
  }
  // Array.prototype.sort is stable; events were pushed before losing requests.
  return rows.sort((a, b) => a.at - b.at);
}

/**
 * The genealogy as a plain-text table: TIME (HH:MM:SS UTC), KIND, STEP, AGENT / TAG, SUMMARY.
 * A line `-- YYYY-MM-DD (UTC) --` opens each UTC day, so times of a run over midnight stay
 * unambiguous. On a site not on UTC (`opts.timezone`) the times are the site's clock and a line
 * `-- YYYY-MM-DD (Europe/Rome, UTC+01:00) --` opens each of its days and each change of its offset.
 * Losing requests carry {@link LOSING_MARK} in the first column and a legend follows.
 * Columns are as wide as their longest cell; nothing is cut. Ends with a newline.
 */
export function renderGenealogyText(events: readonly GenealogyEvent[], opts: GenealogyTextOptions = {}): string {
  const tz = opts.timezone;
  const utc = isUtcZone(tz);
  const rows = genealogyRows(events, opts.losingRequests ?? []).map((r) => {
    if (utc) return { ...r, day: `${r.date} (UTC)` };
    const z = zonedParts(r.at, tz!);
    return { ...r, time: z.time.slice(0, 8), day: `${z.date} (${tz}, UTC${z.offset})` };
  });
  const head = ['TIME', 'KIND', 'STEP', 'AGENT / TAG', 'SUMMARY'] as const;
  const cells = (r: GenealogyRow): string[] => [r.time, r.kind, r.step || '-', r.who || '-', r.summary];
  const width = head.map((h, i) => Math.max(h.length, ...rows.map((r) => cells(r)[i]!.length)));
  const line = (mark: string, cs: readonly string[]): string =>
    `${mark} ${cs.map((c, i) => (i === cs.length - 1 ? c : c.padEnd(width[i]!))).join('  ')}`.trimEnd();

  const out: string[] = [];
  if (opts.title !== undefined) out.push(safeText(opts.title), '');
  out.push(line(' ', head), line(' ', width.map((w, i) => '-'.repeat(i === width.length - 1 ? head[i]!.length : w))));
  if (rows.length === 0) out.push('  (no events)');
  let day = '';
  for (const r of rows) {
    if (r.day !== day) {
      day = r.day;
      out.push(`-- ${day} --`);
    }
    out.push(line(r.losing ? LOSING_MARK : ' ', cells(r)));
  }
  const lost = rows.filter((r) => r.losing).length;
  out.push('', `${rows.length} entries, times ${utc ? 'UTC' : `on the site's clock (${tz})`}.${lost > 0 ? ` ${LOSING_MARK} = losing arbitration request (${lost}): declined, with its score and reason.` : ''}`);
  return `${out.join('\n')}\n`;
}
