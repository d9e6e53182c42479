/**
 * Signed-in sessions of local users, kept in the store (table `auth_session`, `auth_session_token`) so that a
 * restarted daemon accepts a token that is still valid: a restart does not sign people out. A session starts at
 * a password sign-in and holds one current bearer token; renewal (POST /v1/auth/token/refresh) issues a new token
 * and moves the session's expiry forward, never past its maximum age (the previous token keeps its own, shorter
 * expiry, so requests in flight during a renewal do not fail), so a long `runs watch` lives without the password
 * being typed again, but not for ever. Sign-out, disabling the user or locking the account ends the session —
 * persisted, so a restart does not bring it back: its token is refused at the next request, and an open event
 * stream, which holds the session rather than the token, ends at its next check.
 *
 * Tokens are credentials (21 CFR 11.300): only their SHA-256 hashes are stored, in memory and on disk, never a
 * token in clear (a token is 32 random bytes, so an unsalted hash cannot be searched back). Expired rows are
 * swept at most once a minute, a bounded number per sweep. Live sessions are cached in memory; the store is
 * asked only for a token the cache does not know (the first request after a restart, or a bad token).
 */
import { createHash, randomBytes } from 'node:crypto';
import type { Database, Statement } from 'better-sqlite3';

export interface Session {
  readonly id: string;
  readonly user: string;
  readonly startedAt: number;
  /** The current token's expiry (epoch ms); renewal moves it. */
  expiresAt: number;
  /** No renewal goes past this (startedAt + the configured maximum session age). */
  readonly maxUntil: number;
  revoked: boolean;
  /** SHA-256 of each token of the session → its expiry. */
  readonly tokens: Map<string, number>;
}

export const sha256 = (s: string): string => createHash('sha256').update(s).digest('hex');

/** Rows removed per sweep at most (sessions, and tokens), so a sign-in never waits on a large delete. */
export const SWEEP_BATCH = 500;

interface SessionRow { id: string; user: string; started_at: number; expires_at: number; max_until: number; revoked: number }

/** The sessions of one Identity, persisted in its store. Bounded: expired sessions are swept as new ones start. */
export class Sessions {
  private readonly byHash = new Map<string, Session>();
  private readonly byId = new Map<string, Session>();
  private readonly byUser = new Map<string, Set<Session>>();
  private sweptAt = Number.NEGATIVE_INFINITY;
  private readonly q: Record<'insert' | 'insertToken' | 'byToken' | 'tokensOf' | 'setExpiry' | 'dropExpiredTokensOf' | 'revoke' | 'revokeUser' | 'state' | 'foreignOut' | 'foreignOutToken' | 'expiredIds' | 'dropTokensOf' | 'dropSession' | 'expiredTokens', Statement>;

  constructor(private readonly db: Database) {
    this.q = {
      insert: db.prepare('INSERT INTO auth_session (id, user, started_at, expires_at, max_until, revoked) VALUES (?, ?, ?, ?, ?, 0)'),
      insertToken: db.prepare('INSERT INTO auth_session_token (hash, session, expires_at) VALUES (?, ?, ?)'),
      byToken: db.prepare(`SELECT s.id, s.user, s.started_at, s.expires_at, s.max_until, s.revoked FROM auth_session_token t
        JOIN auth_session s ON s.id = t.session WHERE t.hash = ?`),
      tokensOf: db.prepare('SELECT hash, expires_at FROM auth_session_token WHERE session = ? AND expires_at > ?'),
      setExpiry: db.prepare('UPDATE auth_session SET expires_at = ? WHERE id = ?'),
      dropExpiredTokensOf: db.prepare('DELETE FROM auth_session_token WHERE session = ? AND expires_at <= ?'),
      revoke: db.prepare('UPDATE auth_session SET revoked = 1 WHERE id = ?'),
      revokeUser: db.prepare('UPDATE auth_session SET revoked = 1 WHERE user = ? AND revoked = 0 AND id <> ?'),
      state: db.prepare('SELECT revoked FROM auth_session WHERE id = ?').pluck(),
      foreignOut: db.prepare('INSERT OR IGNORE INTO auth_session (id, user, started_at, expires_at, max_until, revoked) VALUES (?, ?, ?, ?, ?, 1)'),
      foreignOutToken: db.prepare('INSERT OR IGNORE INTO auth_session_token (hash, session, expires_at) VALUES (?, ?, ?)'),
      expiredIds: db.prepare(`SELECT id FROM auth_session WHERE expires_at <= ? LIMIT ${SWEEP_BATCH}`).pluck(),
      dropTokensOf: db.prepare('DELETE FROM auth_session_token WHERE session = ?'),
      dropSession: db.prepare('DELETE FROM auth_session WHERE id = ?'),
      expiredTokens: db.prepare(`DELETE FROM auth_session_token WHERE hash IN (SELECT hash FROM auth_session_token WHERE expires_at <= ? LIMIT ${SWEEP_BATCH})`),
    };
  }

