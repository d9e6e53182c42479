/**
 * agent.compress_fill — weight and hardness on target with predicted capping
 * under the site threshold, by small moves of fill depth (weight) and main /
 * pre-compression force (hardness, capping). Turret speed is held: it is
 * takt's lever and content uniformity's concern (quality_conf), not this one's.
 *
 * 1. Bias: measured means (press.TabletWeight, press.Hardness,
 *    press.CappingRate) minus the fitted twin's prediction at the current
 *    setpoints — an additive offset carried to every candidate. The capping
 *    offset only ever raises the estimate: a measured rate under the model's
 *    never relaxes the threshold.
 * 2. Candidates: a grid of fractions of each setpoint's max step (fill depth
 *    and main force 5 levels, pre-force 3) plus {@link RANDOM_CANDIDATES}
 *    seeded draws inside the same box, clamped to the design space, rounded to
 *    0.01; a move that cannot land inside the design space in one step is
 *    discarded.
 * 3. Each is predicted by the twin's press relations (`pressModel`, the press
 *    part of `compileTwin`), after discarding those outside the model's valid
 *    ranges (not extrapolated); then those over the capping threshold.
 * 4. Score, lower is better: w² + h² + 0.5·capping/threshold + 0.05·Σ(Δ/max step)²,
 *    with w = (weight − target)/(target · tolerance) and h = (hardness − band
 *    centre)/(band half-width): each quality term is 1 at the edge of its
 *    specification; the last term prefers the smaller move.
 * 5. Propose the best only when it beats holding by {@link DEADBAND} (or when
 *    holding is itself over the capping threshold).
 */
import { createRng } from '../clock.js';
import { LkError } from '../errors.js';
import { weightRsdPct } from '../twin/predict.js';
import { pressModel, type PressOutputs } from '../twin/process.js';
import type { Range, SetpointId } from '../twin/setpoints.js';
import type { ProcessParams } from '../twin/params.js';
import { checkLimit, checkModel, checkNow, checkReadings, clamp, finite, fmt, mean, plain, positive, roundTo, sampleSd } from './support.js';
import type { AgentOutput, CandidateConsidered, DesignLimit, ModelRef, Move, Proposal, ProposalAttribute, Reading, Served } from './types.js';

export const AGENT = 'agent.compress_fill';
export const PRESS_SETPOINTS = ['press.FillDepth', 'press.MainForce', 'press.PreForce', 'press.TurretSpeed'] as const;
export type PressSetpointId = (typeof PRESS_SETPOINTS)[number];

export const DEADBAND = 0.1;
export const RANDOM_CANDIDATES = 8;
export const MIN_WEIGHTS = 5;
export const MIN_HARDNESS = 3;
/** Offsets larger than these say the twin does not describe this batch: refit instead of steering with it. */
export const MAX_WEIGHT_BIAS_PCT = 10;
export const MAX_HARDNESS_BIAS_PCT = 25;
const RESOLUTION = 0.01;
const GRID: Record<'press.FillDepth' | 'press.MainForce' | 'press.PreForce', readonly number[]> = {
  'press.FillDepth': [0, -0.5, 0.5, -1, 1],
  'press.MainForce': [0, -0.5, 0.5, -1, 1],
  'press.PreForce': [0, -1, 1],
};
const UNITS: Record<PressSetpointId, string> = { 'press.FillDepth': 'mm', 'press.MainForce': 'kN', 'press.PreForce': 'kN', 'press.TurretSpeed': '{rev}/min' };

export interface CompressFillInput {
  now: number;
  /** Seed of the random candidates (recorded, so a replay draws the same ones). */
  seed: number;
  /** press.TabletWeight (mg), press.Hardness (N), press.CappingRate (%), all taken at the current setpoints. */
  weights: Reading[];
  hardness: Reading[];
  capping: Reading[];
  current: Record<PressSetpointId, number>;
  targets: { weightMg: number; weightTolerancePct: number; hardnessMinN: number; hardnessMaxN: number };
  cappingThresholdPct: number;
  model: ModelRef;
  /** The fitted twin's parameters. */
  params: ProcessParams;
  /** The twin's valid ranges (its model card). */
  validRanges: Partial<Record<SetpointId, Range>>;
  designSpace: Record<PressSetpointId, DesignLimit>;
  /**
   * The start of compression, before any tablet is measured: with no readings at all, the first move is rehearsed
   * on the fitted twin alone (no measured bias). Without it (or with any reading) the agent needs its minimum
   * samples at the current setpoints.
   */
  blindStart?: boolean;
}

