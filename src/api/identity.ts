/**
 * Local identities of an air-gapped site (the default until a directory or OIDC provider is configured):
 * users in the store with scrypt password hashes, one role, the tenants they work for and a disabled flag.
 * Failed passwords delay the account for the source they come from only, longer with each failure
 * (lockout.ts; 21 CFR 11.300(d): attempts at unauthorised use are recorded, on the site chain, and stopped), so
 * a stranger cannot lock a named reviewer out. A password set by anyone but its owner (an administrator, the
 * demo set-up) or older than the policy's maximum age must be changed first: the session may change it and do
 * nothing else, and signs nothing (11.300(b); password-policy.ts). An administrator never signs (separation of
 * duties; {@link SIGNING_ROLES}). Sign-in starts a
 * session (sessions.ts) with a short-lived opaque bearer token, renewable up to a maximum session age; only
 * SHA-256 hashes of tokens are kept, in the store, so a restart does not sign anyone out (and a session ended
 * stays ended). With `api.oidc` configured, bearer
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
import { looksLikeJwt } from './jwt-shape.js';
import type { OidcVerifier } from './oidc.js';
import { DEFAULT_LOCKOUT, Lockouts, type LockoutOptions } from './lockout.js';
import { checkNewPassword, DEFAULT_PASSWORD_POLICY, passwordExpired, type PasswordPolicy } from './password-policy.js';
import { hashPassword, verifyPassword } from './passwords.js';
import { sha256, Sessions, type Session } from './sessions.js';

export { checkNewPassword, hashPassword, verifyPassword } from './passwords.js';
export { DEFAULT_PASSWORD_POLICY, type PasswordPolicy } from './password-policy.js';
export { DEFAULT_LOCKOUT, type LockoutOptions, type LockoutRow } from './lockout.js';

/**
 * Roles that sign (batch release, setpoint writes, exceptions, autonomy, models, policy changes) and that an
 * administrator therefore never holds (separation of duties). A site adds roles (`api.separation_of_duties`),
 * never removes these.
 */
export const SIGNING_ROLES: readonly Role[] = ['qa_reviewer', 'process_engineer'];

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
  /** Local only: the password was set by someone else or is too old — the session may change it, nothing else. */
  readonly mustChangePassword?: boolean;
  /** The client address of the request (set by the route guard): the source a failed signing password counts against. */
  readonly address?: string;
}

export interface IssuedToken {
  readonly token: string;
  /** When it was issued and when it expires, by the daemon's clock (epoch ms). */
  readonly issuedAt: number;
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
  /** Failed passwords from one source before that source waits for the account (default 5; lockout.ts). */
  readonly maxFailedAttempts?: number;
  /** The waits after that (defaults: 60 s doubling to 1 h; an alert at 20 failures of one account). */
  readonly lockout?: Partial<Omit<LockoutOptions, 'afterFailures'>>;
  /** Minimum length and strength, maximum age and history of passwords (default {@link DEFAULT_PASSWORD_POLICY}). */
  readonly passwordPolicy?: PasswordPolicy;
  /** Roles besides {@link SIGNING_ROLES} that no administrator may hold (only ever adds). */
  readonly incompatibleWithAdmin?: readonly Role[];
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

/** A printed name as compared for separation of duties: one person, however the name is spaced or cased. */
const personKey = (name: string): string => name.normalize('NFKC').toLowerCase().replace(/\s+/g, ' ').trim();

export interface NewUser {
  readonly id: string;
  readonly name: string;
  readonly role: Role;
  readonly tenants: readonly string[];
  readonly password: string;
}

/** The site's identities: users and sessions in the store. Construct once per process. */
export class Identity {
  readonly users: UserStore;
  readonly sessions: Sessions;
  readonly lockouts: Lockouts;
  readonly policy: PasswordPolicy;
  /** Roles an administrator never holds and that never sign as an administrator. */
  readonly incompatible: ReadonlySet<Role>;
  private readonly ttl: number;
  private readonly maxAge: number;
  private readonly log2N: number;
  /** A hash to verify against when the user is unknown, so timing does not tell which ids exist. */
  private dummy: Promise<string> | undefined;
  /** Users as sessions see them (null: disabled, locked or gone) with when their password was set, dropped when the users change. */
  private readonly cache = new Map<string, { user: AuthUser; setAt: number } | null>();
  private readonly dataVersion: Statement;
  private seenVersion: number;
  private versionAt = Number.NEGATIVE_INFINITY;
  private readonly foreignCheckMs: number;
  /** Verified SSO tokens by hash, and signed-out ones until their expiry. */
  private readonly sso = new Map<string, SsoUser>();
  private readonly ssoOut = new Map<string, number>();

