/**
 * A run's tool-call log as an async iterator, over the daemon's server-sent events (GET /runs/{id}/stream:
 * `id:` the line id, `event: call|ok|error`, `data:` the line, then `event: end`). The `eventsource` client
 * reconnects after a dropped connection; every request, the first included, names the last line this
 * iterator received in `Last-Event-ID`, so the daemon sends exactly what is missing, and a line is never
 * handed on twice whatever the network did. A daemon not ready (503) is tried again the same way; a refusal
 * (401 after a failed re-sign-in, 404, 429) ends the iteration with its {@link LinekeeperError}.
 */
import { EventSource, type FetchLikeResponse } from 'eventsource';
import { LinekeeperError, problemOf, sdkError } from './errors.js';
import type { RunStatus, ToolCallLine } from './types.js';

/** What the stream needs of the client: a fetch that signs requests in (and again, on an expired token). */
export type AuthorizedFetch = (url: string, init: RequestInit) => Promise<Response>;

export interface ToolCallStreamOptions {
  /** Start after this line id (0: from the first line). */
  readonly after?: number;
  /** Reconnection attempts in a row without an answer before the iteration fails with LK_API_UNREACHABLE (default 20). */
  readonly maxRetries?: number;
  /**
   * Told of the connection: `open` each time the stream is (again) open, `lost` each time it was lost or could
   * not be opened and is about to be tried again (`why`: what happened). `last` is the line id the next request
   * resumes after. For a caller that says so to a person; the iteration goes on either way.
   */
  readonly onConnection?: (state: 'open' | 'lost', last: number, why?: string) => void;
}

interface Waiter<T, R> {
  resolve(r: IteratorResult<T, R | undefined>): void;
  reject(e: unknown): void;
}

/** An async iterator that can be closed at any moment, also while a `next()` waits. */
export class Channel<T, R = undefined> implements AsyncIterableIterator<T> {
  readonly #items: T[] = [];
  readonly #waiting: Waiter<T, R>[] = [];
  #done = false;
  #failure: { error: unknown } | undefined;
  #result: R | undefined;

  constructor(private readonly onClose: () => void = () => {}) {}

