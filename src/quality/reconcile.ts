/**
 * Reconciliation of the batch's tablet counts: pressed against the batch size,
 * inspected against pressed, rejected within inspected. A batch whose counts
 * do not reconcile within the stated tolerance is investigated before release
 * (a reconciliation-mismatch exception), so every line says what it expected,
 * what it found and by how much they differ.
 *
 * Pure: no I/O, no clock, no randomness.
 */

export interface ReconcileInput {
  batchSize: number;
  pressed: number;
  inspected: number;
  rejected: number;
  /** Allowed difference in tablets; when given it replaces the percentage. */
  toleranceCount?: number;
  /** Allowed difference in % of the expected count (default 0.5). */
  tolerancePct?: number;
  /**
   * Allowed difference of the yield line (pressed against the batch size) in %, when it differs from the counters'
   * tolerance: a press stops at the end of a counting interval, so its count runs past the theoretical batch size
   * by what one interval presses, while two counters of the same tablets (press and cameras) must agree closely.
   * Default: `tolerancePct`.
   */
  yieldTolerancePct?: number;
}

export interface ReconcileLine {
  name: string;
  expected: number;
  actual: number;
  /** actual − expected. */
  diff: number;
  ok: boolean;
}

export interface Reconciliation {
  ok: boolean;
  lines: ReconcileLine[];
  /** One sentence per line that does not reconcile (empty when ok). */
  findings: string[];
}

export const DEFAULT_RECONCILE_TOLERANCE_PCT = 0.5;

const count = (x: number): boolean => Number.isInteger(x) && x >= 0;
const pct = (x: number): string => String(Number(x.toFixed(3)));

/** Reconcile the counts; never throws (a count that is not a whole number ≥ 0 fails its lines). */
export function reconcile(input: ReconcileInput): Reconciliation {
  const { batchSize, pressed, inspected, rejected } = input;
  const tolPct = input.tolerancePct ?? DEFAULT_RECONCILE_TOLERANCE_PCT;
  const allowedAt = (expected: number, p: number): number => input.toleranceCount ?? (Math.abs(expected) * p) / 100;
  const tolTextAt = (expected: number, p: number): string => (input.toleranceCount !== undefined ? `±${input.toleranceCount} tablets` : `±${pct(p)} % (${pct(allowedAt(expected, p))} tablets)`);
  const lines: ReconcileLine[] = [];
  const findings: string[] = [];
  const approx = (name: string, expected: number, actual: number, what: string, p = tolPct): void => {
    const allowed = (e: number): number => allowedAt(e, p);
    const tolText = (e: number): string => tolTextAt(e, p);
    const diff = actual - expected;
    const valid = count(expected) && count(actual);
    const ok = valid && Math.abs(diff) <= allowed(expected);
    lines.push({ name, expected, actual, diff, ok });
    if (!valid) findings.push(`${name}: ${what} is not a whole count (expected ${expected}, actual ${actual})`);
    else if (!ok) findings.push(`${name}: ${actual} vs ${expected}, ${diff > 0 ? '+' : ''}${diff} (${pct(expected === 0 ? Number.POSITIVE_INFINITY : (100 * diff) / expected)} %), beyond ${tolText(expected)}`);
  };
  approx('pressed vs batch size', batchSize, pressed, 'a count', input.yieldTolerancePct ?? tolPct);
  approx('inspected vs pressed', pressed, inspected, 'a count');
  const diff = rejected - inspected;
  const valid = count(rejected) && count(inspected);
  const ok = valid && rejected <= inspected;
  lines.push({ name: 'rejected ≤ inspected', expected: inspected, actual: rejected, diff, ok });
  if (!valid) findings.push(`rejected ≤ inspected: a count is not whole (rejected ${rejected}, inspected ${inspected})`);
  else if (!ok) findings.push(`rejected ≤ inspected: ${rejected} rejected of ${inspected} inspected`);
  return { ok: lines.every((l) => l.ok), lines, findings };
}
