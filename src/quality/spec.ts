/**
 * The truth of the batch: every specification of the batch record judged
 * against a run's data — in-process press samples, NIR release evidence, the
 * process end points and LIMS results — as PASS, FAIL or NOT_EVALUATED, each
 * with its data, its limits in words and a reason (DESIGN.md, "The truth of
 * the batch"). The release package prints this table on its first page.
 *
 * What keeps it honest:
 * - all eleven specifications appear, always, in one order; nothing is left
 *   out because nobody measured it;
 * - a specification is never PASS without the data its rule needs (the
 *   minimum n of the statistic); missing data is NOT_EVALUATED with a reason;
 * - the record's limits are converted (UCUM) to the data's unit; a unit that
 *   does not convert is NOT_EVALUATED, never compared as if it did;
 * - a non-finite value (NaN, ±Infinity) is never dropped: the result is FAIL
 *   when the finite values already prove a failure, NOT_EVALUATED otherwise,
 *   and the reason names them;
 * - a twin prediction (dissolution) is shown as a prediction and never passes
 *   anything: only a measured LIMS result can.
 *
 * Pure: no I/O, no clock, no randomness.
 */
import type { BatchSpecifications } from '../domain/batch-record.js';
import { convertUnit } from '../domain/units.js';
import { contentUniformity, rsdPct, summarize, USP905_STAGE1_N } from './stats.js';

export type SpecVerdict = 'PASS' | 'FAIL' | 'NOT_EVALUATED';

/** The specifications of a batch record, in the order of the table. */
export const SPEC_IDS = [
  'tablet_weight',
  'tablet_weight_rsd',
  'hardness',
  'thickness',
  'content_uniformity',
  'dissolution',
  'defect_rate',
  'potency',
  'lod_end',
  'coat_weight_gain',
  'blend_rsd',
] as const;
export type SpecId = (typeof SPEC_IDS)[number];

export interface SpecData {
  /** Number of values (non-finite ones included); tablets inspected for the defect rate. */
  n: number;
  unit: string;
  mean?: number;
  sd?: number;
  rsdPct?: number;
  min?: number;
  max?: number;
  values?: number[];
  /** Evidence references: sample ids, spectrum ids, LIMS references. */
  refs?: string[];
  /** A model's prediction shown beside the data, never judged as a result. */
  prediction?: { pct: number; atMin: number; model: string };
}

export interface SpecResult {
  id: SpecId;
  title: string;
  /** Where the data came from. */
  source: string;
  /** The limits in words, as the record states them (and in the data's unit when it differs). */
  limits: string;
  /** The limits in the data's unit. */
  limit: { min?: number; max?: number; unit: string };
  data: SpecData;
  verdict: SpecVerdict;
  /** Why PASS or FAIL, or what is missing for NOT_EVALUATED; never empty. */
  reason: string;
}

export interface SpecTable {
  results: SpecResult[];
  /** FAIL if any FAIL, else INCOMPLETE if any NOT_EVALUATED, else PASS. */
  verdict: 'PASS' | 'FAIL' | 'INCOMPLETE';
  counts: Record<SpecVerdict, number>;
}

export interface LimsEntry {
  test: string;
  result: number | string;
  unit?: string;
  status: string;
  lims_ref: string;
}

export interface QualityInput {
  spec: BatchSpecifications;
  /** Individual tablet weights against target ± this % (default 5). */
  weightTolerancePct?: number;
  /** In-process samples: weights in mg, hardness in N, thickness in mm. */
  inProcess: { weightMg: readonly number[]; hardnessN: readonly number[]; thicknessMm: readonly number[]; refs?: { weight?: string[]; hardness?: string[]; thickness?: string[] } };
  blend?: { rsdPct: number | null };
  dry?: { lodPct: number | null };
  coat?: { weightGainPct: number | null };
  inspection?: { inspected: number; rejected: number };
  /** NIR per-spectrum potency, % label claim, in scan order. */
  potency?: { valuesPct: readonly number[]; refs?: string[] };
  lims: readonly LimsEntry[];
  /** The twin's Weibull surrogate: shown, never judged. */
  dissolutionPrediction?: { pct: number; atMin: number; model: string };
}

