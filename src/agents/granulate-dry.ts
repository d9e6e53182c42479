/**
 * agent.granulate_dry — fluid-bed drying to the LOD end point.
 *
 * End point: the last {@link ENDPOINT_READINGS} fluidbed.Lod readings are at
 * or under the target AND the product temperature has climbed to within
 * {@link PRODUCT_TEMP_TOLERANCE_C} °C of what the fitted model expects at the
 * target LOD (the classic cue: the bed leaves the wet-bulb plateau and heads
 * for the inlet temperature once the surface water is gone).
 *
 * Remaining time comes from the falling-rate model with the fitted
 * parameters, LOD(t) = LODe + (LOD − LODe)·e^(−k(T, airflow)·t), from the
 * latest reading. When more than {@link LONG_REMAINING_MIN} minutes remain it
 * proposes raising fluidbed.InletAirTemp by at most the design space's max
 * step (Arrhenius: k rises with T), only when that saves at least
 * {@link MIN_GAIN_MIN} minutes.
 */
import { LkError } from '../errors.js';
import { dryingRatePerMin, productTempC, type DryingParams } from '../twin/process.js';
import { checkLimit, checkModel, checkNow, checkReadings, finite, fmt, plain, positive, roundTo } from './support.js';
import type { AgentOutput, CandidateConsidered, DesignLimit, ModelRef, Proposal, Reading } from './types.js';

export const AGENT = 'agent.granulate_dry';
export const ENDPOINT_READINGS = 3;
export const PRODUCT_TEMP_TOLERANCE_C = 2;
export const LONG_REMAINING_MIN = 30;
export const MIN_GAIN_MIN = 1;
/** Readings used for the observed drying rate (a cross-check in the trace). */
const RATE_WINDOW = 10;

export interface GranulateDryInput {
  now: number;
  /** fluidbed.Lod, % w/w, in time order. */
  lod: Reading[];
  /** fluidbed.ProductTemp, Cel, in time order. */
  productTemp: Reading[];
  /** Current fluidbed.InletAirTemp (Cel) and fluidbed.Airflow (m3/h) setpoints. */
  inletAirTempC: number;
  airflowM3h: number;
  targetLodPct: number;
  model: ModelRef;
  /** The fitted twin's drying parameters. */
  params: DryingParams;
  designSpace: { 'fluidbed.InletAirTemp': DesignLimit; 'fluidbed.Airflow': DesignLimit };
}

export interface GranulateDryVerdict {
  endpoint: boolean;
  /** Latest LOD, %, or null without readings. */
  lodPct: number | null;
  /** Minutes to the target LOD at the current setpoints (0 when there), or null without a reading or when the model says the target is unreachable. */
  predictedMinutesRemaining: number | null;
  /** Latest product temperature, Cel, or null without readings. */
  productTempC: number | null;
}

/**
 * Judge the drying end point and, when it is far off, propose a bounded inlet-temperature raise.
 * @throws LkError(LK_VALIDATION) for a bad `now`, model or design limit; LkError(LK_VALUE_INVALID) for non-finite numbers.
 */
