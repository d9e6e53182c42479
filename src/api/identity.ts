/**
 * Local identities of an air-gapped site (the default until a directory or OIDC provider is configured):
 * users in the store with scrypt password hashes, one role, the tenants they work for, a disabled flag and a
 * failed-attempt counter that locks the account after `maxFailedAttempts` consecutive failures (21 CFR
 * 11.300(d): attempts at unauthorised use are recorded, on the site chain, and stopped). Sign-in issues a
 * short-lived opaque bearer token; only its SHA-256 is kept, in memory, so a token dies with the process.
 * Signing re-authenticates with the password (11.200(a)(1)) and counts toward the same lock.
 */
import { createHash, randomBytes, scrypt, timingSafeEqual, type ScryptOptions } from 'node:crypto';
import type { Clock } from '../clock.js';
import { LkError } from '../errors.js';
import { PERSON_RE } from '../models/registry.js';
import type { Store } from '../store/store.js';
import { ROLES, UserStore, type Role, type UserRecord } from '../store/user-store.js';
import { SITE_TENANT } from '../audit/entry.js';

export { ROLES, type Role } from '../store/user-store.js';

/** What a route knows of the signed-in person. */
export interface AuthUser {
  readonly id: string;
  readonly name: string;
  readonly role: Role;
  readonly tenants: readonly string[];
}

export interface IssuedToken {
  readonly token: string;
  readonly expiresAt: number;
  readonly user: AuthUser;
}

export interface IdentityOptions {
  readonly store: Store;
  readonly clock: Clock;
  /** Lifetime of a bearer token (default 15 min). */
  readonly tokenTtlMs?: number;
  /** Consecutive failures that lock an account (default 5). */
  readonly maxFailedAttempts?: number;
  /** scrypt cost as log2 N (default 15); tests may lower it. */
  readonly scryptLog2N?: number;
}

const KEY_LEN = 32;
const MAX_LOG2N = 20;

function scryptAsync(password: string, salt: Buffer, log2N: number, r: number, p: number): Promise<Buffer> {
  const N = 2 ** log2N;
  const opts: ScryptOptions = { N, r, p, maxmem: 256 * N * r + 1024 * 1024 };
  return new Promise((resolve, reject) => scrypt(password.normalize('NFC'), salt, KEY_LEN, opts, (err, key) => (err ? reject(err) : resolve(key))));
}

/** An scrypt hash in the stored form `scrypt$<log2 N>$<r>$<p>$<salt>$<key>` (async: the engine shares the event loop). */
export async function hashPassword(password: string, log2N = 15): Promise<string> {
  const salt = randomBytes(16);
  const key = await scryptAsync(password, salt, log2N, 8, 1);
  return `scrypt$${log2N}$8$1$${salt.toString('base64url')}$${key.toString('base64url')}`;
}

/** Constant-time check of a password against a stored hash; a malformed hash never matches. */
export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const m = /^scrypt\$(\d{1,2})\$(\d{1,2})\$(\d{1,2})\$([A-Za-z0-9_-]+)\$([A-Za-z0-9_-]+)$/.exec(stored);
  if (!m) return false;
  const [log2N, r, p] = [Number(m[1]), Number(m[2]), Number(m[3])];
  if (log2N < 1 || log2N > MAX_LOG2N || r < 1 || p < 1) return false;
  const want = Buffer.from(m[5]!, 'base64url');
  const got = await scryptAsync(password, Buffer.from(m[4]!, 'base64url'), log2N, r, p);
  return got.length === want.length && timingSafeEqual(got, want);
}

const sha256 = (s: string): string => createHash('sha256').update(s).digest('hex');
const toAuth = (u: UserRecord): AuthUser => ({ id: u.id, name: u.name, role: u.role, tenants: u.tenants });

export interface NewUser {
  readonly id: string;
  readonly name: string;
  readonly role: Role;
  readonly tenants: readonly string[];
  readonly password: string;
}

/** The site's identities: users in the store, tokens in memory. Construct once per process. */
export class Identity {
  readonly users: UserStore;
  private readonly tokens = new Map<string, { user: string; expiresAt: number }>();
  private readonly ttl: number;
  private readonly maxFailed: number;
  private readonly log2N: number;
  /** A hash to verify against when the user is unknown, so timing does not tell which ids exist. */
  private dummy: Promise<string> | undefined;

