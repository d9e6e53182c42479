/**
 * agent.coat_dry — coat weight gain to target without over-wetting.
 *
 * End point: the latest coater.WeightGain reading is at or over the target.
 * Over-wetting (sticking, twinning, picking) comes when the evaporative load
 * of the spray exceeds the pan's drying capacity: the coating model's wetting
 * ratio (load / capacity) passes 1. The agent calls it a risk when the mean
 * of the last {@link RATIO_WINDOW} coater.WettingRatio readings is over
 * {@link WETTING_RATIO_MAX} (a 10 % margin under 1 for the ratio's noise and
 * drift) or the exhaust has fallen to the model's over-wetting exhaust
 * temperature. Then it proposes lowering coater.SprayRate within one max
 * step: the wetting ratio is proportional to the spray rate, so the rate that
 * brings the measured ratio to {@link WETTING_RATIO_AIM} is known; the
 * smallest candidate that reaches it wins (score: ratio excess over the aim,
 * plus 0.01 per minute added to the coating time).
 */
import { coatingModel, type CoatingParams } from '../twin/process.js';
import { checkLimit, checkModel, checkNow, checkReadings, finite, fmt, mean, plain, roundTo } from './support.js';
import type { AgentOutput, CandidateConsidered, DesignLimit, ModelRef, Proposal, Reading } from './types.js';

export const AGENT = 'agent.coat_dry';
export const COATER_SETPOINTS = ['coater.SprayRate', 'coater.InletAirTemp', 'coater.Airflow', 'coater.PanSpeed'] as const;
export type CoaterSetpointId = (typeof COATER_SETPOINTS)[number];
export const WETTING_RATIO_MAX = 0.9;
export const WETTING_RATIO_AIM = 0.85;
export const RATIO_WINDOW = 3;

export interface CoatDryInput {
  now: number;
  /** coater.WeightGain (%), coater.WettingRatio (1), coater.ExhaustTemp (Cel), in time order. */
  weightGain: Reading[];
  wettingRatio: Reading[];
  exhaustC: Reading[];
  current: Record<CoaterSetpointId, number>;
  targetWeightGainPct: number;
  /** The fitted twin's coating parameters. */
  params: CoatingParams;
  model: ModelRef;
  designSpace: Record<CoaterSetpointId, DesignLimit>;
}

export interface CoatDryVerdict {
  endpoint: boolean;
  /** Latest weight gain, %, or null without readings. */
  weightGainPct: number | null;
  /** Mean of the last readings, or null without readings. */
  wettingRatio: number | null;
  overWetting: boolean;
}

/**
 * Judge the coating end point and the over-wetting risk; propose a bounded spray-rate cut when at risk.
 * @throws LkError(LK_VALIDATION) for a bad `now`, model or design limit; LkError(LK_VALUE_INVALID) for non-finite numbers.
 */
