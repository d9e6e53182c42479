/**
 * The TypeScript SDK's session over a long stream: the token is renewed before it expires (POST
 * /v1/auth/token/refresh) so an open event stream outlives the token's lifetime, and a stream whose session
 * ended gets `event: session_end` and stops with LK_UNAUTHENTICATED instead of reconnecting. Against the REST
 * API on loopback (real identity, store and SSE; stub engine whose run stays RUNNING) with the API's injected
 * clock, which the client's `now` follows: minutes pass without waiting for them. The Python SDK (sdk/python)
 * the same, in a child python3 whose client clock follows the API's, skewed.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LinekeeperClient, LinekeeperError, type FetchLike } from '../../src/sdk/index.js';
import { join } from 'node:path';
import { registerModel } from '../../src/models/registry.js';
import type { ModelCard } from '../../src/twin/card.js';
import { PASSWORD, RUN, startIdentityApi, type IdentityApi } from '../helpers/identity-api.js';

const MIN = 60_000;
let a: IdentityApi;
let url: string;

/** A transport that counts the event-stream requests. */
function counting(): { fetch: FetchLike; streams: () => number } {
  let n = 0;
  return {
    fetch: (u, init) => {
      if (u.endsWith('/stream')) n++;
      return globalThis.fetch(u, init);
    },
    streams: () => n,
  };
}

/** A `next()` still waiting after its wait timed out: the next look waits on the same one. */
const pending = new WeakMap<object, Promise<unknown>>();

/** What the next value of `it` is, or 'open' when none comes within `ms` (the stream is still open and quiet). */
async function next<T>(it: AsyncIterator<T>, ms: number): Promise<IteratorResult<T> | 'open' | LinekeeperError> {
  let timer: NodeJS.Timeout | undefined;
  const quiet = new Promise<'open'>((r) => (timer = setTimeout(() => r('open'), ms)));
  const p = (pending.get(it) ?? it.next()) as Promise<IteratorResult<T>>;
  pending.set(it, p);
  try {
    const r = await Promise.race([p, quiet]);
    if (r !== 'open') pending.delete(it);
    return r;
  } catch (err) {
    pending.delete(it);
    if (LinekeeperError.is(err)) return err;
    throw err;
  } finally {
    clearTimeout(timer);
  }
}

beforeAll(async () => {
  // tokens live 15 minutes, sessions an hour; the stream checks its session every 50 ms
  a = await startIdentityApi({ ttlMs: 15 * MIN, maxMs: 60 * MIN, keepAliveMs: 50 });
  a.clock.set(Date.now());
  url = await a.api.listen('127.0.0.1', 0);
});
afterAll(async () => {
  await a.close();
});

describe('the SDK keeps its session over a long stream', () => {
  it('renews the token before it expires: the stream stays open past the first token\'s lifetime, and the old token is refused', async () => {
    const lk = new LinekeeperClient({ url, user: 'm.rossi', password: PASSWORD, tenant: 'acme-pharma', now: () => a.clock.now() });
    await lk.signIn();
    const first = lk.token!;
    const lines = lk.toolCalls(RUN);
    expect(await next(lines, 200)).toBe('open');
    a.clock.advance(14 * MIN); // within 2 minutes of the expiry: the next call renews first
    await lk.models();
    const second = lk.token!;
    expect(second).not.toBe(first);
    a.clock.advance(14 * MIN); // past the first token's expiry, inside the renewed one's
    expect(await next(lines, 300)).toBe('open');
    const old = await fetch(`${url}/v1/tenants/acme-pharma/models`, { headers: { authorization: `Bearer ${first}` } });
    expect(old.status).toBe(401);
    await lines.return();
    lk.close();
  });

  it('a stream whose session ended (not renewed) stops with LK_UNAUTHENTICATED and does not reconnect', async () => {
    const t = counting();
    // renewWithinMs 0: due only at the expiry, which no call reaches here
    const lk = new LinekeeperClient({ url, user: 'p.bianchi', password: PASSWORD, tenant: 'acme-pharma', now: () => a.clock.now(), renewWithinMs: 0, fetch: t.fetch });
    await lk.signIn();
    const lines = lk.toolCalls(RUN);
    expect(await next(lines, 200)).toBe('open');
    a.clock.advance(16 * MIN);
    const end = await next(lines, 5000);
    expect(end).toBeInstanceOf(LinekeeperError);
    expect((end as LinekeeperError).code).toBe('LK_UNAUTHENTICATED');
    expect((end as LinekeeperError).detail).toMatch(/session/);
    await new Promise((r) => setTimeout(r, 300));
    expect(t.streams()).toBe(1);
    lk.close();
  });

  it('a stream of a signed-out session stops the same way', async () => {
    const lk = new LinekeeperClient({ url, user: 'o.operator', password: PASSWORD, tenant: 'acme-pharma', now: () => a.clock.now() });
    await lk.signIn();
    const lines = lk.toolCalls(RUN);
    expect(await next(lines, 200)).toBe('open');
    const out = await fetch(`${url}/v1/auth/logout`, { method: 'POST', headers: { authorization: `Bearer ${lk.token!}` } });
    expect(out.status).toBe(200);
    const end = await next(lines, 5000);
    expect(end).toBeInstanceOf(LinekeeperError);
    expect((end as LinekeeperError).code).toBe('LK_UNAUTHENTICATED');
    lk.close();
  });
});

