/**
 * Steps 03 and 04: blend to the NIR end point (agent.blend_dispense) and dry to the LOD end point
 * (agent.granulate_dry). Each starts its phase on the line, moves the unit toward the rehearsed candidate
 * through the guarded writer, then reads the unit every poll and asks its agent every few process minutes.
 */
import { decide as blendDecide, type BlendDispenseInput, type BlendScan } from '../../../agents/blend-dispense.js';
import { decide as dryDecide, type GranulateDryInput } from '../../../agents/granulate-dry.js';
import type { Reading as AgentReading } from '../../../agents/types.js';
import type { StepContext } from '../step-context.js';
import type { StepHandler } from '../types.js';
import { limitsOf, moveTowardCandidate, num, proposeAll, recordAt } from './common.js';

/** Agents decide every this many process minutes (and at once when something ends). */
export const BLEND_DECIDE_PMIN = 2;
export const DRY_DECIDE_PMIN = 3;
/** A unit that has not reached its end point after this long is held for a person. */
export const BLEND_TIMEOUT_PMIN = 180;
/**
 * After the blender reaches its target revolutions, the scans of this many process minutes still complete the
 * blocks — and at least enough new scans for the end point's consecutive blocks on their own (block +
 * consecutive − 1): the engine sees the latest scan at each reading, so on a fast plant (the simulator's time
 * scale) the minutes alone may bring too few scans to judge.
 */
export const BLEND_SETTLE_PMIN = 3;
export const DRY_TIMEOUT_PMIN = 300;
/** Scans kept for the blend agent (its moving blocks look back no further). */
const MAX_SCANS = 120;
const MAX_READINGS = 60;

const PMIN = 60_000;

function push<T>(xs: T[], x: T, max: number): void {
  xs.push(x);
  if (xs.length > max) xs.splice(0, xs.length - max);
}

export const blend: StepHandler = async (ctx, services) => {
  const { run } = ctx;
  await services.sequencer.enter('BLEND', run.batch, ctx.signal);
  ctx.event('step', 'phase BLEND started on the line');
  await moveTowardCandidate(ctx, services, 'agent.blend_dispense', 'plc.write_setpoint', ['blender.Speed', 'blender.TargetRevolutions'], 'content_uniformity', 'recipe: toward the rehearsed candidate');
  const limits: BlendDispenseInput['limits'] = { rsdMaxPct: num(recordAt(ctx, 'specifications.blend_rsd_max_pct'), 5), meanMinPct: 90, meanMaxPct: 110, block: 10, consecutive: 3, confidence: 0.95 };
  const lim = limitsOf(services, ctx, ['blender.TargetRevolutions'])['blender.TargetRevolutions'];
  const scans: BlendScan[] = [];
  let lastSeq = -1;
  const start = ctx.processNow;
  let lastDecision = start;
  let raised = 0;
  let stoppedAt: number | null = null;
  let seen = 0;
  let seenAtStop = 0;
  const settleScans = limits.block + limits.consecutive - 1;
  for (;;) {
    const r = await ctx.readings(['nir.BlendConcentration', 'nir.SpectrumId', 'blender.Revolutions', 'blender.TargetRevolutions', 'blender.BlendRsd']);
    const seq = r.get('nir.SpectrumId')?.value;
    const conc = r.get('nir.BlendConcentration')?.value;
    if (seq !== undefined && conc !== undefined && seq > lastSeq && conc > 0) {
      lastSeq = seq;
      seen++;
      push(scans, { seq, concentrationPct: conc, at: ctx.processNow }, MAX_SCANS);
    }
    const revs = r.get('blender.Revolutions')?.value;
    const target = r.get('blender.TargetRevolutions')?.value;
    const stopped = revs !== undefined && target !== undefined && revs >= target - 0.5;
    // the blocks in flight when the blender reaches its target still count: judge them before asking for more
    if (stopped && stoppedAt === null) {
      stoppedAt = ctx.processNow;
      seenAtStop = seen;
    }
    const settled = stoppedAt !== null && ctx.processNow - stoppedAt >= BLEND_SETTLE_PMIN * PMIN && seen - seenAtStop >= settleScans;
    if (revs !== undefined && target !== undefined && (ctx.processNow - lastDecision >= BLEND_DECIDE_PMIN * PMIN || settled)) {
      lastDecision = ctx.processNow;
      ctx.sensors(r);
      const input: BlendDispenseInput = { now: ctx.now, scans, revolutions: revs, targetRevolutions: target, limits, ...(lim ? { targetRevolutionsLimit: lim } : {}) };
      const out = await ctx.tool('nir.score', { scans: scans.length, block: limits.block, revolutions: +revs.toFixed(1) }, () => ctx.agent('blend_dispense.decide', blendDecide, input), (o) => {
        const b = o.verdict.blocks.at(-1);
        return { summary: b ? `block ${b.from}–${b.to}: mean ${b.meanPct.toFixed(1)} %, RSD ${b.rsdPct.toFixed(2)} % (UCL ${b.uclRsdPct.toFixed(2)} % vs ${limits.rsdMaxPct} %)${o.verdict.endpoint ? ', end point' : ''}` : `${scans.length} predictions, no full block yet` };
      });
      if (out.verdict.endpoint) {
        const ok = out.verdict.blocks.filter((b) => b.ok).slice(-limits.consecutive);
        return {
          status: 'SUCCEEDED',
          detail: `Blend end point at ${revs.toFixed(0)} revolutions: ${ok.length} consecutive blocks of ${limits.block} NIR predictions with the upper 95 % bound of the RSD at ${ok.map((b) => b.uclRsdPct.toFixed(2)).join(', ')} % (limit ${limits.rsdMaxPct} %), means ${ok.map((b) => b.meanPct.toFixed(1)).join(', ')} %.`,
          data: { blend: { revolutions: revs, blendRsdPct: r.get('blender.BlendRsd')?.value ?? null, blocks: ok } },
        };
      }
      if (!settled) {
        // still turning, or the last blocks are still being judged
      } else if (out.proposals.length > 0) {
        const res = await proposeAll(ctx, out, 'plc.write_setpoint');
        raised += res.written;
        stoppedAt = null;
        if (res.written === 0) {
          return { status: 'HELD', detail: `The blender stopped at ${target.toFixed(0)} revolutions without the NIR end point; more revolutions were proposed (${res.other.join(', ')}), not applied: a person decides.` };
        }
      } else {
        return { status: 'HELD', detail: `The blender stopped at ${target.toFixed(0)} revolutions without the NIR end point and no further move is possible: a person decides.` };
      }
    }
    if (ctx.processNow - start > BLEND_TIMEOUT_PMIN * PMIN) return { status: 'HELD', detail: `No blend end point after ${BLEND_TIMEOUT_PMIN} process minutes (${raised} raises): a person decides.` };
    await ctx.tick();
  }
};

