/**
 * A batch runs once. A batch whose run ended — released (SUCCEEDED after the QA signature), rejected, aborted or
 * failed — is closed: no second run of that batch id starts (`409 LK_BATCH_CLOSED`), for the tenant that owns it.
 * "Ended" is the run's final status (TERMINAL_RUN of src/domain/run.ts), not a list kept here, so a final status
 * added later closes the batch with no change to this module.
 *
 * FAILED closes the batch too. On a GMP site a batch that failed in process has consumed its material and is
 * dispositioned through a deviation; making tablets again is rework or a new batch, and either is a new batch id
 * issued by the MES (with its own record), never the old id run a second time.
 *
 * The MES record a run ingests leaves the inbox for the archive with the SHA-256 of its bytes
 * (connectors/mes/archive.ts), audited as `mes.record.archived` in the transaction that starts the run. A record
 * that appears in the inbox afterwards for a closed batch is not ingested: with other bytes it is moved to the
 * refused folder and audited as `mes.record.refused` with both hashes; the same bytes again (a copy left by a crash
 * between the archive and the inbox removal, or put back by hand) are removed from the inbox, audited as a
 * duplicate.
 */
import type { AuditEntryInput } from '../../audit/index.js';
import { TERMINAL_RUN } from '../../domain/run.js';
import { LkError } from '../../errors.js';
import type { RunRecord, RunStore } from '../../store/run-store.js';
import type { Store } from '../../store/store.js';
import type { KeptRecord, MesIntake } from '../../../connectors/mes/index.js';

/** The run that closed a tenant's batch (the newest with a final status), or null while the batch is open. */
export function closingRun(runs: RunStore, tenant: string, batch: string): RunRecord | null {
  return runs.runsOfBatch(tenant, batch).find((r) => TERMINAL_RUN.has(r.status)) ?? null;
}

/** What each final status means for the batch, in words. */
function ended(status: string): string {
  if (status === 'SUCCEEDED') return 'released';
  return status.toLowerCase();
}

/**
 * The refusal of a run of a closed batch: names the batch, the run that closed it and its final status.
 * @returns an LkError LK_BATCH_CLOSED.
 */
export function batchClosedError(run: RunRecord, archived: readonly KeptRecord[]): LkError {
  const at = run.endedAt === null ? '' : ` on ${new Date(run.endedAt).toISOString()}`;
  return new LkError(
    'LK_BATCH_CLOSED',
    `batch ${run.batch} was run already: ${run.id} ended ${run.status} (${ended(run.status)})${at}; a batch runs once — a re-run (rework) is a new batch id from the MES`,
    { batch: run.batch, run: run.id, status: run.status, ...(run.endedAt === null ? {} : { endedAt: new Date(run.endedAt).toISOString() }), archived: archived.map((a) => ({ ...a })) },
  );
}

/** The audit entry of a record archived by the run that ingested it (committed with `run.start`). */
export function archivedEntry(tenant: string, run: string, batch: string, kept: KeptRecord, recordSha256: string, by: string): AuditEntryInput {
  return {
    tenant, actor: by, kind: 'state_change', action: 'mes.record.archived', subject: { run, batch },
    new: { file: kept.file, sha256: kept.sha256, recordSha256 },
    reason: `batch record ${batch} ingested by ${run}: moved out of the MES inbox into the archive with its hash`,
  };
}

export interface IntakeDeps {
  readonly store: Store;
  readonly runs: RunStore;
  readonly intake: MesIntake;
}

export type IntakeOutcome =
  | { readonly kind: 'open' | 'absent' }
  | { readonly kind: 'refused'; readonly run: string; readonly archived: readonly string[]; readonly refused: KeptRecord }
  | { readonly kind: 'duplicate'; readonly run: string; readonly sha256: string };

/**
 * Look at the inbox record of a tenant's batch: when the batch is closed, refuse a changed record (moved to the
 * refused folder, audited with both hashes) or drop a byte-identical copy of the archived one (audited). Nothing
 * happens for an open batch or an empty inbox. Called by the MES watch for every added or changed record, and by
 * a start that finds the batch closed.
 * @throws Error from the file system or the store; LkError LK_VALIDATION for a malformed tenant or batch id.
 */
export function screenInboxRecord(d: IntakeDeps, tenant: string, batch: string, now: number): IntakeOutcome {
  const closed = closingRun(d.runs, tenant, batch);
  if (!closed) return { kind: 'open' };
  const sha = d.intake.inboxSha(tenant, batch);
  if (sha === null) return { kind: 'absent' };
  const archived = d.intake.archived(tenant, batch);
  // the run's own record, by the hash of its bytes when the archive holds it
  const same = archived.some((a) => a.sha256 === sha);
  const subject = { run: closed.id, batch };
  if (same) {
    if (!d.intake.removeFromInbox(tenant, batch, sha)) return { kind: 'absent' };
    d.store.audit.append({
      tenant, actor: 'system', kind: 'state_change', action: 'mes.record.duplicate', subject,
      result: { sha256: sha, archived: archived.map((a) => a.file) },
      reason: `batch ${batch} is closed (${closed.id} ${closed.status}); the inbox held the archived record again, byte for byte: removed`,
    });
    return { kind: 'duplicate', run: closed.id, sha256: sha };
  }
  const refused = d.intake.refuse(tenant, batch, sha);
  if (!refused) return { kind: 'absent' };
  d.store.audit.append({
    tenant, actor: 'system', kind: 'state_change', action: 'mes.record.refused', subject,
    args: { batch, inboxSha256: sha },
    result: { refused: refused.file, refusedSha256: sha, archivedSha256: archived.map((a) => a.sha256), archived: archived.map((a) => a.file), closedBy: closed.id, status: closed.status, at: new Date(now).toISOString() },
    reason: `a changed batch record for ${batch} arrived after the batch closed (${closed.id} ${closed.status}): not ingested; sha256 ${sha.slice(0, 12)}… ≠ archived ${archived.map((a) => `${a.sha256.slice(0, 12)}…`).join(', ') || '(none archived)'}`,
  });
  return { kind: 'refused', run: closed.id, archived: archived.map((a) => a.sha256), refused };
}
