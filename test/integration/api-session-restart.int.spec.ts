/**
 * Sessions kept in the store: a restarted daemon (a new process's daemon on the same data directory, on the same
 * SQLite file) accepts a token that is still valid, and refuses one signed out, one of a disabled account and one
 * expired — the revocation outlives the restart. The store holds the tokens' SHA-256 hashes, never a token in
 * clear (the database file and its WAL are searched byte for byte). The expiry, the sweep, a session ended by
 * another connection (the offline CLI) and an identity provider's token signed out run on an injected clock over
 * a real store reopened as a restart does.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { Identity } from '../../src/api/identity.js';
import { OidcVerifier } from '../../src/api/oidc.js';
import type { OidcConfig } from '../../src/config/schema.js';
import { sha256, SWEEP_BATCH } from '../../src/api/sessions.js';
import { ManualClock, systemClock } from '../../src/clock.js';
import { startDaemon, type Daemon } from '../../src/daemon.js';
import { silentLogger } from '../../src/log.js';
import { openStore, type Store } from '../../src/store/store.js';
import { call, signIn, startApiNode, type ApiNode } from '../helpers/api.js';
import { oidcConfig, PASSWORD, providerKey, req, startIdentityApi, token, writeJwks, type IdentityApi } from '../helpers/identity-api.js';

const A = '/v1/tenants/acme-pharma';

/** Every file of the data directory (the SQLite database, its WAL and shared memory, …) as bytes. */
function filesOf(dir: string): Buffer[] {
  return readdirSync(dir, { withFileTypes: true, recursive: true }).filter((e) => e.isFile()).map((e) => readFileSync(join(e.parentPath, e.name)));
}

describe('[P11.300] a daemon restart does not sign people out', () => {
  let node: ApiNode | undefined;
  let again: Daemon | undefined;
  afterEach(async () => {
    await again?.stop('test done');
    again = undefined;
    await node?.close();
    node = undefined;
  }, 60_000);

  it('a live token works after the restart; a signed-out one and one of an account disabled (even enabled again since) do not; no token is stored in clear', async () => {
    node = await startApiNode({ memory: true });
    const pw = (u: string) => node!.passwords.get(u)!;
    const live = await signIn(node.url, 'm.rossi', pw('m.rossi'));
    const renewed = (await call(node.url, 'POST', '/v1/auth/token/refresh', { token: await signIn(node.url, 'a.ricci', pw('a.ricci')) })).body.token as string;
    const out = await signIn(node.url, 'p.bianchi', pw('p.bianchi'));
    expect((await call(node.url, 'POST', '/v1/auth/logout', { token: out })).status).toBe(200);
    const disabled = await signIn(node.url, 'o.operator', pw('o.operator'));
    expect((await call(node.url, 'GET', `${A}/models`, { token: disabled })).status).toBe(200);
    const port = Number(new URL(node.url).port);
    await node.daemon.stop('restart for the test');
    // the operator is disabled while the daemon is down: by the offline CLI's way, another connection to the store
    const offline = openStore({ dataDir: join(node.dir, 'data') });
    const identity = new Identity({ store: offline, clock: systemClock, scryptLog2N: 10 });
    expect(identity.setDisabled('o.operator', true, 'd.marino', 'left the site')).toBe(true);
    // and enabled again: the account is usable, but the session its disabling ended stays ended (the revocation is
    // the store's, not read off the account's state)
    expect(identity.setDisabled('o.operator', false, 'd.marino', 'came back')).toBe(true);
    offline.close();

    again = await startDaemon({ configFile: join(node.dir, 'site.yaml'), dataDir: join(node.dir, 'data'), logger: silentLogger, api: { host: '127.0.0.1', port }, embeddedSimulator: 'memory' });
    const url = again.ready.api!;
    expect(url).toBe(node.url);
    // the first call may meet a keep-alive socket of the stopped daemon in fetch's pool (closed by the other side)
    const me = await call(url, 'GET', '/v1/auth/me', { token: live }).catch(() => call(url, 'GET', '/v1/auth/me', { token: live }));
    expect([me.status, me.body.user.id]).toEqual([200, 'm.rossi']);
    expect((await call(url, 'GET', `${A}/models`, { token: renewed })).status).toBe(200);
    // the restarted daemon renews a session it did not start, and its sign-out ends it
    const next = await call(url, 'POST', '/v1/auth/token/refresh', { token: live });
    expect(next.status).toBe(200);
    expect(next.body.sessionEndsAt).toBe(me.body.sessionEndsAt);
    for (const t of [out, disabled]) {
      const r = await call(url, 'GET', `${A}/models`, { token: t });
      expect([r.status, r.body.code]).toEqual([401, 'LK_UNAUTHENTICATED']);
    }
    expect((await call(url, 'POST', '/v1/auth/logout', { token: next.body.token })).status).toBe(200);
    for (const t of [live, next.body.token as string]) expect((await call(url, 'GET', `${A}/models`, { token: t })).status).toBe(401);

    const db = again.store.db;
    const hashes = db.prepare('SELECT hash FROM auth_session_token').pluck().all() as string[];
    expect(hashes).toContain(sha256(renewed));
    expect(hashes.every((h) => /^[0-9a-f]{64}$/.test(h))).toBe(true);
    for (const t of [out, disabled]) expect(db.prepare('SELECT revoked FROM auth_session_token t JOIN auth_session s ON s.id = t.session WHERE t.hash = ?').pluck().get(sha256(t))).toBe(1);
    // the account itself works again: a new sign-in is accepted
    expect((await call(url, 'POST', '/v1/auth/token', { body: { user: 'o.operator', password: pw('o.operator') } })).status).toBe(200);
    await again.stop('test done');
    again = undefined;
    for (const bytes of filesOf(join(node.dir, 'data'))) {
      for (const t of [live, renewed, out, disabled, next.body.token as string]) expect(bytes.includes(Buffer.from(t))).toBe(false);
    }
  }, 240_000);
});