export const dry: StepHandler = async (ctx, services) => {
  const { run } = ctx;
  await services.sequencer.enter('DRY', run.batch, ctx.signal);
  ctx.event('step', 'phase DRY started on the line');
  await moveTowardCandidate(ctx, services, 'agent.granulate_dry', 'plc.write_setpoint', ['fluidbed.InletAirTemp', 'fluidbed.Airflow'], 'yield', 'recipe: toward the rehearsed candidate');
  const twin = services.models.twin(run.tenant);
  const ds = limitsOf(services, ctx, ['fluidbed.InletAirTemp', 'fluidbed.Airflow']);
  const targetLodPct = num(recordAt(ctx, 'specifications.lod_end_pct'), 2);
  const lod: AgentReading[] = [];
  const temp: AgentReading[] = [];
  const start = ctx.processNow;
  let lastDecision = start;
  for (;;) {
    const r = await ctx.readings(['fluidbed.Lod', 'fluidbed.ProductTemp', 'fluidbed.InletAirTemp', 'fluidbed.Airflow', 'fluidbed.InletAirTempActual', 'fluidbed.DryingTime']);
    const l = r.get('fluidbed.Lod');
    const t = r.get('fluidbed.ProductTemp');
    if (l) push(lod, { ...l }, MAX_READINGS);
    if (t) push(temp, { ...t }, MAX_READINGS);
    const inlet = r.get('fluidbed.InletAirTemp')?.value;
    const air = r.get('fluidbed.Airflow')?.value;
    if (inlet !== undefined && air !== undefined && lod.length > 0 && ctx.processNow - lastDecision >= DRY_DECIDE_PMIN * PMIN && ds['fluidbed.InletAirTemp'] && ds['fluidbed.Airflow']) {
      lastDecision = ctx.processNow;
      ctx.sensors(r);
      const input: GranulateDryInput = {
        now: ctx.now, lod, productTemp: temp, inletAirTempC: inlet, airflowM3h: air, targetLodPct, model: twin.ref, params: twin.model.params.drying,
        designSpace: { 'fluidbed.InletAirTemp': ds['fluidbed.InletAirTemp'], 'fluidbed.Airflow': ds['fluidbed.Airflow'] },
      };
      const out = ctx.agent('granulate_dry.decide', dryDecide, input, twin.ref);
      const v = out.verdict;
      if (v.endpoint) {
        return {
          status: 'SUCCEEDED',
          detail: `Drying end point: LOD ${v.lodPct?.toFixed(2)} % ≤ ${targetLodPct} % with the product at ${v.productTempC?.toFixed(1)} °C near the inlet air (${inlet.toFixed(1)} °C), after ${(r.get('fluidbed.DryingTime')?.value ?? 0).toFixed(0)} min of drying.`,
          data: { dry: { lodPct: v.lodPct, productTempC: v.productTempC } },
        };
      }
      if (out.proposals.length > 0) await proposeAll(ctx, out, 'plc.write_setpoint');
    }
    if (ctx.processNow - start > DRY_TIMEOUT_PMIN * PMIN) return { status: 'HELD', detail: `No drying end point after ${DRY_TIMEOUT_PMIN} process minutes: a person decides.` };
    await ctx.tick();
  }
};

