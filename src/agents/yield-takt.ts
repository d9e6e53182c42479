/**
 * agent.yield_takt — keep the press on takt; takes part in arbitration.
 *
 * {@link decide}: when the measured output (press.Output) is more than
 * {@link BEHIND_FRACTION} under the takt target, propose raising
 * press.TurretSpeed toward the speed that meets it (output is proportional to
 * turret speed), by at most the design space's max step and never past its
 * maximum. Attribute `takt`: any quality-side request on the same setpoint
 * (quality_conf's hold) outranks it.
 *
 * {@link replan}: a declined throughput request re-plans by other means
 * instead of moving the equipment (spec, arbitration) — re-sequence the next
 * changeover so its external (offline) set-up runs while this batch finishes.
 */
import { LkError } from '../errors.js';
import { checkNow, finite, fmt, plain, roundTo } from './support.js';
import type { AgentOutput, CandidateConsidered, Proposal, Trace } from './types.js';

export const AGENT = 'agent.yield_takt';
/** Output more than 2 % under target counts as behind takt (inside it is measurement noise). */
export const BEHIND_FRACTION = 0.02;
/** Raises under this are not worth a write, rpm. */
const MIN_RAISE_RPM = 0.1;
/** Output under this, {tbl}/h, is a stopped press. */
const MIN_OUTPUT = 1;

export interface YieldTaktInput {
  now: number;
  /** press.Output, {tbl}/h, and the takt target. */
  outputTabletsPerHour: number;
  targetTabletsPerHour: number;
  /** Current press.TurretSpeed, {rev}/min. */
  turretSpeed: number;
  designSpace: { min: number; max: number; maxStep: number };
}

export interface YieldTaktVerdict {
  behind: boolean;
  /** Output over target, %; null when the press is not producing. */
  taktAttainmentPct: number | null;
  /** Turret speed that would meet the target (uncapped), rpm; null when the press is not producing. */
  neededTurretSpeed: number | null;
}

/**
 * Propose a bounded turret-speed raise when behind takt.
 * @throws LkError(LK_VALIDATION) for a bad `now` or design limit; LkError(LK_VALUE_INVALID) for non-finite numbers.
 */
export function decide(input: YieldTaktInput): AgentOutput<YieldTaktVerdict> {
  const now = checkNow(input.now);
  const output = finite('outputTabletsPerHour', input.outputTabletsPerHour);
  const target = finite('targetTabletsPerHour', input.targetTabletsPerHour);
  const speed = finite('turretSpeed', input.turretSpeed);
  const ds = input.designSpace;
  const min = finite('designSpace.min', ds?.min);
  const max = finite('designSpace.max', ds?.max);
  const maxStep = finite('designSpace.maxStep', ds?.maxStep);
  if (min > max || !(maxStep > 0)) throw new LkError('LK_VALIDATION', 'designSpace needs min ≤ max and a positive maxStep', { path: 'designSpace' });
  if (!(target > 0)) throw new LkError('LK_VALUE_INVALID', 'targetTabletsPerHour must be positive', { path: 'targetTabletsPerHour' });

  const inputs = { now, outputTabletsPerHour: output, targetTabletsPerHour: target, turretSpeed: speed, designSpace: { min, max, maxStep } };
  // under a tablet an hour (or a turret under 0.1 rpm) the press is stopped, whatever the counter's noise says
  const producing = output >= MIN_OUTPUT && speed >= MIN_RAISE_RPM;
  const needed = producing ? (speed * target) / output : null;
  const behind = producing && output < target * (1 - BEHIND_FRACTION);
  const verdict: YieldTaktVerdict = { behind, taktAttainmentPct: producing ? (100 * output) / target : null, neededTurretSpeed: needed };
  const done = (why: string, candidates: CandidateConsidered[] = []): AgentOutput<YieldTaktVerdict> => plain({ proposals: [], verdict, trace: { inputs, candidates, why } });
  if (!producing) return done('the press is not producing (no output or turret stopped): takt cannot be judged, nothing to propose');
  if (!behind) return done(`on takt: ${fmt(output, 0)} of ${fmt(target, 0)} tablets/h (${fmt(verdict.taktAttainmentPct!, 1)} %)`);

  const value = roundTo(Math.min(needed!, speed + maxStep, max), 0.1);
  // score: the share of the takt target missed (lower is better)
  const hold: CandidateConsidered = { moves: [], predicted: { tabletsPerHour: output }, score: 1 - output / target, chosen: false, why: `hold ${fmt(speed, 1)} rpm: ${fmt(output, 0)} tablets/h` };
  if (value - speed < MIN_RAISE_RPM || value < min) {
    hold.chosen = true;
    return done(`behind takt (${fmt(output, 0)} of ${fmt(target, 0)} tablets/h) but press.TurretSpeed ${fmt(speed, 1)} rpm has no room inside ${fmt(min, 0)}–${fmt(max, 0)} rpm: re-plan by other means`, [hold]);
  }
  const predictedOutput = (output * value) / speed;
  const move = { setpoint: 'press.TurretSpeed', value, unit: '{rev}/min' };
  const raise: CandidateConsidered = {
    moves: [move],
    predicted: { tabletsPerHour: predictedOutput, taktAttainmentPct: (100 * predictedOutput) / target },
    score: Math.max(0, 1 - predictedOutput / target),
    chosen: true,
    why: `raise to ${fmt(value, 1)} rpm (needed ${fmt(needed!, 1)}, step ≤ ${fmt(maxStep, 1)}, approved ≤ ${fmt(max, 0)}): ${fmt(predictedOutput, 0)} tablets/h`,
  };
  const justification =
    `Behind takt: ${fmt(output, 0)} of ${fmt(target, 0)} tablets/h (${fmt(verdict.taktAttainmentPct!, 1)} %). ` +
    `Raise press.TurretSpeed from ${fmt(speed, 1)} to ${fmt(value, 1)} rpm for about ${fmt(predictedOutput, 0)} tablets/h` +
    (value < needed! ? ` (the ${fmt(needed!, 1)} rpm needed is more than one step or past the approved maximum).` : '.');
  const trace: Trace = { inputs, prediction: raise.predicted, candidates: [hold, raise], why: justification };
  const proposal: Proposal = { agent: AGENT, attribute: 'takt', moves: [move], justification, predicted: raise.predicted, trace };
  return plain({ proposals: [proposal], verdict, trace });
}