export interface CompressFillVerdict {
  weightMeanMg: number | null;
  weightRsdPct: number | null;
  hardnessMeanN: number | null;
  cappingMeanPct: number | null;
  /** Weight mean within tolerance, hardness mean in its band and measured capping under the threshold. */
  onTarget: boolean;
}

type Vec = Record<PressSetpointId, number>;

interface Evaluated {
  vec: Vec;
  cand: CandidateConsidered;
  /** Finite and passing every screen. */
  ok: boolean;
  out?: PressOutputs;
  terms?: { weight: number; hardness: number; capping: number; move: number };
}

/**
 * Rehearse small press moves on the fitted twin and propose the best when it is a real improvement.
 * @throws LkError(LK_VALIDATION) for a bad `now`, seed, model or design limit;
 *   LkError(LK_VALUE_INVALID) for non-finite numbers, a non-positive target or threshold.
 */
export function decide(input: CompressFillInput): AgentOutput<CompressFillVerdict> {
  const now = checkNow(input.now);
  if (!Number.isSafeInteger(input.seed)) throw new LkError('LK_VALIDATION', 'seed must be an integer', { path: 'seed' });
  // a tablet weighing nothing is a broken reading, and the RSD divides by the mean
  const weights = checkReadings('weights', input.weights).map((r, i) => positive(`weights[${i}].value`, r.value));
  const hardness = checkReadings('hardness', input.hardness).map((r) => r.value);
  const capping = checkReadings('capping', input.capping).map((r) => r.value);
  const current = {} as Vec;
  const space = {} as Record<PressSetpointId, DesignLimit>;
  for (const id of PRESS_SETPOINTS) {
    current[id] = finite(`current['${id}']`, input.current?.[id]);
    space[id] = checkLimit(`designSpace['${id}']`, input.designSpace?.[id], UNITS[id]);
  }
  const t = input.targets;
  const targetW = positive('targets.weightMg', t?.weightMg);
  const tolW = (positive('targets.weightTolerancePct', t?.weightTolerancePct) / 100) * targetW;
  const hMin = finite('targets.hardnessMinN', t.hardnessMinN);
  const hMax = finite('targets.hardnessMaxN', t.hardnessMaxN);
  if (!(hMax > hMin)) throw new LkError('LK_VALIDATION', 'targets.hardnessMaxN must exceed targets.hardnessMinN', { path: 'targets.hardnessMaxN' });
  const threshold = positive('cappingThresholdPct', input.cappingThresholdPct);
  const model = checkModel('model', input.model);
  const params = input.params;

  const wMean = weights.length > 0 ? mean(weights) : null;
  const wRsd = weights.length > 1 && wMean !== null ? (100 * sampleSd(weights)) / wMean : null;
  const hMean = hardness.length > 0 ? mean(hardness) : null;
  const cMean = capping.length > 0 ? mean(capping) : null;
  const onTarget =
    wMean !== null && hMean !== null && Math.abs(wMean - targetW) <= tolW && hMean >= hMin && hMean <= hMax && (cMean === null || cMean <= threshold);
  const verdict: CompressFillVerdict = { weightMeanMg: wMean, weightRsdPct: wRsd, hardnessMeanN: hMean, cappingMeanPct: cMean, onTarget };

  const twinNow = pressModel(press(current), params.press);
  const twinFinite = [twinNow.tabletWeightMg, twinNow.hardnessN, twinNow.cappingPct].every(Number.isFinite);
  const bias = {
    weightMg: wMean === null ? 0 : wMean - twinNow.tabletWeightMg,
    hardnessN: hMean === null ? 0 : hMean - twinNow.hardnessN,
    cappingPct: cMean === null ? 0 : Math.max(0, cMean - twinNow.cappingPct),
  };
  const inputs = {
    now,
    seed: input.seed,
    samples: { weights: weights.length, hardness: hardness.length, capping: capping.length },
    measured: { weightMeanMg: wMean, weightRsdPct: wRsd, hardnessMeanN: hMean, cappingMeanPct: cMean },
    current,
    targets: { weightMg: targetW, weightTolerancePct: t.weightTolerancePct, hardnessMinN: hMin, hardnessMaxN: hMax },
    cappingThresholdPct: threshold,
    model,
    ...(twinFinite ? { twinAtCurrent: { tabletWeightMg: twinNow.tabletWeightMg, hardnessN: twinNow.hardnessN, cappingRiskPct: twinNow.cappingPct }, bias } : {}),
    designSpace: space,
  };
  const none = (why: string, candidates: CandidateConsidered[] = []): AgentOutput<CompressFillVerdict> => plain({ proposals: [], verdict, trace: { inputs, candidates, why } });
  const blind = input.blindStart === true && weights.length === 0 && hardness.length === 0 && capping.length === 0;
  if (blind) (inputs as Record<string, unknown>)['blindStart'] = true;

  if (!blind && (weights.length < MIN_WEIGHTS || hardness.length < MIN_HARDNESS)) {
    return none(`too few samples at the current setpoints (${weights.length} weights, ${hardness.length} hardness; need ${MIN_WEIGHTS} and ${MIN_HARDNESS}): no move proposed`);
  }
  if (!(current['press.TurretSpeed'] > 0)) return none('the turret is stopped: nothing to steer, no move proposed');
  if (!twinFinite) return none('the twin gives no finite prediction at the current setpoints: no move proposed');
  const outside = outsideValid(current, input.validRanges);
  if (outside.length > 0) return none(`the current setpoints are outside the twin's valid ranges (${outside.join('; ')}): it does not speak for them, no move proposed`);
  if (Math.abs(bias.weightMg) > (MAX_WEIGHT_BIAS_PCT / 100) * targetW || Math.abs(bias.hardnessN) > (MAX_HARDNESS_BIAS_PCT / 100) * ((hMin + hMax) / 2)) {
    return none(
      `the twin is off by ${fmt(bias.weightMg, 1)} mg and ${fmt(bias.hardnessN, 1)} N at the current setpoints (limits ${MAX_WEIGHT_BIAS_PCT} % and ${MAX_HARDNESS_BIAS_PCT} %): ` +
        'it does not describe this batch; refit before steering with it, no move proposed',
    );
  }

  const scoring = { targetW, tolW, mid: (hMin + hMax) / 2, half: (hMax - hMin) / 2, threshold, space, current, bias, params, validRanges: input.validRanges };
  const evaluated = candidateVectors(current, space, input.seed).map((v) => evaluate(v, scoring));
  const hold = evaluated[0]!;
  const passing = evaluated.filter((e) => e.ok);
  let best: Evaluated | undefined;
  for (const e of passing) if (!best || e.cand.score < best.cand.score) best = e;
  const holdOverCapping = !hold.ok;
  const candidates = evaluated.map((e) => e.cand);
  if (!best) {
    return none(`every candidate within one step is over the capping threshold ${fmt(threshold, 2)} % or outside the model's valid ranges: escalate to a person`, candidates);
  }
  if (best === hold || (!holdOverCapping && hold.cand.score - best.cand.score < DEADBAND)) {
    hold.cand.chosen = true;
    const gain = hold.cand.score - best.cand.score;
    if (blind) return none(`holding at the start of compression: the twin predicts ${fmt(hold.cand.predicted['tabletWeightMg'] ?? Number.NaN, 1)} mg, ${fmt(hold.cand.predicted['hardnessN'] ?? Number.NaN, 0)} N at the current setpoints; the best move improves the score by ${fmt(gain, 3)}, under the deadband ${DEADBAND}`, candidates);
    return none(
      `holding: weight ${fmt(wMean!, 1)} mg (target ${fmt(targetW, 0)} ± ${fmt(tolW, 1)}), hardness ${fmt(hMean!, 0)} N (${fmt(hMin, 0)}–${fmt(hMax, 0)}), ` +
        `predicted capping ${fmt(hold.cand.predicted['cappingRiskPct'] ?? 0)} %; the best move improves the score by ${fmt(gain, 3)}, under the deadband ${DEADBAND}`,
      candidates,
    );
  }
  best.cand.chosen = true;
  const moves: Move[] = PRESS_SETPOINTS.filter((id) => best.vec[id] !== current[id]).map((id) => ({ setpoint: id, value: best.vec[id], unit: UNITS[id] }));
  const out = best.out!;
  const predicted: Record<string, number> = {
    tabletWeightMg: out.tabletWeightMg + bias.weightMg,
    hardnessN: out.hardnessN + bias.hardnessN,
    cappingRiskPct: out.cappingPct + bias.cappingPct,
    twinCappingRiskPct: out.cappingPct,
    thicknessMm: out.thicknessMm,
    ejectionForceN: out.ejectionForceN,
    dwellMs: out.dwellMs,
    weightRsdPct: weightRsdPct(params, best.vec['press.TurretSpeed']),
    score: best.cand.score,
    holdScore: hold.cand.score,
  };
  const attribute = attributeOf(hold, best);
  const serves = servedBy(hold, best, { weight: wMean, hardness: hMean, capping: cMean });
  const justification =
    (blind
      ? `No tablet measured yet at the start of compression (target ${fmt(targetW, 0)} ± ${fmt(tolW, 1)} mg, hardness ${fmt(hMin, 0)}–${fmt(hMax, 0)} N); the twin predicts ${fmt(hold.cand.predicted['tabletWeightMg'] ?? Number.NaN, 1)} mg, ${fmt(hold.cand.predicted['hardnessN'] ?? Number.NaN, 0)} N at the current setpoints`
      : `Measured weight ${fmt(wMean!, 1)} mg (target ${fmt(targetW, 0)} ± ${fmt(tolW, 1)}), hardness ${fmt(hMean!, 0)} N (${fmt(hMin, 0)}–${fmt(hMax, 0)} N)`) +
    (holdOverCapping ? `, predicted capping ${fmt(hold.cand.predicted['cappingRiskPct'] ?? 0)} % over the ${fmt(threshold, 2)} % threshold` : '') +
    `. ${moves.map((m) => `${m.setpoint} ${fmt(current[m.setpoint as PressSetpointId])} → ${fmt(m.value)} ${m.unit}`).join(', ')}: ` +
    `the fitted twin (${model.id} v${model.version}, ${blind ? 'alone: no measured bias yet' : 'offset by the measured bias'}) predicts ${fmt(predicted['tabletWeightMg']!, 1)} mg, ${fmt(predicted['hardnessN']!, 0)} N, ` +
    `capping ${fmt(predicted['cappingRiskPct']!)} % (threshold ${fmt(threshold, 2)} %); best of ${candidates.length} candidates, score ${fmt(best.cand.score, 3)} against ${hold.ok ? fmt(hold.cand.score, 3) : 'holding over the threshold'}.`;
  const proposal: Proposal = {
    agent: AGENT,
    attribute,
    ...(serves.length ? { serves } : {}),
    moves,
    justification,
    model,
    predicted,
    trace: { inputs, prediction: predicted, candidates: [hold.cand, best.cand], why: justification },
  };
  return plain({ proposals: [proposal], verdict, trace: { inputs, prediction: hold.cand.predicted, candidates, why: justification } });
}