  constructor(private readonly o: IdentityOptions) {
    this.users = new UserStore(o.store.db);
    this.ttl = o.tokenTtlMs ?? 15 * 60_000;
    this.maxFailed = o.maxFailedAttempts ?? 5;
    this.log2N = o.scryptLog2N ?? 15;
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
    if (u.password.length < 12) throw new LkError('LK_VALIDATION', 'a password has at least 12 characters');
    if (this.users.get(u.id)) throw new LkError('LK_CONFLICT', `user ${u.id} exists`, { user: u.id });
    const password = await hashPassword(u.password, this.log2N);
    const at = new Date(this.o.clock.now()).toISOString();
    this.o.store.tx((t) => {
      if (this.users.get(u.id)) throw new LkError('LK_CONFLICT', `user ${u.id} exists`, { user: u.id });
      const e = t.audit.append({ tenant: SITE_TENANT, actor: by, kind: 'identity', action: 'user.create', args: { user: u.id, name: u.name, role: u.role, tenants: [...u.tenants] }, reason });
      this.users.insert(t, { id: u.id, name: u.name, role: u.role, tenants: u.tenants, password, createdAt: at, createdBy: by, auditSeq: e.seq });
    });
    return { id: u.id, name: u.name, role: u.role, tenants: u.tenants };
  }

  /**
   * Sign in with a password: a bearer token valid for the configured lifetime.
   * @throws LkError LK_UNAUTHENTICATED (unknown user, wrong password, disabled: one answer for all),
   *   LK_ACCOUNT_LOCKED. Every failure is audited; the last allowed one locks the account.
   */
  async signIn(user: string, password: string): Promise<IssuedToken> {
    const u = await this.check(user, password, 'sign_in', {});
    const token = randomBytes(32).toString('base64url');
    const expiresAt = this.o.clock.now() + this.ttl;
    this.tokens.set(sha256(token), { user: u.id, expiresAt });
    return { token, expiresAt, user: u };
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
   * The person a bearer token stands for, re-read from the store (a disabled or locked account stops at once).
   * @throws LkError LK_UNAUTHENTICATED for a missing, unknown or expired token.
   */
  resolve(token: string | undefined): AuthUser {
    if (!token) throw new LkError('LK_UNAUTHENTICATED', 'a bearer token is required (POST /v1/auth/token)');
    const key = sha256(token);
    const t = this.tokens.get(key);
    if (!t || t.expiresAt <= this.o.clock.now()) {
      if (t) this.tokens.delete(key);
      throw new LkError('LK_UNAUTHENTICATED', 'the bearer token is not valid or has expired');
    }
    const u = this.users.get(t.user);
    if (!u || u.disabled || u.lockedAt !== null) {
      this.tokens.delete(key);
      throw new LkError('LK_UNAUTHENTICATED', 'the account of this token is disabled or locked');
    }
    return toAuth(u);
  }

  /** End every session of a user (after a lock). */
  revoke(user: string): void {
    for (const [k, t] of this.tokens) if (t.user === user) this.tokens.delete(k);
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
    if (locked) this.revoke(user);
    throw new LkError('LK_UNAUTHENTICATED', 'user or password is not valid');
  }

  private audit(action: string, actor: string, args: Record<string, string>): void {
    this.o.store.audit.append({ tenant: SITE_TENANT, actor, kind: 'identity', action, args });
  }
}

export interface DemoUser extends AuthUser {
  /** One-time password, returned once to the caller (the daemon prints it once); only its hash is stored. */
  readonly password: string;
}

/**
 * The demo identities of the embedded default, created once (audited, change `DEMO-SETUP`) for the tenants
 * the site has: o.operator, p.bianchi (process engineer) and m.rossi (QA) for acme-pharma; l.conti and g.ferri
 * for borealis-bio; an auditor and an administrator of every tenant. Users that exist are left alone, so
 * passwords are returned only at creation.
 * @throws LkError as {@link Identity.create}.
 */
export async function ensureDemoUsers(identity: Identity, tenants: readonly string[]): Promise<DemoUser[]> {
  const has = (t: string): boolean => tenants.includes(t);
  const all = [...tenants];
  const wanted: Omit<NewUser, 'password'>[] = [
    ...(has('acme-pharma')
      ? [
          { id: 'o.operator', name: 'Olga Operator', role: 'operator' as const, tenants: ['acme-pharma'] },
          { id: 'p.bianchi', name: 'Paolo Bianchi', role: 'process_engineer' as const, tenants: ['acme-pharma'] },
          { id: 'm.rossi', name: 'Maria Rossi', role: 'qa_reviewer' as const, tenants: ['acme-pharma'] },
        ]
      : []),
    ...(has('borealis-bio')
      ? [
          { id: 'l.conti', name: 'Luca Conti', role: 'process_engineer' as const, tenants: ['borealis-bio'] },
          { id: 'g.ferri', name: 'Giulia Ferri', role: 'qa_reviewer' as const, tenants: ['borealis-bio'] },
        ]
      : []),
    ...(all.length > 0
      ? [
          { id: 'a.ricci', name: 'Anna Ricci', role: 'auditor' as const, tenants: all },
          { id: 'd.marino', name: 'Davide Marino', role: 'admin' as const, tenants: all },
        ]
      : []),
  ];
  const made: DemoUser[] = [];
  for (const w of wanted) {
    if (identity.users.get(w.id)) continue;
    const password = randomBytes(12).toString('base64url');
    made.push({ ...(await identity.create({ ...w, password }, 'system', 'DEMO-SETUP: demo identities of the embedded default site')), password });
  }
  return made;
}
