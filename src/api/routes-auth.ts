/**
 * Sign-in, renewal and sign-out (POST /v1/auth/token, /token/refresh, /logout). Sign-in is throttled per source
 * address and per account before any password is checked, attempts in flight counted with the failures: past the limit the answer is 429 LK_RATE_LIMITED
 * with Retry-After, and the first refusal of each window is audited on the site chain (every failed attempt
 * already is, by identity.ts, which also makes the source wait after repeated failures). The per-account limit
 * counts per account AND address, so a stranger's guesses do not hold the account for its owner elsewhere.
 *
 * POST /v1/auth/password: the signed-in person changes their own password (the current one again, then the
 * new one under the site's policy) — the one route a session that must change its password may use, besides
 * who-am-I, renewal and sign-out.
 */
import type { FastifyRequest } from 'fastify';
import { z } from 'zod';
import type { Clock } from '../clock.js';
import { LkError } from '../errors.js';
import { bearer } from './auth.js';
import type { Api } from './context.js';
import type { Identity, IssuedToken } from './identity.js';
import { FailureLimiter } from './limiter.js';
import { PROBLEM_RESPONSES } from './problem.js';
import { PasswordBody, PasswordChangedView, SignOutView, TokenBody, TokenView, WhoAmIView } from './schemas.js';

/** Renewal and sign-out take no body (an empty object is accepted; anything in it is refused). */
const NoBody = z.strictObject({}).nullish();

const problems = PROBLEM_RESPONSES;
const security = [{ bearer: [] }];

const view = (t: IssuedToken) => ({
  token: t.token, tokenType: 'Bearer' as const, expiresAt: new Date(t.expiresAt).toISOString(), expiresIn: Math.max(0, Math.floor((t.expiresAt - t.issuedAt) / 1000)),
  sessionEndsAt: new Date(t.sessionEndsAt).toISOString(),
  user: { id: t.user.id, name: t.user.name, role: t.user.role, tenants: [...t.user.tenants] },
  mustChangePassword: t.user.mustChangePassword === true,
});

export function registerAuthRoutes(app: Api, identity: Identity, clock: Clock, limits = { windowMs: 60_000, perAddress: 10, perAccount: 3 }): void {
  const byAddress = new FailureLimiter(clock, { max: limits.perAddress, windowMs: limits.windowMs });
  const byAccount = new FailureLimiter(clock, { max: limits.perAccount, windowMs: limits.windowMs });

  app.post('/v1/auth/token', {
    schema: {
      tags: ['auth'], summary: 'Sign in with user and password: a short-lived bearer token, renewable up to the session\'s maximum age (failures are audited and throttled; repeated failures lock the account)',
      body: TokenBody, response: { 200: TokenView, ...problems },
    },
  }, async (req) => {
    const address = req.ip;
    // ids are case-sensitive, but a guesser must not get a fresh allowance per spelling
    const account = `${req.body.user.toLowerCase()} ${address}`;
    for (const [limiter, key, what] of [[byAddress, address, 'address'], [byAccount, account, 'account']] as const) {
      const b = limiter.blocked(key);
      if (!b) continue;
      const retryAfterS = Math.max(1, Math.ceil(b.retryAfterMs / 1000));
      if (b.first) identity.auditThrottle({ user: req.body.user, address, limitedBy: what, retryAfterS: String(retryAfterS) });
      throw new LkError('LK_RATE_LIMITED', `too many failed sign-ins ${what === 'address' ? 'from this address' : 'for this account'}; retry in ${retryAfterS} s`, { retryAfterS, limitedBy: what });
    }
    // in flight counts: parallel attempts cannot all pass the check above before the first has failed
    const settle = [byAddress.begin(address), byAccount.begin(account)];
    try {
      const t = await identity.signIn(req.body.user, req.body.password, { address });
      for (const s of settle) s(false);
      byAccount.clear(account);
      return view(t);
    } catch (err) {
      const failed = LkError.is(err, 'LK_UNAUTHENTICATED') || LkError.is(err, 'LK_ACCOUNT_LOCKED');
      for (const s of settle) s(failed);
      throw err;
    }
  });

  // authenticate first, as every guarded route does: a bad token is 401 whatever the body
  const signedIn = async (req: FastifyRequest): Promise<void> => {
    await identity.authenticate(bearer(req.headers.authorization));
  };

  app.post('/v1/auth/token/refresh', {
    onRequest: signedIn,
    schema: {
      tags: ['auth'], summary: 'Renew the bearer token of a local session before it expires, without the password: a new token (the old one stops at once), never past the session\'s maximum age',
      security, body: NoBody, response: { 200: TokenView, ...problems },
    },
  }, async (req) => view(identity.refresh(bearer(req.headers.authorization))));

  app.get('/v1/auth/me', {
    onRequest: signedIn,
    schema: {
      tags: ['auth'], summary: 'Who the bearer token stands for (local or SSO): user, role, tenants and when the token expires — how the console checks a pasted identity-provider token',
      security, response: { 200: WhoAmIView, ...problems },
    },
  }, async (req) => {
    const me = await identity.whoami(bearer(req.headers.authorization));
    const u = me.user;
    return {
      user: { id: u.id, name: u.name, role: u.role, tenants: [...u.tenants], source: u.source ?? 'local' }, mustChangePassword: u.mustChangePassword === true,
      expiresAt: new Date(me.expiresAt).toISOString(), sessionEndsAt: me.sessionEndsAt === null ? null : new Date(me.sessionEndsAt).toISOString(),
    };
  });

  app.post('/v1/auth/logout', {
    onRequest: signedIn,
    schema: {
      tags: ['auth'], summary: 'Sign out: the session ends at once (its token is refused, its event streams close at their next check); an SSO token is refused until it expires',
      security, body: NoBody, response: { 200: SignOutView, ...problems },
    },
  }, async (req) => ({ signedOut: (await identity.logout(bearer(req.headers.authorization))).id }));

  app.post('/v1/auth/password', {
    onRequest: signedIn,
    schema: {
      tags: ['auth'], summary: 'Change your own password: the current one, then the new one (the site\'s policy: length, strength, not a recent one). A session whose password was set by someone else or has expired may do this and nothing else; this session goes on, the others end',
      security, body: PasswordBody, response: { 200: PasswordChangedView, ...problems },
    },
  }, async (req) => {
    const token = bearer(req.headers.authorization);
    const me = await identity.whoami(token);
    if (me.user.source === 'sso') throw new LkError('LK_VALIDATION', 'an SSO user changes the password at the identity provider');
    const address = req.ip;
    const b = byAddress.blocked(address);
    if (b) throw new LkError('LK_RATE_LIMITED', `too many failed sign-ins from this address; retry in ${Math.max(1, Math.ceil(b.retryAfterMs / 1000))} s`, { retryAfterS: Math.max(1, Math.ceil(b.retryAfterMs / 1000)), limitedBy: 'address' });
    const settle = byAddress.begin(address);
    let u;
    try {
      u = await identity.changePassword(me.user.id, req.body.current, req.body.password, { address }, identity.sessionOf(token));
      settle(false);
    } catch (err) {
      settle(LkError.is(err, 'LK_REAUTH_FAILED'));
      throw err;
    }
    return { user: { id: u.id, name: u.name, role: u.role, tenants: [...u.tenants] }, changedAt: new Date(clock.now()).toISOString(), mustChangePassword: false as const };
  });
}
