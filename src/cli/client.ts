/**
 * The CLI's HTTP client of the daemon's REST API (Node's fetch): JSON calls whose refusals come back as the
 * problem+json `code` and `detail` the daemon sent, and a reader of the run's server-sent events that resumes
 * with Last-Event-ID. It knows routes and wire formats, nothing of what the commands print.
 */
import { ERRORS, LkError, type ErrorCode } from '../errors.js';
import { VERSION } from '../version.js';

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
   * Open a run's event stream after `lastEventId` (0: from its first line).
   * @throws as {@link json} when the daemon refuses the stream.
   */
  async stream(path: string, lastEventId: number, signal: AbortSignal): Promise<SseStream> {
    let res: Response;
    try {
      res = await fetch(`${this.o.url}${path}`, { headers: this.headers({ accept: 'text/event-stream', ...(lastEventId > 0 ? { 'last-event-id': String(lastEventId) } : {}) }), signal });
    } catch (err) {
      if (signal.aborted) throw err;
      throw unreachable(this.o.url, err);
    }
    if (!res.ok || !res.body) {
      const text = await res.text().catch(() => '');
      let parsed: unknown;
      try {
        parsed = JSON.parse(text);
      } catch {
        parsed = undefined;
      }
      throw problemError(res.status, parsed, `GET ${path}`);
    }
    return new SseStream(res.body);
  }
}

export interface SseEvent {
  readonly id?: string;
  readonly event: string;
  readonly data: string;
}

/**
 * Server-sent events parsed as the WHATWG EventSource does it (fields `id`, `event`, `data`, `retry`; comments
 * skipped; a block without data dispatches nothing).
 */
export class SseParser {
  private buf = '';
  /** The server's `retry:` in ms, when it sent one. */
  retryMs: number | undefined;

  /** Feed text; @returns the events completed by it. */
  push(text: string): SseEvent[] {
    this.buf += text.replace(/\r\n?/g, '\n');
    const out: SseEvent[] = [];
    let i: number;
    while ((i = this.buf.indexOf('\n\n')) >= 0) {
      const block = this.buf.slice(0, i);
      this.buf = this.buf.slice(i + 2);
      let id: string | undefined;
      let event = 'message';
      const data: string[] = [];
      for (const line of block.split('\n')) {
        if (line === '' || line.startsWith(':')) continue;
        const c = line.indexOf(':');
        const name = c < 0 ? line : line.slice(0, c);
        const value = c < 0 ? '' : line.slice(c + 1).replace(/^ /, '');
        if (name === 'id') id = value;
        else if (name === 'event') event = value;
        else if (name === 'data') data.push(value);
        else if (name === 'retry' && /^\d+$/.test(value)) this.retryMs = Number(value);
      }
      if (data.length > 0) out.push({ ...(id !== undefined ? { id } : {}), event, data: data.join('\n') });
    }
    return out;
  }
}

/** An open event stream: its events in order until the server closes it (or the caller aborts). */
export class SseStream {
  readonly parser = new SseParser();

  constructor(private readonly body: ReadableStream<Uint8Array>) {}

  async *events(): AsyncGenerator<SseEvent> {
    const decoder = new TextDecoder();
    for await (const chunk of this.body as unknown as AsyncIterable<Uint8Array>) {
      for (const e of this.parser.push(decoder.decode(chunk, { stream: true }))) yield e;
    }
  }
}