function press(v: Vec): { fillDepthMm: number; mainForceKn: number; preForceKn: number; turretRpm: number } {
  return { fillDepthMm: v['press.FillDepth'], mainForceKn: v['press.MainForce'], preForceKn: v['press.PreForce'], turretRpm: v['press.TurretSpeed'] };
}

function outsideValid(v: Vec, ranges: Partial<Record<SetpointId, Range>> | undefined): string[] {
  const out: string[] = [];
  for (const id of PRESS_SETPOINTS) {
    const r = ranges?.[id];
    if (!r) continue;
    const tol = 1e-9 * Math.max(1, Math.abs(r.min), Math.abs(r.max));
    if (v[id] < r.min - tol || v[id] > r.max + tol) out.push(`${id} ${fmt(v[id])} ${r.unit} outside ${fmt(r.min)}–${fmt(r.max)}`);
  }
  return out;
}

/** Hold first, then the grid, then the seeded draws; each deduplicated after clamping and rounding. */
function candidateVectors(current: Vec, space: Record<PressSetpointId, DesignLimit>, seed: number): { vec: Vec; reach: string[] }[] {
  const seen = new Set<string>();
  const out: { vec: Vec; reach: string[] }[] = [];
  const add = (d: Record<'press.FillDepth' | 'press.MainForce' | 'press.PreForce', number>): void => {
    const vec = { ...current };
    const reach: string[] = [];
    for (const id of ['press.FillDepth', 'press.MainForce', 'press.PreForce'] as const) {
      if (d[id] === 0) continue;
      const l = space[id];
      const value = roundTo(clamp(current[id] + d[id] * l.maxStep, l.min, l.max), RESOLUTION);
      if (Math.abs(value - current[id]) > l.maxStep + 1e-9) reach.push(`${id} cannot reach ${fmt(l.min)}–${fmt(l.max)} ${l.unit} within one step of ${fmt(l.maxStep)}`);
      vec[id] = Math.abs(value - current[id]) < RESOLUTION / 2 ? current[id] : value;
    }
    const key = PRESS_SETPOINTS.map((id) => vec[id]).join('|');
    if (seen.has(key)) return;
    seen.add(key);
    out.push({ vec, reach });
  };
  for (const f of GRID['press.FillDepth'])
    for (const m of GRID['press.MainForce'])
      for (const p of GRID['press.PreForce']) add({ 'press.FillDepth': f, 'press.MainForce': m, 'press.PreForce': p });
  const rng = createRng(seed);
  for (let i = 0; i < RANDOM_CANDIDATES; i++) {
    add({ 'press.FillDepth': rng.uniform(-1, 1), 'press.MainForce': rng.uniform(-1, 1), 'press.PreForce': rng.uniform(-1, 1) });
  }
  return out;
}

