/**
 * The CLI's HTTP client of the daemon's REST API (Node's fetch): JSON calls whose refusals come back as the
 * problem+json `code` and `detail` the daemon sent, and a run's tool-call log read from its server-sent events
 * by the SDK's reader (src/sdk/events.ts, on the `eventsource` package), so the CLI and the SDK read the stream
 * one way. It knows routes and wire formats, nothing of what the commands print.
 */
import type { RunStatus } from '../domain/run.js';
import { ERRORS, LkError, type ErrorCode } from '../errors.js';
import { LinekeeperError } from '../sdk/errors.js';
import { toolCallStream, type Channel, type ToolCallStreamOptions } from '../sdk/events.js';
import { VERSION } from '../version.js';
import type { LogLine } from './run-transcript.js';

/**
 * A problem+json refusal whose code this CLI does not know (a newer daemon): printed like any other,
 * `linekeeper: <detail> [<code>]`, exit code 1.
 */
export class ProblemError extends Error {
  constructor(readonly code: string, readonly status: number, message: string) {
    super(message);
    this.name = 'ProblemError';
  }
}

/** What the daemon answered for an error status: an LkError of its code when known. */
export function problemError(status: number, body: unknown, what: string): Error {
  const p = (body ?? {}) as { code?: unknown; detail?: unknown; title?: unknown; issues?: unknown };
  const detail = typeof p.detail === 'string' && p.detail.length > 0 ? p.detail : typeof p.title === 'string' ? p.title : `${what}: HTTP ${status}`;
  const code = typeof p.code === 'string' ? p.code : null;
  if (code !== null && code in ERRORS) {
    const hint = code === 'LK_UNAUTHENTICATED' ? { hint: 'sign in again: linekeeper login' }
      : code === 'LK_LINE_NOT_READY' ? { hint: 'linekeeper line readiness lists each reason; a process engineer re-arms a LOST PLC: linekeeper line rearm <unit> --reason "…"' }
        : {};
    const reasons = (body as { reasons?: unknown } | null)?.reasons;
    return new LkError(code as ErrorCode, detail, { status, ...hint, ...(Array.isArray(p.issues) ? { issues: p.issues } : {}), ...(Array.isArray(reasons) ? { reasons } : {}) });
  }
  if (code !== null && /^LK_[A-Z0-9_]+$/.test(code)) return new ProblemError(code, status, detail);
  // not a problem body of linekeeper (a proxy's page, a crash): the status says what it can
  return new LkError(status === 401 ? 'LK_UNAUTHENTICATED' : 'LK_INTERNAL', detail, { status });
}

/** Node's fetch failing before any answer: the daemon is not there (or not at this address). */
function unreachable(url: string, err: unknown): LkError {
  const cause = (err as { cause?: { code?: string; message?: string } }).cause;
  const why = cause?.code ?? cause?.message ?? (err as Error).message;
  return new LkError('LK_API_UNREACHABLE', `cannot reach the linekeeper daemon at ${url} (${why})`, { url, hint: 'is `linekeeper serve` running there? (--url or LINEKEEPER_URL name another address)' }, { cause: err });
}

export interface ClientOptions {
  readonly url: string;
  readonly token?: string;
}

/** One daemon, one identity (or none, for sign-in). */
export class DaemonClient {
  private token: string | undefined;

  constructor(readonly o: ClientOptions) {
    this.token = o.token;
  }

  /** Use a renewed token from now on (POST /v1/auth/token/refresh). */
  setToken(token: string): void {
    this.token = token;
  }

  /** Headers of every call. */
  private headers(extra: Record<string, string> = {}): Record<string, string> {
    return { 'user-agent': `linekeeper-cli/${VERSION}`, ...(this.token ? { authorization: `Bearer ${this.token}` } : {}), ...extra };
  }

  /**
   * One JSON call. `path` is absolute (`/v1/...`).
   * @throws LkError of the daemon's problem code (or ProblemError for a code this CLI does not know);
   *   LK_API_UNREACHABLE when nothing answers.
   */
  async json<T>(method: 'GET' | 'POST' | 'PUT', path: string, body?: unknown, signal?: AbortSignal): Promise<T> {
    let res: Response;
    try {
      res = await fetch(`${this.o.url}${path}`, {
        method,
        headers: this.headers(body !== undefined ? { 'content-type': 'application/json', accept: 'application/json' } : { accept: 'application/json' }),
        ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
        ...(signal ? { signal } : {}),
      });
    } catch (err) {
      throw unreachable(this.o.url, err);
    }
    const text = await res.text();
    let parsed: unknown;
    try {
      parsed = text.length > 0 ? JSON.parse(text) : undefined;
    } catch {
      parsed = undefined;
    }
    if (!res.ok) throw problemError(res.status, parsed, `${method} ${path}`);
    if (parsed === undefined) throw new LkError('LK_INTERNAL', `${method} ${path}: the daemon answered ${res.status} without a JSON body`);
    return parsed as T;
  }

