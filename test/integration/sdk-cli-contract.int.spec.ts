/**
 * What the CLI needs of the SDK's client, now that the command line speaks to the daemon through it: the routes
 * it called by path (sign-out, password change, autonomy changes), a renewal that hands back the new token for
 * the CLI to store, refusals that carry the problem's members (`reasons`) and name the request, and an event
 * stream that comes back after a transport reported the daemon unreachable, saying why in the transport's words.
 * Against the real API (fastify on loopback, a SQLite store) and a plain node:http listener for the stream.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LinekeeperClient, LinekeeperError } from '../../src/sdk/index.js';
import { sdkError } from '../../src/sdk/errors.js';
import { PASSWORD, startIdentityApi, type IdentityApi } from '../helpers/identity-api.js';

let a: IdentityApi;
let url: string;

beforeAll(async () => {
  a = await startIdentityApi();
  a.clock.set(Date.now());
  url = await a.api.listen('127.0.0.1', 0);
});
afterAll(async () => {
  await a.close();
});

const refusal = (p: Promise<unknown>): Promise<LinekeeperError> => p.then(() => { throw new Error('not refused'); }, (err: unknown) => err as LinekeeperError);

/** Listen on a loopback port; @returns its base URL and a way to close it. */
async function listen(handler: http.RequestListener): Promise<{ url: string; close(): Promise<void> }> {
  const server = http.createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => {
      server.closeAllConnections();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

describe('the SDK client has every route the CLI uses', () => {
  it('renew hands back the new token; signOut ends the session on the daemon', async () => {
    const c = new LinekeeperClient({ url, user: 'p.bianchi', password: PASSWORD, tenant: 'acme-pharma' });
    const first = await c.signIn();
    const renewed = await c.renew();
    expect(renewed.token).not.toBe(first.token);
    expect(renewed.token).toBe(c.token);
    expect(renewed.user.id).toBe('p.bianchi');
    const byToken = new LinekeeperClient({ url, token: renewed.token, tenant: 'acme-pharma' });
    expect((await byToken.models()).items).toEqual([]);
    expect(await byToken.signOut()).toEqual({ signedOut: 'p.bianchi' });
    expect((await refusal(byToken.models())).code).toBe('LK_UNAUTHENTICATED');
    c.close();
  });

  it('changePassword: the signed-in person\'s own, the new one signs in, the old one no longer', async () => {
    const next = 'a passphrase of her own, 11 December';
    const c = new LinekeeperClient({ url, user: 'o.operator', password: PASSWORD, tenant: 'acme-pharma' });
    await c.signIn();
    expect(await refusal(c.changePassword({ current: 'not it', password: next }))).toMatchObject({ code: 'LK_REAUTH_FAILED', request: 'POST /v1/auth/password' });
    expect(await c.changePassword({ current: PASSWORD, password: next })).toMatchObject({ user: { id: 'o.operator' }, mustChangePassword: false });
    expect((await new LinekeeperClient({ url, user: 'o.operator', password: next }).signIn()).user.id).toBe('o.operator');
    expect((await refusal(new LinekeeperClient({ url, user: 'o.operator', password: PASSWORD }).signIn())).code).toBe('LK_UNAUTHENTICATED');
    c.close();
  });

  it('setAutonomy: lowering at once; a raise is refused without the password (LK_REAUTH_REQUIRED), then signed with it', async () => {
    const c = new LinekeeperClient({ url, user: 'm.rossi', password: PASSWORD, tenant: 'acme-pharma' });
    expect(await c.setAutonomy({ agent: 'agent.compress_fill', level: 'L0', reason: 'drift' })).toMatchObject({ to: 'L0', by: 'm.rossi', signed: false });
    const unsigned = await refusal(c.setAutonomy({ agent: 'agent.compress_fill', level: 'L1', changeRef: 'CC-2026-0501' }));
    expect(unsigned).toMatchObject({ code: 'LK_REAUTH_REQUIRED', request: 'PUT /v1/tenants/acme-pharma/autonomy' });
    expect(await c.setAutonomy({ agent: 'agent.compress_fill', level: 'L1', changeRef: 'CC-2026-0501', password: PASSWORD })).toMatchObject({ type: 'autonomy_raised', from: 'L0', to: 'L1', signed: true });
    c.close();
  });
});

describe('refusals and the event stream as the CLI reads them', () => {
  it('a refusal carries the problem\'s reasons and the request; an answer that is no problem body names its request', async () => {
    const reasons = [{ code: 'PLC_LOST', subject: 'press', message: 'the press PLC is LOST' }];
    const srv = await listen((req, res) => {
      if (req.method === 'POST') res.writeHead(409, { 'content-type': 'application/problem+json' }).end(JSON.stringify({ code: 'LK_LINE_NOT_READY', detail: 'line-3 is not ready', reasons }));
      else res.writeHead(502, { 'content-type': 'text/html' }).end('<html>bad gateway</html>');
    });
    try {
      const c = new LinekeeperClient({ url: srv.url, token: 't', tenant: 'acme-pharma' });
      expect(await refusal(c.startRun({ request: 'run batch B-1042 on line-3' }))).toMatchObject({ code: 'LK_LINE_NOT_READY', status: 409, reasons, request: 'POST /v1/tenants/acme-pharma/runs' });
      expect(await refusal(c.line())).toMatchObject({ code: 'LK_API_RESPONSE', status: 502, request: 'GET /v1/tenants/acme-pharma/line' });
    } finally {
      await srv.close();
    }
  });

  it('a transport that finds the daemon unreachable is a lost connection: the stream comes back after the last line, told why in the transport\'s words', async () => {
    const RUN = 'run_0123456789abcdef0123';
    const resumes: string[] = [];
    const srv = await listen((req, res) => {
      const after = req.headers['last-event-id'];
      resumes.push(typeof after === 'string' ? after : '');
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      const from = Number(after ?? 0);
      if (from === 0) {
        // one line, then the connection drops
        res.end(`retry: 10\n\nid: 1\nevent: ok\ndata: ${JSON.stringify({ id: 1, run: RUN, kind: 'ok' })}\n\n`);
        return;
      }
      res.end(`id: 2\nevent: ok\ndata: ${JSON.stringify({ id: 2, run: RUN, kind: 'ok' })}\n\nevent: end\ndata: ${JSON.stringify({ run: RUN, status: 'SUCCEEDED' })}\n\n`);
    });
    let calls = 0;
    const c = new LinekeeperClient({
      url: srv.url, token: 't', tenant: 'acme-pharma',
      // the second request finds no daemon, as the CLI's transport reports it
      fetch: (u, init) => (++calls === 2 ? Promise.reject(sdkError('LK_API_UNREACHABLE', `cannot reach the linekeeper daemon at ${srv.url} (ECONNREFUSED)`)) : fetch(u, init)),
    });
    const told: string[] = [];
    try {
      const stream = c.toolCalls(RUN, { maxRetries: 5, onConnection: (state, last, why) => told.push(`${state} ${last}${why ? ` ${why}` : ''}`) });
      const ids: number[] = [];
      for await (const l of stream) ids.push(l.id);
      expect(ids).toEqual([1, 2]);
      expect(await stream.next()).toEqual({ done: true, value: 'SUCCEEDED' });
      expect(calls).toBe(3);
      expect(resumes).toEqual(['', '1']);
      expect(told).toContain(`lost 1 cannot reach the linekeeper daemon at ${srv.url} (ECONNREFUSED)`);
      expect(told.at(-1)).toBe('open 1');
    } finally {
      await srv.close();
    }
  });
});