/** Units of the tablet-weight test: Ph. Eur. 2.9.5 weighs 20. */
export const MIN_WEIGHT_N = 20;
/** Units for an in-process weight RSD (one sample set of 10–20 tablets). */
export const MIN_RSD_N = 10;
/** Consecutive in-process weights per sample set of the RSD test (PROCESS.md: a set of 10–20 tablets). */
export const RSD_SET_N = 20;
export const DEFAULT_WEIGHT_TOLERANCE_PCT = 5;

// ───────────────────────────── formatting ─────────────────────────────

/** A number for people: at most `d` decimals, no trailing zeros, no float noise (300.00000000000006 → 300). */
export function num(x: number, d = 2): string {
  if (!Number.isFinite(x)) return String(x);
  const r = Number(x.toFixed(d));
  return String(Object.is(r, -0) ? 0 : r);
}
const one = (x: number): string => x.toFixed(1);
const range = (lo: number, hi: number, unit: string): string => `${num(lo)}–${num(hi)} ${unit}`;

/** Non-finite values named for a reason: `2 non-finite values (NaN, Infinity)`. */
function nonFiniteText(bad: readonly number[]): string {
  return `${bad.length} non-finite value${bad.length === 1 ? '' : 's'} (${[...new Set(bad.map(String))].join(', ')})`;
}

/** The finite statistics of values for the table (a NaN statistic is left out, not printed as data). */
function dataOf(values: readonly number[], unit: string, refs?: readonly string[]): SpecData {
  const finite = values.filter(Number.isFinite);
  const s = summarize(finite);
  const d: SpecData = { n: values.length, unit };
  for (const k of ['mean', 'sd', 'rsdPct', 'min', 'max'] as const) if (Number.isFinite(s[k])) d[k] = s[k];
  if (values.length > 0) d.values = [...values];
  if (refs && refs.length > 0) d.refs = [...refs];
  return d;
}

/** The record's value converted to the data's unit, or a reason why it cannot be. */
function toDataUnit(value: number, from: string, to: string): number | string {
  const v = convertUnit(value, from, to);
  return v === undefined || !Number.isFinite(v) ? `the record's unit ${JSON.stringify(from)} cannot be converted to the data's unit ${JSON.stringify(to)}` : v;
}

// ───────────────────────────── the judgements ─────────────────────────────

type Head = Pick<SpecResult, 'id' | 'title' | 'source' | 'limits' | 'limit'>;
const result = (head: Head, data: SpecData, verdict: SpecVerdict, reason: string): SpecResult => ({ ...head, data, verdict, reason });

function tabletWeight(input: QualityInput): [SpecResult, SpecResult] {
  const tw = input.spec.tablet_weight;
  const values = input.inProcess.weightMg;
  const refs = input.inProcess.refs?.weight;
  const tol = input.weightTolerancePct ?? DEFAULT_WEIGHT_TOLERANCE_PCT;
  const source = 'in-process press samples';
  const rsdHead: Head = { id: 'tablet_weight_rsd', title: 'Tablet weight RSD', source, limits: `≤ ${one(tw.rsd_max_pct)} %`, limit: { max: tw.rsd_max_pct, unit: '%' } };
  const data = dataOf(values, 'mg', refs);
  const t = toDataUnit(tw.target, tw.unit, 'mg');
  const stated = `${num(tw.target, 6)} ${tw.unit} ± ${num(tol)} %`;
  if (typeof t === 'string' || !(tol > 0 && tol < 50)) {
    const why = typeof t === 'string' ? t : `weight tolerance ${tol} % is not a percentage in (0, 50)`;
    return [result({ id: 'tablet_weight', title: 'Tablet weight', source, limits: stated, limit: { unit: 'mg' } }, data, 'NOT_EVALUATED', why), rsd(rsdHead, values, refs, tw.rsd_max_pct)];
  }
  const [lo, hi, lo2, hi2] = [t * (1 - tol / 100), t * (1 + tol / 100), t * (1 - (2 * tol) / 100), t * (1 + (2 * tol) / 100)];
  const head: Head = { id: 'tablet_weight', title: 'Tablet weight', source, limits: `${range(lo, hi, 'mg')} (${stated})`, limit: { min: lo, max: hi, unit: 'mg' } };
  const finite = values.filter(Number.isFinite);
  const bad = values.filter((v) => !Number.isFinite(v));
  const out1 = finite.filter((v) => v < lo || v > hi).length;
  const out2 = finite.filter((v) => v < lo2 || v > hi2).length;
  const allowed = Math.floor(finite.length * 0.1);
  const m = data.mean;
  const counts = `${out1} of ${finite.length} outside ±${num(tol)} % (${range(lo, hi, 'mg')}, at most ${allowed} allowed), ${out2} outside ±${num(2 * tol)} % (${range(lo2, hi2, 'mg')}, none allowed)`;
  const nf = bad.length > 0 ? `; ${nonFiniteText(bad)}` : '';
  let weight: SpecResult;
  if (values.length === 0) weight = result(head, data, 'NOT_EVALUATED', 'no in-process weight samples');
  else if (out2 > 0) weight = result(head, data, 'FAIL', counts + nf);
  else if (finite.length < MIN_WEIGHT_N) weight = result(head, data, 'NOT_EVALUATED', `${finite.length} finite weight(s); the test needs ${MIN_WEIGHT_N} (Ph. Eur. 2.9.5)${nf}`);
  else if (out1 > allowed || m === undefined || m < lo || m > hi) weight = result(head, data, 'FAIL', `mean ${num(m ?? Number.NaN)} mg; ${counts}${nf}`);
  else if (bad.length > 0) weight = result(head, data, 'NOT_EVALUATED', `${nonFiniteText(bad)} among ${values.length} weights: not judged`);
  else weight = result(head, data, 'PASS', `mean ${num(m)} mg inside ${range(lo, hi, 'mg')}; ${counts}`);
  return [weight, rsd(rsdHead, values, refs, tw.rsd_max_pct)];
}

