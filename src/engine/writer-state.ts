/**
 * The guarded writer's durable state (migration 3): the pending queue and
 * the last move per setpoint. Rows are state, not history: every change here
 * runs inside the caller's `store.tx`, together with the audit entry that
 * records it, so a restart finds exactly what the trail says and an
 * acknowledged pending write is never lost.
 */
import type { Statement } from 'better-sqlite3';
import type { Approval } from '../domain/policy.js';
import { LkError } from '../errors.js';
import type { Store, TxContext } from '../store/store.js';
import { json } from './json.js';
import { entryFor } from './proposal.js';
import type { PendingWrite, WriteProposal } from './writer-types.js';

interface PendingRow {
  id: string;
  proposal: string;
  vector_hash: string;
  needs: string;
  since: number;
  reasons: string;
  bundle: string | null;
  approving: string | null;
}

export interface LastMove {
  readonly value: number;
  readonly at: number;
}

export class WriterState {
  private readonly st: Record<'pending' | 'putPending' | 'delPending' | 'approving' | 'moves' | 'putMove' | 'withdrawn', Statement>;

  /** @throws LkError LK_STORE_MIGRATION when the store has no engine tables (schema older than 3). */
  constructor(store: Store) {
    if (store.schemaVersion < 3) throw new LkError('LK_STORE_MIGRATION', `the guarded writer needs schema version 3, the store is at ${store.schemaVersion}`);
    const db = store.db;
    this.st = {
      pending: db.prepare('SELECT id, proposal, vector_hash, needs, since, reasons, bundle, approving FROM pending_write ORDER BY since, id'),
      putPending: db.prepare(
        `INSERT INTO pending_write (id, tenant, proposal_id, proposal, vector_hash, needs, since, reasons, bundle, created_seq, approving)
         VALUES (@id, @tenant, @proposalId, @proposal, @vectorHash, @needs, @since, @reasons, @bundle, @createdSeq, NULL)
         ON CONFLICT (id) DO UPDATE SET proposal = excluded.proposal, vector_hash = excluded.vector_hash, needs = excluded.needs,
           reasons = excluded.reasons, bundle = excluded.bundle, created_seq = excluded.created_seq`,
      ),
      delPending: db.prepare('DELETE FROM pending_write WHERE id = ?'),
      approving: db.prepare('UPDATE pending_write SET approving = ? WHERE id = ?'),
      moves: db.prepare('SELECT setpoint, value, at FROM setpoint_last_move'),
      // a withdrawal is known by its audit entry (the row is gone); searched from the time the id was drawn at
      withdrawn: db.prepare(
        `SELECT reason FROM audit_entry WHERE tenant = ? AND ts >= ? AND kind = 'state_change'
           AND action IN ('setpoint.withdrawn', 'setpoint.superseded') AND instr(args, ?) > 0 ORDER BY seq LIMIT 1`,
      ).pluck(),
      putMove: db.prepare(
        `INSERT INTO setpoint_last_move (setpoint, value, at, tenant, audit_seq) VALUES (?, ?, ?, ?, ?)
         ON CONFLICT (setpoint) DO UPDATE SET value = excluded.value, at = excluded.at, tenant = excluded.tenant, audit_seq = excluded.audit_seq`,
      ),
    };
  }

  /** The pending queue as stored, oldest first, with the approval that was running for each (null: none). */
  loadPending(): { write: PendingWrite; approving: (Approval & { vectorHash: string }) | null }[] {
    return (this.st.pending.all() as PendingRow[]).map((r) => ({
      write: {
        id: r.id,
        proposal: JSON.parse(r.proposal) as WriteProposal,
        vectorHash: r.vector_hash,
        needs: r.needs === 'qa' ? 'qa' : 'reviewer',
        since: r.since,
        reasons: JSON.parse(r.reasons) as string[],
        bundleVersion: r.bundle,
      },
      approving: r.approving === null ? null : (JSON.parse(r.approving) as Approval & { vectorHash: string }),
    }));
  }

  loadLastMoves(): Map<string, LastMove> {
    const out = new Map<string, LastMove>();
    for (const r of this.st.moves.all() as { setpoint: string; value: number; at: number }[]) out.set(r.setpoint, { value: r.value, at: r.at });
    return out;
  }

