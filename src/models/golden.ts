/**
 * The golden-dataset gate: evaluate a candidate model on the golden dataset
 * of its kind and compare the metrics with the pass criteria written on its
 * model card. A promotion goes ahead only when every criterion passes.
 *
 * The card states the criteria, but not on its own authority: {@link SITE_LIMITS}
 * names the metrics every card of a kind must have a criterion for, and the
 * loosest bound the site accepts. A card criterion may be stricter, never
 * looser (the PLS model's RMSEP ≤ 2 % LC, the defect classifier's precision
 * and recall ≥ 0.85 for every class, each twin attribute within about 2.5×
 * its measurement noise). The result — dataset file and SHA-256, metrics,
 * each criterion and its verdict — goes into the promotion's audit entry.
 */
import { LkError } from '../errors.js';
import type { AcceptanceCriterion, FidelityCriterion, ModelCard } from '../twin/card.js';
import { evaluateTwin, TWIN_ATTRIBUTES } from '../twin/residuals.js';
import { nirScore } from '../twin/nir/score.js';
import { outOfRange, type SetpointVector } from '../twin/setpoints.js';
import { classifyFeatures, frameSetFeatures, precisionRecall } from '../twin/vision/classifier.js';
import { DEFECT_CLASSES, type DefectClass } from '../twin/vision/frames.js';
import { nirModelOf, twinModelOf, visionModelOf } from './artefacts.js';
import { forEachGoldenFrameSet, loadGolden, type LoadedGolden, type NirGolden, type TwinGolden, type VisionGolden } from './golden-data.js';
import type { LoadedModel, ModelKind } from './registry.js';

/**
 * The site's own limits per kind: every metric listed must have a criterion on the card, at least this strict.
 * Twin: RMSEP per attribute on the golden batches, ≈ 2.5× the measurement noise of connectors/sim/ground/batches.ts (capping: 0.5 % of
 * tablets absolute). PLS: RMSEP in % label claim. Vision: the worst class's precision and recall.
 */
export const SITE_LIMITS: Readonly<Record<ModelKind, Readonly<Record<string, AcceptanceCriterion>>>> = Object.freeze({
  twin: Object.freeze({
    'rmsep.blendRsdPct': { max: 0.8 },
    'rmsep.lodPct': { max: 0.3 },
    'rmsep.tabletWeightMg': { max: 1.5 },
    'rmsep.weightRsdPct': { max: 0.2 },
    'rmsep.thicknessMm': { max: 0.03 },
    'rmsep.hardnessN': { max: 4 },
    'rmsep.cappingPct': { max: 0.5 },
    'rmsep.ejectionN': { max: 15 },
    'rmsep.coatWeightGainPct': { max: 0.1 },
    'rmsep.coatExhaustC': { max: 0.75 },
    'rmsep.dissolutionPct': { max: 3 },
  }),
  'nir-pls': Object.freeze({ rmsep: { max: 2 } }),
  'vision-softmax': Object.freeze({ 'precision.min': { min: 0.85 }, 'recall.min': { min: 0.85 } }),
});

/**
 * The acceptance criteria a card of this kind states when it is built (a copy of the site limits): the golden
 * gate's pass criteria, written before any evaluation, as a validation protocol states its criteria before the test.
 */
export function siteCriteria(kind: ModelKind): Record<string, AcceptanceCriterion> {
  return Object.fromEntries(Object.entries(SITE_LIMITS[kind]).map(([k, v]) => [k, { ...v }]));
}

/**
 * The twin's run-time acceptance against the plant (R8, card section `fidelity`): the largest residual of the mean
 * measured at the setpoints in force against the twin's prediction there, beyond which the model counts as lost for
 * the run. Sized from what the plant may do while the model is right: granulate bulk density wanders about 1.5 % (1 SD)
 * from hour to hour, which moves weight, thickness and hardness together, and a press sample scatters about 1 % in
 * weight, 3 % in hardness and 10 % (relative) in capping rate. Weight and thickness 5 % and hardness 10 % are over
 * three of those SDs; capping 1 percentage point is two thirds of the site's capping threshold. A card without a
 * `fidelity` section is judged by these.
 */
