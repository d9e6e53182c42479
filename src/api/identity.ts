/**
 * Local identities of an air-gapped site (the default until a directory or OIDC provider is configured):
 * users in the store with scrypt password hashes, one role, the tenants they work for, a disabled flag and a
 * failed-attempt counter that locks the account after `maxFailedAttempts` consecutive failures (21 CFR
 * 11.300(d): attempts at unauthorised use are recorded, on the site chain, and stopped). Sign-in starts a
 * session (sessions.ts) with a short-lived opaque bearer token, renewable up to a maximum session age; only
 * SHA-256 hashes are kept, in memory, so a session dies with the process. With `api.oidc` configured, bearer
 * JWTs of the site's identity provider are accepted beside local tokens (oidc.ts).
 *
 * A request's token check is a hash and two map lookups: the user behind a session is cached, and the cache is
 * dropped whenever the users change — through this Identity (at once), or through another connection to the
 * database (the offline `linekeeper users` commands), which SQLite's `PRAGMA data_version` reveals and which is
 * looked at no more than once a second. A disabled or locked account therefore stops at its next request, or
 * within a second when another process disabled it.
 *
 * Signing re-authenticates (11.200(a)(1)): a local user types the password again (counted toward the lock); an
 * SSO user presents a bearer token whose `auth_time` is at most `signing_max_auth_age_s` old — a fresh sign-in
 * at the provider, where both components were entered.
 */
import { randomBytes } from 'node:crypto';
import type { Statement } from 'better-sqlite3';
import type { Clock } from '../clock.js';
import { LkError } from '../errors.js';
import { PERSON_RE } from '../models/registry.js';
import type { Store } from '../store/store.js';
import { ROLES, UserStore, type Role, type UserRecord } from '../store/user-store.js';
import { SITE_TENANT } from '../audit/entry.js';
import { looksLikeJwt, type OidcVerifier } from './oidc.js';
import { checkNewPassword, hashPassword, verifyPassword } from './passwords.js';
import { sha256, Sessions, type Session } from './sessions.js';

export { checkNewPassword, hashPassword, verifyPassword } from './passwords.js';

export { ROLES, type Role } from '../store/user-store.js';

/** What a route knows of the signed-in person. */
export interface AuthUser {
  readonly id: string;
  readonly name: string;
  readonly role: Role;
  readonly tenants: readonly string[];
  /** Where the identity comes from: a local user, or the site's OIDC provider (absent: local). */
  readonly source?: 'local' | 'sso';
  /** SSO only: when the person last authenticated at the provider (epoch ms), or null when the token says not. */
  readonly authTime?: number | null;
}

export interface IssuedToken {
  readonly token: string;
  readonly expiresAt: number;
  /** The session's end: no renewal goes past it. */
  readonly sessionEndsAt: number;
  readonly user: AuthUser;
}

export interface IdentityOptions {
  readonly store: Store;
  readonly clock: Clock;
  /** Lifetime of a bearer token (default 15 min). */
  readonly tokenTtlMs?: number;
  /** Longest a session lives through renewals (default 12 h). */
  readonly sessionMaxMs?: number;
  /** Consecutive failures that lock an account (default 5). */
  readonly maxFailedAttempts?: number;
  /** scrypt cost as log2 N (default 15); tests may lower it. */
  readonly scryptLog2N?: number;
  /** Bearer JWTs of the site's OIDC provider, when configured. */
  readonly oidc?: OidcVerifier;
  /**
   * How often a request looks for user changes made by another connection (default 1 s): a user disabled by
   * the offline CLI is refused within this time; changes through this Identity apply at once.
   */
  readonly foreignChangeCheckMs?: number;
}

/** SSO tokens remembered as verified (and as signed out) at most; the cache is emptied past it. */
const SSO_CACHE_MAX = 10_000;

const toAuth = (u: UserRecord): AuthUser => ({ id: u.id, name: u.name, role: u.role, tenants: u.tenants, source: 'local' });

export interface NewUser {
  readonly id: string;
  readonly name: string;
  readonly role: Role;
  readonly tenants: readonly string[];
  readonly password: string;
}