  /** Queue (or re-queue with a new vector) inside `t`; `createdSeq` is the audit entry that records it. */
  putPending(_t: TxContext, w: PendingWrite, createdSeq: number): void {
    this.st.putPending.run({
      id: w.id,
      tenant: w.proposal.tenant,
      proposalId: w.proposal.id,
      proposal: JSON.stringify(w.proposal),
      vectorHash: w.vectorHash,
      needs: w.needs,
      since: w.since,
      reasons: JSON.stringify(w.reasons),
      bundle: w.bundleVersion,
      createdSeq,
    });
  }

  deletePending(_t: TxContext, id: string): void {
    this.st.delPending.run(id);
  }

  /** Mark (or clear, with null) the approval being executed, so a crash in the middle is visible at the next start. */
  setApproving(_t: TxContext, id: string, approval: (Approval & { vectorHash: string }) | null): void {
    this.st.approving.run(approval === null ? null : JSON.stringify(approval), id);
  }

  putLastMove(_t: TxContext, setpoint: string, move: LastMove, tenant: string, auditSeq: number): void {
    this.st.putMove.run(setpoint, move.value, move.at, tenant, auditSeq);
  }

  /** Newer proposal `by` declines the `victims` inside `t`, each audited, never merged or dropped. */
  supersede(t: TxContext, by: WriteProposal, victims: readonly PendingWrite[]): void {
    for (const w of victims) {
      this.deletePending(t, w.id);
      t.audit.append(entryFor(w.proposal, { kind: 'state_change', action: 'setpoint.superseded', args: json({ pendingId: w.id, vectorHash: w.vectorHash, supersededBy: by.id }), reason: `superseded by proposal ${by.id} of ${by.agent}` }));
    }
  }

  /** Its step or run ended before a person decided: the row goes, audited with the reason, inside `t`. */
  withdraw(t: TxContext, w: PendingWrite, reason: string): void {
    this.deletePending(t, w.id);
    t.audit.append(entryFor(w.proposal, { actor: 'system', kind: 'state_change', action: 'setpoint.withdrawn', args: json({ pendingId: w.id, vectorHash: w.vectorHash, needs: w.needs, since: w.since }), reason }));
  }

  /**
   * The reason a pending write of `tenant` was withdrawn or superseded, from the audit trail; null when it was
   * not (or the id is not one the writer draws: \`pw_<base-36 ms>_<hex>\`, whose time bounds the search).
   */
  withdrawnReason(tenant: string, id: string): string | null {
    const m = /^pw_([0-9a-z]{1,12})_[0-9a-f]{8}$/.exec(id);
    const ms = m ? parseInt(m[1]!, 36) : Number.NaN;
    if (!Number.isFinite(ms) || ms > 8.64e15) return null;
    // a day's margin: the trail's clock and the writer's may differ a little, never by that much
    const reason = this.st.withdrawn.get(tenant, new Date(Math.max(0, ms - 86_400_000)).toISOString(), `"${id}"`) as string | null | undefined;
    return reason === undefined ? null : (reason ?? 'withdrawn');
  }

  /** An approved write ended (`close`: the row goes) or did not run (the row waits again), audited inside `t`. */
  settle(t: TxContext, pw: PendingWrite, close: boolean, status: string): void {
    if (close) this.deletePending(t, pw.id);
    else this.setApproving(t, pw.id, null);
    t.audit.append(entryFor(pw.proposal, { kind: 'state_change', action: close ? 'setpoint.pending_closed' : 'setpoint.pending_kept', args: json({ pendingId: pw.id, vectorHash: pw.vectorHash, status }), reason: close ? `approved write ${status}` : `approved write did not run (${status}); it waits` }));
  }

  /** At start: the approval of `pw` was running when the process stopped; it waits again (audited inside `t`). */
  approvalInterrupted(t: TxContext, pw: PendingWrite): void {
    this.setApproving(t, pw.id, null);
    t.audit.append(entryFor(pw.proposal, { actor: 'system', kind: 'state_change', action: 'setpoint.approval_interrupted', args: json({ pendingId: pw.id, vectorHash: pw.vectorHash }), reason: 'the process stopped while the approved write ran; it waits again and needs a new approval' }));
  }
}
