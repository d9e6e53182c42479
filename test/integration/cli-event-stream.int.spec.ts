/**
 * The CLI's attachment to a run reads the run's server-sent events as the wire allows them to arrive: CRLF line
 * endings, a chunk boundary between the `\r` and the `\n` of one line ending, and one between the `event:` line
 * and the `data:` line of one event. Every line of the log is handed on once, with its id and data intact, and
 * after the connection is dropped the stream is resumed with Last-Event-ID naming the last line received.
 *
 * The daemon here is a plain node:http listener on loopback that speaks the stream's protocol byte for byte
 * (the real daemon always writes LF and whole events, so it cannot produce these boundaries). Each chunk that
 * ends inside a line ending is written only after the CLI asked for the run's view because of the complete line
 * before it in the same chunk, so the next chunk reaches the CLI in a later read.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { attach } from '../../src/cli/attach.js';
import { daemonClient } from '../../src/cli/daemon-client.js';
import { LkError } from '../../src/errors.js';
import type { ApiRun, LogLine, TranscriptState } from '../../src/cli/run-transcript.js';
import { composePlan } from '../../src/domain/run.js';

const TENANT = 'acme-pharma';
const RUN = 'run_0123456789abcdef0123';
const BASE = `/v1/tenants/${TENANT}/runs/${RUN}`;
const PLAN = composePlan();

function view(status: ApiRun['status']): ApiRun {
  return {
    id: RUN, tenant: TENANT, batch: 'B-1042', line: 'line-3', product: 'ir-family-a', tooling: 'round-10mm-ff', status,
    goal: 'keep weight and hardness on target', autonomy: 'L3', startedBy: 'o.operator', createdAt: '2026-11-20T10:00:00.000Z',
    endedAt: status === 'RUNNING' ? null : '2026-11-20T10:02:00.000Z', reason: status === 'RUNNING' ? null : 'aborted by p.engineer',
    plan: { steps: PLAN.length, gates: 1, text: `${PLAN.length} steps, 1 approval gate` },
    steps: PLAN.map((p) => ({
      seq: p.seq, name: p.name, agent: p.agent, tool: p.tool, gate: p.gate, attempt: 1, detail: '', status: 'PENDING', durationMs: null, duration: '',
      exceptions: { total: 0, open: 0, blocking: 0, kinds: [] },
    })),
    exceptions: { total: 0, open: 0, blocking: 0, kinds: [] },
    approvalGate: { id: null, step: '09', status: 'not_reached', reviewer: 'm.rossi', recordHash: null, requestedAt: null, signature: null },
    genealogy: `${BASE}/genealogy`, release: null,
  };
}

/** Line `id` of the log: an error line of step `id` of the plan (so each is printed, and each is of a new step). */
function logLine(id: number): LogLine {
  const p = PLAN[id - 1]!;
  return { id, run: RUN, at: Date.parse('2026-11-20T10:00:00.000Z') + id * 1000, time: `10:00:0${id}`, kind: 'error', step: p.name, agent: p.agent, tool: p.tool, auditSeq: 100 + id, summary: `line ${id}: the data of line ${id} intact` };
}
const data = (id: number): string => `data: ${JSON.stringify(logLine(id))}`;
const printed = (id: number): string => `error: ${logLine(id).tool} in ${logLine(id).step}: line ${id}: the data of line ${id} intact`;

/** A queue of the daemon's observations the test waits on in order. */
class Signals {
  private readonly waiting: (() => void)[] = [];
  private count = 0;
  signal(): void {
    const w = this.waiting.shift();
    if (w) w();
    else this.count++;
  }
  next(): Promise<void> {
    if (this.count > 0) {
      this.count--;
      return Promise.resolve();
    }
    return new Promise((resolve) => this.waiting.push(resolve));
  }
}

const sink = (into: string[]): NodeJS.WriteStream => ({ write: (s: string) => (into.push(s), true), columns: 80 }) as unknown as NodeJS.WriteStream;