/** The site's identities: users in the store, sessions in memory. Construct once per process. */
export class Identity {
  readonly users: UserStore;
  readonly sessions = new Sessions();
  private readonly ttl: number;
  private readonly maxAge: number;
  private readonly maxFailed: number;
  private readonly log2N: number;
  /** A hash to verify against when the user is unknown, so timing does not tell which ids exist. */
  private dummy: Promise<string> | undefined;
  /** Users as sessions see them (null: disabled, locked or gone), dropped when the users change. */
  private readonly cache = new Map<string, AuthUser | null>();
  private readonly dataVersion: Statement;
  private seenVersion: number;
  private versionAt = Number.NEGATIVE_INFINITY;
  private readonly foreignCheckMs: number;
  /** Verified SSO tokens by hash, and signed-out ones until their expiry. */
  private readonly sso = new Map<string, SsoUser>();
  private readonly ssoOut = new Map<string, number>();

  constructor(private readonly o: IdentityOptions) {
    this.users = new UserStore(o.store.db);
    this.ttl = o.tokenTtlMs ?? 15 * 60_000;
    this.maxAge = Math.max(o.sessionMaxMs ?? 12 * 3_600_000, this.ttl);
    this.maxFailed = o.maxFailedAttempts ?? 5;
    this.log2N = o.scryptLog2N ?? 15;
    this.dataVersion = o.store.db.prepare('PRAGMA data_version').pluck();
    this.seenVersion = this.dataVersion.get() as number;
    this.foreignCheckMs = o.foreignChangeCheckMs ?? 1000;
  }

  /**
   * Create a user with its audit entry (site chain, `user.create`, no password in it).
   * @throws LkError LK_VALIDATION for a bad id, role, tenant list or a password under 12 characters;
   *   LK_CONFLICT when the id exists (ids are never reused).
   */
  async create(u: NewUser, by: string, reason: string): Promise<AuthUser> {
    if (!PERSON_RE.test(u.id)) throw new LkError('LK_VALIDATION', `user id "${u.id}" is not a person's id`);
    if (!(ROLES as readonly string[]).includes(u.role)) throw new LkError('LK_VALIDATION', `unknown role ${u.role}`);
    if (u.tenants.length === 0) throw new LkError('LK_VALIDATION', `user ${u.id} belongs to no tenant`);
    checkNewPassword(u.password);
    if (this.users.get(u.id)) throw new LkError('LK_CONFLICT', `user ${u.id} exists`, { user: u.id });
    const password = await hashPassword(u.password, this.log2N);
    const at = new Date(this.o.clock.now()).toISOString();
    this.o.store.tx((t) => {
      if (this.users.get(u.id)) throw new LkError('LK_CONFLICT', `user ${u.id} exists`, { user: u.id });
      const e = t.audit.append({ tenant: SITE_TENANT, actor: by, kind: 'identity', action: 'user.create', args: { user: u.id, name: u.name, role: u.role, tenants: [...u.tenants] }, reason });
      this.users.insert(t, { id: u.id, name: u.name, role: u.role, tenants: u.tenants, password, createdAt: at, createdBy: by, auditSeq: e.seq });
    });
    this.changed(u.id);
    return { id: u.id, name: u.name, role: u.role, tenants: u.tenants };
  }

  /**
   * A new password for `id`, set by `by` (the person, or an administrator); every session of the user ends.
   * @throws LkError LK_NOT_FOUND (no such user), LK_VALIDATION (password rules).
   */
  async setPassword(id: string, password: string, by: string, reason: string): Promise<void> {
    checkNewPassword(password);
    if (!this.users.get(id)) throw new LkError('LK_NOT_FOUND', `no user ${id}`, { user: id });
    const hash = await hashPassword(password, this.log2N);
    const at = new Date(this.o.clock.now()).toISOString();
    this.o.store.tx((t) => {
      const e = t.audit.append({ tenant: SITE_TENANT, actor: by, kind: 'identity', action: 'user.password', args: { user: id, self: by === id }, reason });
      this.users.setPassword(t, id, hash, at, e.seq);
    });
    this.changed(id);
  }

