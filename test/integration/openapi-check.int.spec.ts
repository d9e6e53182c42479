/**
 * The OpenAPI check of the API test helpers can fail, and does by default: a real HTTP server on loopback serves a
 * small, valid OpenAPI 3.1 document and answers that depart from it — an undocumented status, an undocumented media
 * type, a body off its schema, a success on a path the document does not have, an event stream answered as JSON —
 * and `call()` / `SseReader` (test/helpers/api.ts) refuse each with no environment variable set. Also: turning the
 * check off needs a reason, and the document is fetched once per server and validated once per distinct text.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { call, SseReader } from '../helpers/api.js';
import { openApiCheckOn, openApiOf } from '../helpers/openapi-check.js';

const problem = { content: { 'application/problem+json': { schema: { $ref: '#/components/schemas/Problem' } } } };
const DOC = JSON.stringify({
  openapi: '3.1.0',
  info: { title: 'a small API', version: '1' },
  paths: {
    '/things': {
      get: {
        responses: {
          200: { description: 'a thing', content: { 'application/json': { schema: { type: 'object', required: ['n'], properties: { n: { type: 'integer' } }, additionalProperties: false } } } },
          '4XX': { description: 'refused', ...problem },
        },
      },
    },
    '/stream': {
      get: { responses: { 200: { description: 'events', content: { 'text/event-stream': { schema: { type: 'string' } } } }, '4XX': { description: 'refused', ...problem } } },
    },
  },
  components: { schemas: { Problem: { type: 'object', required: ['type', 'title', 'status', 'code'], properties: { type: { type: 'string' }, title: { type: 'string' }, status: { type: 'integer' }, code: { type: 'string', pattern: '^LK_' } } } } },
});

/** What the server answers, by the request's `mode`: each a way to depart from DOC but `ok`. */
const ANSWERS: Record<string, { status: number; type: string; body: string }> = {
  ok: { status: 200, type: 'application/json', body: '{"n":1}' },
  status: { status: 201, type: 'application/json', body: '{"n":1}' },
  type: { status: 200, type: 'text/plain', body: 'n=1' },
  body: { status: 200, type: 'application/json', body: '{"n":"one"}' },
  refusal: { status: 404, type: 'application/json', body: '{"type":"about:blank","title":"Not Found","status":404,"code":"LK_NOT_FOUND"}' },
  problem: { status: 404, type: 'application/problem+json', body: '{"type":"about:blank","title":"Not Found","status":404,"code":"LK_NOT_FOUND"}' },
};

let servers: Server[] = [];
let urls: string[] = [];
let documentFetches = 0;

async function serve(): Promise<string> {
  const s = createServer((req, res) => {
    const u = new URL(req.url ?? '/', 'http://x');
    if (u.pathname === '/openapi.json') {
      documentFetches++;
      res.writeHead(200, { 'content-type': 'application/json' }).end(DOC);
      return;
    }
    if (u.pathname === '/stream') {
      // an event stream answered as JSON: a client reading text/event-stream would not get its events
      res.writeHead(200, { 'content-type': u.searchParams.get('mode') === 'ok' ? 'text/event-stream' : 'application/json' }).end(u.searchParams.get('mode') === 'ok' ? 'event: end\ndata: {}\n\n' : '{}');
      return;
    }
    const a = u.pathname === '/things' ? ANSWERS[u.searchParams.get('mode') ?? 'ok']! : ANSWERS['ok']!; // anything else: a success where the document has no path
    res.writeHead(a.status, { 'content-type': a.type }).end(a.body);
  });
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  servers.push(s);
  return `http://127.0.0.1:${(s.address() as AddressInfo).port}`;
}

beforeAll(async () => {
  // the default: no variable set (a run with LK_CHECK_OPENAPI=0 must not make this file pass by checking nothing)
  vi.stubEnv('LK_CHECK_OPENAPI', '');
  urls = [await serve(), await serve()];
});
afterAll(async () => {
  vi.unstubAllEnvs();
  await Promise.all(servers.map((s) => new Promise((r) => s.close(r))));
  servers = [];
});