export function decide(input: CoatDryInput): AgentOutput<CoatDryVerdict> {
  const now = checkNow(input.now);
  const wg = checkReadings('weightGain', input.weightGain);
  const ratios = checkReadings('wettingRatio', input.wettingRatio);
  const exhaust = checkReadings('exhaustC', input.exhaustC);
  const current = {} as Record<CoaterSetpointId, number>;
  for (const id of COATER_SETPOINTS) current[id] = finite(`current['${id}']`, input.current?.[id]);
  const sprayLimit = checkLimit("designSpace['coater.SprayRate']", input.designSpace?.['coater.SprayRate'], 'g/min');
  const target = finite('targetWeightGainPct', input.targetWeightGainPct);
  const model = checkModel('model', input.model);
  const p = input.params;
  for (const k of ['solids', 'efficiency', 'coreMassKg', 'heatLoss', 'ambientC', 'overwetExhaustC', 'sprayDryRatio'] as const) finite(`params.${k}`, p?.[k]);

  const wgNow = wg.length > 0 ? wg[wg.length - 1]!.value : null;
  const ratio = ratios.length > 0 ? mean(ratios.slice(-RATIO_WINDOW).map((r) => r.value)) : null;
  const exhaustNow = exhaust.length > 0 ? exhaust[exhaust.length - 1]!.value : null;
  const endpoint = wgNow !== null && wgNow >= target;
  const coat = (spray: number): ReturnType<typeof coatingModel> =>
    coatingModel({ sprayRateGMin: spray, inletAirC: current['coater.InletAirTemp'], airflowM3h: current['coater.Airflow'], panRpm: current['coater.PanSpeed'] }, p);
  const modelNow = coat(current['coater.SprayRate']);
  const ratioCue = ratio !== null && ratio > WETTING_RATIO_MAX;
  const exhaustCue = exhaustNow !== null && exhaustNow <= p.overwetExhaustC;
  const overWetting = !endpoint && (ratioCue || exhaustCue);
  const verdict: CoatDryVerdict = { endpoint, weightGainPct: wgNow, wettingRatio: ratio, overWetting };
  // the measured ratio over the model's, carried to every candidate (1 without a measured ratio)
  // without airflow the energy balance has no finite answer: the model does not apply
  const usable = Number.isFinite(modelNow.wettingRatio) && Number.isFinite(modelNow.exhaustC) && modelNow.wettingRatio > 0;
  // (a model ratio near zero — spray off — says nothing about the bias)
  const factor = ratio !== null && usable && modelNow.wettingRatio >= 1e-6 ? ratio / modelNow.wettingRatio : 1;
  const inputs = {
    now,
    weightGainPct: wgNow,
    targetWeightGainPct: target,
    wettingRatio: ratio,
    exhaustC: exhaustNow,
    current,
    model,
    ...(usable ? { modelAtCurrent: { wettingRatio: modelNow.wettingRatio, exhaustC: modelNow.exhaustC, weightGainPctPerMin: modelNow.weightGainPctPerMin } } : {}),
    ratioFactor: factor,
    sprayLimit,
  };
  // null without a reading, or when the spray barely coats at all (the end point is out of reach)
  const minutesLeft = (spray: number): number | null => {
    const rate = coat(spray).weightGainPctPerMin;
    if (wgNow === null || !(rate >= 1e-9)) return null;
    const t = Math.max(0, (target - wgNow) / rate);
    return Number.isFinite(t) ? t : null;
  };
  const withMinutes = (x: Record<string, number>, minutes: number | null): Record<string, number> => (minutes === null ? x : { ...x, minutesToEndPoint: minutes });
  const status = endpoint
    ? `end point: weight gain ${fmt(wgNow!)} % ≥ ${fmt(target, 1)} %`
    : `weight gain ${wgNow === null ? 'not read yet' : `${fmt(wgNow)} %`} of ${fmt(target, 1)} %; wetting ratio ${ratio === null ? 'not read' : fmt(ratio)} (limit ${WETTING_RATIO_MAX}), exhaust ${exhaustNow === null ? 'not read' : `${fmt(exhaustNow, 1)} °C`} (over-wets at ${fmt(p.overwetExhaustC, 1)} °C)`;
  if (!overWetting) {
    const left = endpoint ? null : minutesLeft(current['coater.SprayRate']);
    const prediction = left === null ? undefined : { minutesToEndPoint: left };
    return plain({ proposals: [], verdict, trace: { inputs, ...(prediction ? { prediction } : {}), candidates: [], why: endpoint ? status : `${status}: no over-wetting risk, no move` } });
  }

  if (!usable) {
    return plain({ proposals: [], verdict, trace: { inputs, candidates: [], why: `${status}: over-wetting risk, but the coating model has no finite answer at the current setpoints (airflow ${fmt(current['coater.Airflow'], 0)} m3/h) — escalate to a person` } });
  }
  const spray = current['coater.SprayRate'];
  const effRatio = ratio ?? modelNow.wettingRatio * factor;
  // the ratio is proportional to the spray rate: the rate that lands on the aim
  const aimSpray = effRatio > 0 ? (spray * WETTING_RATIO_AIM) / effRatio : spray;
  const floor = Math.max(spray - sprayLimit.maxStep, sprayLimit.min);
  const values = [...new Set([spray - sprayLimit.maxStep / 2, spray - sprayLimit.maxStep, aimSpray].map((v) => roundTo(Math.max(v, floor), 0.1)))].filter((v) => v < spray - 0.05 && v >= sprayLimit.min && v <= sprayLimit.max).sort((a, b) => b - a);
  const baseMin = minutesLeft(spray);
  const extra = (minutes: number | null): number => (minutes === null || baseMin === null ? 0 : minutes - baseMin);
  const score = (r: number, minutes: number | null): number => Math.max(0, r - WETTING_RATIO_AIM) + 0.01 * extra(minutes);
  const hold: CandidateConsidered = {
    moves: [],
    predicted: withMinutes({ wettingRatio: effRatio }, baseMin),
    score: score(effRatio, baseMin),
    chosen: false,
    why: `hold ${fmt(spray, 1)} g/min: wetting ratio ${fmt(effRatio)} over ${WETTING_RATIO_MAX}${exhaustCue ? `, exhaust ${fmt(exhaustNow!, 1)} °C at the over-wetting temperature` : ''}`,
  };
  const candidates: CandidateConsidered[] = [hold];
  let best: CandidateConsidered | null = null;
  for (const v of values) {
    const m = coat(v);
    const r = m.wettingRatio * factor;
    const minutes = minutesLeft(v);
    const c: CandidateConsidered = {
      moves: [{ setpoint: 'coater.SprayRate', value: v, unit: 'g/min' }],
      predicted: withMinutes({ wettingRatio: r, exhaustC: m.exhaustC, weightGainPctPerMin: m.weightGainPctPerMin }, minutes),
      score: score(r, minutes),
      chosen: false,
      why: `spray ${fmt(v, 1)} g/min: wetting ratio ${fmt(r)}, ${fmt(extra(minutes), 1)} min longer to the end point`,
    };
    candidates.push(c);
    if (!best || c.score < best.score) best = c;
  }
  if (!best) {
    hold.chosen = true;
    const why = `${status}: over-wetting risk, but coater.SprayRate ${fmt(spray, 1)} g/min is at the approved minimum ${fmt(sprayLimit.min, 1)} g/min — escalate to a person (drying capacity: inlet air or airflow)`;
    return plain({ proposals: [], verdict, trace: { inputs, candidates, why } });
  }
  best.chosen = true;
  const move = best.moves[0]!;
  const predicted = { ...best.predicted };
  const justification =
    `Over-wetting risk: ${ratioCue ? `wetting ratio ${fmt(effRatio)} over ${WETTING_RATIO_MAX}` : ''}${ratioCue && exhaustCue ? ' and ' : ''}${exhaustCue ? `exhaust ${fmt(exhaustNow!, 1)} °C at or under ${fmt(p.overwetExhaustC, 1)} °C` : ''}. ` +
    `Lower coater.SprayRate from ${fmt(spray, 1)} to ${fmt(move.value, 1)} g/min (step ≤ ${fmt(sprayLimit.maxStep, 0)}, approved ≥ ${fmt(sprayLimit.min, 0)}): ` +
    `the coating energy balance (${model.id} v${model.version}, scaled to the measured ratio) predicts a wetting ratio of ${fmt(predicted['wettingRatio']!)}, ` +
    (predicted['minutesToEndPoint'] === undefined ? 'the end point later.' : `the end point ${fmt(extra(predicted['minutesToEndPoint']), 1)} min later.`);
  const proposal: Proposal = { agent: AGENT, attribute: 'dissolution', moves: [move], justification, model, predicted, trace: { inputs, prediction: predicted, candidates: [hold, best], why: justification } };
  return plain({ proposals: [proposal], verdict, trace: { inputs, prediction: hold.predicted, candidates, why: justification } });
}

