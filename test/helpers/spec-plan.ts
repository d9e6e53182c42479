/**
 * The spec's batch plan, written out once for the tests as the oracle the code is compared with (never
 * derived from src/): seq, step, the agent that executes it, its main tool.
 */
export const SPEC_PLAN: readonly (readonly [string, string, string, string])[] = [
  ['01', 'ingest.batch_record', 'agent.orchestrator', 'mes.read_batch_record'],
  ['02', 'twin.rehearse', 'agent.orchestrator', 'twin.simulate'],
  ['03', 'blend.uniformity', 'agent.blend_dispense', 'nir.score'],
  ['04', 'granulate.dry', 'agent.granulate_dry', 'plc.write_setpoint'],
  ['05', 'compress.press', 'agent.compress_fill', 'press.write_setpoint'],
  ['06', 'coat.spray', 'agent.coat_dry', 'coater.write_setpoint'],
  ['07', 'inspect.tablets', 'agent.defect_inspect', 'vision.stream'],
  ['08', 'spectra.release_evidence', 'agent.quality_potency', 'nir.evidence_chain'],
  ['09', 'approval.batch_release', 'agent.orchestrator', 'approval.request'],
  ['10', 'release.genealogy', 'agent.orchestrator', 'audit.write_release_package'],
];
