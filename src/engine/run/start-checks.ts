/**
 * What `RunEngine.start` asks before it writes anything, and what it keeps of the MES record it ingests: the
 * batch is not closed (batch-closure.ts), the line is ready (readiness.ts, over a snapshot gathered here), and the
 * ingested record goes to the archive with its hash. Kept out of the engine so that `start` reads as a list.
 */
import type { Readiness, ReadinessSnapshot } from './readiness.js';
import { judgeReadiness, notReadyError } from './readiness.js';
import { archivedEntry, batchClosedError, closingRun, screenInboxRecord } from './batch-closure.js';
import { checkModels } from './model-watch.js';
import { LkError } from '../../errors.js';
import type { AuditEntryInput } from '../../audit/index.js';
import type { KeptRecord } from '../../../connectors/mes/index.js';
import type { RunStore } from '../../store/run-store.js';
import type { RunEngineOptions } from './types.js';
import { profileOf } from '../../../connectors/supervision.js';

/** The snapshot the readiness judgement reads: PLC supervisor states, connections, the tenant's models, the policy bundle. */
export function gatherReadiness(o: RunEngineOptions & { readonly runs: Pick<RunStore, 'activeOnLine'> }, tenant: string): ReadinessSnapshot {
  const views = o.line?.supervision() ?? new Map<string, { state?: string }>();
  const unsupervised = o.line?.unsupervised() ?? new Set<string>();
  const plcs = o.line
    ? o.site.equipment
      // a monitor-only unit is watched, not supervised: its state is not linekeeper's to judge a run start by
      .filter((e) => e.tags.some((t) => t.name === 'SupervisorState') && profileOf(e).mode !== 'monitor_only')
      .map((e) => ({ equipment: e.id, connection: e.connection, state: views.get(e.id)?.state, supervised: !unsupervised.has(e.id) }))
    : [];
  let model: ReadinessSnapshot['model'] = null;
  try {
    const lost = checkModels(o.models, tenant);
    if (lost) model = { kind: lost.kind, code: lost.code, message: lost.detail };
  } catch (err) {
    model = { kind: 'models', code: LkError.is(err) ? err.code : 'LK_INTERNAL', message: err instanceof Error ? err.message : String(err) };
  }
  const active = o.runs.activeOnLine(o.site.line.id);
  const activeRun = active ? { id: active.tenant === tenant ? active.id : null, status: active.status } : null;
  return { plcs, connections: o.line?.connections() ?? [], model, policyBundle: o.policy() !== null, activeRun };
}

/** Is the line ready for a run of `tenant`'s batch now? */
export function lineReadiness(o: RunEngineOptions & { readonly runs: Pick<RunStore, 'activeOnLine'> }, tenant: string): Readiness {
  return judgeReadiness(gatherReadiness(o, tenant));
}

/**
 * @throws LkError LK_LINE_NOT_READY listing every reason (detail.reasons) when the line is not ready.
 */
export function assertLineReady(o: RunEngineOptions, runs: RunStore, tenant: string, line: string): void {
  const r = lineReadiness({ ...o, runs }, tenant);
  if (!r.ready) throw notReadyError(line, r);
}

/**
 * A closed batch does not run again. A changed record waiting in the inbox for it is refused (and audited) here
 * too, so the refusal does not depend on the MES watch having seen it first.
 * @throws LkError LK_BATCH_CLOSED naming the batch, the run that closed it and its final status.
 */
export function assertBatchOpen(o: RunEngineOptions, runs: RunStore, tenant: string, batch: string): void {
  const closed = closingRun(runs, tenant, batch);
  if (!closed) return;
  const intake = o.mes.intake;
  if (intake) {
    try {
      screenInboxRecord({ store: o.store, runs, intake }, tenant, batch, o.clock.now());
    } catch (err) {
      o.log.error({ err, tenant, batch }, 'could not screen the MES inbox record of a closed batch');
    }
  }
  throw batchClosedError(closed, intake ? intake.archived(tenant, batch) : []);
}

/** The record a run ingests, copied into the archive before the run is written (null for an MES without an archive). */
export function keepIngested(o: RunEngineOptions, tenant: string, batch: string): KeptRecord | null {
  const intake = o.mes.intake;
  if (!intake) return null;
  // read from the archive already (an earlier start wrote it, then failed before its run committed): keep that
  if (intake.inboxSha(tenant, batch) === null) return intake.archived(tenant, batch).at(-1) ?? null;
  return intake.archive(tenant, batch);
}

/** The audit entry of the archived record, for the transaction that writes the run. */
export function ingestedEntry(kept: KeptRecord | null, tenant: string, run: string, batch: string, recordSha256: string, by: string): AuditEntryInput | null {
  return kept ? archivedEntry(tenant, run, batch, kept, recordSha256, by) : null;
}

/** After the run committed: the record leaves the inbox (only when its bytes are still the archived ones). */
export function releaseInbox(o: RunEngineOptions, tenant: string, batch: string, kept: KeptRecord | null): void {
  if (!kept || !o.mes.intake) return;
  try {
    o.mes.intake.removeFromInbox(tenant, batch, kept.sha256);
  } catch (err) {
    // the archive holds it: a copy left in the inbox is dropped as a duplicate when it is next looked at
    o.log.error({ err, tenant, batch }, 'could not remove the ingested record from the MES inbox');
  }
}