export const TWIN_FIDELITY: Readonly<Record<string, Readonly<FidelityCriterion>>> = Object.freeze({
  tabletWeightMg: Object.freeze({ maxRelResidualPct: 5 }),
  hardnessN: Object.freeze({ maxRelResidualPct: 10 }),
  thicknessMm: Object.freeze({ maxRelResidualPct: 5 }),
  cappingPct: Object.freeze({ maxAbsResidual: 1 }),
});

export interface CriterionResult {
  readonly metric: string;
  readonly min?: number;
  readonly max?: number;
  /** The metric on the golden dataset; null when the evaluation has no such metric. */
  readonly value: number | null;
  readonly pass: boolean;
}

/** What the gate found: recorded verbatim in the audit entry of the promotion. */
export interface GoldenEvaluation {
  readonly kind: ModelKind;
  readonly dataset: { readonly file: string; readonly sha256: string; readonly items: number };
  readonly metrics: Readonly<Record<string, number>>;
  readonly criteria: readonly CriterionResult[];
  /** Why the gate failed besides a criterion (no criteria on the card, a criterion looser than the site's, data the model cannot speak for). */
  readonly problems: readonly string[];
  readonly passed: boolean;
}

/**
 * Evaluate a loaded (hash-checked) model on the golden dataset of its kind in `goldenDir`.
 * Never throws for a model that fails: that is `passed: false` with the reasons.
 * @throws LkError LK_MODEL_GATE_FAILED when the golden dataset cannot be read (nothing can be evaluated);
 *   LK_MODEL_CORRUPT when the artefact does not have the shape of its kind.
 */
export function evaluateGolden(loaded: LoadedModel, goldenDir: string): GoldenEvaluation {
  const kind = loaded.model.kind;
  const golden = loadGolden(goldenDir, kind);
  const problems: string[] = [];
  let metrics: Record<string, number>;
  let items: number;
  if (kind === 'twin') ({ metrics, items } = evaluateTwinGolden(loaded, golden.data as TwinGolden, problems));
  else if (kind === 'nir-pls') ({ metrics, items } = evaluateNirGolden(loaded, golden.data as NirGolden));
  else ({ metrics, items } = evaluateVisionGolden(loaded, golden.data as VisionGolden, golden.sha256));
  const criteria = judge(kind, loaded.model.card, metrics, problems);
  return { kind, dataset: { file: golden.file, sha256: golden.sha256, items }, metrics, criteria, problems, passed: problems.length === 0 && criteria.every((c) => c.pass) };
}

/** The gate as an exception: the evaluation when it passed. @throws LkError LK_MODEL_GATE_FAILED with the evaluation in `detail`. */
export function requireGolden(loaded: LoadedModel, goldenDir: string): GoldenEvaluation {
  const ev = evaluateGolden(loaded, goldenDir);
  if (!ev.passed) {
    const failed = ev.criteria.filter((c) => !c.pass).map((c) => `${c.metric} = ${c.value === null ? 'n/a' : round(c.value)} (${c.max !== undefined ? `≤ ${c.max}` : ''}${c.min !== undefined ? `≥ ${c.min}` : ''})`);
    throw new LkError('LK_MODEL_GATE_FAILED', `model ${loaded.model.id} failed its golden-dataset evaluation on ${ev.dataset.file}: ${[...ev.problems, ...failed].join('; ')}`, { id: loaded.model.id, evaluation: ev });
  }
  return ev;
}

function round(x: number): number {
  return Math.round(x * 1e4) / 1e4;
}

function judge(kind: ModelKind, card: ModelCard, metrics: Record<string, number>, problems: string[]): CriterionResult[] {
  const acceptance = card.acceptance ?? {};
  const out: CriterionResult[] = [];
  for (const [metric, limit] of Object.entries(SITE_LIMITS[kind])) {
    const c = acceptance[metric];
    if (!c) {
      problems.push(`the model card states no criterion for ${metric}`);
      continue;
    }
    if (limit.max !== undefined && !(typeof c.max === 'number' && c.max <= limit.max)) problems.push(`${metric}: the card's criterion is looser than the site limit (max ${limit.max})`);
    if (limit.min !== undefined && !(typeof c.min === 'number' && c.min >= limit.min)) problems.push(`${metric}: the card's criterion is looser than the site limit (min ${limit.min})`);
  }
  for (const [metric, c] of Object.entries(acceptance)) {
    const v = metrics[metric];
    const value = typeof v === 'number' && Number.isFinite(v) ? v : null;
    const pass = value !== null && (c.max === undefined || value <= c.max) && (c.min === undefined || value >= c.min) && (c.max !== undefined || c.min !== undefined);
    out.push({ metric, ...(c.min !== undefined ? { min: c.min } : {}), ...(c.max !== undefined ? { max: c.max } : {}), value, pass });
  }
  return out;
}