  /** Live sessions held in memory (those used since the process started). */
  get size(): number {
    return this.byId.size;
  }

  /** Start a session: @returns its first token (the only time it is seen in clear; only its hash is stored). */
  start(user: string, now: number, ttlMs: number, maxAgeMs: number): { token: string; session: Session } {
    this.sweep(now);
    const token = randomBytes(32).toString('base64url');
    const maxUntil = now + maxAgeMs;
    const expiresAt = Math.min(now + ttlMs, maxUntil);
    const hash = sha256(token);
    const session: Session = { id: `ses_${randomBytes(8).toString('hex')}`, user, startedAt: now, expiresAt, maxUntil, revoked: false, tokens: new Map([[hash, expiresAt]]) };
    this.db.transaction(() => {
      this.q.insert.run(session.id, user, now, expiresAt, maxUntil);
      this.q.insertToken.run(hash, session.id, expiresAt);
    })();
    this.hold(session);
    return { token, session };
  }

  /** The live session of a token (not revoked, not expired), or undefined. */
  find(token: string, now: number): Session | undefined {
    const hash = sha256(token);
    const s = this.byHash.get(hash) ?? this.load(hash, now);
    if (!s) return undefined;
    if (s.revoked || s.expiresAt <= now) {
      this.drop(s);
      return undefined;
    }
    const exp = s.tokens.get(hash);
    if (exp === undefined || exp <= now) {
      s.tokens.delete(hash);
      this.byHash.delete(hash);
      return undefined;
    }
    return s;
  }

  /** A new token for the session, valid to `now + ttl` but not past the session's maximum age. */
  renew(s: Session, now: number, ttlMs: number): { token: string; expiresAt: number } {
    this.sweep(now);
    const token = randomBytes(32).toString('base64url');
    const hash = sha256(token);
    const expiresAt = Math.min(now + ttlMs, s.maxUntil);
    this.db.transaction(() => {
      this.q.setExpiry.run(expiresAt, s.id);
      this.q.dropExpiredTokensOf.run(s.id, now);
      this.q.insertToken.run(hash, s.id, expiresAt);
    })();
    s.expiresAt = expiresAt;
    // tokens of the session that expired meanwhile go; a renewal loop keeps at most two live at a time
    for (const [h, exp] of s.tokens) {
      if (exp <= now) {
        s.tokens.delete(h);
        this.byHash.delete(h);
      }
    }
    s.tokens.set(hash, expiresAt);
    this.byHash.set(hash, s);
    return { token, expiresAt };
  }

  /** End one session (persisted: a restart does not bring it back). */
  end(s: Session): void {
    this.q.revoke.run(s.id);
    s.revoked = true;
    this.drop(s);
  }