  /**
   * Follow a run's tool-call log at `path` (its `/stream` route) after line `after` (0: from its first line),
   * over the SDK's event-stream reader: the `eventsource` client parses the server-sent events and reconnects
   * after a dropped connection, each request naming the last line handed on in Last-Event-ID. The iteration
   * returns the run's terminal status when the daemon sends `end`.
   * Its errors are the CLI's: an LkError of the daemon's refusal (LK_UNAUTHENTICATED, LK_NOT_FOUND,
   * LK_TOO_MANY_STREAMS, …; ProblemError for a code this CLI does not know), LK_API_UNREACHABLE after
   * `maxRetries` failed reconnections.
   */
  toolCalls(path: string, o: { after: number; maxRetries?: number; onConnection?: ToolCallStreamOptions['onConnection'] }): RunLog {
    // why the last request got no stream, in the CLI's words (the reader's own are a chain of causes)
    let failure: string | undefined;
    const onConnection = o.onConnection;
    const stream = toolCallStream(
      async (url, init) => {
        try {
          const res = await fetch(url, { ...init, headers: { ...(init.headers as Record<string, string> | undefined), ...this.headers() } });
          failure = res.status === 503 ? `the daemon at ${this.o.url} is not ready (HTTP 503)` : undefined;
          return res;
        } catch (err) {
          // the reader closing its own request stays an abort; anything else says where the daemon was not found
          if (init.signal?.aborted) throw err;
          const e = unreachable(this.o.url, err);
          failure = e.message;
          throw e;
        }
      },
      `${this.o.url}${path}`,
      {
        after: o.after,
        ...(o.maxRetries !== undefined ? { maxRetries: o.maxRetries } : {}),
        ...(onConnection ? { onConnection: (state, last, why) => onConnection(state, last, state === 'lost' ? (failure ?? why) : undefined) } : {}),
      },
    );
    return new RunLog(stream as unknown as Channel<LogLine, RunStatus>, (err) => cliError(err, this.o.url, `GET ${path}`));
  }
}

/** The CLI's error for what the SDK's stream reader failed with (its own LkErrors pass as they are). */
function cliError(err: unknown, url: string, what: string): unknown {
  if (!LinekeeperError.is(err)) return err;
  if (err.code === 'LK_API_UNREACHABLE') return new LkError('LK_API_UNREACHABLE', `cannot reach the linekeeper daemon at ${url} (${err.detail})`, { url, hint: 'is `linekeeper serve` running there? (--url or LINEKEEPER_URL name another address)' }, { cause: err });
  // an answer that was not a problem body (a proxy's page): the status says what it can, as for a JSON call
  if (err.code === 'LK_API_RESPONSE' && err.detail.startsWith(`HTTP ${err.status} without a problem body`)) return problemError(err.status, undefined, what);
  return problemError(err.status, { code: err.code, detail: err.detail, ...(err.issues.length > 0 ? { issues: err.issues } : {}) }, what);
}

/**
 * A run's tool-call log as it is written: an async iterator of its lines, whose iteration returns the run's
 * terminal status. `return()` stops it (a detach); `fail(err)` ends it with `err` (a caller that gives up).
 */
export class RunLog implements AsyncIterableIterator<LogLine> {
  constructor(private readonly lines: Channel<LogLine, RunStatus>, private readonly mapError: (err: unknown) => unknown) {}

  async next(): Promise<IteratorResult<LogLine, RunStatus | undefined>> {
    try {
      return await this.lines.next();
    } catch (err) {
      throw this.mapError(err);
    }
  }

  return(): Promise<IteratorResult<LogLine, RunStatus | undefined>> {
    return this.lines.return();
  }

  fail(err: unknown): void {
    this.lines.fail(err);
  }

  [Symbol.asyncIterator](): this {
    return this;
  }
}