  /**
   * Disable a user (every session ends at once) or enable one (which also clears a lock-out).
   * @throws LkError LK_NOT_FOUND (no such user), LK_VALIDATION (an administrator disabling themself).
   * @returns whether anything changed.
   */
  setDisabled(id: string, disabled: boolean, by: string, reason: string): boolean {
    const cur = this.users.get(id);
    if (!cur) throw new LkError('LK_NOT_FOUND', `no user ${id}`, { user: id });
    if (disabled && id === by) throw new LkError('LK_VALIDATION', 'an administrator does not disable their own account (another administrator does)');
    if (cur.disabled === disabled && (disabled || (cur.lockedAt === null && cur.failedAttempts === 0))) return false;
    const at = new Date(this.o.clock.now()).toISOString();
    this.o.store.tx((t) => {
      const e = t.audit.append({
        tenant: SITE_TENANT, actor: by, kind: 'identity', action: disabled ? 'user.disable' : 'user.enable',
        args: { user: id, ...(!disabled && cur.lockedAt !== null ? { unlocked: cur.lockedAt } : {}) }, reason,
      });
      this.users.setDisabled(t, id, disabled, at, e.seq);
    });
    this.changed(id);
    return true;
  }

  /**
   * Sign in with a password: a session and its first bearer token.
   * @throws LkError LK_UNAUTHENTICATED (unknown user, wrong password, disabled: one answer for all),
   *   LK_ACCOUNT_LOCKED. Every failure is audited; the last allowed one locks the account.
   */
  async signIn(user: string, password: string, about: Readonly<Record<string, string>> = {}): Promise<IssuedToken> {
    const u = await this.check(user, password, 'sign_in', about);
    const { token, session } = this.sessions.start(u.id, this.o.clock.now(), this.ttl, this.maxAge);
    return { token, expiresAt: session.expiresAt, sessionEndsAt: session.maxUntil, user: u };
  }

  /**
   * Renew a local session's token without the password: a new token valid for the token lifetime but not past
   * the session's maximum age (the presented one keeps its own expiry; sign-out ends both). Audited (`auth.token_refreshed`).
   * @throws LkError LK_UNAUTHENTICATED (not a live local token, the account is disabled or locked, or the
   *   session reached its maximum age: sign in again); LK_VALIDATION for an SSO token (renew at the provider).
   */
  refresh(token: string | undefined): IssuedToken {
    if (token && this.o.oidc && looksLikeJwt(token)) throw new LkError('LK_VALIDATION', 'an identity provider\'s token is renewed at the provider, not here');
    const { session, user } = this.local(token);
    const now = this.o.clock.now();
    if (session.maxUntil - now < 1000) throw new LkError('LK_UNAUTHENTICATED', `the session of ${user.id} reached its maximum age; sign in again`, { reason: 'session_max_age' });
    const t = this.sessions.renew(session, now, this.ttl);
    this.o.store.audit.append({ tenant: SITE_TENANT, actor: user.id, kind: 'identity', action: 'auth.token_refreshed', args: { user: user.id, session: session.id, expiresAt: new Date(t.expiresAt).toISOString() } });
    return { token: t.token, expiresAt: t.expiresAt, sessionEndsAt: session.maxUntil, user };
  }

  /**
   * Sign out: the token's session ends (an SSO token is refused until it expires). Audited (`auth.sign_out`).
   * @throws LkError LK_UNAUTHENTICATED when the token is not valid now.
   */
  async logout(token: string | undefined): Promise<AuthUser> {
    if (token && this.o.oidc && looksLikeJwt(token)) {
      const u = await this.ssoUser(token);
      const key = sha256(token);
      this.sso.delete(key);
      if (this.ssoOut.size >= SSO_CACHE_MAX) this.sweepSso();
      this.ssoOut.set(key, u.expiresAt);
      this.o.store.audit.append({ tenant: SITE_TENANT, actor: u.id, kind: 'identity', action: 'auth.sign_out', args: { user: u.id, source: 'sso' } });
      return u.user;
    }
    const { session, user } = this.local(token);
    this.sessions.end(session);
    this.o.store.audit.append({ tenant: SITE_TENANT, actor: user.id, kind: 'identity', action: 'auth.sign_out', args: { user: user.id, session: session.id } });
    return user;
  }

