/**
 * Server-sent events of a run's tool-call log (GET /runs/{id}/stream). Each persisted log line is one event —
 * `id:` the line's id, `event: call|ok|error`, `data:` the line as JSON — in id order. A client that reconnects
 * with `Last-Event-ID` (or `?after=`) gets exactly what it missed: the stream subscribes to the engine first,
 * replays from the store, then goes live, and writes a line only when its id is the next one after the last
 * written (a jump is filled from the store), so there is no gap and no duplicate whatever the interleaving.
 * The stream ends with `event: end` once the run is terminal and its execution has returned; until then it
 * stays open with keep-alive comments; at each keep-alive the session behind the stream is checked, and a stream
 * whose session ended (sign-out, a disabled or locked account, a token not renewed) gets `event: session_end` and is
 * closed — its client's reconnection is then refused with 401. A client that reads too slowly is cut off rather than buffered without
 * bound: it reconnects with its Last-Event-ID and loses nothing.
 */
import type { ServerResponse } from 'node:http';
import type { FastifyReply } from 'fastify';
import type { ToolCallLine } from '../contract/runs.js';
import { TERMINAL_RUN, timeOfDay, type RunStatus } from '../domain/run.js';
import type { RunEngine } from '../engine/run/engine.js';
import { LkError } from '../errors.js';
import type { Logger } from '../log.js';
import type { ToolCallRecord } from '../store/run-store.js';

export interface StreamOptions {
  /** Concurrent streams one user may hold open (default 4). */
  readonly perUser?: number;
  /** Interval of the keep-alive comment (default 15 s). */
  readonly keepAliveMs?: number;
  /** Bytes a client may leave unread before it is cut off (default 1 MiB). */
  readonly maxBufferedBytes?: number;
  /** Lines read from the store per page while replaying. */
  readonly page?: number;
}

type StreamEngine = Pick<RunEngine, 'get' | 'toolCalls' | 'onToolCall' | 'onChange' | 'settled'>;

/** The JSON of one log line as the stream and the SDKs see it: a line of the wire contract (src/contract/runs.ts). */
export function lineOf(row: ToolCallRecord): ToolCallLine {
  return {
    id: row.id, run: row.run, at: row.at, time: timeOfDay(row.at), kind: row.kind, step: row.step, agent: row.agent, tool: row.tool,
    ...(row.args !== null && row.args !== undefined ? { args: row.args } : {}),
    ...(row.summary !== null ? { summary: row.summary } : {}),
    ...(row.result !== null && row.result !== undefined ? { result: row.result } : {}),
    auditSeq: row.auditSeq,
  };
}

/**
 * The bytes of one log line's event (`id:`, `event:`, `data:`), built once per line: every stream on the run is
 * handed the same row object by the engine and writes the same string, instead of serialising it once per stream.
 * Keyed weakly by the row: gone with it.
 */
const eventText = new WeakMap<ToolCallRecord, string>();
export function eventOf(row: ToolCallRecord): string {
  let text = eventText.get(row);
  if (text === undefined) eventText.set(row, (text = `id: ${row.id}\nevent: ${row.kind}\ndata: ${JSON.stringify(lineOf(row))}\n\n`));
  return text;
}

/** The open event streams of one API instance. */
export class RunStreams {
  private readonly open = new Set<{ end: (why: string) => void }>();
  private readonly perUser = new Map<string, number>();
  private readonly o: Required<StreamOptions>;

  constructor(private readonly engine: StreamEngine, private readonly log: Logger, opts: StreamOptions = {}) {
    this.o = { perUser: opts.perUser ?? 4, keepAliveMs: opts.keepAliveMs ?? 15_000, maxBufferedBytes: opts.maxBufferedBytes ?? 1024 * 1024, page: opts.page ?? 1000 };
  }

  get size(): number {
    return this.open.size;
  }