  push(value: T): void {
    if (this.#done) return;
    const w = this.#waiting.shift();
    if (w) w.resolve({ value, done: false });
    else this.#items.push(value);
  }

  /** No more values after those queued; `result` is what the iteration returns. */
  end(result?: R): void {
    if (this.#done) return;
    this.#done = true;
    this.#result = result;
    this.onClose();
    this.#flush();
  }

  /** The iteration throws `error` once the queued values are taken. */
  fail(error: unknown): void {
    if (this.#done) return;
    this.#failure = { error };
    this.end();
  }

  #flush(): void {
    if (this.#items.length > 0) return;
    for (const w of this.#waiting.splice(0)) this.#settle(w);
  }

  #settle(w: Waiter<T, R>): void {
    if (this.#failure) {
      const { error } = this.#failure;
      this.#failure = undefined;
      w.reject(error);
    } else w.resolve({ value: this.#result, done: true });
  }

  next(): Promise<IteratorResult<T, R | undefined>> {
    if (this.#items.length > 0) return Promise.resolve({ value: this.#items.shift()!, done: false });
    if (this.#done) return new Promise((resolve, reject) => this.#settle({ resolve, reject }));
    return new Promise((resolve, reject) => this.#waiting.push({ resolve, reject }));
  }

  /** Stop now (a `for await` left early): pending `next()` calls finish, queued values are dropped. */
  return(): Promise<IteratorResult<T, R | undefined>> {
    this.#items.length = 0;
    this.#failure = undefined;
    this.end();
    return Promise.resolve({ value: undefined, done: true });
  }

  [Symbol.asyncIterator](): this {
    return this;
  }
}

/**
 * The response body as `eventsource` reads it, except that a body that fails while this side still wants it
 * (the socket reset, the request closed under it) simply ends. `eventsource` then reconnects with
 * Last-Event-ID, as after a clean close; left alone, it stops for good on an abort it did not ask for.
 */
function dropEndsBody(body: ReadableStream<Uint8Array>, signal: AbortSignal | undefined): ReadableStream<Uint8Array> {
  const reader = body.getReader();
  return new ReadableStream<Uint8Array>({
    async pull(ctl) {
      try {
        const { done, value } = await reader.read();
        if (done) ctl.close();
        else ctl.enqueue(value);
      } catch (err) {
        if (signal?.aborted) ctl.error(err);
        else ctl.close();
      }
    },
    cancel(reason) {
      return reader.cancel(reason);
    },
  });
}

/**
 * Follow the tool-call log at `url` (the run's stream route). The iteration returns the run's terminal status
 * when the daemon sends `end`.
 * @throws LinekeeperError the daemon's refusal of the stream (LK_NOT_FOUND, LK_TOO_MANY_STREAMS,
 *   LK_UNAUTHENTICATED), LK_API_UNREACHABLE after `maxRetries` failed reconnections, LK_API_RESPONSE for a
 *   line that is not JSON.
 */
export function toolCallStream(fetch: AuthorizedFetch, url: string | Promise<string>, o: ToolCallStreamOptions = {}): Channel<ToolCallLine, RunStatus> {
  let es: EventSource | undefined;
  let closed = false;
  const out = new Channel<ToolCallLine, RunStatus>(() => {
    closed = true;
    es?.close();
  });
  Promise.resolve(url).then((u) => {
    if (!closed) es = follow(fetch, u, o, out);
  }, (err: unknown) => out.fail(err));
  return out;
}

function follow(fetch: AuthorizedFetch, url: string, o: ToolCallStreamOptions, out: Channel<ToolCallLine, RunStatus>): EventSource {
  const maxRetries = o.maxRetries ?? 20;
  let last = o.after ?? 0;
  let refusal: LinekeeperError | undefined;
  let failures = 0;
  /** Why the last request got no stream, in words (eventsource's own message is a chain of causes). */
  let lost: string | undefined;
  const es: EventSource = new EventSource(url, {
    fetch: async (_input, init): Promise<FetchLikeResponse> => {
      const headers: Record<string, string> = { ...init.headers };
      delete headers['Last-Event-ID'];
      // ours, not eventsource's: the resume point is the last line handed on, the first request included
      if (last > 0) headers['Last-Event-ID'] = String(last);
      const signal = init.signal as AbortSignal | undefined;
      let res: Response;
      try {
        res = await fetch(url, { method: 'GET', headers, ...(signal ? { signal } : {}) });
      } catch (err) {
        // a refusal on the way (the sign-in again failed) ends the stream: retrying it would lock the account;
        // a transport that says the daemon cannot be reached is a lost connection, retried below
        if (LinekeeperError.is(err) && err.code !== 'LK_API_UNREACHABLE') {
          refusal = err;
          return { status: err.status || 401, headers: new Headers(), url, redirected: false, body: null };
        }
        // eventsource gives up for good on an AbortError it did not cause itself: a request closed under it
        // before it was answered is a lost connection like any other, to be retried
        if (signal?.aborted) throw err;
        lost = LinekeeperError.is(err) ? err.detail : `the event stream's connection was lost: ${(err as Error).message}`;
        throw new TypeError(lost, { cause: err });
      }
      if (res.status === 503) {
        // not ready (starting, stopping): come back as after a lost connection, within maxRetries
        await res.body?.cancel();
        lost = `the daemon at ${new URL(url).origin} is not ready (HTTP 503)`;
        throw new TypeError(lost);
      }
      lost = undefined;
      if (res.status !== 200 || !res.body) {
        refusal = await problemOf(res, `GET ${new URL(url).pathname}`);
        return { status: res.status, headers: res.headers, url: res.url, redirected: res.redirected, body: null };
      }
      return { status: res.status, headers: res.headers, url: res.url, redirected: res.redirected, body: dropEndsBody(res.body, signal) };
    },
  });
  const onLine = (ev: MessageEvent): void => {
    let line: ToolCallLine;
    try {
      line = JSON.parse(String(ev.data)) as ToolCallLine;
    } catch (err) {
      out.fail(sdkError('LK_API_RESPONSE', `an event of the tool-call stream is not JSON: ${String(ev.data).slice(0, 120)}`, { cause: err }));
      return;
    }
    if (line.id <= last) return;
    last = line.id;
    out.push(line);
  };
  es.addEventListener('open', () => {
    failures = 0;
    o.onConnection?.('open', last);
  });
  es.addEventListener('call', onLine);
  es.addEventListener('ok', onLine);
  es.addEventListener('error', (ev: Event) => {
    // `event: error` is a tool call's error line; eventsource's own error events (no data) are the connection's
    if (typeof (ev as MessageEvent).data === 'string') return onLine(ev as MessageEvent);
    if (es.readyState === EventSource.CLOSED) {
      out.fail(refusal ?? sdkError('LK_API_RESPONSE', 'the tool-call stream was refused without a problem body'));
    } else if (++failures > maxRetries) {
      out.fail(sdkError('LK_API_UNREACHABLE', `the tool-call stream could not reconnect after ${maxRetries} attempts (last line ${last})`));
    } else {
      const why = lost ?? (ev as Event & { message?: unknown }).message;
      o.onConnection?.('lost', last, typeof why === 'string' && why.length > 0 ? why : undefined);
    }
  });
  // the daemon ended the stream's session (signed out, disabled, not renewed): reconnecting would only be refused
  es.addEventListener('session_end', (ev: MessageEvent) => {
    let detail = 'the session of this event stream ended (signed out, disabled, or not renewed)';
    try {
      const d = (JSON.parse(String(ev.data)) as { detail?: unknown }).detail;
      if (typeof d === 'string' && d.length > 0) detail = d;
    } catch {
      // the default detail stands
    }
    es.close();
    out.fail(sdkError('LK_UNAUTHENTICATED', `${detail} (last line ${last}); sign in again and resume with after: ${last}`));
  });
  es.addEventListener('end', (ev: MessageEvent) => {
    let status: RunStatus | undefined;
    try {
      status = (JSON.parse(String(ev.data)) as { status?: RunStatus }).status;
    } catch {
      status = undefined;
    }
    out.end(status);
  });
  return es;
}