  /**
   * Re-authentication at signing (21 CFR 11.200(a)(1)): the signed-in person's password, checked again.
   * @throws LkError LK_REAUTH_FAILED (audited, counted toward the lock), LK_ACCOUNT_LOCKED.
   */
  async reauthenticate(user: string, password: string, about: Readonly<Record<string, string>> = {}): Promise<AuthUser> {
    try {
      return await this.check(user, password, 'signature', about);
    } catch (err) {
      if (LkError.is(err, 'LK_UNAUTHENTICATED')) throw new LkError('LK_REAUTH_FAILED', 'the password does not match the signed-in user; nothing was signed');
      throw err;
    }
  }

  /**
   * Re-authentication of a signer, local or SSO: a local user's password (as {@link reauthenticate}); for an
   * SSO user, the bearer token of this request must come from a sign-in at the provider at most
   * `signing_max_auth_age_s` ago (its `auth_time`) — no password travels to linekeeper. Audited either way.
   * @throws LkError LK_REAUTH_REQUIRED (no password given / the SSO sign-in is not fresh), LK_REAUTH_FAILED,
   *   LK_ACCOUNT_LOCKED.
   */
  async reauthenticateSigner(user: AuthUser, password: string | undefined, about: Readonly<Record<string, string>> = {}): Promise<AuthUser> {
    if (user.source !== 'sso') {
      if (password === undefined || password.length === 0) throw new LkError('LK_REAUTH_REQUIRED', 'this is signed: give your password again (re-authentication at signing)', { issues: [{ path: 'body.password', message: 'required to sign' }] });
      return this.reauthenticate(user.id, password, about);
    }
    const maxAgeS = this.o.oidc!.cfg.signing_max_auth_age_s;
    const now = this.o.clock.now();
    const fresh = user.authTime !== null && user.authTime !== undefined && now - user.authTime <= maxAgeS * 1000 && user.authTime <= now + this.o.oidc!.cfg.clock_tolerance_s * 1000;
    if (password !== undefined) throw new LkError('LK_VALIDATION', 'an SSO user signs with a fresh sign-in at the identity provider, not a password', { issues: [{ path: 'body.password', message: 'not used for an SSO user' }] });
    if (!fresh) {
      this.o.store.audit.append({ tenant: SITE_TENANT, actor: 'system', kind: 'identity', action: 'auth.failed', args: { ...about, user: user.id, purpose: 'signature', why: 'sso_auth_time_stale' } });
      throw new LkError('LK_REAUTH_REQUIRED', `signing needs a sign-in at the identity provider within the last ${maxAgeS} s (auth_time); sign in there again and retry with the new token`, { maxAuthAgeS: maxAgeS });
    }
    this.o.store.audit.append({ tenant: SITE_TENANT, actor: user.id, kind: 'identity', action: 'auth.reauthenticated', args: { ...about, user: user.id, purpose: 'signature', method: 'oidc_auth_time', authTime: new Date(user.authTime!).toISOString() } });
    return user;
  }

  /**
   * The person a local bearer token stands for. Cheap: a hash, the session map, the cached user (re-read when
   * the users changed, so a disabled or locked account stops at once).
   * @throws LkError LK_UNAUTHENTICATED for a missing, unknown, expired or signed-out token, or a disabled or locked account.
   */
  resolve(token: string | undefined): AuthUser {
    return this.local(token).user;
  }

  /**
   * The person a bearer token stands for: a local token, or an SSO JWT when `api.oidc` is configured.
   * @throws LkError as {@link resolve}, and as {@link OidcVerifier.verify} for a JWT.
   */
  async authenticate(token: string | undefined): Promise<AuthUser> {
    if (token && this.o.oidc && looksLikeJwt(token)) return (await this.ssoUser(token)).user;
    return this.local(token).user;
  }

