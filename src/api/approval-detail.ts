/**
 * What GET /approvals tells a reviewer of each item beyond its identity, built from the daemon's own records so
 * that the card shows what the policy judged rather than what a browser would look up separately:
 * - a setpoint write: each move with the value the equipment holds now, the value proposed in the setpoint's
 *   unit, the approved design-space limits and maximum step of the bundle in force (the writer re-evaluates the
 *   move against that bundle when it is signed), what the move serves as the agent reasoned it, and the twin's
 *   prediction the agent gave;
 * - a batch release: the disposition — the specification table's verdict and its counts by verdict, every
 *   exception of the run and who closed each, when and why.
 * Pure over its inputs: the route reads the stores and the equipment and hands them in.
 */
import type { RunQuality } from '../engine/run/quality.js';
import type { PendingWrite } from '../engine/guarded-writer.js';
import type { PolicyBundle } from '../policy/index.js';
import { toSetpointUnit } from '../policy/value.js';
import type { ExceptionRecord } from '../store/exception-store.js';

const iso = (ms: number): string => new Date(ms).toISOString();

export interface MoveRow {
  setpoint: string;
  /** UCUM code of the setpoint (its tag's unit, the design space's). */
  unit: string | null;
  /** What the equipment holds now, in `unit`; null when it is not read or its value is hidden (another tenant's run). */
  current: number | null;
  currentAt: string | null;
  /** The value asked for, in `unit`; null when it does not convert. */
  proposed: number | null;
  /** The value as the agent wrote it. */
  requested: unknown;
  limits: { min: number; max: number; maxStep: number; maxRatePerMin: number; unit: string } | null;
  /** |proposed − current|, in `unit`. */
  step: number | null;
  inside: boolean | null;
  stepWithin: boolean | null;
}

/**
 * The moves of a pending write as a table: now → proposed against the approved limits.
 * `now` is what the equipment holds, in each setpoint's unit, read as the writer reads it (null when unknown, or hidden
 * from this tenant while another tenant's run is on the line); `at` the time of that read.
 */
export function moveRows(w: PendingWrite, bundle: PolicyBundle | null, now: ReadonlyMap<string, number | null>, at: number): MoveRow[] {
  const p = w.proposal;
  let space: Readonly<Record<string, { min: number; max: number; unit: string; maxStep: number; maxRatePerMin: number }>> = {};
  try {
    space = bundle ? bundle.designSpace.approved(p.product, p.tooling).setpoints : {};
  } catch {
    // no approved space for the pair in the bundle now in force: the rows say "none approved"; the writer denies it anyway
    space = {};
  }
  return p.moves.map((m) => {
    const l = space[m.setpoint];
    const unit = l?.unit ?? null;
    const conv = bundle && unit ? toSetpointUnit(bundle.index, m.value, unit) : null;
    const proposed = conv?.ok ? conv.value : null;
    const current = now.get(m.setpoint) ?? null;
    const step = proposed !== null && current !== null ? Math.abs(proposed - current) : null;
    const eps = l ? 1e-9 * Math.max(1, Math.abs(l.min), Math.abs(l.max)) : 0;
    return {
      setpoint: m.setpoint, unit, current, currentAt: current !== null ? iso(at) : null, proposed, requested: m.value,
      limits: l ? { min: l.min, max: l.max, maxStep: l.maxStep, maxRatePerMin: l.maxRatePerMin, unit: l.unit } : null,
      step,
      inside: l && proposed !== null ? proposed >= l.min - eps && proposed <= l.max + eps : null,
      stepWithin: l && step !== null ? step <= l.maxStep + eps : null,
    };
  });
}

/** The `detail` of a pending setpoint write. */
export function writeDetail(w: PendingWrite, bundle: PolicyBundle | null, now: ReadonlyMap<string, number | null>, at: number): Record<string, unknown> {
  const p = w.proposal;
  return {
    agent: p.agent, moves: p.moves, attribute: p.attribute, serves: p.serves ?? [], predicted: p.predicted ?? null, justification: p.justification,
    reasons: w.reasons, bundleVersion: w.bundleVersion,
    table: moveRows(w, bundle, now, at),
    limitsBundle: bundle?.version ?? null,
    product: p.product, tooling: p.tooling, model: p.model ?? null,
  };
}

interface SpecResultLike { id: string; title: string; verdict: string; limits: string; reason: string }

/** The `detail` of a batch release: releasable or not, the table's verdict and counts, and the exceptions with their closures. */
export function releaseDetail(quality: RunQuality | undefined, refusal: unknown, exceptions: readonly ExceptionRecord[]): Record<string, unknown> {
  const results = (quality?.specTable?.results ?? []) as unknown as SpecResultLike[];
  const counts = { PASS: 0, FAIL: 0, NOT_EVALUATED: 0 } as Record<string, number>;
  for (const r of results) counts[r.verdict] = (counts[r.verdict] ?? 0) + 1;
  const open = exceptions.filter((e) => e.status === 'open');
  return {
    verdict: quality?.specTable?.verdict ?? null,
    releasable: refusal === null,
    failed: results.filter((r) => r.verdict === 'FAIL').map((r) => ({ id: r.id, title: r.title, limits: r.limits, reason: r.reason })),
    specCounts: { total: results.length, ...counts },
    exceptionCounts: { total: exceptions.length, open: open.length, blocking: open.filter((e) => e.severity !== 'minor').length, closed: exceptions.length - open.length },
    exceptions: exceptions.map((e) => ({
      id: e.id, kind: e.kind, severity: e.severity, title: e.title, step: e.step, status: e.status, raisedAt: iso(e.raisedAt),
      closure: e.closure ? { user: e.closure.user, name: e.closure.name, at: iso(e.closure.at), comment: e.closure.comment, deviation: e.closure.deviation } : null,
    })),
  };
}
