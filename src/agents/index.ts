/**
 * The agents of the line (pure). Each deciding agent is a module with a
 * `decide(input) → AgentOutput<Verdict>`; {@link DECIDE} maps a role to it so
 * that the run engine can record `{ role, input, output }` and replay the
 * call. The orchestrator summarises (rehearsal, arbitration) and yield_takt
 * re-plans after a declined request; neither writes.
 */
import * as blendDispense from './blend-dispense.js';
import * as coatDry from './coat-dry.js';
import * as compressFill from './compress-fill.js';
import * as defectInspect from './defect-inspect.js';
import * as granulateDry from './granulate-dry.js';
import * as qualityConf from './quality-conf.js';
import * as qualityPotency from './quality-potency.js';
import * as yieldTakt from './yield-takt.js';

export * from './types.js';
export { AGENTS, AGENT_ROLES, type AgentRole } from './declarations.js';
export { plain } from './support.js';
export { arbitrationNote, summariseRehearsal, type ArbitrationNote, type RehearsalSummary } from './orchestrator.js';
export { replan, type DeclinedRequest, type Replan, type ReplanContext } from './yield-takt.js';
export { blendDispense, coatDry, compressFill, defectInspect, granulateDry, qualityConf, qualityPotency, yieldTakt };
export type { BlendDispenseInput, BlendDispenseVerdict } from './blend-dispense.js';
export type { CoatDryInput, CoatDryVerdict } from './coat-dry.js';
export type { CompressFillInput, CompressFillVerdict } from './compress-fill.js';
export type { DefectInspectInput, DefectInspectVerdict } from './defect-inspect.js';
export type { GranulateDryInput, GranulateDryVerdict } from './granulate-dry.js';
export type { QualityConfInput, QualityConfVerdict } from './quality-conf.js';
export type { QualityPotencyInput, QualityPotencyVerdict } from './quality-potency.js';
export type { YieldTaktInput, YieldTaktVerdict } from './yield-takt.js';

/** The deciding agents by role (the orchestrator summarises instead; see its module). */
export const DECIDE = Object.freeze({
  blend_dispense: blendDispense.decide,
  granulate_dry: granulateDry.decide,
  compress_fill: compressFill.decide,
  coat_dry: coatDry.decide,
  defect_inspect: defectInspect.decide,
  quality_potency: qualityPotency.decide,
  quality_conf: qualityConf.decide,
  yield_takt: yieldTakt.decide,
});
export type DecidingRole = keyof typeof DECIDE;
/** The input and verdict types of a role's `decide`. */
export type AgentInputOf<R extends DecidingRole> = Parameters<(typeof DECIDE)[R]>[0];
export type AgentVerdictOf<R extends DecidingRole> = ReturnType<(typeof DECIDE)[R]>['verdict'];