/** A recorded batch's recipe and each press segment, as setpoint vectors (what the model must cover). */
function vectorsOf(b: TwinGolden['batches'][number]): SetpointVector[] {
  return [b.setpoints, ...b.press.map((o) => ({ ...b.setpoints, 'press.FillDepth': o.fillDepthMm, 'press.MainForce': o.mainForceKn, 'press.PreForce': o.preForceKn, 'press.TurretSpeed': o.turretRpm }))];
}

function evaluateTwinGolden(loaded: LoadedModel, g: TwinGolden, problems: string[]): { metrics: Record<string, number>; items: number } {
  const twin = twinModelOf(loaded);
  // a model is not validated for conditions it was never fitted over: it must speak for the whole golden set
  const outside = g.batches.filter((b) => vectorsOf(b).some((v) => outOfRange(v, twin.validRanges).length > 0)).map((b) => b.id);
  if (outside.length > 0) problems.push(`golden batches outside the model's valid ranges: ${outside.join(', ')}`);
  const ev = evaluateTwin(twin.params, g.batches);
  const metrics: Record<string, number> = {};
  for (const a of TWIN_ATTRIBUTES) metrics[`rmsep.${a}`] = ev[a].rmse;
  return { metrics, items: g.batches.length };
}

function evaluateNirGolden(loaded: LoadedModel, g: NirGolden): { metrics: Record<string, number>; items: number } {
  const model = nirModelOf(loaded);
  let ss = 0;
  let sum = 0;
  let outside = 0;
  for (const s of g.samples) {
    const r = nirScore(model, s.spectrum);
    const e = r.prediction - s.potencyPct;
    ss += e * e;
    sum += e;
    if (r.outsideCalibration) outside++;
  }
  const n = g.samples.length;
  return { metrics: { rmsep: Math.sqrt(ss / n), bias: sum / n, outsideCalibration: outside }, items: n };
}

/**
 * Feature vectors of a vision golden dataset, by the SHA-256 of its file: rendering and hashing 140 sets of
 * 6 × 640×480 takes seconds, and the features depend on the dataset and the feature code, not on the model
 * evaluated — a set-up that promotes one classifier per tenant renders them once per process.
 */
const goldenFeatures = new Map<string, { label: DefectClass; features: Float64Array }[]>();

function evaluateVisionGolden(loaded: LoadedModel, g: VisionGolden, sha256: string): { metrics: Record<string, number>; items: number } {
  const model = visionModelOf(loaded);
  let examples = goldenFeatures.get(sha256);
  if (!examples) {
    const taken: { label: DefectClass; features: Float64Array }[] = [];
    forEachGoldenFrameSet(g, (s) => taken.push({ label: s.label, features: frameSetFeatures(s) }));
    goldenFeatures.set(sha256, taken);
    examples = taken;
  }
  const truth = examples.map((e) => e.label);
  const predicted = examples.map((e) => classifyFeatures(model, 0, e.features).label);
  const pr = precisionRecall(truth, predicted);
  const metrics: Record<string, number> = {};
  let pMin = 1;
  let rMin = 1;
  for (const c of DEFECT_CLASSES) {
    metrics[`precision.${c}`] = pr[c].precision;
    metrics[`recall.${c}`] = pr[c].recall;
    pMin = Math.min(pMin, pr[c].precision);
    rMin = Math.min(rMin, pr[c].recall);
  }
  metrics['precision.min'] = pMin;
  metrics['recall.min'] = rMin;
  metrics['accuracy'] = predicted.filter((p, i) => p === truth[i]).length / truth.length;
  return { metrics, items: truth.length };
}

export type { LoadedGolden };
