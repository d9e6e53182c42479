/**
 * Steps 01 and 02: ingest the batch record, design-space limits and autonomy policy; rehearse candidate
 * setpoint vectors on the tenant's fitted twin, then policy-evaluate the chosen candidate (a dry run: the
 * decisions are what the policy engine would say now; nothing is written).
 */
import { evaluate } from '../../../policy/index.js';
import { DEFAULT_CONTEXT, type BatchContext as TwinBatchContext } from '../../../twin/predict.js';
import { rehearse as rehearseOnTwin } from '../../rehearsal.js';
import { twinDesignSpace, type ApprovedLimit } from '../../../twin/design-space.js';
import { DEFAULT_DESIGN_SPACE, SETPOINT_IDS, type DesignSpaceRanges } from '../../../twin/setpoints.js';
import { byRole, roleMapOf, type RoleMap } from '../../../domain/roles.js';
import { canonical, sha256Hex } from '../approval.js';
import type { StepHandler } from '../types.js';
import { bundleOf, num, recordAt, runLimits } from './common.js';

/** How many candidates a run rehearses (the spec's tool call: candidates as an integer, horizon "full batch"). */
export const REHEARSAL_CANDIDATES = 64;

export const ingest: StepHandler = async (ctx, services) => {
  const { run } = ctx;
  const record = await ctx.tool(
    'mes.read_batch_record',
    { tenant: run.tenant, batch: run.batch },
    () => services.mes.read(run.tenant, run.batch) as Record<string, unknown>,
    (r) => ({ summary: `${run.batch} ${String(r['product'])} × ${String(r['tooling'])}, ${num(recordAt(ctx, 'batch_size.tablets'), 0).toLocaleString('en')} tablets, QA reviewer ${String(r['qa_reviewer'])}, sha256 ${sha256Hex(canonical(r)).slice(0, 12)}…` }),
  );
  // the record a run executes is the one read when it started; a record changed in the MES since then is a new batch record
  const sha = sha256Hex(canonical(record));
  if (sha !== run.recordSha) {
    return { status: 'HELD', detail: `the batch record of ${run.batch} changed in the MES since the run started (sha256 ${sha.slice(0, 12)}… ≠ ${run.recordSha.slice(0, 12)}…); a person decides` };
  }
  const bundle = bundleOf(services);
  const ds = bundle.designSpace.approved(run.product, run.tooling);
  const limits = runLimits(ctx);
  ctx.event('step', `batch record ${run.batch} ingested; design space ${run.product} × ${run.tooling} (${Object.keys(ds.setpoints).length} setpoints); bundle ${bundle.version.slice(0, 12)}…`, { recordSha256: sha, bundle: bundle.version, limits });
  const lim = Object.entries(limits).map(([k, v]) => `${k} ${v}`).join(', ');
  return {
    status: 'SUCCEEDED',
    detail: `Batch record ${run.batch} (${String(record['mes_ref'] ?? 'MES')}) ingested with the approved design space ${run.product} × ${run.tooling} (${ds.approvedBy}) and the autonomy policy of bundle ${bundle.version.slice(0, 12)}…; limits in force: ${lim}.`,
    data: { bundleVersion: bundle.version },
  };
};

