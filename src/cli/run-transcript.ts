/**
 * What `linekeeper run` and `runs watch` print while attached to a run (the spec's command-line program): the
 * composed plan, the twin rehearsal and the policy evaluation (their ok lines of the tool-call log), each step
 * with ok and its duration as it finishes, the approval-required line of the gate, the approval with identity
 * and timestamp once a reviewer signs, and a completion line.
 *
 * Pure: it is fed log lines (the event stream) and run views (GET /runs/{id}) and returns the lines to print.
 * Steps are printed in plan order: a line of step N is preceded by the steps before N that finished, so the
 * caller fetches the run's view first when {@link RunTranscript.needsView} says so. Its state (the last log
 * line seen, the step outcomes printed) is what a re-attachment resumes from, so nothing prints twice.
 */
import type { z } from 'zod';
import type { EscalationView, RunView, ToolCallLine } from '../api/schemas.js';
import { composePlan, formatDuration } from '../domain/run.js';
import { siteIso } from '../domain/site-time.js';
import { safeText } from '../engine/genealogy-text.js';

export type ApiRun = z.output<typeof RunView>;
export type LogLine = z.output<typeof ToolCallLine>;
export type Escalation = z.output<typeof EscalationView>;

type PendingMove = { id?: unknown; needs?: unknown; waitsFor?: unknown; since?: unknown; moves?: { setpoint?: unknown; from?: unknown; to?: unknown; unit?: unknown }[] };

function pendingOf(l: LogLine): PendingMove | null {
  const r = (l.result ?? {}) as { status?: unknown; pending?: PendingMove };
  return r.status === 'pending' && r.pending && typeof r.pending.id === 'string' ? r.pending : null;
}

const num = (v: unknown): string => (typeof v === 'number' && Number.isFinite(v) ? String(+v.toPrecision(6)) : '?');

/**
 * `  waiting for p.bianchi: press.MainForce 12 → 10.5 kN (move pw_…, since …)` and how to decide it; '' when the
 * line is not a move that waits. Since when on the site's clock with its offset (`tz`, default UTC).
 */
export function waitingLine(l: LogLine, tz?: string): string {
  const p = pendingOf(l);
  if (!p) return '';
  const id = safeText(String(p.id));
  const who = p.needs === 'qa' ? 'QA' : typeof p.waitsFor === 'string' ? safeText(p.waitsFor) : 'the batch\'s reviewer (none assigned)';
  const what = (p.moves ?? []).map((m) => `${safeText(String(m.setpoint))} ${num(m.from)} → ${num(m.to)}${typeof m.unit === 'string' && m.unit !== '1' ? ` ${safeText(m.unit)}` : ''}`).join(', ') || '?';
  const since = siteIso(typeof p.since === 'number' ? p.since : l.at, tz);
  return [
    `  waiting for ${who}: ${what} (move ${id} of ${safeText(l.agent)}, since ${since})`,
    `    decide with: linekeeper moves approve ${id} --meaning <id>  |  linekeeper moves reject ${id} --meaning <id>  (the site's meanings: linekeeper signature-meanings --for move)`,
  ].join('\n');
}

/** A deadlock waiting for a person: its sides and how to decide it (since when on the site's clock: `tz`, default UTC). */
export function escalationLines(e: Escalation, tz?: string): string[] {
  return [
    `! deadlock on ${safeText(e.setpoint)} waits for a person since ${siteIso(e.since, tz)} (equal rank, ${e.rank}); the setpoint is held: ${e.sides.map((x) => `${safeText(x.agent)} wants ${safeText(x.target)} (${x.attribute}, ${x.requestId})`).join(' vs ')}`,
    `    decide with: linekeeper escalations decide ${safeText(e.setpoint)} --choose <requestId> --reason "…"`,
  ];
}

/** What a re-attachment needs to print nothing twice. */
export interface TranscriptState {
  /** Id of the last log line handled (the stream's Last-Event-ID). */
  lastEventId: number;
  /** Outcomes printed: `<seq>/<attempt>/<status>` of steps, `run/<status>` of run notices, `gate/<approval>`. */
  printed: string[];
  /** The highest step seq the log has reached ('' before its first line). */
  seen: string;
}

export const emptyState = (): TranscriptState => ({ lastEventId: 0, printed: [], seen: '' });