  constructor(private readonly o: IdentityOptions) {
    this.users = new UserStore(o.store.db);
    this.sessions = new Sessions(o.store.db);
    this.ttl = o.tokenTtlMs ?? 15 * 60_000;
    this.maxAge = Math.max(o.sessionMaxMs ?? 12 * 3_600_000, this.ttl);
    this.lockouts = new Lockouts(o.store.db, { ...DEFAULT_LOCKOUT, ...(o.lockout ?? {}), afterFailures: o.maxFailedAttempts ?? DEFAULT_LOCKOUT.afterFailures });
    this.policy = o.passwordPolicy ?? DEFAULT_PASSWORD_POLICY;
    this.incompatible = new Set([...SIGNING_ROLES, ...(o.incompatibleWithAdmin ?? [])].filter((r) => r !== 'admin'));
    this.log2N = o.scryptLog2N ?? 15;
    if (!Number.isInteger(this.log2N) || this.log2N < 1 || this.log2N > 20) throw new LkError('LK_INTERNAL', `scrypt cost log2 N must be an integer 1..20, not ${this.log2N}`);
    this.dataVersion = o.store.db.prepare('PRAGMA data_version').pluck();
    this.seenVersion = this.dataVersion.get() as number;
    this.foreignCheckMs = o.foreignChangeCheckMs ?? 1000;
  }

  /**
   * Create a user with its audit entry (site chain, `user.create`, no password in it). The password is someone
   * else's choice, so it must be changed at the first sign-in — unless `o.ownChoice` (the first administrator,
   * typing their own password at the site's bootstrap).
   * @throws LkError LK_VALIDATION for a bad id, role, tenant list or a password under the minimum length;
   *   LK_PASSWORD_WEAK; LK_CONFLICT when the id exists (ids are never reused); LK_SOD_CONFLICT when the person
   *   (by printed name) already holds an administrator's account and this one signs, or the other way round.
   */
  async create(u: NewUser, by: string, reason: string, o: { ownChoice?: boolean } = {}): Promise<AuthUser> {
    if (!PERSON_RE.test(u.id)) throw new LkError('LK_VALIDATION', `user id "${u.id}" is not a person's id`);
    if (!(ROLES as readonly string[]).includes(u.role)) throw new LkError('LK_VALIDATION', `unknown role ${u.role}`);
    if (u.tenants.length === 0) throw new LkError('LK_VALIDATION', `user ${u.id} belongs to no tenant`);
    await checkNewPassword(u.password, this.policy, [u.id, u.name]);
    if (this.users.get(u.id)) throw new LkError('LK_CONFLICT', `user ${u.id} exists`, { user: u.id });
    this.checkSeparation(u);
    const password = await hashPassword(u.password, this.log2N);
    const at = new Date(this.o.clock.now()).toISOString();
    this.o.store.tx((t) => {
      if (this.users.get(u.id)) throw new LkError('LK_CONFLICT', `user ${u.id} exists`, { user: u.id });
      const mustChange = o.ownChoice !== true;
      const e = t.audit.append({ tenant: SITE_TENANT, actor: by, kind: 'identity', action: 'user.create', args: { user: u.id, name: u.name, role: u.role, tenants: [...u.tenants], mustChangePassword: mustChange }, reason });
      this.users.insert(t, { id: u.id, name: u.name, role: u.role, tenants: u.tenants, password, createdAt: at, createdBy: by, auditSeq: e.seq, mustChange });
    });
    this.changed(u.id);
    return { id: u.id, name: u.name, role: u.role, tenants: u.tenants };
  }

  /**
   * A new password for `id`, set by `by`. Set by an administrator (`by` is not `id`) it must be changed at the
   * next sign-in and every session of the user ends; set by the person (who re-authenticated already) it may
   * not be one of their recent passwords. Prefer {@link changePassword} for a person's own change.
   * @throws LkError LK_NOT_FOUND (no such user), LK_VALIDATION / LK_PASSWORD_WEAK (policy), LK_PASSWORD_REUSED.
   */
  async setPassword(id: string, password: string, by: string, reason: string): Promise<void> {
    const u = this.users.get(id);
    if (!u) throw new LkError('LK_NOT_FOUND', `no user ${id}`, { user: id });
    await this.store(u, password, by, reason, by === id);
  }

