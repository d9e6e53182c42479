/**
 * Identity of the REST API beyond the password sign-in: renewal up to a maximum session age, server-side
 * sign-out, a disabled account (also disabled by another connection, as the offline CLI does), sign-in
 * throttling with Retry-After and the lock-out behind it, the event stream ending with its session, and
 * GET/PUT autonomy as the signed-in person with a signed raise. Real SQLite, injected clock.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { Identity } from '../../src/api/identity.js';
import { MAX_CONCURRENT_HASHES, passwordHashStats } from '../../src/api/passwords.js';
import { openStore } from '../../src/store/store.js';
import { PASSWORD, req, RUN, siteActions, startIdentityApi, type IdentityApi } from '../helpers/identity-api.js';

const T = '/v1/tenants/acme-pharma';
let a: IdentityApi | undefined;
afterEach(async () => {
  await a?.close();
  a = undefined;
});

async function signIn(x: IdentityApi, user: string, password = PASSWORD, ip?: string) {
  return req(x, 'POST', '/v1/auth/token', { body: { user, password }, ...(ip ? { ip } : {}) });
}

describe('sessions: renewal, maximum age, sign-out, disabled accounts', () => {
  it('a token is renewed without the password, each token keeps its own expiry, and no renewal passes the session\'s maximum age', async () => {
    a = await startIdentityApi({ ttlMs: 10 * 60_000, maxMs: 25 * 60_000 });
    const first = (await signIn(a, 'm.rossi')).body;
    expect(Date.parse(first.sessionEndsAt) - Date.parse(first.expiresAt)).toBe(15 * 60_000);
    a.clock.advance(8 * 60_000);
    const renewed = await req(a, 'POST', '/v1/auth/token/refresh', { token: first.token });
    expect(renewed.status).toBe(200);
    expect(renewed.body.token).not.toBe(first.token);
    expect(Date.parse(renewed.body.expiresAt)).toBe(a.clock.now() + 10 * 60_000);
    a.clock.advance(3 * 60_000); // the first token's own lifetime is over; the renewed one lives on
    expect((await req(a, 'GET', `${T}/models`, { token: first.token })).body.code).toBe('LK_UNAUTHENTICATED');
    expect((await req(a, 'GET', `${T}/models`, { token: renewed.body.token })).status).toBe(200);
    a.clock.advance(6 * 60_000);
    const last = await req(a, 'POST', '/v1/auth/token/refresh', { token: renewed.body.token });
    expect(last.body.expiresAt).toBe(first.sessionEndsAt); // capped by the maximum age
    a.clock.set(Date.parse(first.sessionEndsAt) - 500);
    const refused = await req(a, 'POST', '/v1/auth/token/refresh', { token: last.body.token });
    expect([refused.status, refused.body.code]).toEqual([401, 'LK_UNAUTHENTICATED']);
    expect(siteActions(a.store).filter((e) => e.action === 'auth.token_refreshed')).toHaveLength(2);
  });

  it('[R2] [P11.10(d)] sign-out ends the session at once: every token of it is refused, and the sign-out is audited', async () => {
    a = await startIdentityApi();
    const t1 = (await signIn(a, 'p.bianchi')).body.token as string;
    const t2 = (await req(a, 'POST', '/v1/auth/token/refresh', { token: t1 })).body.token as string;
    const other = (await signIn(a, 'p.bianchi')).body.token as string;
    const out = await req(a, 'POST', '/v1/auth/logout', { token: t2 });
    expect(out).toMatchObject({ status: 200, body: { signedOut: 'p.bianchi' } });
    for (const t of [t1, t2]) expect((await req(a, 'GET', `${T}/models`, { token: t })).status).toBe(401);
    // another session of the same person (another terminal) is not this one
    expect((await req(a, 'GET', `${T}/models`, { token: other })).status).toBe(200);
    expect(siteActions(a.store).filter((e) => e.action === 'auth.sign_out').map((e) => e.actor)).toEqual(['p.bianchi']);
  });

  it('[P11.10(d)] a disabled user\'s tokens stop at the next request — disabled here, or within a second by another connection to the database (the offline CLI)', async () => {
    a = await startIdentityApi();
    const rossi = (await signIn(a, 'm.rossi')).body.token as string;
    const bianchi = (await signIn(a, 'p.bianchi')).body.token as string;
    expect((await req(a, 'GET', `${T}/models`, { token: rossi })).status).toBe(200); // cached from here on
    a.identity.setDisabled('m.rossi', true, 'd.marino', 'left the company');
    expect((await req(a, 'GET', `${T}/models`, { token: rossi })).body.code).toBe('LK_UNAUTHENTICATED');

    expect((await req(a, 'GET', `${T}/models`, { token: bianchi })).status).toBe(200);
    const other = openStore({ dataDir: a.store.dataDir, clock: a.clock });
    try {
      new Identity({ store: other, clock: a.clock, scryptLog2N: 10 }).setDisabled('p.bianchi', true, 'd.marino', 'offline disable');
    } finally {
      other.close();
    }
    // another process's change is looked for at most once a second (asking SQLite costs what re-reading does)
    expect((await req(a, 'GET', `${T}/models`, { token: bianchi })).status).toBe(200);
    a.clock.advance(1000);
    expect((await req(a, 'GET', `${T}/models`, { token: bianchi })).body.code).toBe('LK_UNAUTHENTICATED');
    // enabling does not bring old sessions back: the person signs in again
    a.identity.setDisabled('p.bianchi', false, 'd.marino', 'back');
    expect((await req(a, 'GET', `${T}/models`, { token: bianchi })).status).toBe(401);
    expect((await signIn(a, 'p.bianchi')).status).toBe(200);
  });

  it('an open event stream ends at its next check once its session is signed out; the reconnection is refused', async () => {
    a = await startIdentityApi({ keepAliveMs: 30 });
    const addr = await a.api.listen('127.0.0.1', 0);
    const t = (await signIn(a, 'm.rossi')).body.token as string;
    const res = await fetch(`${addr}${T}/runs/${RUN}/stream`, { headers: { authorization: `Bearer ${t}` } });
    expect(res.status).toBe(200);
    const reader = res.body!.getReader();
    let text = '';
    const read = (async () => {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return;
        text += Buffer.from(value).toString('utf8');
      }
    })();
    await new Promise((r) => setTimeout(r, 100));
    expect(text).toContain(': keep-alive');
    expect((await req(a, 'POST', '/v1/auth/logout', { token: t })).status).toBe(200);
    await read; // the server closed the stream
    expect(text).toContain('event: session_end');
    const again = await fetch(`${addr}${T}/runs/${RUN}/stream`, { headers: { authorization: `Bearer ${t}` } });
    expect(again.status).toBe(401);
    await again.body?.cancel();
  });
});

describe('sign-in throttling and lock-out', () => {
  const limits = { windowMs: 60_000, perAddress: 5, perAccount: 3 };

  it('[P11.300] per account: past the limit, 429 LK_RATE_LIMITED with Retry-After — before the password is checked — audited once per window; the window passes with the clock', async () => {
    a = await startIdentityApi({ limits });
    for (let i = 0; i < 3; i++) expect((await signIn(a, 'o.operator', 'wrong password!!')).status).toBe(401);
    const limited = await signIn(a, 'o.operator'); // even the right password waits
    expect([limited.status, limited.body.code]).toEqual([429, 'LK_RATE_LIMITED']);
    expect(limited.headers['retry-after']).toBe('60');
    expect(limited.headers['content-type']).toMatch(/^application\/problem\+json/);
    a.clock.advance(20_000);
    expect((await signIn(a, 'O.Operator')).headers['retry-after']).toBe('40'); // no fresh allowance per spelling
    const trail = siteActions(a.store);
    expect(trail.filter((e) => e.action === 'auth.failed')).toHaveLength(3);
    expect(trail.filter((e) => e.action === 'auth.throttled').map((e) => e.args['limitedBy'])).toEqual(['account']);
    a.clock.advance(40_000);
    expect((await signIn(a, 'o.operator')).status).toBe(200);
  });

  it('per source address, across accounts; another address is not affected', async () => {
    a = await startIdentityApi({ limits });
    for (const u of ['x.one', 'x.two', 'x.three', 'x.four', 'x.five']) expect((await signIn(a, u, 'nope nope nope', '10.0.0.7')).status).toBe(401);
    expect((await signIn(a, 'm.rossi', PASSWORD, '10.0.0.7')).body.code).toBe('LK_RATE_LIMITED');
    expect((await signIn(a, 'm.rossi', PASSWORD, '10.0.0.8')).status).toBe(200);
  });

  it('120 parallel wrong sign-ins from one client on the real listener: attempts in flight count, so no more hashes run than the address allows; the rest are 429 LK_RATE_LIMITED; after the window the right password works', async () => {
    a = await startIdentityApi({ limits: { windowMs: 60_000, perAddress: 10, perAccount: 3 } });
    const url = await a.api.listen('127.0.0.1', 0);
    const users = ['m.rossi', 'o.operator', 'p.bianchi', 'd.marino']; // 4 × 3 per account > 10 per address
    const before = passwordHashStats();
    const replies = await Promise.all(Array.from({ length: 120 }, async (_, i) => {
      const r = await fetch(`${url}/v1/auth/token`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ user: users[i % 4], password: `wrong password ${i}` }) });
      return { status: r.status, type: r.headers.get('content-type') ?? '', body: (await r.json()) as { code?: string } };
    }));
    const after = passwordHashStats();
    // every password checked is one hash and one auth.failed entry: both say the same
    expect(after.started - before.started).toBe(10);
    expect(siteActions(a.store).filter((e) => e.action === 'auth.failed')).toHaveLength(10);
    expect(after.peak).toBeLessThanOrEqual(MAX_CONCURRENT_HASHES);
    expect(replies.filter((r) => r.status === 401).map((r) => r.body.code)).toEqual(Array(10).fill('LK_UNAUTHENTICATED'));
    const limited = replies.filter((r) => r.status === 429);
    expect(limited).toHaveLength(110);
    for (const r of limited) {
      expect(r.body.code).toBe('LK_RATE_LIMITED');
      expect(r.type).toMatch(/^application\/problem\+json/);
    }
    // within the window even the right password waits; after it, it works (nobody was locked by the burst)
    const signInHttp = async (user: string) => (await fetch(`${url}/v1/auth/token`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ user, password: PASSWORD }) })).status;
    expect(await signInHttp('m.rossi')).toBe(429);
    a.clock.advance(60_000);
    expect(await signInHttp('m.rossi')).toBe(200);
    expect(siteActions(a.store).filter((e) => e.action === 'auth.locked')).toHaveLength(0);
  });

  it('[P11.300] the lock-out still stops guessing from a source: consecutive failures across windows make it wait (answered as a wrong password), and enabling lifts the wait', async () => {
    a = await startIdentityApi({ limits });
    const codes: string[] = [];
    for (let i = 0; i < 7; i++) {
      codes.push((await signIn(a, 'm.rossi', 'guess guess guess')).body.code);
      a.clock.advance(30_000); // a patient guesser, under the per-account rate
    }
    expect(codes).toEqual(Array(7).fill('LK_UNAUTHENTICATED'));
    // the sixth came while the source waited (not counted); the seventh after: it waits twice as long
    expect(siteActions(a.store).filter((e) => e.action === 'auth.locked').map((e) => e.args['failures'])).toEqual([5, 6]);
    expect((await signIn(a, 'm.rossi')).status).toBe(401); // the source still waits: the right password is not looked at
    expect(a.identity.setDisabled('m.rossi', false, 'd.marino', 'identity confirmed by phone')).toBe(true);
    expect((await signIn(a, 'm.rossi')).status).toBe(200);
    expect(siteActions(a.store).find((e) => e.action === 'user.enable')).toMatchObject({ actor: 'd.marino', args: { user: 'm.rossi' } });
  });
});

describe('autonomy through the API as the signed-in person', () => {
  it('[LIM-AUTONOMY] lowering needs no password; raising is refused without one (428), signed with it, and refused to a role the bundle does not permit', async () => {
    a = await startIdentityApi();
    const op = (await signIn(a, 'o.operator')).body.token as string;
    const qa = (await signIn(a, 'm.rossi')).body.token as string;
    const before = (await req(a, 'GET', `${T}/autonomy`, { token: qa })).body;
    const from = before.agents['agent.compress_fill'].level as string;
    expect(from).toMatch(/^L[1-3]$/);
    const lower = await req(a, 'PUT', `${T}/autonomy`, { token: op, body: { agent: 'agent.compress_fill', level: 'L0', reason: 'drift seen on the press' } });
    expect(lower.body).toMatchObject({ type: 'autonomy_lowered', from, to: 'L0', by: 'o.operator', signed: false });

    const up = { agent: 'agent.compress_fill', level: 'L1', changeRef: 'CC-2026-0420', reason: 'drift explained' };
    const byOperator = await req(a, 'PUT', `${T}/autonomy`, { token: op, body: { ...up, password: PASSWORD } });
    expect([byOperator.status, byOperator.body.code]).toEqual([403, 'LK_AUTONOMY_CHANGE']);
    const unsigned = await req(a, 'PUT', `${T}/autonomy`, { token: qa, body: up });
    expect([unsigned.status, unsigned.body.code]).toEqual([428, 'LK_REAUTH_REQUIRED']);
    const wrong = await req(a, 'PUT', `${T}/autonomy`, { token: qa, body: { ...up, password: 'not my password' } });
    expect(wrong.body.code).toBe('LK_REAUTH_FAILED');
    const signed = await req(a, 'PUT', `${T}/autonomy`, { token: qa, body: { ...up, password: PASSWORD } });
    expect(signed.body).toMatchObject({ type: 'autonomy_raised', from: 'L0', to: 'L1', by: 'm.rossi', role: 'qa_reviewer', signed: true });

    const row = a.store.db.prepare("SELECT actor, signature FROM audit_entry WHERE tenant = 'acme-pharma' AND action = 'autonomy.raise'").get() as { actor: string; signature: string };
    expect(row.actor).toBe('m.rossi');
    expect(JSON.parse(row.signature)).toMatchObject({ user: 'm.rossi', name: 'Maria Rossi', meaning: expect.stringContaining('L0 → L1') });
    const after = (await req(a, 'GET', `${T}/autonomy`, { token: qa })).body;
    expect(after.agents['agent.compress_fill']).toMatchObject({ level: 'L1', source: 'changed', by: 'm.rossi', changeRef: 'CC-2026-0420' });
  });

  it('an unknown agent is refused before any password is asked; an auditor may read but not change', async () => {
    a = await startIdentityApi();
    const qa = (await signIn(a, 'm.rossi')).body.token as string;
    const r = await req(a, 'PUT', `${T}/autonomy`, { token: qa, body: { agent: 'agent.nobody', level: 'L1', changeRef: 'CC-1', password: 'not my password' } });
    expect(r.body.code).toBe('LK_AUTONOMY_CHANGE');
    expect(siteActions(a.store).some((e) => e.action === 'auth.failed')).toBe(false);
    const admin = (await signIn(a, 'd.marino')).body.token as string;
    expect((await req(a, 'PUT', `${T}/autonomy`, { token: admin, body: { agent: 'agent.compress_fill', level: 'L0' } })).body.code).toBe('LK_FORBIDDEN');
  });
});