interface Scoring {
  targetW: number;
  tolW: number;
  mid: number;
  half: number;
  threshold: number;
  space: Record<PressSetpointId, DesignLimit>;
  current: Vec;
  bias: { weightMg: number; hardnessN: number; cappingPct: number };
  params: ProcessParams;
  validRanges: Partial<Record<SetpointId, Range>> | undefined;
}

function movesOf(vec: Vec, current: Vec): Move[] {
  return PRESS_SETPOINTS.filter((id) => vec[id] !== current[id]).map((id) => ({ setpoint: id, value: vec[id], unit: UNITS[id] }));
}

function evaluate({ vec, reach }: { vec: Vec; reach: string[] }, s: Scoring): Evaluated {
  const moves = movesOf(vec, s.current);
  const label = moves.length === 0 ? 'hold' : moves.map((m) => `${m.setpoint.slice(6)} ${fmt(m.value)}`).join(', ');
  const discard = (code: string, why: string, predicted: Record<string, number> = {}, score = Number.MAX_VALUE): Evaluated => ({
    vec,
    ok: false,
    cand: { moves, predicted, score, chosen: false, why: `discarded (${code}): ${label}: ${why}` },
  });
  if (reach.length > 0) return discard('outside_design_space', reach.join('; '));
  const outside = outsideValid(vec, s.validRanges);
  if (outside.length > 0) return discard('outside_valid_range', `${outside.join('; ')}; not extrapolated`);
  const out = pressModel(press(vec), s.params.press);
  const w = out.tabletWeightMg + s.bias.weightMg;
  const h = out.hardnessN + s.bias.hardnessN;
  const c = out.cappingPct + s.bias.cappingPct;
  if (![w, h, c].every(Number.isFinite)) return discard('not_finite', 'the twin gives a non-finite prediction here');
  let move = 0;
  for (const id of PRESS_SETPOINTS) move += ((vec[id] - s.current[id]) / s.space[id].maxStep) ** 2;
  const terms = { weight: ((w - s.targetW) / s.tolW) ** 2, hardness: ((h - s.mid) / s.half) ** 2, capping: (0.5 * c) / s.threshold, move: 0.05 * move };
  const score = terms.weight + terms.hardness + terms.capping + terms.move;
  const predicted = { tabletWeightMg: w, hardnessN: h, cappingRiskPct: c };
  if (c > s.threshold) {
    return { ...discard('capping_risk', `predicted capping ${fmt(c)} % is over the threshold ${fmt(s.threshold, 2)} % (dwell ${fmt(out.dwellMs, 1)} ms)`, predicted, score), out, terms };
  }
  const why = `${label}: ${fmt(w, 1)} mg, ${fmt(h, 0)} N, capping ${fmt(c)} %; score ${fmt(score, 3)} (weight ${fmt(terms.weight, 3)}, hardness ${fmt(terms.hardness, 3)}, capping ${fmt(terms.capping, 3)}, move ${fmt(terms.move, 3)})`;
  return { vec, ok: true, out, terms, cand: { moves, predicted, score, chosen: false, why } };
}

