/**
 * Raising and closing the exceptions of a run (review by exception).
 *
 * An exception is raised by what saw the deviation — the in-process monitor of a step, the specification
 * evaluation before the gate, the supervision of the PLCs — in one transaction with its audit entry
 * (`exception.raise`), its genealogy event and its line in the run's tool-call log, so it reaches the SSE
 * stream, `linekeeper run` / `runs watch` (one `!` line each) and the console the moment it is committed.
 * One condition raises one exception per run (its key): a hardness excursion is one OOS, not one per sample.
 *
 * It is closed by a named person with a comment and, optionally, a deviation/CAPA reference: critical and major
 * exceptions are closed by a QA reviewer and the closure is a Part 11 signature (re-authentication by the
 * surface, Ed25519 over the closure record, bound to the exception's content hash). A batch release cannot be
 * approved while a critical or major exception of its run is open (`LK_EXCEPTIONS_OPEN`).
 */
import { randomBytes } from 'node:crypto';
import { LkError } from '../../errors.js';
import { chooseMeaning, DEFAULT_SIGNATURE_MEANINGS, MEANING_VALUES, type ChosenMeaning } from '../../domain/signature-meanings.js';
import { EXCEPTION_SEVERITIES } from '../../domain/exception.js';
import type { PolicyBundle } from '../../policy/index.js';
import type { ExceptionKind, ExceptionRecord, ExceptionSeverity, ExceptionStore } from '../../store/exception-store.js';
import type { RunRecord, RunStore, ToolCallRecord } from '../../store/run-store.js';
import type { Store } from '../../store/store.js';
import { json } from '../json.js';
import { canonical, sha256Hex, signRecord, type Signature } from './approval.js';

/**
 * Severity of each kind unless the policy bundle's `exceptions.severity` says otherwise. A failed release
 * specification is critical; what puts the batch's quality in doubt (a value out of specification, a lost PLC,
 * a model that no longer predicts the plant, counts that do not reconcile, a contest nobody decided) is major
 * and blocks the release until QA closes it; a trend, a hold or an unreviewed move is minor and listed.
 */
export const DEFAULT_SEVERITY: Readonly<Record<ExceptionKind, ExceptionSeverity>> = {
  SPEC_FAIL: 'critical',
  OOS: 'major',
  OOT: 'minor',
  PLC_LOST: 'major',
  CONNECTION_LOST: 'major',
  MODEL_FIDELITY: 'major',
  MOVE_UNREVIEWED: 'minor',
  ESCALATION_UNRESOLVED: 'major',
  REVERT_UNVERIFIED: 'critical',
  RECONCILIATION: 'major',
  RUN_HELD: 'minor',
  MANUAL_ACTION: 'minor',
};

/** Severity of a kind under the bundle in force (its table, else the default). */
export function severityOf(bundle: PolicyBundle | null, kind: ExceptionKind): ExceptionSeverity {
  return bundle?.content.exceptionSeverity?.[kind] ?? DEFAULT_SEVERITY[kind];
}

export interface RaiseInput {
  readonly kind: ExceptionKind;
  /** The condition, unique within the run (`OOS:press.Hardness:1`). */
  readonly key: string;
  readonly step: { readonly seq: string; readonly name: string } | null;
  readonly title: string;
  readonly evidence: Record<string, unknown>;
  /** Who saw it: an agent (`agent.orchestrator`), `system`, or the person who recorded a manual action. */
  readonly by: string;
  readonly tag?: string;
  readonly severity?: ExceptionSeverity;
}

export interface ExceptionDeps {
  readonly store: Store;
  readonly runs: RunStore;
  readonly exceptions: ExceptionStore;
  readonly policy: () => PolicyBundle | null;
  readonly notify: (row: ToolCallRecord) => void;
}

/**
 * A succeeded step's detail with the exceptions it raised that are still open, in words: "…; 4 exceptions of this
 * step are open for QA: 1 major OOS, 3 minor OOT". A step that pressed every tablet succeeded as a step; whether
 * the batch meets its specification is the gate's judgement, and the step's own line must not read as a pass.
 * `step` is the exception's step key (`"05 compress.press"`); the detail unchanged when none is open.
 */
export function withOpenExceptions(detail: string, records: readonly Pick<ExceptionRecord, 'step' | 'status' | 'severity' | 'kind'>[], step: string): string {
  const open = records.filter((e) => e.status === 'open' && e.step === step);
  if (open.length === 0) return detail;
  const counts = new Map<string, number>();
  for (const sev of EXCEPTION_SEVERITIES) for (const e of open) if (e.severity === sev) counts.set(`${sev} ${e.kind}`, (counts.get(`${sev} ${e.kind}`) ?? 0) + 1);
  const words = [...counts].map(([k, n]) => `${n} ${k}`).join(', ');
  return `${detail.replace(/\.$/, '')}; ${open.length} exception${open.length === 1 ? '' : 's'} of this step ${open.length === 1 ? 'is' : 'are'} open for QA: ${words}`;
}

