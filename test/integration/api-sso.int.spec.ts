/**
 * Single sign-on: bearer JWTs of a made-up OIDC provider (keys and tokens made here with jose), verified against
 * a JWKS file and against a JWKS URL served on loopback; claims mapped to roles and tenants; every refusal a
 * problem+json with its LK_* code; signing by an SSO user needs a fresh provider sign-in.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { Oidc } from '../../src/config/schema.js';
import {
  AUDIENCE, ISSUER, oidcConfig, PASSWORD, providerKey, req, siteActions, startIdentityApi, T0, token, unsecured, writeJwks, type IdentityApi, type ProviderKey,
} from '../helpers/identity-api.js';

const T = '/v1/tenants/acme-pharma';
let key: ProviderKey;
let rsa: ProviderKey;
let stranger: ProviderKey;
let a: IdentityApi | undefined;

beforeAll(async () => {
  [key, rsa, stranger] = await Promise.all([providerKey('k-2026-11'), providerKey('k-rsa', 'RS256'), providerKey('k-2026-11')]);
});
afterEach(async () => {
  await a?.close();
  a = undefined;
});

const withFile = (extra: Record<string, unknown> = {}) => startIdentityApi({ oidc: (dir) => oidcConfig({ jwks_file: writeJwks(dir, [key, rsa]), ...extra }) });
const base = { plants: ['plant-acme'] };

describe('the token type (RFC 9068)', () => {
  it('an access token (typ at+jwt, any case, with or without application/) is accepted; an ID token or another type is refused with LK_SSO_TOKEN_TYPE unless ID tokens are configured', async () => {
    a = await withFile();
    for (const typ of ['at+jwt', 'AT+JWT', 'application/at+jwt']) expect((await req(a, 'GET', `${T}/models`, { token: await token(key, base, { typ }) })).status).toBe(200);
    for (const typ of [null, 'JWT', 'logout+jwt', 'application/jwt+refresh']) {
      const r = await req(a, 'GET', `${T}/models`, { token: await token(key, { ...base, jti: `t-${typ}` }, { typ }) });
      expect([r.status, r.body.code]).toEqual([401, 'LK_SSO_TOKEN_TYPE']);
    }
    await a.close();
    a = await withFile({ accept_id_tokens: true });
    for (const typ of [null, 'JWT']) expect((await req(a, 'GET', `${T}/models`, { token: await token(key, { ...base, jti: `id-${typ}` }, { typ }) })).status).toBe(200);
    expect((await req(a, 'GET', `${T}/models`, { token: await token(key, base, { typ: 'logout+jwt' }) })).body.code).toBe('LK_SSO_TOKEN_TYPE');
  });
});

describe('SSO bearer tokens against a JWKS file', () => {
  it('a valid token of a mapped group reaches the routes of its role and tenant; the first use is audited with the subject', async () => {
    a = await withFile();
    const t = await token(key, { ...base, groups: ['staff', 'lk-qa'] });
    expect((await req(a, 'GET', `${T}/models`, { token: t })).status).toBe(200);
    expect((await req(a, 'GET', `${T}/audit`, { token: t })).status).toBe(200); // qa_reviewer reads the trail
    expect((await req(a, 'GET', '/v1/tenants/borealis-bio/models', { token: t })).body.code).toBe('LK_NOT_FOUND'); // not its tenant (R1)
    const rsaToken = await token(rsa, { ...base, preferred_username: 'r.rsa' });
    expect((await req(a, 'GET', `${T}/models`, { token: rsaToken })).status).toBe(200);
    const seen = siteActions(a.store).filter((e) => e.action === 'auth.sso_sign_in');
    expect(seen.map((e) => [e.actor, e.args['subject'], e.args['role']])).toEqual([['q.sso', 'f3c1-77aa', 'qa_reviewer'], ['r.rsa', 'f3c1-77aa', 'qa_reviewer']]);
  });

  it('roles map by the first role_map entry held; a role without the route is 403 LK_FORBIDDEN; an administrator who also signs is refused (separation of duties)', async () => {
    a = await withFile();
    const admin = await token(key, { ...base, groups: ['lk-op', 'lk-admin'], preferred_username: 'a.admin' });
    // lk-admin comes first in role_map, so this person is an admin — who does not read models
    expect((await req(a, 'GET', `${T}/models`, { token: admin })).body.code).toBe('LK_FORBIDDEN');
    const both = await token(key, { ...base, groups: ['lk-qa', 'lk-admin'], preferred_username: 'b.both' });
    const r = await req(a, 'GET', `${T}/models`, { token: both });
    expect([r.status, r.body.code]).toEqual([409, 'LK_SOD_CONFLICT']);
    expect(siteActions(a.store).find((e) => e.action === 'auth.refused')).toMatchObject({ args: { user: 'b.both', why: 'separation_of_duties' } });
    const op = await token(key, { ...base, groups: 'lk-op', preferred_username: 'o.sso' });
    expect((await req(a, 'POST', `${T}/attendance`, { token: op, body: {} })).status).not.toBe(403);
  });

  it.each([
    ['expired', async () => token(key, { ...base, exp: Math.floor(T0 / 1000) - 60 }), 'ERR_JWT_EXPIRED'],
    ['another issuer', async () => token(key, { ...base, iss: 'https://evil.example/' }), 'ERR_JWT_CLAIM_VALIDATION_FAILED'],
    ['another audience', async () => token(key, { ...base, aud: 'someone-else' }), 'ERR_JWT_CLAIM_VALIDATION_FAILED'],
    ['signed by another key under a known kid', async () => token(stranger, base), 'ERR_JWS_SIGNATURE_VERIFICATION_FAILED'],
    ['an unknown kid', async () => token(key, base, { kid: 'k-unknown' }), 'ERR_JWKS_NO_MATCHING_KEY'],
    ['alg none', async () => unsecured({ ...base, sub: 'x', preferred_username: 'q.sso', groups: ['lk-qa'], iss: ISSUER, aud: AUDIENCE, exp: Math.floor(T0 / 1000) + 600 }), undefined],
    ['not yet valid', async () => token(key, { ...base, nbf: Math.floor(T0 / 1000) + 120 }), 'ERR_JWT_CLAIM_VALIDATION_FAILED'],
  ])('%s → 401 LK_UNAUTHENTICATED problem+json', async (_what, make, reason) => {
    a = await withFile();
    const t = await make();
    const r = await req(a, 'GET', `${T}/models`, { token: t });
    expect([r.status, r.body.code]).toEqual([401, 'LK_UNAUTHENTICATED']);
    expect(r.headers['content-type']).toMatch(/^application\/problem\+json/);
    // the refusal names jose's reason (in the error's detail, for the log), not just "invalid"
    if (reason) await expect(a.identity.authenticate(t)).rejects.toMatchObject({ code: 'LK_UNAUTHENTICATED', detail: { reason } });
  });

  it('the clock tolerance admits a token that expired a moment ago, not one that expired long ago', async () => {
    a = await withFile();
    const s = Math.floor(T0 / 1000);
    expect((await req(a, 'GET', `${T}/models`, { token: await token(key, { ...base, exp: s - 3 }) })).status).toBe(200);
    expect((await req(a, 'GET', `${T}/models`, { token: await token(key, { ...base, exp: s - 30, preferred_username: 'q.other' }) })).status).toBe(401);
  });

  it('[P11.100] no mapped role, no tenant of the site, or a local user\'s id → 403 LK_SSO_UNMAPPED', async () => {
    a = await withFile();
    for (const claims of [{ ...base, groups: ['staff'] }, { plants: ['plant-elsewhere'] }, { ...base, preferred_username: 'm.rossi' }]) {
      const r = await req(a, 'GET', `${T}/models`, { token: await token(key, claims) });
      expect([r.status, r.body.code], JSON.stringify(claims)).toEqual([403, 'LK_SSO_UNMAPPED']);
    }
  });

  it('an SSO token is verified once, then served from the cache until it expires; signed out, it is refused at once', async () => {
    a = await withFile();
    const t = await token(key, base);
    for (let i = 0; i < 3; i++) expect((await req(a, 'GET', `${T}/models`, { token: t })).status).toBe(200);
    expect(siteActions(a.store).filter((e) => e.action === 'auth.sso_sign_in')).toHaveLength(1);
    expect((await req(a, 'POST', '/v1/auth/token/refresh', { token: t })).body.code).toBe('LK_VALIDATION');
    expect((await req(a, 'POST', '/v1/auth/logout', { token: t })).status).toBe(200);
    expect((await req(a, 'GET', `${T}/models`, { token: t })).status).toBe(401);
    a.clock.advance(11 * 60_000);
    expect((await req(a, 'GET', `${T}/models`, { token: await token(key, { ...base, preferred_username: 'q.late' }) })).status).toBe(401); // expired by now
  });

  it('[P11.200] signing: an SSO user needs a provider sign-in within signing_max_auth_age_s (auth_time); a password is not taken', async () => {
    a = await withFile({ signing_max_auth_age_s: 120 });
    const stale = await token(key, { ...base, auth_time: Math.floor(T0 / 1000) - 600 });
    const qaUser = await a.identity.authenticate(stale);
    await expect(a.identity.reauthenticateSigner(qaUser, undefined)).rejects.toMatchObject({ code: 'LK_REAUTH_REQUIRED' });
    const fresh = await a.identity.authenticate(await token(key, { ...base, auth_time: Math.floor(T0 / 1000) - 30, jti: 'fresh' }));
    await expect(a.identity.reauthenticateSigner(fresh, PASSWORD)).rejects.toMatchObject({ code: 'LK_VALIDATION' });
    expect(await a.identity.reauthenticateSigner(fresh, undefined, { approval: 'apr_x' })).toMatchObject({ id: 'q.sso', source: 'sso' });
    // the same rule through a signed route: raising autonomy
    const raise = { agent: 'agent.compress_fill', level: 'L0' };
    expect((await req(a, 'PUT', `${T}/autonomy`, { token: stale, body: raise })).status).toBe(200); // lowering: not signed
    const up = await req(a, 'PUT', `${T}/autonomy`, { token: stale, body: { agent: 'agent.compress_fill', level: 'L1', changeRef: 'CC-7' } });
    expect([up.status, up.body.code]).toEqual([428, 'LK_REAUTH_REQUIRED']);
    const trail = siteActions(a.store);
    expect(trail.filter((e) => e.action === 'auth.reauthenticated').map((e) => e.args['method'])).toEqual(['oidc_auth_time']);
    expect(trail.filter((e) => e.action === 'auth.failed').every((e) => e.args['why'] === 'sso_auth_time_stale')).toBe(true);
  });
});

describe('SSO against a JWKS URL on loopback', () => {
  let server: Server;
  let url: string;
  const hits: string[] = [];
  beforeAll(async () => {
    server = createServer((r, res) => {
      hits.push(r.url ?? '');
      if (r.url !== '/realms/ravenna/certs') return void res.writeHead(404).end();
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ keys: [key.jwk] }));
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/realms/ravenna/certs`;
  });
  afterAll(async () => {
    await new Promise((r) => server.close(r));
  });

  it('keys are fetched from the configured endpoint only, once, and verify tokens; an unreachable endpoint is 503 LK_SSO_UNAVAILABLE', async () => {
    a = await startIdentityApi({ oidc: () => oidcConfig({ jwks_url: url }) });
    expect((await req(a, 'GET', `${T}/models`, { token: await token(key, base) })).status).toBe(200);
    expect((await req(a, 'GET', `${T}/models`, { token: await token(key, { ...base, preferred_username: 'q.two' }) })).status).toBe(200);
    expect((await req(a, 'GET', `${T}/models`, { token: await token(stranger, base, { kid: 'k-2026-11' }) })).status).toBe(401);
    expect(hits.length).toBeGreaterThanOrEqual(1);
    expect(new Set(hits)).toEqual(new Set(['/realms/ravenna/certs']));
    await a.close();
    a = await startIdentityApi({ oidc: () => oidcConfig({ jwks_url: 'http://127.0.0.1:9/none' }) });
    const down = await req(a, 'GET', `${T}/models`, { token: await token(key, base) });
    expect([down.status, down.body.code]).toEqual([503, 'LK_SSO_UNAVAILABLE']);
  });
});

describe('the api.oidc section of the configuration', () => {
  it('is strict, needs exactly one key source and a tenant rule, refuses alg none and a plain-http remote JWKS', () => {
    const ok = { issuer: ISSUER, audience: AUDIENCE, jwks_file: 'jwks.json', role_map: { g: 'operator' }, tenants: ['acme-pharma'] };
    expect(Oidc.safeParse(ok).success).toBe(true);
    const bad = (o: Record<string, unknown>) => Oidc.safeParse(o).error?.issues.map((i) => i.path.join('.'));
    expect(bad({ ...ok, extra: 1 })).toEqual(['']);
    expect(bad({ ...ok, jwks_url: 'https://idp.example/certs' })).toEqual(['jwks_file']);
    expect(bad({ ...ok, tenants: undefined })).toEqual(['tenants']);
    expect(bad({ ...ok, algorithms: ['none'] })).toEqual(['algorithms.0']);
    expect(bad({ ...ok, algorithms: ['HS256'] })).toEqual(['algorithms.0']);
    expect(bad({ ...ok, jwks_file: undefined, jwks_url: 'http://idp.example/certs' })).toEqual(['jwks_url']);
    expect(bad({ ...ok, role_map: { g: 'superuser' } })).toEqual(['role_map.g']);
  });
});