/** Listen on a loopback port; @returns its base URL. */
async function listen(handler: http.RequestListener): Promise<string> {
  server = http.createServer(handler);
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** What attaching to RUN at `url` fails with, and what it wrote to stderr. */
async function attachFailure(url: string, giveUpMs?: number): Promise<{ error: unknown; err: string }> {
  const err: string[] = [];
  const error = await attach({
    client: daemonClient({ url, token: 'tok-test', tenant: TENANT }), run: view('RUNNING'), how: 'attached', presence: false,
    out: sink([]), err: sink(err), tty: false, pollMs: 3_600_000, ...(giveUpMs !== undefined ? { giveUpMs } : {}),
  }).then(() => undefined, (e: unknown) => e);
  return { error, err: err.join('') };
}

const write = (res: http.ServerResponse, chunk: string): Promise<void> => new Promise((resolve, reject) => res.write(chunk, (err) => (err ? reject(err) : resolve())));

let server: http.Server | undefined;
afterEach(async () => {
  server?.closeAllConnections();
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  server = undefined;
});

describe('the CLI reads the run\'s event stream as the wire delivers it', () => {
  it('CRLF split across chunks loses no line, id or data; after a dropped connection it resumes after the last line received', async () => {
    const views = new Signals();
    /** Last-Event-ID of each stream request ('' when there was none). */
    const resumes: string[] = [];
    let terminal = false;

    const url = await listen((req, res) => {
      const path = req.url ?? '';
      if (req.headers.authorization !== 'Bearer tok-test') {
        res.writeHead(401, { 'content-type': 'application/problem+json' }).end(JSON.stringify({ code: 'LK_UNAUTHENTICATED', detail: 'no token' }));
        return;
      }
      if (req.method === 'GET' && path === BASE) {
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(view(terminal ? 'ABORTED' : 'RUNNING')));
        views.signal();
        return;
      }
      if (req.method === 'GET' && path === `${BASE}/stream`) {
        const after = req.headers['last-event-id'];
        resumes.push(typeof after === 'string' ? after : '');
        res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache' });
        res.socket?.setNoDelay(true);
        void (async () => {
          if (resumes.length === 1) {
            // line 1 whole; the line ending after `id: 2` split between its \r and its \n
            await write(res, `retry: 20\r\n\r\nid: 1\r\nevent: error\r\n${data(1)}\r\n\r\nid: 2\r`);
            await views.next();
            // line 2 whole; then line 3's `event:` line, split between \r and \n before its `data:` line
            await write(res, `\nevent: error\r\n${data(2)}\r\n\r\nid: 3\r\nevent: error\r`);
            await views.next();
            await write(res, `\n${data(3)}\r\n\r\n`);
            await views.next();
            // the connection drops (no `end`): the CLI must come back after line 3
            res.destroy();
            return;
          }
          // a faithful daemon: whatever follows the line the client names
          const from = Number(after ?? 0);
          for (let id = from + 1; id <= 4; id++) await write(res, `id: ${id}\r\nevent: error\r\n${data(id)}\r\n\r\n`);
          terminal = true;
          await write(res, `event: end\r\ndata: ${JSON.stringify({ run: RUN, status: 'ABORTED' })}\r\n\r\n`);
          res.end();
        })().catch(() => res.destroy());
        return;
      }
      res.writeHead(404, { 'content-type': 'application/problem+json' }).end(JSON.stringify({ code: 'LK_NOT_FOUND', detail: `${req.method} ${path}` }));
    });

    const out: string[] = [];
    const err: string[] = [];
    const saved: TranscriptState[] = [];
    const result = await attach({
      client: daemonClient({ url, token: 'tok-test', tenant: TENANT }), run: view('RUNNING'), how: 'attached', presence: false,
      out: sink(out), err: sink(err), tty: false, pollMs: 3_600_000, save: (s) => saved.push(structuredClone(s)),
    });

    expect(result.how).toBe('ended');
    expect(result.run.status).toBe('ABORTED');
    // two connections: the first from the start, the second after line 3, the last line the first one delivered
    expect(resumes).toEqual(['', '3']);
    const text = out.join('');
    const lines = text.split('\n').filter((l) => l.startsWith('error: '));
    expect(lines).toEqual([printed(1), printed(2), printed(3), printed(4)]);
    expect(text).toContain(`completed: ${RUN} ABORTED — batch B-1042 not released in 2:00: aborted by p.engineer`);
    expect(saved.at(-1)?.lastEventId).toBe(4);
    // the drop is said once, and so is the resumption, both naming line 3
    expect(err.join('')).toContain(`event stream of ${RUN} closed; resuming after line 3`);
    expect(err.join('')).toContain(`event stream of ${RUN} resumed after line 3`);
  }, 60_000); // a hang guard: a line lost on the way leaves the fake daemon waiting for the view it causes

  it('a refusal of the stream is the daemon\'s problem, as before: its code and detail, and for a lapsed session how to re-attach', async () => {
    let status = 404;
    const url = await listen((req, res) => {
      if (status === 502) {
        res.writeHead(502, { 'content-type': 'text/html' }).end('<html>bad gateway</html>');
        return;
      }
      const code = status === 404 ? 'LK_NOT_FOUND' : 'LK_UNAUTHENTICATED';
      res.writeHead(status, { 'content-type': 'application/problem+json' }).end(JSON.stringify({ code, detail: `refused ${req.url}` }));
    });
    const notFound = await attachFailure(url);
    expect(LkError.is(notFound.error, 'LK_NOT_FOUND')).toBe(true);
    expect((notFound.error as LkError).message).toBe(`refused ${BASE}/stream`);
    status = 401;
    const lapsed = await attachFailure(url);
    expect(LkError.is(lapsed.error, 'LK_UNAUTHENTICATED')).toBe(true);
    expect((lapsed.error as LkError).message).toBe(`refused ${BASE}/stream`);
    expect((lapsed.error as LkError).detail?.['hint']).toBe(`the run goes on; sign in again (linekeeper login), then re-attach: linekeeper runs watch ${RUN}`);
    // not linekeeper's problem body (a proxy's page): the status says what it can, as for any other call
    status = 502;
    const proxy = await attachFailure(url);
    expect(LkError.is(proxy.error, 'LK_INTERNAL')).toBe(true);
    expect((proxy.error as LkError).message).toBe(`GET ${BASE}/stream: HTTP 502`);
  });

  it('a daemon that stays away ends the attachment with LK_API_UNREACHABLE, saying where it was looked for', async () => {
    const url = await listen((_req, res) => res.destroy());
    await new Promise<void>((resolve) => server!.close(() => resolve()));
    server = undefined;
    const { error, err } = await attachFailure(url, 0);
    expect(LkError.is(error, 'LK_API_UNREACHABLE')).toBe(true);
    expect((error as LkError).message).toMatch(new RegExp(`^cannot reach the linekeeper daemon at ${url.replace(/[.]/g, '\\.')} \\(ECONNREFUSED\\), for 0 s$`));
    expect((error as LkError).detail?.['hint']).toBe(`the run goes on; re-attach later: linekeeper runs watch ${RUN}`);
    expect(err).toBe(`linekeeper: event stream of ${RUN} closed; resuming after line 0…\n`);
  });
});