describe('call() checks every answer against the OpenAPI document by default', () => {
  it('passes an answer the document describes: a documented success, a refusal as problem+json', async () => {
    expect((await call(urls[0]!, 'GET', '/things?mode=ok')).body).toEqual({ n: 1 });
    expect((await call(urls[0]!, 'GET', '/things?mode=problem')).status).toBe(404);
  });

  it.each([
    ['an undocumented status', '/things?mode=status', /GET \/things: status 201 is not documented \(documented: 200, 4XX\)/],
    ['an undocumented media type', '/things?mode=type', /GET \/things 200: media type "text\/plain" is not documented/],
    ['a body off its schema', '/things?mode=body', /GET \/things 200: body\/n must be integer/],
    ['a refusal that is not problem+json', '/things?mode=refusal', /GET \/things 4XX: media type "application\/json" is not documented/],
    ['a success on a path the document does not have', '/elsewhere', /GET \/elsewhere is not in the document, yet answered 200/],
  ])('fails %s', async (_what, path, message) => {
    await expect(call(urls[0]!, 'GET', path)).rejects.toThrow(message);
  });

  it('an event stream answered with an undocumented media type fails the reader (next and done)', async () => {
    const ok = new SseReader(`${urls[0]!}/stream?mode=ok`, 'token');
    expect((await ok.next(1)).map((e) => e.event)).toEqual(['end']);
    await ok.done;
    const wrong = new SseReader(`${urls[0]!}/stream?mode=json`, 'token');
    await expect(wrong.next(1)).rejects.toThrow(/GET \/stream 200: media type "application\/json" is not documented/);
    await expect(wrong.done).rejects.toThrow(/departs from the OpenAPI document/);
  });

  it('a call is unchecked only when it names why; an empty reason is refused', async () => {
    expect((await call(urls[0]!, 'GET', '/things?mode=status', { unchecked: 'this test sends an answer the document lacks' })).status).toBe(201);
    await expect(call(urls[0]!, 'GET', '/things?mode=ok', { unchecked: ' ' })).rejects.toThrow(/needs the reason/);
  });

  it('the document is fetched once per server, and validated and compiled once per distinct text', async () => {
    const before = documentFetches;
    for (let i = 0; i < 5; i++) await call(urls[1]!, 'GET', '/things?mode=ok');
    expect(documentFetches).toBe(before + 1); // the second server's document, asked for at its first call
    for (let i = 0; i < 5; i++) await call(urls[1]!, 'GET', '/things?mode=ok');
    expect(documentFetches).toBe(before + 1);
    // both servers serve the same text: one validated document, its Ajv validators compiled once
    expect(await openApiOf(urls[1]!)).toBe(await openApiOf(urls[0]!));
  });
});

describe('turning the check off', () => {
  it('is on unless LK_CHECK_OPENAPI=0, which needs LK_CHECK_OPENAPI_REASON; any other value is refused', () => {
    expect(openApiCheckOn({})).toBe(true);
    expect(openApiCheckOn({ LK_CHECK_OPENAPI: '1' })).toBe(true);
    expect(() => openApiCheckOn({ LK_CHECK_OPENAPI: '0' })).toThrow(/LK_CHECK_OPENAPI_REASON/);
    expect(() => openApiCheckOn({ LK_CHECK_OPENAPI: '0', LK_CHECK_OPENAPI_REASON: '  ' })).toThrow(/LK_CHECK_OPENAPI_REASON/);
    expect(openApiCheckOn({ LK_CHECK_OPENAPI: '0', LK_CHECK_OPENAPI_REASON: 'bisecting a daemon start-up hang' })).toBe(false);
    expect(() => openApiCheckOn({ LK_CHECK_OPENAPI: 'false' })).toThrow(/LK_CHECK_OPENAPI=false/);
  });
});