/** Raise an exception of `run` now; null (nothing written) when the run has one for the same condition. */
export function raiseException(d: ExceptionDeps, run: RunRecord, e: RaiseInput, now: number): ExceptionRecord | null {
  if (d.exceptions.has(run.id, e.key)) return null;
  const id = `exc_${randomBytes(8).toString('hex')}`;
  const severity = e.severity ?? severityOf(d.policy(), e.kind);
  const step = e.step ? `${e.step.seq} ${e.step.name}` : null;
  const evidence = json(e.evidence) as Record<string, unknown>;
  const stepName = e.step?.name ?? 'run';
  const subject = { run: run.id, batch: run.batch, agent: e.by.startsWith('agent.') ? e.by : undefined, tool: 'exception.raise', ...(e.tag ? { setpoint: e.tag } : {}) };
  const rows = d.store.tx((t) => {
    // a tool call of the run like any other (call, then ok), so the log, the stream and the CLI show it in order;
    // the call's audit entry carries the exception whole: what, how severe, where, and its evidence
    const args = json({ exception: id, kind: e.kind, severity, key: e.key, step, title: e.title, evidence });
    const call = t.audit.append({ tenant: run.tenant, actor: e.by, kind: 'tool_call', action: 'exception.raise', subject: json(subject) as typeof subject, args, reason: e.title });
    if (!d.exceptions.insert(t, { id, tenant: run.tenant, run: run.id, batch: run.batch, key: e.key, kind: e.kind, severity, step, title: e.title, evidence, raisedAt: now, raisedBy: e.by, auditSeq: call.seq })) {
      throw new LkError('LK_CONFLICT', `run ${run.id} already has an exception for ${e.key}`);
    }
    d.runs.appendEvent(t, { run: run.id, at: now, kind: 'exception', step: e.step?.name ?? null, agent: e.by, tag: e.tag ?? null, summary: `${severity} ${e.kind}: ${e.title}`, data: json({ exception: id, kind: e.kind, severity, evidence }) });
    const summary = `${e.title}${e.step ? ` (${e.step.name})` : ''}`;
    const result = json({ exception: id, kind: e.kind, severity, step, status: 'open' });
    const ok = t.audit.append({ tenant: run.tenant, actor: e.by, kind: 'tool_result', action: 'exception.raise', subject: json(subject) as typeof subject, result: json({ ok: true, summary, detail: result }) });
    const callLine: Omit<ToolCallRecord, 'id'> = { run: run.id, at: now, kind: 'call', step: stepName, agent: e.by, tool: 'exception.raise', args: json({ exception: id, kind: e.kind, severity }), summary: null, result: undefined, auditSeq: call.seq };
    const okLine: Omit<ToolCallRecord, 'id'> = { run: run.id, at: now, kind: 'ok', step: stepName, agent: e.by, tool: 'exception.raise', args: undefined, summary, result, auditSeq: ok.seq };
    const a = { ...callLine, id: d.runs.appendToolCall(t, callLine) } as ToolCallRecord;
    const b = { ...okLine, id: d.runs.appendToolCall(t, okLine) } as ToolCallRecord;
    return [a, b];
  });
  for (const row of rows) d.notify(row);
  return d.exceptions.get(run.tenant, id);
}

/** The record a closure signs: what was raised (by its content hash) and what the person says of it. */
export function closureRecord(e: ExceptionRecord, c: { user: string; name: string; role: string; comment: string; deviation: string | null; at: number }): Record<string, unknown> {
  const raised = sha256Hex(canonical(json({ id: e.id, run: e.run, kind: e.kind, severity: e.severity, key: e.key, step: e.step, title: e.title, evidence: e.evidence, raisedAt: e.raisedAt, auditSeq: e.auditSeq })));
  return { format: 1, kind: 'exception_closure', exception: e.id, run: e.run, tenant: e.tenant, batch: e.batch, raisedSha256: raised, user: c.user, name: c.name, role: c.role, comment: c.comment, deviation: c.deviation, at: new Date(c.at).toISOString() };
}

export interface CloseInput {
  readonly signer: { readonly user: string; readonly name: string; readonly role: string };
  readonly comment: string;
  readonly deviation: string | null;
  /** The meaning of a signed closure, from the site's list (default: the built-in one); the comment goes beside it. */
  readonly meaning?: ChosenMeaning;
}