const SEQ_OF: ReadonlyMap<string, string> = new Map(composePlan().map((s) => [s.name, s.seq]));
/** Step outcomes a line is printed for (RUNNING is the progress display's; APPROVAL is the gate's own line). */
const OUTCOMES: ReadonlySet<string> = new Set(['SUCCEEDED', 'FAILED', 'REJECTED', 'SKIPPED', 'HELD', 'INTERRUPTED', 'ABORTED']);
/** Step outcomes after which the step's log says nothing more until a person acts. */
const STOPPED: ReadonlySet<string> = new Set(['HELD', 'INTERRUPTED']);
/** Run statuses that wait for a person without a line in the log saying so. */
const WAITING: ReadonlySet<string> = new Set(['HELD', 'INTERRUPTED']);

/** `  05 compress.press           ok   1:23   agent.compress_fill · press.write_setpoint`. */
export function stepLine(s: ApiRun['steps'][number]): string {
  // a step that ended with exceptions is not a plain "ok": it says how many, of which kinds, and how many are open
  const x = s.exceptions;
  const flagged = x !== undefined && x.total > 0;
  const word = s.status === 'SUCCEEDED' ? (flagged ? 'ok!' : 'ok') : s.status.toLowerCase();
  const dur = s.duration || '—';
  const marker = flagged ? `${x.total} exception${x.total === 1 ? '' : 's'} (${x.kinds.join(', ')}), ${x.open} open${x.blocking ? `, ${x.blocking} blocking release` : ''}` : '';
  const extra = [s.attempt > 1 ? `attempt ${s.attempt}` : '', marker, s.status !== 'SUCCEEDED' && s.detail ? safeText(s.detail) : ''].filter(Boolean).join('; ');
  return `  ${s.seq} ${safeText(s.name).padEnd(25)} ${word.padEnd(4)} ${dur.padStart(10)}   ${safeText(s.agent)} · ${safeText(s.tool)}${extra ? ` — ${extra}` : ''}`;
}

/** The header of an attachment: what run, and its plan (unless re-attached after lines already printed); `tz` as for {@link RunTranscript}. */
export function header(run: ApiRun, how: 'started' | 'attached' | 'resumed', tz?: string): string[] {
  const where = `batch ${run.batch} on ${run.line} for ${run.tenant}`;
  if (how === 'started') return [`run ${run.id} started: ${where}, autonomy ≤ ${run.autonomy}`, `plan: ${run.plan.text}`];
  if (how === 'attached') return [`run ${run.id}: ${where}, started by ${run.startedBy} at ${siteIso(run.createdAt, tz)}, ${run.status}`, `plan: ${run.plan.text}`];
  return [`re-attached to ${run.id}: ${where}, ${statusText(run)}`];
}

/** `APPROVAL (waits for QA reviewer m.rossi)`. */
export function statusText(run: ApiRun): string {
  return `${run.status}${run.reason ? ` (${safeText(run.reason)})` : ''}`;
}

export class RunTranscript {
  readonly state: TranscriptState;
  private readonly printed: Set<string>;

  /** `tz`: the site's time zone (IANA), whose clock the times it prints are on, with their offset; default UTC. */
  constructor(state: TranscriptState = emptyState(), private readonly tz?: string) {
    this.state = { lastEventId: state.lastEventId, printed: [...state.printed], seen: state.seen };
    this.printed = new Set(state.printed);
  }

  /** True when `line` belongs to a step after those seen: fetch the run's view first, so earlier steps print first. */
  needsView(line: Pick<LogLine, 'step'>): boolean {
    const seq = SEQ_OF.get(line.step);
    return seq !== undefined && seq > this.state.seen;
  }

  /**
   * One line of the run's log (an event of the stream), with the run's view when {@link needsView} asked for
   * it. Lines at or before the last one handled are ignored (a resumed stream never prints twice).
   */
  line(l: LogLine, view?: ApiRun): string[] {
    if (l.id <= this.state.lastEventId) return [];
    this.state.lastEventId = l.id;
    const out: string[] = [];
    const seq = SEQ_OF.get(l.step);
    if (seq !== undefined && seq > this.state.seen) {
      if (view) out.push(...this.finished(view, (s) => s < seq));
      this.state.seen = seq;
    }
    out.push(...this.meaning(l));
    return out;
  }