function rsd(head: Head, values: readonly number[], refs: readonly string[] | undefined, maxPct: number): SpecResult {
  const data = dataOf(values, 'mg', refs);
  const bad = values.filter((v) => !Number.isFinite(v));
  if (values.length === 0) return result(head, data, 'NOT_EVALUATED', 'no in-process weight samples');
  if (bad.length > 0) return result(head, data, 'NOT_EVALUATED', `${nonFiniteText(bad)} among ${values.length} weights: RSD not computed`);
  if (values.length < MIN_RSD_N) return result(head, data, 'NOT_EVALUATED', `${values.length} weight(s); an RSD is judged on at least ${MIN_RSD_N}`);
  // the in-process test is an RSD per sample set (PROCESS.md: ≤ 2 % per set of 10–20 tablets), judged on every
  // set: a drift of the mean between sets is the individual limits' business, a scatter within one set is this one's
  const sets = sampleSets(values.length);
  const judged = sets.map(([from, to]) => ({ from, to, r: rsdPct(values.slice(from, to)) }));
  if (judged.some((x) => !Number.isFinite(x.r))) return result(head, data, 'NOT_EVALUATED', 'RSD undefined (zero mean)');
  const worst = judged.reduce((w, x) => (x.r > w.r ? x : w));
  const which = `set ${judged.indexOf(worst) + 1} of ${judged.length} (samples ${worst.from + 1}–${worst.to})`;
  const of = `${judged.length} set${judged.length === 1 ? '' : 's'} of ${RSD_SET_N} consecutive samples, n ${values.length}`;
  const over = judged.filter((x) => x.r > maxPct);
  if (over.length > 0) return result(head, data, 'FAIL', `${over.length} of ${judged.length} sets over ${one(maxPct)} %; worst ${which}: RSD ${num(worst.r)} % > ${one(maxPct)} % (${of})`);
  return result(head, data, 'PASS', `every set ≤ ${one(maxPct)} %; worst ${which}: RSD ${num(worst.r)} % (${of})`);
}

/**
 * The in-process sample sets of `n` samples in taking order, as [from, to) ranges: sets of {@link RSD_SET_N}; a
 * last set shorter than {@link MIN_RSD_N} joins the one before it (never judged on too few, never dropped).
 */
export function sampleSets(n: number): [number, number][] {
  const out: [number, number][] = [];
  for (let from = 0; from < n; from += RSD_SET_N) out.push([from, Math.min(n, from + RSD_SET_N)]);
  const last = out.at(-1);
  if (out.length > 1 && last && last[1] - last[0] < MIN_RSD_N) {
    out.pop();
    out[out.length - 1]![1] = n;
  }
  return out;
}