describe('[P11.10(d)] persisted sessions on an injected clock', () => {
  let a: IdentityApi | undefined;
  const stores: Store[] = [];
  afterEach(async () => {
    for (const s of stores.splice(0)) s.close();
    await a?.close();
    a = undefined;
  });

  /** The same store reopened by a new Identity, as a restarted process does. */
  function restart(x: IdentityApi, clock: ManualClock): Identity {
    const store = openStore({ dataDir: join(x.dir, 'data'), clock });
    stores.push(store);
    return new Identity({ store, clock, tokenTtlMs: 15 * 60_000, sessionMaxMs: 60 * 60_000, scryptLog2N: 10 });
  }

  it('an expired token is refused after a restart as before it; the maximum age is kept; expired rows are swept in bounded batches', async () => {
    a = await startIdentityApi({ ttlMs: 15 * 60_000, maxMs: 60 * 60_000 });
    const signed = (await req(a, 'POST', '/v1/auth/token', { body: { user: 'm.rossi', password: PASSWORD } })).body as { token: string; expiresAt: string; sessionEndsAt: string };
    const clock = new ManualClock(a.clock.now() + 10 * 60_000);
    const before = restart(a, clock);
    expect(before.resolve(signed.token).id).toBe('m.rossi');
    expect((await before.whoami(signed.token)).sessionEndsAt).toBe(Date.parse(signed.sessionEndsAt));
    clock.set(Date.parse(signed.expiresAt));
    const after = restart(a, clock);
    expect(() => after.resolve(signed.token)).toThrow(expect.objectContaining({ code: 'LK_UNAUTHENTICATED' }));

    // a backlog of expired sessions goes over several sweeps, at most SWEEP_BATCH a sweep
    const db = a.store.db;
    const ins = db.prepare('INSERT INTO auth_session (id, user, started_at, expires_at, max_until, revoked) VALUES (?, ?, 0, 1, 2, 0)');
    const tok = db.prepare('INSERT INTO auth_session_token (hash, session, expires_at) VALUES (?, ?, 1)');
    db.transaction(() => {
      for (let i = 0; i < SWEEP_BATCH + 20; i++) {
        ins.run(`ses_old${i}`, 'o.operator');
        tok.run(sha256(`old ${i}`), `ses_old${i}`);
      }
    })();
    const count = () => db.prepare("SELECT COUNT(*) FROM auth_session WHERE id LIKE 'ses_old%'").pluck().get();
    await after.signIn('o.operator', PASSWORD);
    expect(count()).toBe(20);
    clock.advance(60_000);
    await after.signIn('o.operator', PASSWORD);
    expect(count()).toBe(0);
    expect(db.prepare("SELECT COUNT(*) FROM auth_session_token WHERE session LIKE 'ses_old%'").pluck().get()).toBe(0);
  });

  it('a session ended by another connection to the store (an offline password reset by an administrator) ends in the running daemon within a second', async () => {
    a = await startIdentityApi();
    const t = (await req(a, 'POST', '/v1/auth/token', { body: { user: 'p.bianchi', password: PASSWORD } })).body.token as string;
    expect((await req(a, 'GET', '/v1/auth/me', { token: t })).status).toBe(200);
    const offline = restart(a, new ManualClock(a.clock.now()));
    await offline.setPassword('p.bianchi', 'an administrator chose this, 28 Nov', 'd.marino', 'forgotten password');
    expect(a.store.db.prepare('SELECT s.revoked FROM auth_session s JOIN auth_session_token t ON t.session = s.id WHERE t.hash = ?').pluck().get(sha256(t))).toBe(1);
    a.clock.advance(1_000);
    const r = await req(a, 'GET', '/v1/auth/me', { token: t });
    expect([r.status, r.body.code]).toEqual([401, 'LK_UNAUTHENTICATED']);
  });

  it('an identity provider\'s token signed out stays refused after a restart, until it expires; another token of the person works', async () => {
    const key = await providerKey('k-restart');
    let cfg: OidcConfig | undefined;
    a = await startIdentityApi({ oidc: (dir) => (cfg = oidcConfig({ jwks_file: writeJwks(dir, [key]) })) });
    const claims = { plants: ['plant-acme'] };
    const jwt = await token(key, claims, { now: a.clock.now() });
    expect((await req(a, 'GET', '/v1/auth/me', { token: jwt })).status).toBe(200);
    expect((await req(a, 'POST', '/v1/auth/logout', { token: jwt })).status).toBe(200);
    const clock = new ManualClock(a.clock.now() + 60_000);
    const store = openStore({ dataDir: join(a.dir, 'data'), clock });
    stores.push(store);
    const again = new Identity({ store, clock, scryptLog2N: 10, oidc: new OidcVerifier(cfg!, a.dir, ['acme-pharma', 'borealis-bio'], clock) });
    await expect(again.authenticate(jwt)).rejects.toMatchObject({ code: 'LK_UNAUTHENTICATED' });
    expect((await again.authenticate(await token(key, { ...claims, jti: 'another' }, { now: clock.now() }))).id).toBe('q.sso');
    // past its expiry but inside the verifier's clock tolerance, where it would verify again: still refused
    const exp = (JSON.parse(Buffer.from(jwt.split('.')[1]!, 'base64url').toString()) as { exp: number }).exp * 1000;
    expect(cfg!.clock_tolerance_s).toBeGreaterThan(2);
    clock.advance(exp + 1_000 - clock.now());
    const later = new Identity({ store, clock, scryptLog2N: 10, oidc: new OidcVerifier(cfg!, a.dir, ['acme-pharma', 'borealis-bio'], clock) });
    await expect(later.authenticate(jwt)).rejects.toMatchObject({ code: 'LK_UNAUTHENTICATED', detail: { reason: 'signed_out' } });
  });
});