/** The Python SDK against the same API (in this process: the child must not block it), its JSON answer on stdout. */
async function python(script: string, env: Record<string, string>): Promise<unknown> {
  const child = spawn('python3', ['-c', script], { cwd: fileURLToPath(new URL('../../sdk/python', import.meta.url)), env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (err += d.toString()));
  const code = await new Promise<number | null>((resolve, reject) => {
    child.on('error', reject);
    child.on('close', resolve);
  });
  expect(code, err).toBe(0);
  return JSON.parse(out);
}

describe('the Python SDK keeps its session the same way', () => {
  it('renews a token near its expiry before the next call (the old one is then refused), and a stream of an ended session stops with LK_UNAUTHENTICATED', async () => {
    const out = (await python(`
import json, os, time
from linekeeper import Client, LinekeeperError
# the client's clock follows the API's injected one, skewed by the test
skew = [float(os.environ["API_NOW_MS"]) / 1000 - time.time()]
c = Client(os.environ["URL"], user="m.rossi", password=os.environ["PW"], tenant="acme-pharma", now=lambda: time.time() + skew[0])
c.sign_in()
first = c.token
skew[0] += 14 * 60  # within 2 minutes of the 15-minute expiry
c.models()
second = c.token
s = c.tool_calls(os.environ["RUN"])
kind, _ = s.next_item(0.3)
c._json("POST", "/v1/auth/logout")
try:
    s.next_item(10)
    code = None
except LinekeeperError as e:
    code = e.code
s.close()
print(json.dumps({"first": first, "second": second, "open": kind, "code": code}))
`, { URL: url, PW: PASSWORD, RUN, API_NOW_MS: String(a.clock.now()) })) as { first: string; second: string; open: string; code: string | null };
    expect(out.second).not.toBe(out.first);
    expect(out.open).toBe('timeout');
    expect(out.code).toBe('LK_UNAUTHENTICATED');
    const old = await fetch(`${url}/v1/tenants/acme-pharma/models`, { headers: { authorization: `Bearer ${out.first}` } });
    expect(old.status).toBe(401);
  }, 90_000);
});

describe('model status changes through the SDKs', () => {
  const draft = (analyte: string): string => registerModel(a.store, join(a.dir, 'data'), {
    tenant: 'acme-pharma', analyte, family: 'twin', kind: 'twin', artefact: { probe: analyte }, sites: ['site-ravenna'], by: 'p.bianchi',
    card: { tenant: 'acme-pharma', analyte, family: 'twin' } as unknown as ModelCard,
  }).id;

  it('retireModel / retire_model: 428 without the password, then signed by the client\'s person; promoteModel refuses a step the lifecycle lacks', async () => {
    const id = draft('sdkts');
    const lk = new LinekeeperClient({ url, user: 'm.rossi', password: PASSWORD, tenant: 'acme-pharma', now: () => a.clock.now() });
    const unsigned = await lk.retireModel(id, { changeRef: 'CC-2026-0720', reason: 'superseded' }).catch((e: unknown) => e);
    expect(unsigned).toMatchObject({ code: 'LK_REAUTH_REQUIRED', status: 428 });
    expect(await lk.retireModel(id, { changeRef: 'CC-2026-0720', reason: 'superseded', password: PASSWORD })).toMatchObject({ id, from: 'draft', to: 'retired', signature: { user: 'm.rossi' } });
    expect(await lk.promoteModel(id, { to: 'shadow', changeRef: 'CC-2026-0720', reason: 'x' }).catch((e: unknown) => e)).toMatchObject({ code: 'LK_MODEL_TRANSITION' });
    lk.close();

    const py = draft('sdkpy');
    const out = (await python(`
import json, os
from linekeeper import Client, LinekeeperError
c = Client(os.environ["URL"], user="m.rossi", password=os.environ["PW"], tenant="acme-pharma")
try:
    c.retire_model(os.environ["ID"], "CC-2026-0721", "superseded")
    first = None
except LinekeeperError as e:
    first = e.code
r = c.retire_model(os.environ["ID"], "CC-2026-0721", "superseded", password=os.environ["PW"])
print(json.dumps({"first": first, "to": r["to"], "user": r["signature"]["user"]}))
`, { URL: url, PW: PASSWORD, ID: py })) as { first: string; to: string; user: string };
    expect(out).toEqual({ first: 'LK_REAUTH_REQUIRED', to: 'retired', user: 'm.rossi' });
  }, 90_000);
});