/** Every individual value inside [min, max] of the record (converted to `unit`). */
function individuals(id: SpecId, title: string, lim: { min: number; max: number; unit: string }, unit: string, values: readonly number[], refs: readonly string[] | undefined, what: string): SpecResult {
  const source = 'in-process press samples';
  const data = dataOf(values, unit, refs);
  const lo = toDataUnit(lim.min, lim.unit, unit);
  const hi = toDataUnit(lim.max, lim.unit, unit);
  const stated = range(lim.min, lim.max, lim.unit);
  if (typeof lo === 'string' || typeof hi === 'string') return result({ id, title, source, limits: stated, limit: { unit } }, data, 'NOT_EVALUATED', typeof lo === 'string' ? lo : (hi as string));
  const head: Head = { id, title, source, limits: lim.unit === unit ? stated : `${stated} (${range(lo, hi, unit)})`, limit: { min: lo, max: hi, unit } };
  if (values.length === 0) return result(head, data, 'NOT_EVALUATED', `no in-process ${what} samples`);
  const bad = values.filter((v) => !Number.isFinite(v));
  const finite = values.filter(Number.isFinite);
  const outside = finite.filter((v) => v < lo || v > hi);
  if (outside.length > 0) {
    const worst = outside.reduce((w, v) => (Math.max(lo - v, v - hi) > Math.max(lo - w, w - hi) ? v : w));
    return result(head, data, 'FAIL', `${outside.length} of ${values.length} outside ${range(lo, hi, unit)}; worst ${num(worst)} ${unit}${bad.length > 0 ? `; ${nonFiniteText(bad)}` : ''}`);
  }
  if (bad.length > 0) return result(head, data, 'NOT_EVALUATED', `${nonFiniteText(bad)} among ${values.length} ${what} samples: not judged`);
  return result(head, data, 'PASS', `all ${values.length} inside ${range(lo, hi, unit)} (${range(data.min!, data.max!, unit)})`);
}

function cu(input: QualityInput): SpecResult {
  const avMax = input.spec.content_uniformity.av_max;
  const head: Head = { id: 'content_uniformity', title: 'Content uniformity', source: 'NIR release evidence (PLS)', limits: `AV ≤ ${one(avMax)} (USP <905> L1)`, limit: { max: avMax, unit: '%' } };
  const values = input.potency?.valuesPct ?? [];
  const data = dataOf(values, '%', input.potency?.refs);
  if (values.length === 0) return result(head, data, 'NOT_EVALUATED', 'no NIR potency values');
  const c = contentUniformity(values, avMax);
  return result(head, data, c.verdict, c.reason);
}

/** A LIMS result as a number in %, or why it cannot be judged. */
function limsPct(r: LimsEntry): number | string {
  if (typeof r.result !== 'number') return `${r.lims_ref}: result ${JSON.stringify(r.result)} is not numeric`;
  if (!Number.isFinite(r.result)) return `${r.lims_ref}: result ${r.result} is non-finite`;
  if (r.unit !== undefined && r.unit !== '%') return `${r.lims_ref}: unit ${JSON.stringify(r.unit)} is not %`;
  return r.result;
}

function dissolution(input: QualityInput): SpecResult {
  const { q_pct: q, at_min: at } = input.spec.dissolution;
  const head: Head = { id: 'dissolution', title: 'Dissolution', source: 'LIMS', limits: `Q = ${num(q)} % at ${num(at)} min`, limit: { min: q, unit: '%' } };
  const rows = input.lims.filter((r) => r.test === 'dissolution');
  const p = input.dissolutionPrediction;
  const predicted = p ? `; twin surrogate predicts ${num(p.pct, 1)} % at ${num(p.atMin)} min (${p.model}) — a prediction, not a release result` : '';
  const nums = rows.map(limsPct);
  const data: SpecData = { ...dataOf(nums.filter((x): x is number => typeof x === 'number'), '%', rows.map((r) => r.lims_ref)), n: rows.length };
  if (p) data.prediction = { pct: p.pct, atMin: p.atMin, model: p.model };
  if (rows.length === 0) return result(head, data, 'NOT_EVALUATED', `no LIMS dissolution result yet${predicted}`);
  // every result counts: a passing retest does not erase a failing result (that takes an investigation)
  const failing = rows.flatMap((r, i) => {
    const v = nums[i]!;
    if (r.status === 'fail' || r.status === 'oos') return [`${r.lims_ref}: LIMS status ${r.status}${typeof v === 'number' ? ` (${num(v)} %)` : ''}`];
    return r.status === 'pass' && typeof v === 'number' && v < q ? [`${r.lims_ref}: ${num(v)} % < Q ${num(q)} %`] : [];
  });
  if (failing.length > 0) return result(head, data, 'FAIL', failing.join('; '));
  const open = rows.flatMap((r, i) => (r.status !== 'pass' ? [`${r.lims_ref}: LIMS status ${JSON.stringify(r.status)}`] : typeof nums[i] === 'string' ? [nums[i] as string] : []));
  if (open.length > 0) return result(head, data, 'NOT_EVALUATED', open.join('; ') + predicted);
  return result(head, data, 'PASS', rows.map((r, i) => `${r.lims_ref}: ${num(nums[i] as number)} % ≥ Q ${num(q)} % at ${num(at)} min, LIMS status pass`).join('; '));
}