  /**
   * Who a bearer token stands for, and until when: the console's whoami after a pasted SSO token, and its check
   * of a stored local one. `sessionEndsAt` is null for an SSO token (the provider decides; no renewal here).
   * @throws LkError as {@link authenticate}.
   */
  async whoami(token: string | undefined): Promise<{ user: AuthUser; expiresAt: number; sessionEndsAt: number | null }> {
    if (token && this.o.oidc && looksLikeJwt(token)) {
      const u = await this.ssoUser(token);
      return { user: u.user, expiresAt: u.expiresAt, sessionEndsAt: null };
    }
    const { session, user } = this.local(token);
    return { user, expiresAt: session.expiresAt, sessionEndsAt: session.maxUntil };
  }

  /**
   * A check an open event stream repeats: false once the token's session ended (signed out, account disabled
   * or locked, expired without renewal). The stream holds the session, not the token, so a renewal does not
   * end it. @throws as {@link authenticate} when the token is not valid now.
   */
  async watch(token: string | undefined): Promise<() => boolean> {
    if (token && this.o.oidc && looksLikeJwt(token)) {
      const u = await this.ssoUser(token);
      const key = sha256(token);
      return () => !this.ssoOut.has(key) && u.expiresAt > this.o.clock.now() && this.users.get(u.id) === null;
    }
    const { session } = this.local(token);
    return () => !session.revoked && session.expiresAt > this.o.clock.now() && this.current(session.user) !== null;
  }

  /** Record on the site chain that sign-ins were throttled (once per throttling window and key). */
  auditThrottle(args: Readonly<Record<string, string>>): void {
    this.audit('auth.throttled', 'system', { ...args });
  }

  /** End every session of a user (after a lock, a disable, a new password). */
  revoke(user: string): void {
    this.sessions.endUser(user);
  }

  private local(token: string | undefined): { session: Session; user: AuthUser } {
    if (!token) throw new LkError('LK_UNAUTHENTICATED', 'a bearer token is required (POST /v1/auth/token)');
    const session = this.sessions.find(token, this.o.clock.now());
    if (!session) throw new LkError('LK_UNAUTHENTICATED', 'the bearer token is not valid, has expired or was signed out');
    const user = this.current(session.user);
    if (!user) {
      this.sessions.endUser(session.user);
      throw new LkError('LK_UNAUTHENTICATED', 'the account of this token is disabled or locked');
    }
    return { session, user };
  }

  /** The user as sessions see it (null: gone, disabled or locked), from the cache unless the users changed. */
  private current(id: string): AuthUser | null {
    const now = this.o.clock.now();
    // asking SQLite costs about what re-reading the user does, so it is asked at most every `foreignCheckMs`
    if (now - this.versionAt >= this.foreignCheckMs || now < this.versionAt) {
      this.versionAt = now;
      const v = this.dataVersion.get() as number;
      if (v !== this.seenVersion) {
        // another connection committed (an offline `linekeeper users` command, perhaps): re-read everyone
        this.seenVersion = v;
        this.cache.clear();
      }
    }
    let u = this.cache.get(id);
    if (u === undefined) {
      const r = this.users.get(id);
      u = r && !r.disabled && r.lockedAt === null ? toAuth(r) : null;
      this.cache.set(id, u);
    }
    return u;
  }

  /** A user changed through this Identity: forget the cached copy, and end the sessions if it can no longer sign in. */
  private changed(id: string): void {
    this.cache.delete(id);
    if (this.current(id) === null) this.sessions.endUser(id);
  }

