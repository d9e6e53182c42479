/**
 * Exceptions of a run (migration 9): every deviation the run raised — out of specification, out of trend, a
 * PLC lost to its last known-good recipe, a specification that failed, a model that left its card — open
 * until a named person closes it with a comment. Mutations take the caller's transaction, so an exception
 * commits with the audit entry that raised it and its closure with the audit entry (and signature) that
 * closed it; the table's triggers refuse a delete, an edit of what was raised and a second closure. Reads are
 * tenant-scoped (R1).
 */
import type { Statement } from 'better-sqlite3';
import type { ExceptionKind, ExceptionSeverity } from '../domain/exception.js';
import { LkError } from '../errors.js';
import type { Store, TxContext } from './store.js';

export { EXCEPTION_KINDS, EXCEPTION_SEVERITIES, type ExceptionKind, type ExceptionSeverity } from '../domain/exception.js';

/** The closure of an exception as its row holds it (the wire shows it as ExceptionView.closure, src/contract/runs.ts). */
export interface ExceptionClosureRecord {
  readonly user: string;
  readonly name: string;
  readonly at: number;
  readonly comment: string;
  readonly deviation: string | null;
  readonly signature: Record<string, unknown> | null;
}

export interface ExceptionRecord {
  readonly id: string;
  readonly tenant: string;
  readonly run: string;
  readonly batch: string;
  /** The condition it stands for, unique per run (`OOS:press.Hardness:1`): raising it again is a no-op. */
  readonly key: string;
  readonly kind: ExceptionKind;
  readonly severity: ExceptionSeverity;
  /** `05 compress.press`, or null for a run-level exception. */
  readonly step: string | null;
  readonly title: string;
  readonly evidence: Record<string, unknown>;
  readonly raisedAt: number;
  readonly raisedBy: string;
  readonly auditSeq: number;
  readonly status: 'open' | 'closed';
  readonly closure: ExceptionClosureRecord | null;
}

export type NewException = Omit<ExceptionRecord, 'status' | 'closure'>;

interface Row {
  id: string; tenant: string; run: string; batch: string; key: string; kind: ExceptionKind; severity: ExceptionSeverity; step: string | null; title: string; evidence: string;
  raised_at: number; raised_by: string; audit_seq: number; status: 'open' | 'closed'; closed_by: string | null; closed_name: string | null; closed_at: number | null;
  comment: string | null; deviation: string | null; signature: string | null;
}

function toRecord(r: Row): ExceptionRecord {
  return {
    id: r.id, tenant: r.tenant, run: r.run, batch: r.batch, key: r.key, kind: r.kind, severity: r.severity, step: r.step, title: r.title,
    evidence: JSON.parse(r.evidence) as Record<string, unknown>, raisedAt: r.raised_at, raisedBy: r.raised_by, auditSeq: r.audit_seq, status: r.status,
    closure: r.status === 'closed'
      ? { user: r.closed_by!, name: r.closed_name ?? r.closed_by!, at: r.closed_at!, comment: r.comment!, deviation: r.deviation, signature: r.signature ? (JSON.parse(r.signature) as Record<string, unknown>) : null }
      : null,
  };
}

export class ExceptionStore {
  private readonly st: Record<'insert' | 'byKey' | 'get' | 'ofRun' | 'openOf' | 'close', Statement>;
  private readonly listeners = new Set<(run: string) => void>();

  /** @throws LkError LK_STORE_MIGRATION when the store has no exception table (schema older than 9). */
  constructor(store: Store) {
    if (store.schemaVersion < 9) throw new LkError('LK_STORE_MIGRATION', `exceptions need schema version 9, the store is at ${store.schemaVersion}`);
    const db = store.db;
    this.st = {
      insert: db.prepare(`INSERT INTO run_exception (id, tenant, run, batch, key, kind, severity, step, title, evidence, raised_at, raised_by, audit_seq, status)
        VALUES (@id, @tenant, @run, @batch, @key, @kind, @severity, @step, @title, @evidence, @raisedAt, @raisedBy, @auditSeq, 'open') ON CONFLICT (run, key) DO NOTHING`),
      byKey: db.prepare('SELECT * FROM run_exception WHERE run = ? AND key = ?'),
      get: db.prepare('SELECT * FROM run_exception WHERE tenant = ? AND id = ?'),
      ofRun: db.prepare('SELECT * FROM run_exception WHERE run = ? ORDER BY raised_at, id'),
      openOf: db.prepare("SELECT id, run, severity, raised_at AS raisedAt FROM run_exception WHERE tenant = ? AND status = 'open' ORDER BY raised_at, id"),
      close: db.prepare(`UPDATE run_exception SET status = 'closed', closed_by = ?, closed_name = ?, closed_at = ?, comment = ?, deviation = ?, signature = ?
        WHERE id = ? AND status = 'open' RETURNING run`).pluck(),
    };
  }

  /** Listen to every change of a run's exceptions (inside the writing transaction; a listener must not read the store). */
  onWrite(l: (run: string) => void): () => void {
    this.listeners.add(l);
    return () => this.listeners.delete(l);
  }

  /** Whether the run already has an exception for this condition. */
  has(run: string, key: string): boolean {
    return this.st.byKey.get(run, key) !== undefined;
  }

  /** Insert an open exception; false (nothing written) when the run has one for the same key already. */
  insert(t: TxContext, e: NewException): boolean {
    void t;
    const r = this.st.insert.run({ ...e, evidence: JSON.stringify(e.evidence) });
    if (r.changes === 0) return false;
    for (const l of this.listeners) l(e.run);
    return true;
  }

  get(tenant: string, id: string): ExceptionRecord | null {
    const r = this.st.get.get(tenant, id) as Row | undefined;
    return r ? toRecord(r) : null;
  }

  /** A run's exceptions in the order they were raised. */
  ofRun(run: string): ExceptionRecord[] {
    return (this.st.ofRun.all(run) as Row[]).map(toRecord);
  }

  /** The open exceptions of a tenant's runs, oldest first, as few columns as a count of what waits needs (index run_exception_open). */
  openOf(tenant: string): { id: string; run: string; severity: ExceptionRecord['severity']; raisedAt: number }[] {
    return this.st.openOf.all(tenant) as { id: string; run: string; severity: ExceptionRecord['severity']; raisedAt: number }[];
  }

  /** Open exceptions of a run that block its release (critical and major). */
  blocking(run: string): ExceptionRecord[] {
    return this.ofRun(run).filter((e) => e.status === 'open' && e.severity !== 'minor');
  }

  /** @returns false when it was not open any more (closed concurrently). */
  close(t: TxContext, id: string, c: ExceptionClosureRecord): boolean {
    void t;
    const run = this.st.close.get(c.user, c.name, c.at, c.comment, c.deviation, c.signature ? JSON.stringify(c.signature) : null, id) as string | undefined;
    if (run === undefined) return false;
    for (const l of this.listeners) l(run);
    return true;
  }
}