  /**
   * A person changes their own password: the current one first (a failure counts toward the source's wait, as a
   * sign-in does), then the new one under the policy — the only thing a session that must change its password
   * may do. The user's other sessions end; the cached copy is dropped, so this session works on at once.
   * @throws LkError LK_REAUTH_FAILED (current password wrong, or the account disabled), LK_VALIDATION,
   *   LK_PASSWORD_WEAK, LK_PASSWORD_REUSED.
   */
  async changePassword(id: string, current: string, next: string, about: Readonly<Record<string, string>> = {}, keep?: string): Promise<AuthUser> {
    let u: AuthUser;
    try {
      u = await this.check(id, current, 'password_change', about);
    } catch (err) {
      if (LkError.is(err, 'LK_UNAUTHENTICATED')) throw new LkError('LK_REAUTH_FAILED', 'the current password does not match; nothing was changed');
      throw err;
    }
    const rec = this.users.get(u.id)!;
    if (next === current) throw new LkError('LK_PASSWORD_REUSED', 'the new password is the current one; choose another');
    // `next` is not the current password (compared above, in clear): the history check starts at the previous one
    await this.store(rec, next, id, 'password changed by its owner', true, true);
    this.sessions.endUser(id, keep);
    return toAuth(this.users.get(id)!);
  }

  private async store(u: UserRecord, password: string, by: string, reason: string, own: boolean, notCurrent = false): Promise<void> {
    await checkNewPassword(password, this.policy, [u.id, u.name]);
    const keep = this.policy.history;
    if (own) {
      // the current password and the last `history` ones may not come back (one hash each, through the bounded pool)
      for (const old of [...(notCurrent ? [] : [u.password]), ...u.passwordHistory.slice(0, keep)]) {
        if (await verifyPassword(password, old)) throw new LkError('LK_PASSWORD_REUSED', `the new password is one of your last ${keep + 1} passwords; choose another`, { history: keep });
      }
    }
    const hash = await hashPassword(password, this.log2N);
    const at = new Date(this.o.clock.now()).toISOString();
    const history = keep > 0 ? [u.password, ...u.passwordHistory].slice(0, keep) : [];
    this.o.store.tx((t) => {
      const e = t.audit.append({ tenant: SITE_TENANT, actor: by, kind: 'identity', action: 'user.password', args: { user: u.id, self: own, mustChangePassword: !own }, reason });
      this.users.setPassword(t, u.id, hash, !own, history, at, e.seq);
      this.lockouts.clear(t, u.id);
    });
    // a password someone else set: whoever held the old one is out, and the owner must choose their own
    if (!own) this.sessions.endUser(u.id);
    this.changed(u.id);
  }

  /**
   * An administrator lifts the waits of an account (every source) and a lock of older releases; audited
   * (`user.unlock`, with what was cleared). @returns whether anything was cleared.
   * @throws LkError LK_NOT_FOUND.
   */
  unlock(id: string, by: string, reason: string): boolean {
    const cur = this.users.get(id);
    if (!cur) throw new LkError('LK_NOT_FOUND', `no user ${id}`, { user: id });
    const rows = this.lockouts.of(id);
    if (rows.length === 0 && cur.lockedAt === null) return false;
    const at = new Date(this.o.clock.now()).toISOString();
    this.o.store.tx((t) => {
      const e = t.audit.append({
        tenant: SITE_TENANT, actor: by, kind: 'identity', action: 'user.unlock', reason,
        args: { user: id, sources: rows.map((r) => ({ source: r.source, failures: r.failures, blockedUntil: new Date(r.blockedUntil).toISOString() })), ...(cur.lockedAt !== null ? { unlocked: cur.lockedAt } : {}) },
      });
      this.lockouts.clear(t, id);
      if (cur.lockedAt !== null || cur.failedAttempts !== 0) this.users.setAttempts(t, id, 0, null, at, e.seq);
    });
    this.changed(id);
    return true;
  }

