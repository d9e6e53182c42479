/**
 * The pure agent functions a run records, by the `fn` name `StepContext.agent()` writes into
 * `run_agent_call`: the table replay (R11) re-runs a recorded call through, and the one place that knows, per
 * agent, which input fields are the twin's (what a new twin version replaces) and where its input holds the
 * current value of each setpoint it may move (what "no move" means in a diff). Pure: no I/O.
 */
import { blendDispense, coatDry, compressFill, defectInspect, granulateDry, qualityConf, qualityPotency, replan, yieldTakt } from '../../agents/index.js';
import { LkError } from '../../errors.js';
import type { TwinModel } from '../../twin/simulate.js';
import type { ProcessParams } from '../../twin/params.js';

type Input = Record<string, unknown>;

export interface ReplayableAgent {
  /** Call the agent on a parsed recorded input, exactly as the step did. */
  readonly call: (input: unknown) => unknown;
  /**
   * The recorded input with `model`'s parameters in place of the twin's, or null when this input carries no
   * twin (the agent takes none, or this call was made without one). Never changes `input`.
   */
  readonly withTwin: (input: Input, model: TwinModel) => Input | null;
  /** The current values of the setpoints the agent may move, as its recorded input holds them. */
  readonly current: (input: Input) => Record<string, number>;
}

const noTwin = (): null => null;
const noCurrent = (): Record<string, number> => ({});

/** `params` is the twin's whole parameter set (`all`) or one unit operation's group of it. */
function twinParams(group: 'all' | keyof ProcessParams) {
  return (input: Input, model: TwinModel): Input => {
    if (!Object.hasOwn(input, 'params')) throw new LkError('LK_VALIDATION', 'the recorded input has no twin parameters to replace', { path: 'params' });
    const out: Input = { ...input };
    // copies: no agent may share (or change) what the next call gets
    out['params'] = structuredClone(group === 'all' ? model.params : model.params[group]);
    if (Object.hasOwn(out, 'validRanges')) out['validRanges'] = structuredClone(model.validRanges);
    if (Object.hasOwn(out, 'model')) out['model'] = { id: model.id, version: model.version };
    return out;
  };
}

function numbers(pairs: Record<string, unknown>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [k, v] of Object.entries(pairs)) if (typeof v === 'number') out[k] = v;
  return out;
}

const currentRecord = (i: Input): Record<string, number> => (typeof i['current'] === 'object' && i['current'] !== null ? numbers(i['current'] as Record<string, unknown>) : {});
const turretSpeed = (i: Input): Record<string, number> => numbers({ 'press.TurretSpeed': i['turretSpeed'] });

// each cast only restates what the recording step passed: the input text came from the same typed call
const table: Record<string, ReplayableAgent> = {
  'blend_dispense.decide': {
    call: (i) => blendDispense.decide(i as blendDispense.BlendDispenseInput),
    // the blend model is optional: a call recorded without it replays without it
    withTwin: (i, m) => (typeof i['blendModel'] === 'object' && i['blendModel'] !== null ? { ...i, blendModel: { model: { id: m.id, version: m.version }, params: structuredClone(m.params.blend) } } : null),
    current: (i) => numbers({ 'blender.TargetRevolutions': i['targetRevolutions'] }),
  },
  'granulate_dry.decide': {
    call: (i) => granulateDry.decide(i as granulateDry.GranulateDryInput),
    withTwin: twinParams('drying'),
    current: (i) => numbers({ 'fluidbed.InletAirTemp': i['inletAirTempC'], 'fluidbed.Airflow': i['airflowM3h'] }),
  },
  'compress_fill.decide': { call: (i) => compressFill.decide(i as compressFill.CompressFillInput), withTwin: twinParams('all'), current: currentRecord },
  'quality_conf.decide': { call: (i) => qualityConf.decide(i as qualityConf.QualityConfInput), withTwin: twinParams('all'), current: turretSpeed },
  'yield_takt.decide': { call: (i) => yieldTakt.decide(i as yieldTakt.YieldTaktInput), withTwin: noTwin, current: turretSpeed },
  // recorded as its argument array (src/engine/run/steps/press.ts); a re-plan never moves anything
  'yield_takt.replan': {
    call: (i) => {
      if (!Array.isArray(i) || i.length !== 2) throw new LkError('LK_VALIDATION', 'yield_takt.replan is recorded as its argument array [declined, context]', { path: '$' });
      return replan(...(i as Parameters<typeof replan>));
    },
    withTwin: noTwin,
    current: noCurrent,
  },
  'coat_dry.decide': { call: (i) => coatDry.decide(i as coatDry.CoatDryInput), withTwin: twinParams('coating'), current: currentRecord },
  'defect_inspect.decide': {
    call: (i) => defectInspect.decide(i as defectInspect.DefectInspectInput),
    withTwin: noTwin,
    current: (i) => numbers({ 'vision.RejectThreshold': (i['rejectThreshold'] as { valuePct?: unknown } | undefined)?.valuePct }),
  },
  'quality_potency.decide': { call: (i) => qualityPotency.decide(i as qualityPotency.QualityPotencyInput), withTwin: noTwin, current: noCurrent },
};

/** Every agent function a run records, by its recorded `fn` name. */
export const REPLAYABLE: Readonly<Record<string, ReplayableAgent>> = Object.freeze(table);

/** The replayable agent recorded as `fn`, or undefined for a name this version does not know. */
export function replayableAgent(fn: string): ReplayableAgent | undefined {
  return Object.hasOwn(REPLAYABLE, fn) ? REPLAYABLE[fn] : undefined;
}

/** The input as an object, for the accessors above (an argument array or a scalar has no fields). */
export function fieldsOf(input: unknown): Input {
  return typeof input === 'object' && input !== null && !Array.isArray(input) ? (input as Input) : {};
}