/**
 * Close an open exception as a named person (re-authenticated by the surface). Critical and major ones are
 * closed by a QA role and signed; a minor one also by a reviewer role (the bundle's `approvers`).
 * @throws LkError LK_NOT_FOUND (no such exception for the tenant), LK_EXCEPTION_CLOSED, LK_APPROVAL_FORBIDDEN
 *   (a role that may not close it), LK_VALIDATION (no comment).
 */
export function closeException(d: ExceptionDeps, tenant: string, id: string, c: CloseInput, now: number): { exception: ExceptionRecord; signature: Signature | null } {
  const e = d.exceptions.get(tenant, id);
  if (!e) throw new LkError('LK_NOT_FOUND', `no exception ${id}`, { exception: id });
  if (e.status !== 'open') throw new LkError('LK_EXCEPTION_CLOSED', `exception ${id} was closed by ${e.closure?.user ?? '?'} already`, { exception: id });
  const comment = c.comment.trim();
  if (comment.length < 3) throw new LkError('LK_VALIDATION', 'closing an exception needs a comment in words', { issues: [{ path: 'body.comment', message: 'required' }] });
  const approvers = d.policy()?.content.approvers ?? { qa: ['qa_reviewer'], reviewer: ['process_engineer'] };
  const qa = approvers.qa.includes(c.signer.role);
  if (e.severity !== 'minor' && !qa) throw new LkError('LK_APPROVAL_FORBIDDEN', `a ${e.severity} exception is closed by a QA reviewer (${approvers.qa.join(', ')}), not a ${c.signer.role}`, { role: c.signer.role, severity: e.severity });
  if (e.severity === 'minor' && !qa && !approvers.reviewer.includes(c.signer.role)) throw new LkError('LK_APPROVAL_FORBIDDEN', `a ${c.signer.role} closes no exception`, { role: c.signer.role });
  const record = closureRecord(e, { ...c.signer, comment, deviation: c.deviation, at: now });
  const signature = e.severity === 'minor' ? null : signRecord(d.store.audit.siteKey(), {
    format: 1, approval: e.id, run: e.run, tenant, batch: e.batch, recordHash: sha256Hex(canonical(record)), user: c.signer.user, name: c.signer.name, role: c.signer.role,
    decision: 'approve', ...signedMeaning(e, c.meaning), comment, timestamp: new Date(now).toISOString(),
  });
  d.store.tx((t) => {
    t.audit.append({
      tenant, actor: c.signer.user, kind: 'exception', action: 'exception.close',
      subject: { run: e.run, batch: e.batch, reviewer: c.signer.user, tool: 'exception.close' },
      args: json({ exception: e.id, kind: e.kind, severity: e.severity, deviation: c.deviation }), result: json(record), reason: comment,
      ...(signature ? { signature: { user: c.signer.user, name: c.signer.name, meaning: signature.meaning, time: signature.timestamp, value: signature.signature } } : {}),
    });
    if (!d.exceptions.close(t, e.id, { user: c.signer.user, name: c.signer.name, at: now, comment, deviation: c.deviation, signature: signature as unknown as Record<string, unknown> | null })) {
      throw new LkError('LK_EXCEPTION_CLOSED', `exception ${id} was closed meanwhile`, { exception: id });
    }
    // the closure is a person's act, not one of the run's tool calls: it goes to the genealogy (and the audit trail)
    d.runs.appendEvent(t, {
      run: e.run, at: now, kind: 'exception', step: e.step?.slice(3) ?? null, agent: c.signer.user, tag: null,
      summary: `${e.kind} ${e.id} closed by ${c.signer.name} (${c.signer.user}): ${comment}${c.deviation ? ` [${c.deviation}]` : ''}`, data: json({ exception: e.id, status: 'closed', user: c.signer.user, deviation: c.deviation, signed: signature !== null }),
    });
  });
  return { exception: d.exceptions.get(tenant, id)!, signature };
}

/** The meaning a closure signs (the surface's choice from the site's list, else the built-in one) and its id. */
function signedMeaning(e: ExceptionRecord, chosen: ChosenMeaning | undefined): { meaning: string; meaningId: string } {
  const m = chosen ?? chooseMeaning(DEFAULT_SIGNATURE_MEANINGS, 'exception_close', undefined, MEANING_VALUES.exception_close(e));
  return { meaning: m.text, meaningId: m.id };
}

/** The marker of a step (or a run) on its exceptions: how many, how many still open, how many of those block a release. */
export function markerOf(xs: readonly Pick<ExceptionRecord, 'status' | 'severity' | 'kind'>[]): { total: number; open: number; blocking: number; kinds: string[] } {
  const open = xs.filter((e) => e.status === 'open');
  return { total: xs.length, open: open.length, blocking: open.filter((e) => e.severity !== 'minor').length, kinds: [...new Set(xs.map((e) => e.kind))] };
}
