/**
 * Signed-in sessions of local users, in memory (a session dies with the process; the person signs in again).
 * A session starts at a password sign-in and holds one current bearer token; renewal (POST
 * /v1/auth/token/refresh) issues a new token and moves the session's expiry forward, never past its maximum
 * age (the previous token keeps its own, shorter expiry, so requests in flight during a renewal do not fail), so a long `runs watch` lives without the password being typed again, but not
 * for ever. Sign-out, disabling the user or locking the account ends the session: its token is refused at the
 * next request, and an open event stream, which holds the session rather than the token, ends at its next check.
 * Only SHA-256 hashes of tokens are kept.
 */
import { createHash, randomBytes } from 'node:crypto';

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

/** The sessions of one Identity. Bounded: expired sessions are swept as new ones start. */
export class Sessions {
  private readonly byHash = new Map<string, Session>();
  private readonly byUser = new Map<string, Set<Session>>();
  private sweptAt = 0;

  get size(): number {
    return this.byHash.size;
  }

  /** Start a session: @returns its first token (the only time it is seen in clear). */
  start(user: string, now: number, ttlMs: number, maxAgeMs: number): { token: string; session: Session } {
    this.sweep(now);
    const token = randomBytes(32).toString('base64url');
    const maxUntil = now + maxAgeMs;
    const expiresAt = Math.min(now + ttlMs, maxUntil);
    const hash = sha256(token);
    const session: Session = { id: `ses_${randomBytes(8).toString('hex')}`, user, startedAt: now, expiresAt, maxUntil, revoked: false, tokens: new Map([[hash, expiresAt]]) };
    this.byHash.set(hash, session);
    let set = this.byUser.get(user);
    if (!set) this.byUser.set(user, (set = new Set()));
    set.add(session);
    return { token, session };
  }

  /** The live session of a token (not revoked, not expired), or undefined. */
  find(token: string, now: number): Session | undefined {
    const hash = sha256(token);
    const s = this.byHash.get(hash);
    if (!s) return undefined;
    if (s.revoked || s.expiresAt <= now) {
      this.drop(s);
      return undefined;
    }
    if (s.tokens.get(hash)! <= now) {
      s.tokens.delete(hash);
      this.byHash.delete(hash);
      return undefined;
    }
    return s;
  }

  /** A new token for the session, valid to `now + ttl` but not past the session's maximum age. */
  renew(s: Session, now: number, ttlMs: number): { token: string; expiresAt: number } {
    const token = randomBytes(32).toString('base64url');
    const hash = sha256(token);
    s.expiresAt = Math.min(now + ttlMs, s.maxUntil);
    // tokens of the session that expired meanwhile go; a renewal loop keeps at most two live at a time
    for (const [h, exp] of s.tokens) {
      if (exp <= now) {
        s.tokens.delete(h);
        this.byHash.delete(h);
      }
    }
    s.tokens.set(hash, s.expiresAt);
    this.byHash.set(hash, s);
    return { token, expiresAt: s.expiresAt };
  }

  /** End one session. */
  end(s: Session): void {
    s.revoked = true;
    this.drop(s);
  }

  /** The live sessions of a user. */
  of(user: string): Session[] {
    return [...(this.byUser.get(user) ?? [])];
  }

  /** End every session of a user (disabled, locked, new password). @returns how many ended. */
  endUser(user: string): number {
    const set = this.byUser.get(user);
    if (!set) return 0;
    const n = set.size;
    for (const s of [...set]) this.end(s);
    return n;
  }

  private drop(s: Session): void {
    for (const h of s.tokens.keys()) if (this.byHash.get(h) === s) this.byHash.delete(h);
    const set = this.byUser.get(s.user);
    set?.delete(s);
    if (set && set.size === 0) this.byUser.delete(s.user);
  }

  /** Remove expired sessions, at most once a minute (an abandoned token would otherwise stay in memory). */
  private sweep(now: number): void {
    if (now - this.sweptAt < 60_000) return;
    this.sweptAt = now;
    for (const s of new Set(this.byHash.values())) if (s.expiresAt <= now) this.drop(s);
  }
}