  /**
   * Separation of duties for a new local account: one person (by printed name) holds no administrator's account
   * beside a signing one. @throws LkError LK_SOD_CONFLICT.
   */
  private checkSeparation(u: Pick<NewUser, 'id' | 'name' | 'role'>): void {
    const signs = (r: Role): boolean => this.incompatible.has(r);
    if (u.role !== 'admin' && !signs(u.role)) return;
    const key = personKey(u.name);
    const other = this.users.all().find((x) => !x.disabled && personKey(x.name) === key && (u.role === 'admin' ? signs(x.role) : x.role === 'admin'));
    if (other) {
      throw new LkError('LK_SOD_CONFLICT', `${u.name} already holds ${other.id} (${other.role}); an administrator does not also hold a signing role (${[...this.incompatible].join(', ')})`, { user: u.id, other: other.id, role: u.role, otherRole: other.role });
    }
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
    const waits = disabled ? [] : this.lockouts.of(id);
    if (cur.disabled === disabled && (disabled || (cur.lockedAt === null && cur.failedAttempts === 0 && waits.length === 0))) return false;
    const at = new Date(this.o.clock.now()).toISOString();
    this.o.store.tx((t) => {
      const e = t.audit.append({
        tenant: SITE_TENANT, actor: by, kind: 'identity', action: disabled ? 'user.disable' : 'user.enable',
        args: { user: id, ...(!disabled && cur.lockedAt !== null ? { unlocked: cur.lockedAt } : {}), ...(waits.length > 0 ? { clearedSources: waits.map((w) => w.source) } : {}) }, reason,
      });
      this.users.setDisabled(t, id, disabled, at, e.seq);
      if (waits.length > 0) this.lockouts.clear(t, id);
    });
    this.changed(id);
    return true;
  }

  /**
   * Sign in with a password: a session and its first bearer token. A user who must change the password gets a
   * session that may do only that (`user.mustChangePassword`).
   * @throws LkError LK_UNAUTHENTICATED (unknown user, wrong password, disabled, or the source waits after
   *   failures: one answer for all, after the same work). Every failure is audited and counted for its source.
   */
  async signIn(user: string, password: string, about: Readonly<Record<string, string>> = {}): Promise<IssuedToken> {
    const u = await this.check(user, password, 'sign_in', about);
    const now = this.o.clock.now();
    const { token, session } = this.sessions.start(u.id, now, this.ttl, this.maxAge);
    return { token, issuedAt: now, expiresAt: session.expiresAt, sessionEndsAt: session.maxUntil, user: u };
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
    return { token: t.token, issuedAt: now, expiresAt: t.expiresAt, sessionEndsAt: session.maxUntil, user };
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
      // refused for as long as the verifier would still take it: its expiry plus the provider's clock tolerance
      const until = u.expiresAt + this.o.oidc.cfg.clock_tolerance_s * 1000;
      this.ssoOut.set(key, until);
      // kept in the store as well: a restarted daemon refuses it until then
      this.sessions.signOutForeign(key, u.id, this.o.clock.now(), until);
      this.o.store.audit.append({ tenant: SITE_TENANT, actor: u.id, kind: 'identity', action: 'auth.sign_out', args: { user: u.id, source: 'sso' } });
      return u.user;
    }
    const { session, user } = this.local(token);
    this.sessions.end(session);
    this.o.store.audit.append({ tenant: SITE_TENANT, actor: user.id, kind: 'identity', action: 'auth.sign_out', args: { user: user.id, session: session.id } });
    return user;
  }

