/**
 * Descriptive statistics and the USP <905> content-uniformity test, as QA
 * computes them by hand: mean, sample SD (n − 1), RSD %, min, max, and the
 * acceptance value AV = |M − X̄| + k·s with its two stages. The release
 * evaluator ({@link ./spec.ts}) judges with these; they take plain arrays of
 * finite numbers and never decide what a missing or non-finite value means —
 * that is the caller's judgement, made explicitly.
 *
 * Pure: no I/O, no clock, no randomness.
 */

/** Arithmetic mean; NaN for an empty array. */
export function mean(xs: readonly number[]): number {
  if (xs.length === 0) return Number.NaN;
  let s = 0;
  for (const x of xs) s += x;
  return s / xs.length;
}

/** Sample standard deviation (n − 1 denominator, two-pass); NaN under two values. */
export function sampleSd(xs: readonly number[]): number {
  if (xs.length < 2) return Number.NaN;
  const m = mean(xs);
  let ss = 0;
  for (const x of xs) ss += (x - m) ** 2;
  return Math.sqrt(ss / (xs.length - 1));
}

/** Relative standard deviation in % of the mean (sample SD); NaN under two values or with a zero mean. */
export function rsdPct(xs: readonly number[]): number {
  const m = mean(xs);
  return m === 0 ? Number.NaN : (100 * sampleSd(xs)) / Math.abs(m);
}

/** Smallest value; NaN for an empty array (not Infinity, which would read as data). */
export function min(xs: readonly number[]): number {
  return xs.length === 0 ? Number.NaN : xs.reduce((a, b) => (b < a ? b : a));
}

/** Largest value; NaN for an empty array. */
export function max(xs: readonly number[]): number {
  return xs.length === 0 ? Number.NaN : xs.reduce((a, b) => (b > a ? b : a));
}

export interface Summary {
  n: number;
  mean: number;
  sd: number;
  rsdPct: number;
  min: number;
  max: number;
}

/** All of the above at once (NaN where a statistic needs more values). */
export function summarize(xs: readonly number[]): Summary {
  return { n: xs.length, mean: mean(xs), sd: sampleSd(xs), rsdPct: rsdPct(xs), min: min(xs), max: max(xs) };
}

// ───────────────────────────── USP <905> ─────────────────────────────

/** USP <905> L1 (the largest AV a batch record may allow) and L2 (% range of each unit around M at stage 2). */
export const USP905_L1 = 15.0;
export const USP905_L2 = 25.0;
/** Units tested at stage 1 and (in all) at stage 2, and the acceptability constant k of each. */
export const USP905_STAGE1_N = 10;
export const USP905_STAGE2_N = 30;
export const USP905_K: Readonly<Record<10 | 30, number>> = { 10: 2.4, 30: 2.0 };

export interface AcceptanceValue {
  n: number;
  /** X̄ and s of the units, % label claim. */
  mean: number;
  sd: number;
  /** Reference value M (target T = 100 %, the T ≤ 101.5 case). */
  m: number;
  k: number;
  av: number;
}

/**
 * AV = |M − X̄| + k·s of 10 (k = 2.4) or 30 (k = 2.0) units in % label claim,
 * with M = X̄ inside 98.5–101.5 and the nearer bound outside.
 * @throws RangeError for any other number of units (USP defines k for these two only).
 */
export function acceptanceValue(units: readonly number[]): AcceptanceValue {
  const n = units.length;
  if (n !== USP905_STAGE1_N && n !== USP905_STAGE2_N) throw new RangeError(`USP <905> AV is defined for 10 or 30 units, got ${n}`);
  const k = USP905_K[n];
  const x = mean(units);
  const s = sampleSd(units);
  const m = x < 98.5 ? 98.5 : x > 101.5 ? 101.5 : x;
  return { n, mean: x, sd: s, m, k, av: Math.abs(m - x) + k * s };
}

export type StageVerdict = 'PASS' | 'FAIL' | 'NOT_EVALUATED';

export interface ContentUniformity {
  verdict: StageVerdict;
  /** The stage that decided (1 or 2); null when not evaluated. */
  stage: 1 | 2 | null;
  /** Stage 1 AV of the first 10 units; stage 2 AV of the first 30 when tested. */
  stage1: AcceptanceValue | null;
  stage2: AcceptanceValue | null;
  /** Stage 2: units outside (1 ± L2/100)·M. */
  outsideL2: number;
  l1: number;
  reason: string;
}

const f = (x: number, d = 2): string => x.toFixed(d);

/**
 * The USP <905> decision on units in % label claim (in test order): stage 1 on
 * the first 10 units, PASS when AV ≤ L1; otherwise, with 30 units, stage 2 on
 * the first 30, PASS when AV ≤ L1 and no unit lies outside (1 ± L2/100)·M.
 * `l1` is the batch record's limit, never above {@link USP905_L1}. Fewer than
 * 10 units, or any non-finite one, is NOT_EVALUATED: a decision is never
 * made on data that cannot carry it.
 */
export function contentUniformity(units: readonly number[], l1: number = USP905_L1): ContentUniformity {
  const L1 = Math.min(l1, USP905_L1);
  const none = (reason: string): ContentUniformity => ({ verdict: 'NOT_EVALUATED', stage: null, stage1: null, stage2: null, outsideL2: 0, l1: L1, reason });
  const bad = units.filter((u) => !Number.isFinite(u));
  if (bad.length > 0) return none(`${bad.length} non-finite unit value(s) (${[...new Set(bad.map(String))].join(', ')}): not judged`);
  if (units.length < USP905_STAGE1_N) return none(`${units.length} unit(s); USP <905> stage 1 needs ${USP905_STAGE1_N}`);
  const s1 = acceptanceValue(units.slice(0, USP905_STAGE1_N));
  if (s1.av <= L1) return { verdict: 'PASS', stage: 1, stage1: s1, stage2: null, outsideL2: 0, l1: L1, reason: `stage 1 AV ${f(s1.av)} ≤ L1 ${f(L1, 1)} (10 units, mean ${f(s1.mean)} %, s ${f(s1.sd)} %)` };
  if (units.length < USP905_STAGE2_N) {
    return { verdict: 'FAIL', stage: 1, stage1: s1, stage2: null, outsideL2: 0, l1: L1, reason: `stage 1 AV ${f(s1.av)} > L1 ${f(L1, 1)}; stage 2 (30 units) not tested` };
  }
  const units30 = units.slice(0, USP905_STAGE2_N);
  const s2 = acceptanceValue(units30);
  const lo = (1 - USP905_L2 * 0.01) * s2.m;
  const hi = (1 + USP905_L2 * 0.01) * s2.m;
  const outside = units30.filter((u) => u < lo || u > hi).length;
  const ok = s2.av <= L1 && outside === 0;
  const why = [`stage 1 AV ${f(s1.av)} > L1 ${f(L1, 1)}`, `stage 2 AV ${f(s2.av)} ${s2.av <= L1 ? '≤' : '>'} L1 ${f(L1, 1)} (30 units)`, `${outside} unit(s) outside ${f(lo, 1)}–${f(hi, 1)} % (M ± ${f(USP905_L2, 1)} %)`];
  return { verdict: ok ? 'PASS' : 'FAIL', stage: 2, stage1: s1, stage2: s2, outsideL2: outside, l1: L1, reason: why.join('; ') };
}