  /**
   * A periodic look at the run: steps before the one the log is in that finished, that one when it stopped
   * to wait for a person (no further line will say so), and a run that waits for a person.
   */
  poll(view: ApiRun): string[] {
    const seen = this.state.seen;
    const out = this.finished(view, (seq, status) => seq < seen || (seq === seen && STOPPED.has(status)));
    if (WAITING.has(view.status)) out.push(...this.once(`run/${view.status}/${view.reason ?? ''}`, `${view.status === 'HELD' ? 'held' : 'interrupted'}: ${view.id} waits for a person${view.reason ? ` — ${safeText(view.reason)}` : ''}`));
    return out;
  }

  /** The stream's end (the run is terminal): every step left, and the completion line. */
  end(view: ApiRun): string[] {
    const out = this.finished(view, () => true);
    const took = view.endedAt ? ` in ${formatDuration(Date.parse(view.endedAt) - Date.parse(view.createdAt))}` : '';
    const what =
      view.status === 'SUCCEEDED'
        ? `batch ${view.batch} released${took}; genealogy: linekeeper runs show ${view.id} --format genealogy`
        : `batch ${view.batch} not released${took}${view.reason ? `: ${safeText(view.reason)}` : ''}`;
    out.push(`completed: ${view.id} ${view.status} — ${what}`);
    return out;
  }

  /**
   * The deadlocks waiting for a person (GET /arbitration/escalations) that involve this run, each printed once
   * while it waits (again only if a new one opens for the same setpoint).
   */
  escalations(run: string, items: readonly Escalation[]): string[] {
    return items.filter((e) => e.runs?.includes(run)).flatMap((e) => this.once(`esc/${e.setpoint}/${e.since}`, escalationLines(e, this.tz).join('\n')));
  }

  private once(key: string, text: string): string[] {
    if (this.printed.has(key)) return [];
    this.printed.add(key);
    this.state.printed.push(key);
    return [text];
  }

  private finished(view: ApiRun, within: (seq: string, status: string) => boolean): string[] {
    return view.steps.filter((s) => OUTCOMES.has(s.status) && within(s.seq, s.status)).flatMap((s) => this.once(`${s.seq}/${s.attempt}/${s.status}`, stepLine(s)));
  }

  /** The lines of the log the spec's transcript shows; the rest is in `runs show --format log`. */
  private meaning(l: LogLine): string[] {
    const summary = safeText(l.summary ?? '');
    if (l.kind === 'error') return [`error: ${l.tool} in ${l.step}: ${summary}`];
    if (l.tool === 'twin.simulate' && l.kind === 'ok') return [`twin: ${summary}`];
    if (l.tool === 'policy.evaluate' && l.kind === 'ok') return [`policy: ${summary}`];
    // review by exception: each exception the moment it is raised, and each closure
    if (l.tool === 'exception.raise' && l.kind === 'ok') {
      const r = (l.result ?? {}) as { exception?: unknown; severity?: unknown };
      return [`! ${summary} — ${safeText(String(r.severity ?? '?'))}, ${safeText(String(r.exception ?? '?'))}`];
    }
    // a setpoint move that waits for a person: whom, what, since when, and how to decide it
    if (l.kind === 'ok' && l.tool.endsWith('.write_setpoint')) return this.once(`move/${pendingOf(l)?.id ?? ''}`, waitingLine(l, this.tz)).filter(Boolean);
    if (l.tool !== 'approval.request') return [];
    if (l.kind === 'call') {
      const a = (l.args ?? {}) as { approval?: unknown; kind?: unknown; reviewer?: unknown; batch?: unknown };
      const id = safeText(String(a.approval ?? '?'));
      const lines = this.once(`gate/${id}`, `approval required: ${safeText(String(a.kind ?? 'batch_release'))} — waits for QA reviewer ${safeText(String(a.reviewer ?? '?'))} (approval ${id})`);
      if (lines.length === 0) return [];
      return [...lines, `  the reviewer signs with: linekeeper approve ${id} --decision approve|reject --meaning <id> [--comment "…"]  (the site's meanings: linekeeper signature-meanings --for release)`];
    }
    const r = (l.result ?? {}) as { approval?: unknown };
    return [`approval${r.approval ? ` ${safeText(String(r.approval))}` : ''}: ${summary}`];
  }
}
