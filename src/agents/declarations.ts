/**
 * The nine agents of the line as the SDK declares them (spec, "Agent"):
 * goal in plain words, the spec's tool names, and the autonomy level each
 * starts at under the shipped policy bundle (config/policy/agents.yaml; a
 * unit test keeps the two in step). Every agent rehearses on the twin before
 * a proposal and writes every call to the Part 11 audit trail.
 */
import type { AgentDeclaration } from './types.js';

export const AGENT_ROLES = ['orchestrator', 'blend_dispense', 'granulate_dry', 'compress_fill', 'coat_dry', 'defect_inspect', 'quality_potency', 'quality_conf', 'yield_takt'] as const;
export type AgentRole = (typeof AGENT_ROLES)[number];

const d = (role: AgentRole, name: string, goal: string, tools: string[], autonomy: AgentDeclaration['autonomy']): AgentDeclaration =>
  Object.freeze({ id: `agent.${role}` as const, role: name, goal, tools: Object.freeze(tools) as string[], autonomy, verify: 'twin' as const, audit: 'part11' as const });

export const AGENTS: Readonly<Record<AgentRole, AgentDeclaration>> = Object.freeze({
  orchestrator: d(
    'orchestrator',
    'Plant Orchestrator',
    'Run the batch plan: ingest the batch record, rehearse candidates on the twin, have the chosen one policy-evaluated, arbitrate contested setpoints on quality before takt, hold for the named QA reviewer, and write the genealogy and release package. Writes no setpoint itself.',
    ['mes.read_batch_record', 'twin.simulate', 'policy.evaluate', 'approval.request', 'audit.write_release_package'],
    'L0',
  ),
  blend_dispense: d(
    'blend_dispense',
    'Blend and dispense',
    'Blend to the in-line NIR end point: the upper confidence bound of the moving-block RSD under the acceptance limit, block mean 90–110 % of target, for consecutive blocks.',
    ['nir.score', 'twin.simulate', 'plc.write_setpoint'],
    'L1',
  ),
  granulate_dry: d(
    'granulate_dry',
    'Granulate and dry',
    'Dry the granulate to the LOD end point, confirmed by the product temperature climbing toward the inlet, without leaving the approved inlet-air and airflow ranges.',
    ['twin.simulate', 'plc.write_setpoint'],
    'L1',
  ),
  compress_fill: d(
    'compress_fill',
    'Compress and fill',
    'Keep tablet weight and hardness on target with predicted capping risk under the site threshold, by small fill-depth and compression-force moves rehearsed on the twin.',
    ['twin.simulate', 'press.read_force_curve', 'press.write_setpoint'],
    'L3',
  ),
  coat_dry: d(
    'coat_dry',
    'Coat and dry',
    'Reach the target coat weight gain without over-wetting (spray load within the pan’s drying capacity) or spray-drying.',
    ['twin.simulate', 'coater.write_setpoint'],
    'L3',
  ),
  defect_inspect: d(
    'defect_inspect',
    'Defect inspection',
    'Classify every six-camera frame set, keep the batch reject rate within the specification, and flag a reject threshold that rejects good tablets.',
    ['vision.stream'],
    'L1',
  ),
  quality_potency: d(
    'quality_potency',
    'Quality: potency',
    'Score NIR spectra for potency and assemble the release evidence: each prediction tied to its spectrum hash and model version, the mean and its confidence interval inside the specification.',
    ['nir.score', 'nir.evidence_chain'],
    'L1',
  ),
  quality_conf: d(
    'quality_conf',
    'Quality: content uniformity',
    'Keep confidence that the batch meets USP <905> content uniformity: watch the weight RSD and the expected acceptance value, and hold the turret speed when either nears its limit.',
    ['twin.simulate', 'press.write_setpoint'],
    'L0',
  ),
  yield_takt: d(
    'yield_takt',
    'Yield and takt',
    'Keep the line on takt inside the design space; when a quality request outranks a speed-up, re-plan by other means such as re-sequencing the next changeover.',
    ['twin.simulate', 'press.write_setpoint', 'plc.write_setpoint'],
    'L1',
  ),
});
