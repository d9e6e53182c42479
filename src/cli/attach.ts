/**
 * Attached to a run: its event stream printed through the transcript, the run's view fetched when the log
 * moves to another step (and every few seconds, for a run that waits for a person without a log line saying
 * so), operator presence sent while attached (R5), and Ctrl-C detaching without touching the run. A stream that
 * closes or drops is resumed with Last-Event-ID (by the SDK's event-stream reader, src/sdk/events.ts); the
 * transcript's state is saved so `runs watch` resumes it.
 */
import { formatDuration } from '../domain/run.js';
import { LkError } from '../errors.js';
import type { LinekeeperClient } from '../sdk/client.js';
import { cliError } from './daemon-client.js';
import { header, RunTranscript, type ApiRun, type Escalation, type TranscriptState } from './run-transcript.js';
import { daemonZone } from './site-zone.js';

export interface AttachOptions {
  /** The SDK's client of the daemon, made for the run's tenant (src/cli/daemon-client.ts). */
  readonly client: LinekeeperClient;
  /** The run as last read (POST /runs or GET /runs/{id}). */
  readonly run: ApiRun;
  /** started: by this command; attached: from the run's first line; resumed: after a saved state. */
  readonly how: 'started' | 'attached' | 'resumed';
  readonly state?: TranscriptState;
  /** Called with the transcript's state whenever it printed something, and at the end. */
  readonly save?: (state: TranscriptState) => void;
  /** Send operator presence (POST /attendance) while attached: only an operator's counts. */
  readonly presence: boolean;
  readonly out: NodeJS.WriteStream;
  readonly err: NodeJS.WriteStream;
  /** A progress line at the bottom (stdout is a terminal); plain lines otherwise. */
  readonly tty: boolean;
  /** Interval of presence heartbeats (default 30 s; the bundle's attendance window is longer). */
  readonly presenceMs?: number;
  /** Interval of the run's view between log lines (default 5 s). */
  readonly pollMs?: number;
  /** How long the daemon may stay unreachable before the attachment gives up (default 60 s). */
  readonly giveUpMs?: number;
  /** Renew the session's token when it nears expiry (called every `renewMs`, default 60 s). */
  readonly renew?: () => Promise<void>;
  readonly renewMs?: number;
}

export type AttachResult = { readonly how: 'ended' | 'detached'; readonly run: ApiRun };

const SPINNER = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];

/** Permanent lines above, and on a terminal one progress line below them that is redrawn in place. */
class Screen {
  private shown = '';
  constructor(private readonly out: NodeJS.WriteStream, private readonly tty: boolean) {}

  line(s: string): void {
    if (this.shown) this.out.write('\r\x1b[2K');
    this.out.write(`${s}\n`);
    if (this.shown) this.out.write(this.shown);
  }

  status(s: string): void {
    if (!this.tty) return;
    // one row only: a wrapped status line could not be redrawn in place (columns is 0 on some pseudo-terminals)
    this.shown = s.slice(0, Math.max(20, (this.out.columns || 80) - 1));
    this.out.write(`\r\x1b[2K${this.shown}`);
  }

  clear(): void {
    if (this.shown) this.out.write('\r\x1b[2K');
    this.shown = '';
  }
}

/** `⠹ 05 compress.press · 1:23 · Ctrl-C detaches`: the step under way, from the last view and the time since. */
export function progressText(view: ApiRun, sinceViewMs: number, frame: number): string {
  const step = view.steps.find((s) => s.status === 'RUNNING' || s.status === 'APPROVAL');
  const spin = SPINNER[frame % SPINNER.length]!;
  const tail = ' · Ctrl-C detaches';
  if (!step) return `${spin} ${view.id} ${view.status}${tail}`;
  const elapsed = step.durationMs === null ? '' : step.duration === 'continuous' ? 'continuous' : formatDuration(step.durationMs + sinceViewMs);
  if (step.status === 'APPROVAL') return `⏸ ${step.seq} ${step.name} · waits for QA reviewer ${view.approvalGate.reviewer ?? '?'} · ${elapsed}${tail}`;
  return `${spin} ${step.seq} ${step.name} · ${elapsed}${tail}`;
}

/** Errors after which the stream is opened again: the daemon went away or is restarting. */
function transient(err: unknown): boolean {
  if (LkError.is(err)) return err.code === 'LK_API_UNREACHABLE' || err.code === 'LK_NOT_READY';
  // fetch's body ends with a TypeError ("terminated") when the connection drops while it is read
  return err instanceof TypeError;
}

function message(caught: unknown): string {
  const err = cliError(caught);
  return LkError.is(err) ? `${err.message} [${err.code}]` : err instanceof Error ? err.message : String(err);
}

/**
 * Follow the run until its stream ends (the run is terminal) or the person detaches (SIGINT).
 * @throws LkError of the daemon (LK_UNAUTHENTICATED when the session expired, LK_NOT_FOUND…), or
 *   LK_API_UNREACHABLE after the daemon stayed away `giveUpMs`; the transcript's state is saved first.
 */