export function decide(input: GranulateDryInput): AgentOutput<GranulateDryVerdict> {
  const now = checkNow(input.now);
  const lod = checkReadings('lod', input.lod);
  const temps = checkReadings('productTemp', input.productTemp);
  const inlet = finite('inletAirTempC', input.inletAirTempC);
  const airflow = positive('airflowM3h', input.airflowM3h);
  const target = finite('targetLodPct', input.targetLodPct);
  const model = checkModel('model', input.model);
  const p = input.params;
  for (const k of ['lod0', 'lodEq', 'kRef', 'tRefC', 'eaJmol', 'airflowRef', 'airflowExp', 'wetBulbC'] as const) finite(`params.${k}`, p?.[k]);
  if (!(p.lod0 > p.lodEq)) throw new LkError('LK_VALIDATION', 'params.lod0 must exceed params.lodEq (a bed that starts dry has no drying curve)', { path: 'params.lod0' });
  const tLimit = checkLimit("designSpace['fluidbed.InletAirTemp']", input.designSpace?.['fluidbed.InletAirTemp'], 'Cel');

  const lodNow = lod.length > 0 ? lod[lod.length - 1]!.value : null;
  const tempNow = temps.length > 0 ? temps[temps.length - 1]!.value : null;
  const lastFew = lod.slice(-ENDPOINT_READINGS);
  const lodCue = lastFew.length === ENDPOINT_READINGS && lastFew.every((r) => r.value <= target);
  const expectedEndTempC = productTempC(target, inlet, p);
  const tempCue = tempNow !== null && tempNow >= expectedEndTempC - PRODUCT_TEMP_TOLERANCE_C;
  const endpoint = lodCue && tempCue;
  const k = dryingRatePerMin(inlet, airflow, p);
  const remaining = lodNow === null ? null : minutesTo(lodNow, target, k, p);
  const observedK = observedRate(lod, p.lodEq);
  const verdict: GranulateDryVerdict = { endpoint, lodPct: lodNow, predictedMinutesRemaining: endpoint ? 0 : remaining, productTempC: tempNow };

  const inputs = {
    now,
    lodReadings: lod.length,
    lastLod: lastFew.map((r) => ({ value: r.value, at: r.at })),
    productTempC: tempNow,
    inletAirTempC: inlet,
    airflowM3h: airflow,
    targetLodPct: target,
    model,
    ...(Number.isFinite(k) ? { rateConstantPerMin: k } : {}),
    ...(observedK === null ? {} : { observedRateConstantPerMin: observedK }),
    expectedEndProductTempC: expectedEndTempC,
    designLimit: tLimit,
  };
  const status = endpoint
    ? `end point: the last ${ENDPOINT_READINGS} LOD readings ≤ ${fmt(target, 1)} % and the product at ${fmt(tempNow!, 1)} °C (the model expects ${fmt(expectedEndTempC, 1)} °C at the end point)`
    : lodNow === null
      ? 'no LOD reading yet'
      : `LOD ${fmt(lodNow)} % against ${fmt(target, 1)} %` +
        (lodCue ? `, but the product temperature ${tempNow === null ? 'is not read' : `${fmt(tempNow, 1)} °C is under ${fmt(expectedEndTempC - PRODUCT_TEMP_TOLERANCE_C, 1)} °C`} (no end-point cue yet)` : '') +
        (remaining === null ? '; the fitted model never reaches the target at these setpoints' : `; about ${fmt(remaining, 1)} min to go at k = ${fmt(k, 4)} /min`);
  const prediction = remaining === null ? undefined : { minutesRemaining: remaining, rateConstantPerMin: k };

  if (endpoint || remaining === null || lodNow === null || remaining <= LONG_REMAINING_MIN) {
    const why = endpoint || remaining === null || lodNow === null ? status : `${status}: within ${LONG_REMAINING_MIN} min, no move needed`;
    return plain({ proposals: [], verdict, trace: { inputs, ...(prediction ? { prediction } : {}), candidates: [], why } });
  }

  // a long way to go: rehearse hold, half a step and a full step of inlet temperature inside the design space
  const candidates: CandidateConsidered[] = [];
  let best: { value: number; minutes: number; cand: CandidateConsidered } | null = null;
  const hold: CandidateConsidered = { moves: [], predicted: { minutesRemaining: remaining, endProductTempC: expectedEndTempC }, score: remaining, chosen: false, why: 'hold the inlet temperature' };
  candidates.push(hold);
  for (const frac of [0.5, 1]) {
    const value = roundTo(Math.min(inlet + frac * tLimit.maxStep, tLimit.max), 0.1);
    // a value still under the approved minimum would be a move outside the design space (rule 2)
    if (value - inlet < 0.05 || value < tLimit.min || candidates.some((c) => c.moves[0]?.value === value)) continue;
    const kNew = dryingRatePerMin(value, airflow, p);
    const minutes = minutesTo(lodNow, target, kNew, p) ?? remaining;
    const cand: CandidateConsidered = {
      moves: [{ setpoint: 'fluidbed.InletAirTemp', value, unit: 'Cel' }],
      predicted: { minutesRemaining: minutes, minutesSaved: remaining - minutes, rateConstantPerMin: kNew, endProductTempC: productTempC(target, value, p) },
      score: minutes,
      chosen: false,
      why: `inlet ${fmt(value, 1)} °C: k ${fmt(kNew, 4)} /min, ${fmt(remaining - minutes, 1)} min saved`,
    };
    candidates.push(cand);
    if (!best || minutes < best.minutes) best = { value, minutes, cand };
  }
  if (!best || remaining - best.minutes < MIN_GAIN_MIN) {
    hold.chosen = true;
    const why = best
      ? `${status}; a raise to ${fmt(best.value, 1)} °C saves under ${MIN_GAIN_MIN} min: no move proposed`
      : `${status}; no raise of fluidbed.InletAirTemp from ${fmt(inlet, 1)} °C stays inside ${fmt(tLimit.min, 1)}–${fmt(tLimit.max, 1)} °C within one step: no move proposed (the design space is a limit)`;
    hold.why = best ? 'the gain is under the deadband' : 'no room to raise inside the design space';
    return plain({ proposals: [], verdict, trace: { inputs, ...(prediction ? { prediction } : {}), candidates, why } });
  }
  best.cand.chosen = true;
  best.cand.why += ' (chosen: the most time saved within one step)';
  const predicted = { ...best.cand.predicted };
  const justification =
    `Drying is ${fmt(remaining, 1)} min from the ${fmt(target, 1)} % LOD end point (LOD now ${fmt(lodNow)} %), over ${LONG_REMAINING_MIN} min: ` +
    `raise fluidbed.InletAirTemp from ${fmt(inlet, 1)} to ${fmt(best.value, 1)} °C (step ≤ ${fmt(tLimit.maxStep, 1)} °C, approved ≤ ${fmt(tLimit.max, 1)} °C); ` +
    `the fitted falling-rate model (${model.id} v${model.version}) predicts ${fmt(best.minutes, 1)} min, ${fmt(remaining - best.minutes, 1)} min saved.`;
  const proposal: Proposal = {
    agent: AGENT,
    attribute: 'yield',
    moves: best.cand.moves,
    justification,
    model,
    predicted,
    trace: { inputs, prediction: predicted, candidates: [hold, best.cand], why: justification },
  };
  return plain({ proposals: [proposal], verdict, trace: { inputs, ...(prediction ? { prediction } : {}), candidates, why: justification } });
}

