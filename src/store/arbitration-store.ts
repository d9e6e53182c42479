/**
 * The guarded writer's arbitration state, persisted (migration 4): who owns a
 * contested setpoint until when (rule 3), and the deadlocks waiting for a
 * named person. Pure arbitration returns a new state; this module writes the
 * difference inside the caller's `store.tx`, together with the audit entry
 * of that arbitration step, so after a restart a setpoint is still owned
 * inside its window and a deadlock is still pending (never resolved by time
 * or by a restart).
 */
import type { Statement } from 'better-sqlite3';
import type { ArbitrationState, Escalation, Ownership } from '../arbitration/index.js';
import { LkError } from '../errors.js';
import type { Store, TxContext } from './store.js';

export class ArbitrationStore {
  private readonly st: Record<'owners' | 'putOwner' | 'delOwner' | 'escalations' | 'escalationTenants' | 'putEscalation' | 'delEscalation', Statement>;

  /** @throws LkError LK_STORE_MIGRATION when the store has no arbitration tables (schema older than 4). */
  constructor(store: Store) {
    if (store.schemaVersion < 4) throw new LkError('LK_STORE_MIGRATION', `the guarded writer needs schema version 4, the store is at ${store.schemaVersion}`);
    const db = store.db;
    this.st = {
      owners: db.prepare('SELECT ownership FROM arbitration_owner ORDER BY setpoint').pluck(),
      putOwner: db.prepare(
        `INSERT INTO arbitration_owner (setpoint, agent, request_id, ownership, since, expires_at, tenant, audit_seq) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
         ON CONFLICT (setpoint) DO UPDATE SET agent = excluded.agent, request_id = excluded.request_id, ownership = excluded.ownership,
           since = excluded.since, expires_at = excluded.expires_at, tenant = excluded.tenant, audit_seq = excluded.audit_seq`,
      ),
      delOwner: db.prepare('DELETE FROM arbitration_owner WHERE setpoint = ?'),
      escalations: db.prepare('SELECT escalation FROM arbitration_escalation ORDER BY setpoint').pluck(),
      escalationTenants: db.prepare('SELECT setpoint, tenant FROM arbitration_escalation'),
      putEscalation: db.prepare(
        `INSERT INTO arbitration_escalation (setpoint, escalation, since, tenant, audit_seq) VALUES (?, ?, ?, ?, ?)
         ON CONFLICT (setpoint) DO UPDATE SET escalation = excluded.escalation, since = excluded.since, tenant = excluded.tenant, audit_seq = excluded.audit_seq`,
      ),
      delEscalation: db.prepare('DELETE FROM arbitration_escalation WHERE setpoint = ?'),
    };
  }

  /** The state as stored (owners whose window ran out included: arbitration drops them at its next round). */
  load(): ArbitrationState {
    const owners: Record<string, Ownership> = {};
    for (const text of this.st.owners.all() as string[]) {
      const o = JSON.parse(text) as Ownership;
      // JSON has no NaN (a human-decided winner whose value did not convert): keep it NaN, never null
      owners[o.setpoint] = { ...o, value: typeof o.value === 'number' ? o.value : Number.NaN };
    }
    const escalations: Record<string, Escalation> = {};
    for (const text of this.st.escalations.all() as string[]) {
      const e = JSON.parse(text) as Escalation;
      escalations[e.setpoint] = e;
    }
    return { owners, escalations };
  }

  /** Tenant of each pending escalation, by setpoint: the tenant whose arbitration step last changed it. */
  escalationTenants(): Map<string, string> {
    return new Map((this.st.escalationTenants.all() as { setpoint: string; tenant: string }[]).map((r) => [r.setpoint, r.tenant]));
  }

  /**
   * Write what changed from `before` (the stored state) to `after` inside `t`; the rows name the audit entry
   * (`tenant`, `seq`) of the arbitration step that changed them.
   */
  sync(_t: TxContext, before: ArbitrationState, after: ArbitrationState, tenant: string, seq: number): void {
    for (const [sp, o] of Object.entries(after.owners)) {
      if (before.owners[sp] !== o) this.st.putOwner.run(sp, o.agent, o.requestId, JSON.stringify(o), o.since, o.expiresAt, tenant, seq);
    }
    for (const sp of Object.keys(before.owners)) if (!(sp in after.owners)) this.st.delOwner.run(sp);
    for (const [sp, e] of Object.entries(after.escalations)) {
      if (before.escalations[sp] !== e) this.st.putEscalation.run(sp, JSON.stringify(e), e.since, tenant, seq);
    }
    for (const sp of Object.keys(before.escalations)) if (!(sp in after.escalations)) this.st.delEscalation.run(sp);
  }
}