  /**
   * Re-authentication at signing (21 CFR 11.200(a)(1)): the signed-in person's password, checked again. A person
   * whose password must be changed first signs nothing (refused before the password is looked at).
   * `about.address` names the source a failure counts against (default `local`).
   * @throws LkError LK_PASSWORD_CHANGE_REQUIRED (audited, not counted), LK_REAUTH_FAILED (audited, counted for
   *   the source; also while the source waits after failures, after the same work).
   */
  async reauthenticate(user: string, password: string, about: Readonly<Record<string, string>> = {}): Promise<AuthUser> {
    const rec = this.users.get(user);
    if (rec && !rec.disabled && this.mustChange(rec)) {
      this.audit('auth.refused', 'system', { ...about, user, purpose: 'signature', why: 'password_change_required' });
      throw new LkError('LK_PASSWORD_CHANGE_REQUIRED', `${user} must change the password (it was set by someone else, or has expired) before signing anything`, { user });
    }
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
   * An administrator never signs, whatever a policy bundle lists (separation of duties): refused before any
   * password is looked at, as is a person who must change the password first. `o.administrative` marks an
   * administrative act that re-authenticates without signing a record (reassigning a run's reviewer), which an
   * administrator may do.
   * @throws LkError LK_SOD_CONFLICT, LK_PASSWORD_CHANGE_REQUIRED, LK_REAUTH_REQUIRED (no password given / the SSO
   *   sign-in is not fresh), LK_REAUTH_FAILED.
   */
  async reauthenticateSigner(user: AuthUser, password: string | undefined, about: Readonly<Record<string, string>> = {}, o: { administrative?: boolean } = {}): Promise<AuthUser> {
    if (user.role === 'admin' && o.administrative !== true) {
      this.audit('auth.refused', 'system', { ...about, user: user.id, purpose: 'signature', why: 'separation_of_duties' });
      throw new LkError('LK_SOD_CONFLICT', `${user.id} is an administrator, and an administrator signs nothing (separation of duties)`, { user: user.id, role: user.role });
    }
    if (user.source !== 'sso') {
      const rec = this.users.get(user.id);
      if (rec && this.mustChange(rec)) return this.reauthenticate(user.id, password ?? '', about);
      if (password === undefined || password.length === 0) throw new LkError('LK_REAUTH_REQUIRED', 'this is signed: give your password again (re-authentication at signing)', { issues: [{ path: 'body.password', message: 'required to sign' }] });
      return this.reauthenticate(user.id, password, { ...(user.address ? { address: user.address } : {}), ...about });
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

  /** The id of a local token's live session (undefined for anything else). */
  sessionOf(token: string | undefined): string | undefined {
    return token ? this.sessions.find(token, this.o.clock.now())?.id : undefined;
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
    // ended meanwhile by another connection to the store (seen by current(): an offline password reset)
    if (session.revoked) throw new LkError('LK_UNAUTHENTICATED', 'the bearer token is not valid, has expired or was signed out');
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
        // and may have ended sessions (a password reset, a disable): those end here too
        this.sessions.reload();
      }
    }
    let u = this.cache.get(id);
    if (u === undefined) {
      const r = this.users.get(id);
      u = r && !r.disabled && r.lockedAt === null ? { user: { ...toAuth(r), mustChangePassword: r.mustChange }, setAt: Date.parse(r.passwordSetAt) } : null;
      this.cache.set(id, u);
    }
    if (u === null) return null;
    // a password may come of age while its user is cached
    return !u.user.mustChangePassword && passwordExpired(u.setAt, now, this.policy) ? { ...u.user, mustChangePassword: true } : u.user;
  }

  /** Whether the user must change the password before anything else (set by someone else, or expired). */
  private mustChange(u: UserRecord): boolean {
    return u.mustChange || passwordExpired(Date.parse(u.passwordSetAt), this.o.clock.now(), this.policy);
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
    // not known since this process started: signed out before a restart?
    const out = this.sessions.signedOutUntil(key, now);
    if (out !== undefined) {
      if (this.ssoOut.size >= SSO_CACHE_MAX) this.sweepSso();
      this.ssoOut.set(key, out);
      throw new LkError('LK_UNAUTHENTICATED', 'this token was signed out', { reason: 'signed_out' });
    }
    const v = await this.o.oidc!.verify(token);
    // one id, one person (11.300(a)): a provider's user may not take the id of a local account
    if (this.users.get(v.id)) throw new LkError('LK_SSO_UNMAPPED', `${v.id} is the id of a local user of this site; the provider's user cannot take it`, { user: v.id });
    // separation of duties: a person the provider makes an administrator and a signer is refused, not mapped to one of them
    const signing = v.roles.filter((r) => this.incompatible.has(r));
    if (v.roles.includes('admin') && signing.length > 0) {
      this.audit('auth.refused', 'system', { user: v.id, purpose: 'sign_in', why: 'separation_of_duties', roles: v.roles.join(',') });
      throw new LkError('LK_SOD_CONFLICT', `${v.id} holds both an administrator's and a signing role (${signing.join(', ')}) at the identity provider; one person holds one of them`, { user: v.id, roles: [...v.roles] });
    }
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

  private async check(user: string, password: string, purpose: 'sign_in' | 'signature' | 'password_change', about: Readonly<Record<string, string>>): Promise<AuthUser> {
    const u = this.users.get(user);
    const source = about['address'] ?? 'local';
    const now = this.o.clock.now();
    const waitMs = u ? this.lockouts.waitMs(u.id, source, now) : 0;
    const held = u !== null && (u.lockedAt !== null || waitMs > 0);
    // the same work for an unknown user and for a source that waits, so timing tells neither which ids exist nor which are held
    let ok = false;
    if (u && !held) ok = await verifyPassword(password, u.password);
    else await verifyPassword(password, await (this.dummy ??= hashPassword(randomBytes(12).toString('hex'), this.log2N)));
    const at = new Date(this.o.clock.now()).toISOString();
    if (u && ok && !u.disabled) {
      const action = purpose === 'sign_in' ? 'auth.sign_in' : purpose === 'signature' ? 'auth.reauthenticated' : 'auth.password_verified';
      this.o.store.tx((t) => {
        const e = t.audit.append({ tenant: SITE_TENANT, actor: u.id, kind: 'identity', action, args: { ...about, user: u.id, purpose, ...(this.mustChange(u) ? { mustChangePassword: true } : {}) } });
        this.lockouts.succeed(t, u.id, source);
        if (this.users.get(u.id)!.failedAttempts !== 0) this.users.setAttempts(t, u.id, 0, null, at, e.seq);
      });
      return { ...toAuth(u), mustChangePassword: this.mustChange(u) };
    }
    if (held) {
      // not counted: the wait does not grow while it lasts, and the answer is that of a wrong password
      this.audit('auth.refused', 'system', { ...about, user, purpose, why: u!.lockedAt !== null ? 'locked' : 'source_waits', retryAfterS: String(Math.ceil(waitMs / 1000)) });
      throw new LkError('LK_UNAUTHENTICATED', 'user or password is not valid');
    }
    const why = !u ? 'unknown_user' : u.disabled ? 'disabled' : 'bad_password';
    this.o.store.tx((t) => {
      const out = u ? this.lockouts.fail(t, u.id, source, now) : null;
      t.audit.append({ tenant: SITE_TENANT, actor: 'system', kind: 'identity', action: 'auth.failed', args: { ...about, user, purpose, why, ...(out ? { attempt: out.failures } : {}) } });
      if (!u || !out) return;
      if (out.blockedUntil !== null) {
        t.audit.append({
          tenant: SITE_TENANT, actor: 'system', kind: 'identity', action: 'auth.locked',
          args: { user: u.id, source, failures: out.failures, until: new Date(out.blockedUntil).toISOString() },
          reason: `${out.failures} failed passwords for ${u.id} from ${source}: that source waits ${Math.ceil((out.blockedUntil - now) / 1000)} s (other sources are not held)`,
        });
      }
      if (out.alert) {
        t.audit.append({
          tenant: SITE_TENANT, actor: 'system', kind: 'identity', action: 'auth.lockout_alert',
          args: { user: u.id, failures: out.accountFailures, sources: this.lockouts.of(u.id).map((r) => r.source) },
          reason: `${out.accountFailures} failed passwords for ${u.id} from all sources: someone may be guessing`,
        });
      }
    });
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

/** The identity options a site's `api` configuration sets (lock-out, password policy, separation of duties). */
export function identitySettings(a: {
  max_failed_attempts: number; lockout: { delay_s: number; max_delay_s: number; account_alert_failures: number };
  password_policy: { min_length: number; min_strength: number; max_age_days: number; history: number }; separation_of_duties: { incompatible_with_admin: readonly Role[] };
}): Pick<IdentityOptions, 'maxFailedAttempts' | 'lockout' | 'passwordPolicy' | 'incompatibleWithAdmin'> {
  return {
    maxFailedAttempts: a.max_failed_attempts,
    lockout: { delayMs: a.lockout.delay_s * 1000, maxDelayMs: a.lockout.max_delay_s * 1000, accountAlertFailures: a.lockout.account_alert_failures },
    passwordPolicy: { minLength: a.password_policy.min_length, minStrength: a.password_policy.min_strength, maxAgeDays: a.password_policy.max_age_days, history: a.password_policy.history },
    incompatibleWithAdmin: a.separation_of_duties.incompatible_with_admin,
  };
}