export const rehearse: StepHandler = async (ctx, services) => {
  const { run } = ctx;
  const bundle = bundleOf(services);
  const twin = services.models.twin(run.tenant);
  // the twin speaks roles; the design space is approved on the site's tags
  const roles = roleMapOf(services.site);
  const space = rehearsalSpace(bundle.designSpace.approved(run.product, run.tooling).setpoints, roles, `${run.product} × ${run.tooling}`);
  const limits = runLimits(ctx);
  const cappingThresholdPct = num(limits['cappingRiskPct'], bundle.content.cappingRiskThreshold * 100);
  const context: TwinBatchContext = {
    ...DEFAULT_CONTEXT,
    batchTablets: num(recordAt(ctx, 'batch_size.tablets'), DEFAULT_CONTEXT.batchTablets),
    targetLodPct: num(recordAt(ctx, 'specifications.lod_end_pct'), DEFAULT_CONTEXT.targetLodPct),
    targetWeightGainPct: num(recordAt(ctx, 'specifications.coat_weight_gain_pct'), DEFAULT_CONTEXT.targetWeightGainPct),
    targetWeightMg: num(recordAt(ctx, 'specifications.tablet_weight.target'), DEFAULT_CONTEXT.targetWeightMg),
  };
  const sim = await ctx.tool(
    'twin.simulate',
    { candidates: REHEARSAL_CANDIDATES, horizon: 'full batch', model: `${twin.ref.id}@${twin.ref.version}`, seed: run.seed },
    // the same path as the API's rehearsals: 64 candidates run here, a larger plan would go to a worker
    () => rehearseOnTwin(twin.model, { candidates: REHEARSAL_CANDIDATES, horizon: 'full batch', seed: run.seed, designSpace: space, cappingThresholdPct, context }),
    (r) => {
      const best = r.ranked[0];
      return {
        summary: best
          ? `${r.requested} candidates, ${r.ranked.length} ranked, ${r.discarded.length} discarded; best #${best.index}: capping ${best.predicted.cappingRiskPct.toFixed(2)} % < ${cappingThresholdPct} %, AV ${best.predicted.contentUniformityAv.toFixed(1)}, takt ${best.predicted.taktMin.toFixed(0)} min`
          : `${r.requested} candidates, none under the capping threshold of ${cappingThresholdPct} %`,
        result: { ranked: r.ranked.length, discarded: r.discarded.length, best: best ? { index: best.index, predicted: best.predicted } : null, discardReasons: countReasons(r.discarded) },
      };
    },
  );
  const best = sim.ranked[0];
  if (!best) return { status: 'HELD', detail: `No candidate of ${sim.requested} stays under the capping threshold of ${cappingThresholdPct} % on ${twin.ref.id}; the run waits for a person.` };
  ctx.event('recommendation', `twin candidate #${best.index} chosen (rank 1 of ${sim.ranked.length})`, { setpoints: best.setpoints, predicted: best.predicted, model: twin.ref }, { agent: 'agent.orchestrator' });

  // policy.evaluate of the chosen candidate: what the policy engine says of each move now (nothing is written)
  const owners = ownerOf(bundle);
  // the moves of the units this line has (a role not mapped is a unit it does not have: nothing to evaluate)
  const onLine = Object.entries(best.setpoints).filter(([setpoint]) => roles.has(setpoint));
  const current = await ctx.readings(onLine.map(([setpoint]) => setpoint));
  const decisions = await ctx.tool(
    'policy.evaluate',
    { candidate: best.index, moves: onLine.length, release: true },
    () => {
      const now = ctx.now;
      const moves = onLine.map(([setpoint, v]) =>
        evaluate({ agent: owners.get(ctx.tagOf(setpoint)) ?? 'agent.orchestrator', setpoint: ctx.tagOf(setpoint), value: { value: v.value, unit: v.unit }, product: run.product, tooling: run.tooling }, bundle, {
          now, batchState: 'running', current: current.get(setpoint)?.value ?? null, lastMove: null, reviewer: null, attendance: null, approval: null,
        }),
      );
      const release = evaluate({ kind: 'release', agent: 'agent.orchestrator', setpoint: '', value: 0, product: run.product, tooling: run.tooling }, bundle, { now, batchState: 'running', reviewer: String(run.record['qa_reviewer'] ?? '') || null });
      return { moves, release };
    },
    (r) => {
      const inside = insideCount(r.moves);
      return {
        summary: `${inside} of ${r.moves.length} moves inside the design space; release ${r.release.outcome === 'needs_qa' ? 'held for QA' : r.release.outcome}`,
        result: { inside, total: r.moves.length, outcomes: r.moves.map((d) => ({ setpoint: d.inputs.request.setpoint, outcome: d.outcome, reasons: d.reasons })), release: { outcome: r.release.outcome, reasons: r.release.reasons } },
      };
    },
  );
  const inside = insideCount(decisions.moves);
  const absent = SETPOINT_IDS.filter((id) => !roles.has(id));
  return {
    status: 'SUCCEEDED',
    detail: `Rehearsed ${sim.requested} candidate setpoint vectors over the full batch on ${twin.ref.id} (v${twin.ref.version}); ${sim.discarded.length} discarded (${Object.entries(countReasons(sim.discarded)).map(([k, n]) => `${n} ${k}`).join(', ') || 'none'}). Candidate #${best.index} predicts capping ${best.predicted.cappingRiskPct.toFixed(2)} % (threshold ${cappingThresholdPct} %), weight ${best.predicted.tabletWeightMg.toFixed(1)} mg, hardness ${best.predicted.hardnessN.toFixed(0)} N, AV ${best.predicted.contentUniformityAv.toFixed(1)}; policy: ${inside} of ${decisions.moves.length} moves inside the design space, release held for QA.${absent.length > 0 ? ` Not on this line, rehearsed on the twin's built-in ranges and never written: ${absent.join(', ')}.` : ''}`,
    data: { candidate: { index: best.index, setpoints: best.setpoints, predicted: best.predicted, model: twin.ref }, cappingThresholdPct, twinContext: { batchTablets: context.batchTablets, targetLodPct: context.targetLodPct, targetWeightGainPct: context.targetWeightGainPct, targetWeightMg: context.targetWeightMg } },
  };
};

/**
 * The design space the twin rehearses in, by role: the site's approved limits (keyed by its tags). A setpoint role the
 * site does not map is a unit the line does not have (no coater on a line of uncoated tablets): the twin, which
 * models the whole process, rehearses it on its built-in range, and nothing is ever proposed for it. A role the
 * site maps without approved limits is still refused (LK_POLICY_BUNDLE): the twin does not invent a limit for a unit
 * that exists. Pure.
 */
export function rehearsalSpace(approved: Readonly<Record<string, ApprovedLimit>>, roles: RoleMap, label: string): DesignSpaceRanges {
  const absent: Record<string, ApprovedLimit> = {};
  for (const id of SETPOINT_IDS) if (!roles.has(id)) absent[id] = DEFAULT_DESIGN_SPACE[id];
  return twinDesignSpace({ ...absent, ...byRole(approved, roles) }, label);
}

/** Moves inside the approved design space and the instrument range (whatever else the policy says of them now). */
function insideCount(ds: readonly { reasons: readonly string[] }[]): number {
  return ds.filter((d) => !d.reasons.some((r) => r === 'OUTSIDE_DESIGN_SPACE' || r === 'OUTSIDE_INSTRUMENT_RANGE' || r === 'DESIGN_SPACE_UNKNOWN' || r === 'TAG_UNKNOWN')).length;
}

function countReasons(discarded: readonly { reasons: readonly { code: string }[] }[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const d of discarded) for (const r of d.reasons) out[r.code] = (out[r.code] ?? 0) + 1;
  return out;
}

/** The unit agent allowed to move each setpoint (first in the bundle's order, orchestrator excluded). */
export function ownerOf(bundle: ReturnType<typeof bundleOf>): Map<string, string> {
  const out = new Map<string, string>();
  for (const [id, a] of Object.entries(bundle.content.agents)) {
    if (id === 'agent.orchestrator' || id === 'agent.quality_conf' || id === 'agent.yield_takt') continue;
    for (const sp of a.allow) if (!out.has(sp)) out.set(sp, id);
  }
  return out;
}