function defectRate(input: QualityInput): SpecResult {
  const maxPct = input.spec.defect_rate_max_pct;
  const head: Head = { id: 'defect_rate', title: 'Defect rate', source: 'vision inspection', limits: `≤ ${one(maxPct)} %`, limit: { max: maxPct, unit: '%' } };
  const ins = input.inspection;
  if (!ins) return result(head, { n: 0, unit: '%' }, 'NOT_EVALUATED', 'no inspection counts');
  const { inspected, rejected } = ins;
  const valid = Number.isInteger(inspected) && Number.isInteger(rejected) && inspected >= 0 && rejected >= 0 && rejected <= inspected;
  const data: SpecData = { n: Number.isFinite(inspected) ? inspected : 0, unit: '%' };
  if (!valid) return result(head, data, 'NOT_EVALUATED', `inspection counts do not hold together (inspected ${inspected}, rejected ${rejected})`);
  if (inspected === 0) return result(head, data, 'NOT_EVALUATED', 'no tablets inspected');
  const rate = (100 * rejected) / inspected;
  data.mean = rate;
  const text = `${rejected} of ${inspected} rejected = ${num(rate, 3)} %`;
  return rate <= maxPct ? result(head, data, 'PASS', `${text} ≤ ${one(maxPct)} %`) : result(head, data, 'FAIL', `${text} > ${one(maxPct)} %`);
}

function potency(input: QualityInput): SpecResult {
  const { min_pct: lo, max_pct: hi } = input.spec.potency;
  const head: Head = { id: 'potency', title: 'Potency', source: 'NIR release evidence (PLS); LIMS assay', limits: `${one(lo)}–${one(hi)} % LC`, limit: { min: lo, max: hi, unit: '%' } };
  const values = input.potency?.valuesPct ?? [];
  const assays = input.lims.filter((r) => r.test === 'assay');
  const refs = [...(input.potency?.refs ?? []), ...assays.map((r) => r.lims_ref)];
  const data = dataOf(values, '%', refs);
  if (values.length === 0 && assays.length === 0) return result(head, data, 'NOT_EVALUATED', 'no NIR potency values and no LIMS assay');
  const fails: string[] = [];
  const open: string[] = [];
  const passes: string[] = [];
  const bad = values.filter((v) => !Number.isFinite(v));
  if (bad.length > 0) open.push(`${nonFiniteText(bad)} among ${values.length} NIR values`);
  else if (values.length > 0) {
    const m = data.mean!;
    (m >= lo && m <= hi ? passes : fails).push(`NIR mean ${num(m)} % ${m >= lo && m <= hi ? 'inside' : 'outside'} ${one(lo)}–${one(hi)} % (n ${values.length})`);
  }
  for (const r of assays) {
    const v = limsPct(r);
    if (r.status === 'fail' || r.status === 'oos') fails.push(`${r.lims_ref}: LIMS status ${r.status}`);
    else if (typeof v === 'string') open.push(v);
    else if (v < lo || v > hi) fails.push(`${r.lims_ref}: assay ${num(v)} % outside ${one(lo)}–${one(hi)} %`);
    else if (r.status !== 'pass') open.push(`${r.lims_ref}: LIMS status ${JSON.stringify(r.status)}`);
    else passes.push(`${r.lims_ref}: assay ${num(v)} % inside`);
  }
  if (fails.length > 0) return result(head, data, 'FAIL', [...fails, ...open].join('; '));
  if (open.length > 0) return result(head, data, 'NOT_EVALUATED', open.join('; '));
  return result(head, data, 'PASS', passes.join('; '));
}