/**
 * The arbitration class of the move, from the term it improves most: weight → content uniformity, hardness →
 * dissolution, capping → defect rate. Every one of them ranks as quality; it is a rank, not what the move is
 * about — that is {@link servedBy}, which names the measured attributes themselves.
 */
function attributeOf(hold: Evaluated, best: Evaluated): ProposalAttribute {
  if (!hold.ok || !hold.terms || !best.terms) return 'defect_rate';
  const gains: [ProposalAttribute, number][] = [
    ['content_uniformity', hold.terms.weight - best.terms.weight],
    ['dissolution', hold.terms.hardness - best.terms.hardness],
    ['defect_rate', hold.terms.capping - best.terms.capping],
  ];
  let top = gains[0]!;
  for (const g of gains) if (g[1] > top[1]) top = g;
  return top[0];
}

const SERVED: readonly { term: 'weight' | 'hardness' | 'capping'; tag: string; key: string; unit: string }[] = [
  { term: 'weight', tag: 'press.TabletWeight', key: 'tabletWeightMg', unit: 'mg' },
  { term: 'hardness', tag: 'press.Hardness', key: 'hardnessN', unit: 'N' },
  { term: 'capping', tag: 'press.CappingRate', key: 'cappingRiskPct', unit: '%' },
];

/**
 * The measured attributes the move brings closer to target, as the reasoning names them (weight, hardness,
 * capping), largest improvement of its score term first: each from its measured mean (the twin's value at the
 * current setpoints before any tablet is measured) to that value moved by the twin's predicted change. For weight
 * and hardness that is the biased twin's prediction itself; for capping, whose bias is never negative, a measured
 * rate below the twin's stays the measured rate and moves by the predicted change (never below 0), so `from` is
 * always what was measured.
 */
function servedBy(hold: Evaluated, best: Evaluated, measured: Record<'weight' | 'hardness' | 'capping', number | null>): Served[] {
  if (!hold.terms || !best.terms) return [];
  const h = hold.terms;
  const b = best.terms;
  return SERVED.map((s) => ({ s, gain: h[s.term] - b[s.term] }))
    .filter((x) => x.gain > 1e-9 && Number.isFinite(hold.cand.predicted[x.s.key]) && Number.isFinite(best.cand.predicted[x.s.key]))
    .sort((x, y) => y.gain - x.gain)
    .map(({ s }) => {
      const before = hold.cand.predicted[s.key]!;
      const from = measured[s.term] ?? before;
      const after = best.cand.predicted[s.key]!;
      return { tag: s.tag, from, to: from === before ? after : Math.max(0, from + (after - before)), unit: s.unit };
    });
}