/** What arbitration declined (from its `Declined` entry). */
export interface DeclinedRequest {
  setpoint: string;
  /** The decline reason, e.g. OUTRANKED. */
  reason: string;
  score: number;
}

export interface ReplanContext {
  now: number;
  outputTabletsPerHour: number;
  targetTabletsPerHour: number;
  /** Tablets left to press in this batch. */
  remainingTablets: number;
  /** The next changeover on this line: its planned duration and the part of it that can be done offline (external set-up), min. */
  nextChangeover: { planned: boolean; plannedMin: number; offlineMin: number } | null;
}

export interface Replan {
  agent: string;
  action: 're-sequence next changeover' | 'report takt deficit to planning';
  detail: string;
  /** Minutes of takt the re-plan is expected to win back. */
  expectedTaktGainMin: number;
  /** Takt deficit of the batch at the current output, min. */
  deficitMin: number;
  declined: DeclinedRequest;
  /** Always empty: a re-plan never moves the equipment. */
  moves: [];
  trace: Trace;
}

/**
 * Re-plan after a declined throughput request, by other means than the equipment.
 * @throws LkError(LK_VALIDATION) for a bad `now`; LkError(LK_VALUE_INVALID) for non-finite numbers.
 */
export function replan(declined: DeclinedRequest, context: ReplanContext): Replan {
  const now = checkNow(context.now);
  const output = finite('context.outputTabletsPerHour', context.outputTabletsPerHour);
  const target = finite('context.targetTabletsPerHour', context.targetTabletsPerHour);
  const remaining = Math.max(0, finite('context.remainingTablets', context.remainingTablets));
  const score = finite('declined.score', declined.score);
  const co = context.nextChangeover;
  if (co) {
    finite('context.nextChangeover.plannedMin', co.plannedMin);
    finite('context.nextChangeover.offlineMin', co.offlineMin);
  }
  // minutes the batch runs over plan at today's output; unknowable (and not claimed) while the press stands
  const deficitMin = output >= MIN_OUTPUT && target > 0 ? Math.max(0, (remaining / output - remaining / target) * 60) : 0;
  const offline = co && co.planned ? Math.max(0, Math.min(co.offlineMin, co.plannedMin)) : 0;
  const gain = Math.min(deficitMin, offline);
  const inputs = { now, declined: { setpoint: declined.setpoint, reason: declined.reason, score }, context: { outputTabletsPerHour: output, targetTabletsPerHour: target, remainingTablets: remaining, nextChangeover: co ?? null } };
  const out: Omit<Replan, 'trace'> =
    co && co.planned && gain > 0
      ? {
          agent: AGENT,
          action: 're-sequence next changeover',
          detail:
            `${declined.setpoint} raise declined (${declined.reason}, score ${score}): the equipment stays as it is. ` +
            `Start the external set-up of the next changeover (${fmt(offline, 0)} of ${fmt(co.plannedMin, 0)} min: tooling staged, cleaning materials and the next batch's dispensing ready) while this batch finishes, ` +
            `winning back about ${fmt(gain, 0)} of the ${fmt(deficitMin, 0)} min behind plan.`,
          expectedTaktGainMin: gain,
          deficitMin,
          declined: { setpoint: declined.setpoint, reason: declined.reason, score },
          moves: [],
        }
      : {
          agent: AGENT,
          action: 'report takt deficit to planning',
          detail:
            `${declined.setpoint} raise declined (${declined.reason}, score ${score}): the equipment stays as it is. ` +
            (deficitMin > 0 ? `The batch runs about ${fmt(deficitMin, 0)} min behind plan; ` : 'No takt deficit is measurable now; ') +
            (co && co.planned ? 'the next changeover has no offline set-up to bring forward; ' : 'no changeover is planned next; ') +
            'planning is told so that the schedule absorbs it.',
          expectedTaktGainMin: 0,
          deficitMin,
          declined: { setpoint: declined.setpoint, reason: declined.reason, score },
          moves: [],
        };
  const candidates: CandidateConsidered[] = [
    { moves: [], predicted: { taktGainMin: gain }, score: -gain, chosen: out.action === 're-sequence next changeover', why: 're-sequence the next changeover: external set-up during this batch' },
    { moves: [], predicted: { taktGainMin: 0 }, score: 0, chosen: out.action !== 're-sequence next changeover', why: 'report the deficit to planning and change nothing' },
  ];
  return plain({ ...out, trace: { inputs, prediction: { deficitMin, expectedTaktGainMin: out.expectedTaktGainMin }, candidates, why: out.detail } });
}