  /**
   * End every session of a user (disabled, locked, new password), those in memory and those only in the store
   * (not used since a restart); `except` keeps one (the session that changed its own password).
   * @returns how many ended in the store.
   */
  endUser(user: string, except?: string): number {
    const n = this.q.revokeUser.run(user, except ?? '').changes;
    for (const s of [...(this.byUser.get(user) ?? [])]) {
      if (s.id === except) continue;
      s.revoked = true;
      this.drop(s);
    }
    return n;
  }

  /**
   * An identity provider's token signed out here (it is not a session of ours): its hash recorded as a revoked
   * session until the token's own expiry, so a restarted daemon refuses it as well.
   */
  signOutForeign(hash: string, user: string, now: number, until: number): void {
    const id = `sso_${hash.slice(0, 32)}`;
    this.db.transaction(() => {
      this.q.foreignOut.run(id, user, now, until, until);
      this.q.foreignOutToken.run(hash, id, until);
    })();
  }

  /** Until when a token the store knows was signed out (any kind), or undefined when it was not (or that has passed). */
  signedOutUntil(hash: string, now: number): number | undefined {
    const r = this.q.byToken.get(hash) as SessionRow | undefined;
    return r && r.revoked !== 0 && r.expires_at > now ? r.expires_at : undefined;
  }

  /**
   * Another connection committed (the offline `linekeeper users` commands end sessions in the store): the sessions
   * held in memory that the store no longer has live end here too. One lookup per held session.
   * @returns how many ended.
   */
  reload(): number {
    let n = 0;
    for (const s of [...this.byId.values()]) {
      const revoked = this.q.state.get(s.id) as number | undefined;
      if (revoked === 0) continue;
      s.revoked = true;
      this.drop(s);
      n++;
    }
    return n;
  }

  /** A session of the store that a token names and that is live, cached with its live tokens. */
  private load(hash: string, now: number): Session | undefined {
    const r = this.q.byToken.get(hash) as SessionRow | undefined;
    if (!r || r.revoked !== 0 || r.expires_at <= now) return undefined;
    // another token of the session may have been loaded already: one object per session (a stream holds it)
    const held = this.byId.get(r.id);
    if (held) return held;
    const tokens = new Map((this.q.tokensOf.all(r.id, now) as { hash: string; expires_at: number }[]).map((t) => [t.hash, t.expires_at]));
    const s: Session = { id: r.id, user: r.user, startedAt: r.started_at, expiresAt: r.expires_at, maxUntil: r.max_until, revoked: false, tokens };
    this.hold(s);
    return s;
  }

  private hold(s: Session): void {
    this.byId.set(s.id, s);
    for (const h of s.tokens.keys()) this.byHash.set(h, s);
    let set = this.byUser.get(s.user);
    if (!set) this.byUser.set(s.user, (set = new Set()));
    set.add(s);
  }

  private drop(s: Session): void {
    for (const h of s.tokens.keys()) if (this.byHash.get(h) === s) this.byHash.delete(h);
    if (this.byId.get(s.id) === s) this.byId.delete(s.id);
    const set = this.byUser.get(s.user);
    set?.delete(s);
    if (set && set.size === 0) this.byUser.delete(s.user);
  }

  /**
   * Remove expired sessions and tokens, at most once a minute and at most {@link SWEEP_BATCH} of each per sweep
   * (an abandoned token would otherwise stay; a backlog goes over the next sweeps). A revoked session stays until
   * its expiry, so its revocation outlives a restart for as long as its token could have been used.
   */
  private sweep(now: number): void {
    if (now - this.sweptAt < 60_000 && now >= this.sweptAt) return;
    this.sweptAt = now;
    for (const s of [...this.byId.values()]) if (s.expiresAt <= now) this.drop(s);
    this.db.transaction(() => {
      for (const id of this.q.expiredIds.all(now) as string[]) {
        this.q.dropTokensOf.run(id);
        this.q.dropSession.run(id);
      }
      this.q.expiredTokens.run(now);
    })();
  }
}