/** One end-point value against a one-sided limit. */
function endPoint(head: Head, value: number | null | undefined, bound: { max?: number; min?: number }, missing: string): SpecResult {
  if (value === null || value === undefined) return result(head, { n: 0, unit: '%' }, 'NOT_EVALUATED', missing);
  const data: SpecData = { n: 1, unit: '%', values: [value] };
  if (!Number.isFinite(value)) return result(head, data, 'NOT_EVALUATED', `${nonFiniteText([value])}: not judged`);
  data.mean = value;
  if (bound.max !== undefined) return value <= bound.max ? result(head, data, 'PASS', `${num(value)} % ≤ ${one(bound.max)} %`) : result(head, data, 'FAIL', `${num(value)} % > ${one(bound.max)} %`);
  const lo = bound.min!;
  return value >= lo ? result(head, data, 'PASS', `${num(value)} % ≥ ${one(lo)} %`) : result(head, data, 'FAIL', `${num(value)} % < ${one(lo)} %`);
}

/**
 * Judge every specification of the batch record against the run's data.
 * Never throws on data: what cannot be judged is NOT_EVALUATED with the reason.
 */
export function evaluateSpecifications(input: QualityInput): SpecTable {
  const s = input.spec;
  const ip = input.inProcess;
  const [weight, weightRsd] = tabletWeight(input);
  const results: SpecResult[] = [
    weight,
    weightRsd,
    individuals('hardness', 'Hardness', s.hardness, 'N', ip.hardnessN, ip.refs?.hardness, 'hardness'),
    individuals('thickness', 'Thickness', s.thickness, 'mm', ip.thicknessMm, ip.refs?.thickness, 'thickness'),
    cu(input),
    dissolution(input),
    defectRate(input),
    potency(input),
    endPoint({ id: 'lod_end', title: 'LOD at end of drying', source: 'fluid-bed LOD at end of drying', limits: `≤ ${one(s.lod_end_pct)} %`, limit: { max: s.lod_end_pct, unit: '%' } }, input.dry?.lodPct, { max: s.lod_end_pct }, 'no end-of-drying LOD'),
    endPoint({ id: 'coat_weight_gain', title: 'Coat weight gain', source: 'coater weight gain', limits: `≥ ${one(s.coat_weight_gain_pct)} %`, limit: { min: s.coat_weight_gain_pct, unit: '%' } }, input.coat?.weightGainPct, { min: s.coat_weight_gain_pct }, 'no coat weight gain'),
    endPoint({ id: 'blend_rsd', title: 'Blend uniformity RSD', source: 'blender NIR end point', limits: `≤ ${one(s.blend_rsd_max_pct)} %`, limit: { max: s.blend_rsd_max_pct, unit: '%' } }, input.blend?.rsdPct, { max: s.blend_rsd_max_pct }, 'no blend end-point RSD'),
  ];
  const counts: Record<SpecVerdict, number> = { PASS: 0, FAIL: 0, NOT_EVALUATED: 0 };
  for (const r of results) counts[r.verdict]++;
  return { results, verdict: counts.FAIL > 0 ? 'FAIL' : counts.NOT_EVALUATED > 0 ? 'INCOMPLETE' : 'PASS', counts };
}

/** What the data of a result was, in a few words: `n 42, 118–131 N`. */
function dataText(r: SpecResult): string {
  const d = r.data;
  if (d.n === 0) return 'no data';
  if (r.id === 'defect_rate') return d.mean === undefined ? `n ${d.n}` : `${num(d.mean, 3)} % of ${d.n}`;
  if (d.min !== undefined && d.max !== undefined && d.n > 1) return `n ${d.n}, ${d.min === d.max ? num(d.min) : `${num(d.min)}–${num(d.max)}`} ${d.unit}`;
  return d.mean !== undefined ? `${num(d.mean)} ${d.unit}` : `n ${d.n}`;
}

/** One plain line per result for a terminal: verdict, title, limits, data, and the reason unless PASS. */
export function specTableText(table: SpecTable): string[] {
  const w = Math.max(...table.results.map((r) => r.title.length));
  return table.results.map((r) => `${r.verdict.padEnd(13)}  ${r.title.padEnd(w)}  ${r.limits}  ${dataText(r)}${r.verdict === 'PASS' ? '' : ` — ${r.reason}`}`);
}
