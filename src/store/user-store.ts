/**
 * Every SQL statement of the local identities (migration 7, table `app_user`). Mutations take the caller's
 * transaction (`TxContext`) so that a change commits with its audit entry on the site chain; the password
 * column holds an scrypt hash, never a password.
 */
import type { Database, Statement } from 'better-sqlite3';
import type { TxContext } from './store.js';

export const ROLES = ['operator', 'process_engineer', 'qa_reviewer', 'auditor', 'admin'] as const;
export type Role = (typeof ROLES)[number];

export interface UserRecord {
  readonly id: string;
  readonly name: string;
  readonly role: Role;
  readonly tenants: readonly string[];
  /** `scrypt$<log2 N>$<r>$<p>$<salt>$<key>` (base64url). */
  readonly password: string;
  readonly disabled: boolean;
  readonly failedAttempts: number;
  readonly lockedAt: string | null;
  readonly createdAt: string;
  readonly createdBy: string;
  readonly changedAt: string;
  readonly auditSeq: number;
  /** The password was set by someone other than its owner (or must be renewed): change it before anything else. */
  readonly mustChange: boolean;
  /** When the current password was set (the creation time until it is changed). */
  readonly passwordSetAt: string;
  /** Previous password hashes, newest first (as many as the policy's history keeps). */
  readonly passwordHistory: readonly string[];
}

interface Row {
  id: string; name: string; role: Role; tenants: string; password: string; disabled: number; failed_attempts: number;
  locked_at: string | null; created_at: string; created_by: string; changed_at: string; audit_seq: number;
  must_change: number; password_set_at: string | null; password_history: string;
}

const toUser = (r: Row): UserRecord => ({
  id: r.id, name: r.name, role: r.role, tenants: JSON.parse(r.tenants) as string[], password: r.password, disabled: r.disabled === 1,
  failedAttempts: r.failed_attempts, lockedAt: r.locked_at, createdAt: r.created_at, createdBy: r.created_by, changedAt: r.changed_at, auditSeq: r.audit_seq,
  mustChange: r.must_change === 1, passwordSetAt: r.password_set_at ?? r.created_at, passwordHistory: JSON.parse(r.password_history) as string[],
});

/** Prepared statements over one connection; construct once per store. */
export class UserStore {
  private readonly st: Record<'get' | 'all' | 'insert' | 'attempts' | 'count' | 'status' | 'password', Statement>;

  constructor(db: Database) {
    this.st = {
      get: db.prepare('SELECT * FROM app_user WHERE id = ?'),
      all: db.prepare('SELECT * FROM app_user ORDER BY id'),
      count: db.prepare('SELECT COUNT(*) FROM app_user').pluck(),
      insert: db.prepare(`INSERT INTO app_user (id, name, role, tenants, password, disabled, failed_attempts, locked_at, created_at, created_by, changed_at, audit_seq, must_change, password_set_at)
        VALUES (@id, @name, @role, @tenants, @password, 0, 0, NULL, @createdAt, @createdBy, @createdAt, @auditSeq, @mustChange, @createdAt)`),
      attempts: db.prepare('UPDATE app_user SET failed_attempts = ?, locked_at = ?, changed_at = ?, audit_seq = ? WHERE id = ?'),
      status: db.prepare('UPDATE app_user SET disabled = ?, failed_attempts = ?, locked_at = ?, changed_at = ?, audit_seq = ? WHERE id = ?'),
      password: db.prepare(`UPDATE app_user SET password = @hash, must_change = @mustChange, password_set_at = @changedAt, password_history = @history,
        failed_attempts = 0, locked_at = NULL, changed_at = @changedAt, audit_seq = @auditSeq WHERE id = @id`),
    };
  }

  get(id: string): UserRecord | null {
    const r = this.st.get.get(id) as Row | undefined;
    return r ? toUser(r) : null;
  }

  all(): UserRecord[] {
    return (this.st.all.all() as Row[]).map(toUser);
  }

  count(): number {
    return this.st.count.get() as number;
  }

  insert(t: TxContext, u: Pick<UserRecord, 'id' | 'name' | 'role' | 'tenants' | 'password' | 'createdAt' | 'createdBy' | 'auditSeq' | 'mustChange'>): void {
    void t;
    this.st.insert.run({ ...u, tenants: JSON.stringify(u.tenants), mustChange: u.mustChange ? 1 : 0 });
  }

  /** The failed-attempt counter and lock after a sign-in or re-authentication (0 and null after a success). */
  setAttempts(t: TxContext, id: string, failedAttempts: number, lockedAt: string | null, changedAt: string, auditSeq: number): void {
    void t;
    this.st.attempts.run(failedAttempts, lockedAt, changedAt, auditSeq, id);
  }

  /** Disable (sessions end) or enable a user; enabling also clears a lock and the failed-attempt counter. */
  setDisabled(t: TxContext, id: string, disabled: boolean, changedAt: string, auditSeq: number): void {
    void t;
    const cur = this.get(id);
    if (!cur) return;
    this.st.status.run(disabled ? 1 : 0, disabled ? cur.failedAttempts : 0, disabled ? cur.lockedAt : null, changedAt, auditSeq, id);
  }

  /**
   * A new password hash (`mustChange`: set by someone other than the owner), the previous ones kept in `history`
   * (newest first); the failed-attempt counter and any lock are cleared with it.
   */
  setPassword(t: TxContext, id: string, hash: string, mustChange: boolean, history: readonly string[], changedAt: string, auditSeq: number): void {
    void t;
    this.st.password.run({ hash, mustChange: mustChange ? 1 : 0, history: JSON.stringify(history), changedAt, auditSeq, id });
  }
}