  private async ssoUser(token: string): Promise<SsoUser> {
    const key = sha256(token);
    const now = this.o.clock.now();
    if (this.ssoOut.has(key)) throw new LkError('LK_UNAUTHENTICATED', 'this token was signed out', { reason: 'signed_out' });
    const hit = this.sso.get(key);
    if (hit && hit.expiresAt + this.o.oidc!.cfg.clock_tolerance_s * 1000 > now) return hit;
    if (hit) this.sso.delete(key);
    const v = await this.o.oidc!.verify(token);
    // one id, one person (11.300(a)): a provider's user may not take the id of a local account
    if (this.users.get(v.id)) throw new LkError('LK_SSO_UNMAPPED', `${v.id} is the id of a local user of this site; the provider's user cannot take it`, { user: v.id });
    const user: AuthUser = { id: v.id, name: v.name, role: v.role, tenants: v.tenants, source: 'sso', authTime: v.authTime };
    const entry: SsoUser = { id: v.id, user, expiresAt: v.expiresAt };
    if (this.sso.size >= SSO_CACHE_MAX) this.sso.clear();
    this.sso.set(key, entry);
    this.o.store.audit.append({
      tenant: SITE_TENANT, actor: v.id, kind: 'identity', action: 'auth.sso_sign_in',
      args: { user: v.id, subject: v.subject, issuer: this.o.oidc!.cfg.issuer, role: v.role, tenants: [...v.tenants], ...(v.tokenId ? { jti: v.tokenId } : {}), expiresAt: new Date(v.expiresAt).toISOString() },
    });
    return entry;
  }

  private sweepSso(): void {
    const now = this.o.clock.now();
    for (const [k, exp] of this.ssoOut) if (exp <= now) this.ssoOut.delete(k);
  }

  private async check(user: string, password: string, purpose: 'sign_in' | 'signature', about: Readonly<Record<string, string>>): Promise<AuthUser> {
    const u = this.users.get(user);
    if (u?.lockedAt) {
      this.audit('auth.refused', 'system', { ...about, user, purpose, why: 'locked' });
      throw new LkError('LK_ACCOUNT_LOCKED', `account ${user} is locked since ${u.lockedAt}`, { user });
    }
    // the same work for an unknown user, so response time does not tell which ids exist
    let ok = false;
    if (u) ok = await verifyPassword(password, u.password);
    else await verifyPassword(password, await (this.dummy ??= hashPassword(randomBytes(12).toString('hex'), this.log2N)));
    const now = this.o.clock.now();
    const at = new Date(now).toISOString();
    if (u && ok && !u.disabled) {
      this.o.store.tx((t) => {
        const e = t.audit.append({ tenant: SITE_TENANT, actor: u.id, kind: 'identity', action: purpose === 'sign_in' ? 'auth.sign_in' : 'auth.reauthenticated', args: { ...about, user: u.id, purpose } });
        if (this.users.get(u.id)!.failedAttempts !== 0) this.users.setAttempts(t, u.id, 0, null, at, e.seq);
      });
      return toAuth(u);
    }
    const why = !u ? 'unknown_user' : u.disabled ? 'disabled' : 'bad_password';
    let locked = false;
    this.o.store.tx((t) => {
      const cur = u ? this.users.get(u.id) : null;
      const attempts = cur ? cur.failedAttempts + 1 : 0;
      const e = t.audit.append({ tenant: SITE_TENANT, actor: 'system', kind: 'identity', action: 'auth.failed', args: { ...about, user, purpose, why, ...(cur ? { attempt: attempts } : {}) } });
      if (!cur) return;
      locked = attempts >= this.maxFailed && cur.lockedAt === null;
      const lockEntry = locked
        ? t.audit.append({ tenant: SITE_TENANT, actor: 'system', kind: 'identity', action: 'auth.locked', args: { user: cur.id, attempts }, reason: `${attempts} consecutive failed authentications` })
        : e;
      this.users.setAttempts(t, cur.id, attempts, locked ? at : cur.lockedAt, at, lockEntry.seq);
    });
    if (locked) this.changed(user);
    throw new LkError('LK_UNAUTHENTICATED', 'user or password is not valid');
  }

  private audit(action: string, actor: string, args: Record<string, string>): void {
    this.o.store.audit.append({ tenant: SITE_TENANT, actor, kind: 'identity', action, args });
  }
}

interface SsoUser {
  readonly id: string;
  readonly user: AuthUser;
  readonly expiresAt: number;
}

export { ensureDemoUsers, type DemoUser } from './demo-users.js';
