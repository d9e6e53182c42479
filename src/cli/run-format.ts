/**
 * `runs show` as text, one rendering whichever way the run was read: from the daemon's REST API (a session) or
 * from the data directory (offline). The offline reading is turned into the API's run view first, so both
 * print the same table and the same genealogy.
 */
import type { z } from 'zod';
import type { GenealogyView } from '../api/schemas.js';
import { composePlan, formatDuration, planSummary } from '../domain/run.js';
import { siteIso } from '../domain/site-time.js';
import { renderGenealogyText, safeText } from '../engine/genealogy-text.js';
import { GENEALOGY_KINDS, type GenealogyEvent, type LosingRequest } from '../engine/release-types.js';
import { releaseView } from '../engine/run/release-view.js';
import { markerOf } from '../engine/run/exceptions.js';
import type { ExceptionRecord } from '../store/exception-store.js';
import type { ApprovalRecord, RunEventRecord, RunRecord, StepRecord } from '../store/run-store.js';
import type { ApiRun } from './run-transcript.js';

export type ApiGenealogy = z.output<typeof GenealogyView>;

const iso = (ms: number): string => new Date(ms).toISOString();

/**
 * A run read from the store as the API shows it. A step still under way counts up to the run's last change
 * (an offline reader has no "now" of the daemon).
 */
export function offlineView(run: RunRecord, steps: readonly StepRecord[], gate: ApprovalRecord | null, exceptions: readonly ExceptionRecord[] = []): ApiRun {
  const elapsed = (s: StepRecord): number | null => (s.startedAt === null ? null : (s.endedAt ?? run.updatedAt) - s.startedAt);
  return {
    id: run.id, tenant: run.tenant, batch: run.batch, line: run.line, product: run.product, tooling: run.tooling, status: run.status, goal: run.goal,
    autonomy: run.autonomy, startedBy: run.startedBy, createdAt: iso(run.createdAt), endedAt: run.endedAt === null ? null : iso(run.endedAt), reason: run.reason,
    plan: planSummary(composePlan()),
    steps: steps.map((s) => ({
      seq: s.seq, name: s.name, agent: s.agent, tool: s.tool, status: s.status, gate: s.gate, attempt: s.attempt,
      durationMs: elapsed(s), duration: formatDuration(elapsed(s), s.continuous && s.startedAt !== null), detail: s.detail,
      exceptions: markerOf(exceptions.filter((e) => e.step === `${s.seq} ${s.name}`)),
    })),
    exceptions: markerOf(exceptions),
    approvalGate: gate
      ? { id: gate.id, step: '09', status: gate.status, reviewer: gate.reviewer, recordHash: gate.recordHash, requestedAt: iso(gate.requestedAt), signature: gate.signature }
      : { id: null, step: '09', status: 'not_reached', reviewer: typeof run.record['qa_reviewer'] === 'string' ? run.record['qa_reviewer'] : null, recordHash: null, requestedAt: null, signature: null },
    genealogy: `/v1/tenants/${run.tenant}/runs/${run.id}/genealogy`,
    release: releaseView(run),
  };
}

/** The run, its steps and its gate as a table; its times on the site's clock with their offset (`tz`, default UTC). */
export function formatRunTable(run: ApiRun, tz?: string): string {
  const lines = [
    `${run.id}  ${run.tenant}  batch ${run.batch}  line ${run.line}  ${run.status}${run.reason ? ` (${safeText(run.reason)})` : ''}`,
    `goal: ${safeText(run.goal)}`,
    `plan: ${run.plan.text}; autonomy ≤ ${run.autonomy}; started by ${run.startedBy} at ${siteIso(run.createdAt, tz)}`,
    '',
    ...run.steps.map((s) => `${s.seq}  ${s.name.padEnd(25)} ${s.status.padEnd(11)} ${s.duration.padStart(10)}  ${s.agent.padEnd(22)} ${s.tool}`),
  ];
  const g = run.approvalGate;
  if (g.id) {
    const sig = g.signature as { name?: string; user?: string; timestamp?: string; meaning?: string } | null;
    lines.push('', `approval ${g.id}: ${g.status}${sig ? ` by ${safeText(String(sig.name))} (${String(sig.user)}) at ${typeof sig.timestamp === 'string' ? siteIso(sig.timestamp, tz) : String(sig.timestamp)}: ${safeText(String(sig.meaning))}` : ` — waits for ${g.reviewer ?? '?'}`}; record ${g.recordHash ?? '?'}`);
  }
  return lines.join('\n');
}

const KINDS = new Set<string>(GENEALOGY_KINDS);
const kindOf = (k: string): GenealogyEvent['kind'] => (KINDS.has(k) ? k : 'step') as GenealogyEvent['kind'];

/** The genealogy of the daemon's GET /runs/{id}/genealogy as the time-aligned text table, on the site's clock (`tz`, default UTC). */
export function formatGenealogy(g: ApiGenealogy, tz?: string): string {
  const events: GenealogyEvent[] = g.events.map((e) => ({
    at: Date.parse(e.at), kind: kindOf(e.kind), summary: e.summary, ...(e.step ? { step: e.step } : {}), ...(e.agent ? { agent: e.agent } : {}), ...(e.tag ? { tag: e.tag } : {}),
  }));
  const losing: LosingRequest[] = g.losingRequests.map((l) => ({ agent: l.agent, setpoint: l.setpoint, score: l.score, reason: l.reason, at: Date.parse(l.at) }));
  return renderGenealogyText(events, { losingRequests: losing, title: `${g.run} · batch ${g.batch} · ${g.status}`, ...(tz ? { timezone: tz } : {}) });
}

/** The genealogy read from the store, in the API's shape (the losing arbitration requests drawn from its events). */
export function offlineGenealogy(run: RunRecord, events: readonly RunEventRecord[]): ApiGenealogy {
  const losing = events
    .filter((e) => e.kind === 'arbitration')
    .flatMap((e) => ((e.data as { declined?: { agent: string; setpoint: string; score: number; reason: string }[] } | null)?.declined ?? []).map((d) => ({ at: iso(e.at), agent: d.agent, setpoint: d.setpoint, score: d.score, reason: d.reason })));
  return {
    run: run.id, batch: run.batch, status: run.status,
    events: events.map((e) => ({ id: e.id, at: iso(e.at), kind: e.kind, step: e.step, agent: e.agent, tag: e.tag, summary: e.summary, data: e.data })),
    losingRequests: losing, release: releaseView(run),
  };
}