/** Minutes from `lod` to `target` at rate k; 0 when already there, null when the model never gets there. */
function minutesTo(lod: number, target: number, k: number, p: DryingParams): number | null {
  if (lod <= target) return 0;
  if (target <= p.lodEq || !(k > 0) || !Number.isFinite(k)) return null;
  const t = Math.log((lod - p.lodEq) / (target - p.lodEq)) / k;
  return Number.isFinite(t) ? t : null;
}

/** Least-squares slope of ln(LOD − LODe) over the last readings: the observed k, 1/min (null when under 3 usable points). */
function observedRate(lod: readonly Reading[], lodEq: number): number | null {
  const pts = lod.slice(-RATE_WINDOW).filter((r) => r.value - lodEq > 0.05);
  if (pts.length < 3) return null;
  const t0 = pts[0]!.at;
  const xs = pts.map((r) => (r.at - t0) / 60_000);
  const ys = pts.map((r) => Math.log(r.value - lodEq));
  const mx = xs.reduce((a, b) => a + b, 0) / xs.length;
  const my = ys.reduce((a, b) => a + b, 0) / ys.length;
  let sxy = 0;
  let sxx = 0;
  for (let i = 0; i < xs.length; i++) {
    sxy += (xs[i]! - mx) * (ys[i]! - my);
    sxx += (xs[i]! - mx) ** 2;
  }
  if (!(sxx > 0)) return null;
  const k = -sxy / sxx;
  return Number.isFinite(k) ? k : null;
}