export async function attach(o: AttachOptions): Promise<AttachResult> {
  // the times printed are on the site's clock (the daemon says its zone)
  const tz = await daemonZone(o.client);
  const t = new RunTranscript(o.state, tz);
  const screen = new Screen(o.out, o.tty);
  let view = o.run;
  let viewAt = Date.now();
  const print = (lines: readonly string[]): void => {
    for (const l of lines) screen.line(l);
    if (lines.length > 0) o.save?.(t.state);
  };
  const refresh = async (): Promise<ApiRun> => {
    view = await o.client.getRun(o.run.id);
    viewAt = Date.now();
    return view;
  };
  // stream lines and polls print one at a time, in order
  let chain: Promise<unknown> = Promise.resolve();
  const serial = <T>(fn: () => Promise<T>): Promise<T> => {
    const p = chain.then(fn);
    chain = p.catch(() => undefined);
    return p;
  };

  const ctl = new AbortController();
  const onSigint = (): void => {
    // a second Ctrl-C while detaching leaves at once
    if (ctl.signal.aborted) process.exit(130);
    ctl.abort();
  };
  process.on('SIGINT', onSigint);
  const timers: NodeJS.Timeout[] = [];
  if (o.presence) {
    let warned = false;
    const beat = (): void => {
      o.client.attendance().then(
        () => (warned = false),
        (err: unknown) => {
          if (warned || ctl.signal.aborted) return;
          warned = true;
          o.err.write(`linekeeper: operator presence not sent: ${message(err)}; L2/L3 moves drop to recommend-only while nobody is attended (R5)\n`);
        },
      );
    };
    beat();
    timers.push(setInterval(beat, o.presenceMs ?? 30_000));
  }
  // deadlocks of this run that wait for a person have no log line while they wait: they are asked for at each look
  const escalations = (): Promise<Escalation[]> =>
    o.client.escalations().then((r) => r.items, () => []);
  timers.push(setInterval(() => void serial(async () => {
    print(t.poll(await refresh()));
    print(t.escalations(o.run.id, await escalations()));
  }).catch(() => undefined), o.pollMs ?? 5000));
  if (o.renew) {
    let warnedRenew = false;
    const renew = o.renew;
    timers.push(setInterval(() => {
      renew().then(
        () => (warnedRenew = false),
        (err: unknown) => {
          if (warnedRenew || ctl.signal.aborted) return;
          warnedRenew = true;
          o.err.write(`linekeeper: the session could not be renewed: ${message(err)}\n`);
        },
      );
    }, o.renewMs ?? 60_000));
  }
  if (o.tty) {
    let frame = 0;
    timers.push(setInterval(() => screen.status(progressText(view, Date.now() - viewAt, frame++)), 200));
  }

  try {
    print(header(view, o.how, tz));
    // what finished since the saved state (a resumed attachment), before the log goes on
    if (o.how === 'resumed') print(t.poll(view));
    const giveUpMs = o.giveUpMs ?? 60_000;
    let awaySince: number | null = null;
    let told = false;
    const away = (last: number): void => {
      if (!told) o.err.write(`linekeeper: event stream of ${view.id} closed; resuming after line ${last}…\n`);
      told = true;
      awaySince ??= Date.now();
    };
    let gaveUp: LkError | undefined;
    for (;;) {
      // the SDK's reader resumes a dropped stream itself; this loop opens it again only after a failed look at the run
      const log = o.client.toolCalls(o.run.id, {
        after: t.state.lastEventId,
        maxRetries: Number.POSITIVE_INFINITY,
        onConnection: (state, last, why) => {
          if (state === 'open') {
            if (told) o.err.write(`linekeeper: event stream of ${view.id} resumed after line ${last}\n`);
            told = false;
            awaySince = null;
            return;
          }
          if (ctl.signal.aborted) return;
          away(last);
          if (Date.now() - awaySince! > giveUpMs) {
            gaveUp = new LkError('LK_API_UNREACHABLE', `${why ?? `the event stream of ${view.id} could not be resumed after line ${last}`}, for ${Math.round(giveUpMs / 1000)} s`, { hint: `the run goes on; re-attach later: linekeeper runs watch ${view.id}` });
            log.fail(gaveUp);
          }
        },
      });
      const detach = (): void => void log.return();
      ctl.signal.addEventListener('abort', detach, { once: true });
      try {
        for (;;) {
          const r = await log.next();
          if (ctl.signal.aborted) return { how: 'detached', run: view };
          if (r.done) {
            const v = await serial(refresh);
            print(t.end(v));
            return { how: 'ended', run: v };
          }
          const l = r.value;
          await serial(async () => print(t.line(l, t.needsView(l) ? await refresh() : undefined)));
        }
      } catch (caught) {
        if (ctl.signal.aborted) return { how: 'detached', run: view };
        if (caught === gaveUp) throw caught;
        // the SDK's refusal in the CLI's words: an LkError of its code (src/cli/daemon-client.ts)
        const err = cliError(caught);
        if (LkError.is(err, 'LK_UNAUTHENTICATED')) {
          // the session ended while attached (signed out, disabled, or past its maximum age): the run is not affected
          throw new LkError('LK_UNAUTHENTICATED', err.message, { hint: `the run goes on; sign in again (linekeeper login), then re-attach: linekeeper runs watch ${view.id}` }, { cause: err });
        }
        // the run's view could not be read (the daemon went away between two lines): the stream is opened again
        // after the last line handled, which is then read again with its view
        if (!transient(err)) throw err;
        away(t.state.lastEventId);
        if (Date.now() - awaySince! > giveUpMs) {
          const why = err instanceof Error ? err.message : String(err);
          throw new LkError('LK_API_UNREACHABLE', `${why}, for ${Math.round(giveUpMs / 1000)} s`, { hint: `the run goes on; re-attach later: linekeeper runs watch ${view.id}` }, { cause: err });
        }
      } finally {
        ctl.signal.removeEventListener('abort', detach);
        void log.return();
      }
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, 2000);
        ctl.signal.addEventListener('abort', () => (clearTimeout(timer), resolve()), { once: true });
      });
      if (ctl.signal.aborted) return { how: 'detached', run: view };
    }
  } finally {
    process.off('SIGINT', onSigint);
    for (const timer of timers) clearInterval(timer);
    ctl.abort();
    screen.clear();
    o.save?.(t.state);
  }
}