  /**
   * Take over `reply` and stream the run's log after `after`.
   * @throws LkError LK_NOT_FOUND (no such run for the tenant), LK_TOO_MANY_STREAMS — before anything is sent.
   */
  start(reply: FastifyReply, tenant: string, id: string, user: string, after: number, alive: () => boolean = () => true): void {
    this.engine.get(tenant, id);
    const held = this.perUser.get(user) ?? 0;
    if (held >= this.o.perUser) throw new LkError('LK_TOO_MANY_STREAMS', `${user} has ${held} event streams open (at most ${this.o.perUser}); close one first`, { open: held });
    this.perUser.set(user, held + 1);
    reply.hijack();
    const raw: ServerResponse = reply.raw;
    raw.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache, no-store', connection: 'keep-alive', 'x-accel-buffering': 'no' });
    raw.write('retry: 2000\n\n');

    let last = after;
    let replaying = true;
    let ending = false;
    let closed = false;
    const queued: ToolCallRecord[] = [];

    const write = (chunk: string): void => {
      if (closed) return;
      raw.write(chunk);
      if (raw.writableLength > this.o.maxBufferedBytes) close('the client reads too slowly; reconnect with Last-Event-ID');
    };
    const send = (row: ToolCallRecord): void => {
      write(eventOf(row));
      last = row.id;
    };
    /** Everything the store has after the last line written (the replay, and any gap). */
    const catchUp = (): void => {
      for (;;) {
        if (closed) return;
        const rows = this.engine.toolCalls(tenant, id, last, this.o.page);
        for (const r of rows) send(r);
        if (rows.length < this.o.page) return;
      }
    };
    const deliver = (row: ToolCallRecord): void => {
      if (row.id <= last) return; // already written (replayed, or delivered twice)
      if (row.id === last + 1) send(row);
      else catchUp();
    };
    const finish = async (status: RunStatus): Promise<void> => {
      if (ending || closed) return;
      ending = true;
      // lines written after the terminal status (a rejected run's genealogy) belong before `end`
      await this.engine.settled(id);
      catchUp();
      write(`event: end\ndata: ${JSON.stringify({ run: id, status })}\n\n`);
      close('the run is terminal');
    };

    const unTool = this.engine.onToolCall((row) => {
      if (row.run !== id || closed) return;
      if (replaying) queued.push(row);
      else deliver(row);
    });
    const unChange = this.engine.onChange((run) => {
      if (run.id === id && TERMINAL_RUN.has(run.status as RunStatus)) void finish(run.status as RunStatus);
    });
    const keepAlive = setInterval(() => {
      // the session is checked at every keep-alive: a signed-out or disabled user's stream ends here
      if (!alive()) {
        write(`event: session_end\ndata: ${JSON.stringify({ code: 'LK_UNAUTHENTICATED', detail: 'the session of this stream ended (signed out, disabled, or not renewed)' })}\n\n`);
        close('the session ended');
        return;
      }
      write(': keep-alive\n\n');
    }, this.o.keepAliveMs);
    keepAlive.unref();
    const entry = { end: (why: string) => close(why) };
    this.open.add(entry);

    const close = (why: string): void => {
      if (closed) return;
      closed = true;
      unTool();
      unChange();
      clearInterval(keepAlive);
      this.open.delete(entry);
      const n = (this.perUser.get(user) ?? 1) - 1;
      if (n > 0) this.perUser.set(user, n);
      else this.perUser.delete(user);
      raw.off('close', onClientClose);
      if (!raw.writableEnded) raw.end();
      this.log.debug({ run: id, user, last, why }, 'event stream closed');
    };
    const onClientClose = (): void => close('the client went away');
    raw.on('close', onClientClose);

    try {
      catchUp();
      replaying = false;
      for (const row of queued.splice(0)) deliver(row);
      const status = this.engine.get(tenant, id).status as RunStatus;
      if (TERMINAL_RUN.has(status)) void finish(status);
    } catch (err) {
      this.log.error({ err, run: id }, 'event stream failed');
      close('replay failed');
    }
  }

  /** End every open stream (API stop): clients reconnect with their Last-Event-ID. */
  closeAll(why: string): void {
    for (const s of [...this.open]) s.end(why);
  }
}
