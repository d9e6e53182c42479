/**
 * Step 05: compression. agent.compress_fill keeps weight and hardness on target with capping risk under the
 * threshold (moves rehearsed on the fitted twin); agent.yield_takt asks for turret speed when the press is
 * behind takt and agent.quality_conf asks to hold it when content uniformity is near its limit. The
 * orchestrator arbitrates the contested turret speed on quality, not order (the spec's rule 1): the loser
 * is declined with its score and reason, recorded in the audit trail and the genealogy, and re-plans by
 * other means. Runs until the batch's tablets are pressed.
 */
import { decide as compressDecide, PRESS_SETPOINTS, type CompressFillInput } from '../../../agents/compress-fill.js';
import { decide as confDecide } from '../../../agents/quality-conf.js';
import type { Reading as AgentReading } from '../../../agents/types.js';
import { decide as taktDecide, replan } from '../../../agents/yield-takt.js';
import { contestOutcome, contestText, type ArbitrationRequest, type ArbitrationResult } from '../../../arbitration/index.js';
import type { StepHandler } from '../types.js';
import { convertUnit } from '../../../domain/units.js';
import { LkError } from '../../../errors.js';
import { initialMonitor, observe, type MonitorLimits, type MonitorState } from '../../../quality/index.js';
import type { PressSamples } from '../quality.js';
import type { StepContext } from '../step-context.js';
import { TWIN_FIDELITY } from '../../../models/golden.js';
import { ModelLost } from '../model-watch.js';
import { FIDELITY_ATTRIBUTES, fidelityText, pressFidelity, type PressFidelity } from './press-fidelity.js';
import { limitsOf, num, proposeAll, recordAt, runLimits, toWrite } from './common.js';

export const COMPRESS_DECIDE_PMIN = 5;
export const COMPRESS_TIMEOUT_PMIN = 24 * 60;
const PMIN = 60_000;
const MAX_READINGS = 60;

export const compress: StepHandler = async (ctx, services) => {
  const { run } = ctx;
  const twin = services.models.twin(run.tenant);
  const ds = limitsOf(services, ctx, PRESS_SETPOINTS) as CompressFillInput['designSpace'];
  const limits = runLimits(ctx);
  const targets = pressTargets(ctx, limits);
  const weightRsdMaxPct = num(limits['weightRsdMaxPct'], num(recordAt(ctx, 'specifications.tablet_weight.rsd_max_pct'), 2));
  const cappingThresholdPct = num(ctx.data['cappingThresholdPct'], num(limits['cappingRiskPct'], 1.5));
  const batchTablets = num(recordAt(ctx, 'batch_size.tablets'), 300_000);
  const planned = (ctx.data['candidate'] as { predicted?: { tabletsPerHour?: number } } | undefined)?.predicted?.tabletsPerHour;
  const blendRsd = (ctx.data['blend'] as { blendRsdPct?: number } | undefined)?.blendRsdPct;
  // every in-process sample of the batch, in mg / N / mm (the specification table judges them all), and the
  // OOS / OOT monitor that raises an exception the moment one leaves its limits or its trend
  const samples: PressSamples = { weightMg: [], hardnessN: [], thicknessMm: [] };
  const monitored = monitoredAttributes(ctx, targets);
  // the limits in force for the press's in-process attributes, in the genealogy once, so a chart of each attribute
  // can draw them (weight, hardness, thickness from the batch record; capping from the run's threshold)
  const inProcessLimits: Record<string, { min?: number; max: number; unit: string }> = { 'press.CappingRate': { max: cappingThresholdPct, unit: '%' } };
  for (const m of monitored) inProcessLimits[m.tag] = { min: m.limits.min, max: m.limits.max, unit: m.unit };
  ctx.event('step', `in-process limits: ${Object.entries(inProcessLimits).map(([tag, l]) => `${tag} ${l.min !== undefined ? `${+l.min.toPrecision(4)}–` : '≤ '}${+l.max.toPrecision(4)} ${l.unit}`).join(', ')}`, { limits: inProcessLimits }, { agent: 'agent.orchestrator' });
  let monitor: MonitorState = initialMonitor();
  const excursions = new Map<string, number>();
  // the first move, before the press starts (no tablet measured yet): compress_fill rehearses one step from the recipe on the fitted
  // twin alone (no measured bias yet; the twin's fidelity against this press is judged at every round below)
  let firstWritten = 0;
  {
    const r0 = await ctx.readings(PRESS_SETPOINTS);
    const cur0: Partial<Record<(typeof PRESS_SETPOINTS)[number], number>> = {};
    for (const sp of PRESS_SETPOINTS) {
      const v = r0.get(sp)?.value;
      if (v !== undefined) cur0[sp] = v;
    }
    if (PRESS_SETPOINTS.every((sp) => cur0[sp] !== undefined && ds[sp])) {
      const first = ctx.agent('compress_fill.decide', compressDecide, {
        now: ctx.now, seed: run.seed, weights: [], hardness: [], capping: [], current: cur0 as Record<(typeof PRESS_SETPOINTS)[number], number>, targets, cappingThresholdPct, model: twin.ref, params: twin.model.params, validRanges: twin.model.validRanges, designSpace: ds, blindStart: true,
      }, twin.ref);
      firstWritten = (await proposeAll(ctx, first, 'press.write_setpoint')).written;
    }
  }
  // the press is set up for the batch before it starts: its first tablets are pressed at the setpoints in force,
  // not at the recipe the previous batch left (those would be start-up tablets outside the batch's limits)
  await services.sequencer.enter('COMPRESS', run.batch, ctx.signal);
  ctx.event('step', 'phase COMPRESS started on the line');
  // the cameras' counters run whenever the turret turns (before this step too): the batch's counts are what they
  // counted from here to the end of compression (counters are 32-bit and wrap)
  const cams0 = await ctx.readings(['vision.Inspected', 'vision.Rejected']);
  let weights: AgentReading[] = [];
  let hardness: AgentReading[] = [];
  let capping: AgentReading[] = [];
  let thickness: AgentReading[] = [];
  // the batch's latest weights whatever the setpoints: content uniformity (quality_conf) is the batch's, moves and all
  const recentWeights: AgentReading[] = [];
  // the setpoint vector the kept readings were taken at: what the agents and the fidelity check judge is what the
  // press makes at the setpoints in force, so any change (an agent's move, a takt move, an LKG revert) starts afresh
  let sampledAt: string | null = null;
  let fidelityChecks = 0;
  let lastFidelity: PressFidelity | null = null;
  let tablets = 0;
  let last = ctx.processNow;
  let lastDecision = last;
  const start = last;
  let written = firstWritten;
  let contests = 0;
  let decisions = 0;
  for (;;) {
    const tags = [...PRESS_SETPOINTS, 'press.TabletWeight', 'press.Hardness', 'press.Thickness', 'press.CappingRate', 'press.Output'];
    const r = await ctx.readings(tags);
    const now = ctx.processNow;
    const out = r.get('press.Output')?.value ?? 0;
    tablets += (out * (now - last)) / 3_600_000;
    last = now;
    const vector = PRESS_SETPOINTS.map((sp) => { const v = r.get(sp)?.value; return v === undefined ? '?' : String(+v.toPrecision(6)); }).join('|');
    if (vector !== sampledAt) {
      sampledAt = vector;
      weights = [];
      hardness = [];
      capping = [];
      thickness = [];
    }
    for (const [tag, xs] of [['press.TabletWeight', weights], ['press.Hardness', hardness], ['press.CappingRate', capping], ['press.Thickness', thickness], ['press.TabletWeight', recentWeights]] as const) {
      const x = r.get(tag);
      if (x) {
        xs.push({ ...x });
        if (xs.length > MAX_READINGS) xs.splice(0, xs.length - MAX_READINGS);
      }
    }
    for (const m of monitored) {
      const x = r.get(m.tag);
      const v = x ? convertUnit(x.value, x.unit, m.unit) : undefined;
      if (v === undefined) continue;
      const kept = samples[m.key];
      if (kept.length < MAX_SAMPLES) kept.push(v);
      const o = observe(monitor, m.tag, v, centred(m, kept));
      monitor = o.state;
      for (const f of o.findings) {
        // one exception per attribute and kind in a step: values that hover at a limit start many excursions, and a
        // reviewer needs the deviation once, with the first excursion's evidence; every later excursion is in the
        // genealogy, and the specification table counts every sample outside its limits
        const n = (excursions.get(`${f.kind}:${f.attribute}`) ?? 0) + 1;
        excursions.set(`${f.kind}:${f.attribute}`, n);
        if (n === 1) {
          ctx.exception({ kind: f.kind, key: `${f.kind}:${f.attribute}:${ctx.attempt}`, by: 'agent.orchestrator', tag: m.tag, title: f.text, evidence: { attribute: f.attribute, value: f.value, unit: f.unit, limits: f.limits, rule: f.rule, sample: f.index, tablets: Math.round(tablets) } });
        } else {
          ctx.event('qc', `${f.text} (excursion ${n} of this step; exception raised at the first)`, { attribute: f.attribute, value: f.value, rule: f.rule, sample: f.index, excursion: n }, { agent: 'agent.orchestrator', tag: m.tag });
        }
      }
    }
    if (tablets >= batchTablets) {
      // the cameras inspect the press output in line: their counters over the compression are the batch's
      const cams = await ctx.readings(['vision.Inspected', 'vision.Rejected']);
      const counted = (tag: string): number => {
        const end = cams.get(tag)?.value;
        const begin = cams0.get(tag)?.value;
        return end === undefined ? 0 : begin === undefined ? end : (end - begin + 2 ** 32) % 2 ** 32;
      };
      const inspected = counted('vision.Inspected');
      const rejected = counted('vision.Rejected');
      const w = weights.map((x) => x.value);
      const mean = w.reduce((a, b) => a + b, 0) / Math.max(1, w.length);
      return {
        status: 'SUCCEEDED',
        detail: `Pressed ${Math.round(tablets).toLocaleString('en')} tablets; last weights ${mean.toFixed(1)} mg on a ${targets.weightMg} mg target, hardness ${avg(hardness).toFixed(0)} N (${targets.hardnessMinN}–${targets.hardnessMaxN} N), capping ${avg(capping).toFixed(2)} % under ${cappingThresholdPct} %; ${decisions} agent rounds, ${written} moves written, ${contests} turret-speed contests arbitrated on quality.`,
        data: { compress: { tablets: Math.round(tablets), weightMeanMg: mean, hardnessMeanN: avg(hardness), cappingMeanPct: avg(capping), written, contests, inspected, rejected, samples, fidelity: { checks: fidelityChecks, last: lastFidelity } } },
      };
    }
    const current: Partial<Record<(typeof PRESS_SETPOINTS)[number], number>> = {};
    for (const sp of PRESS_SETPOINTS) {
      const v = r.get(sp)?.value;
      if (v !== undefined) current[sp] = v;
    }
    const haveAll = PRESS_SETPOINTS.every((sp) => current[sp] !== undefined && ds[sp]);
    if (haveAll && now - lastDecision >= COMPRESS_DECIDE_PMIN * PMIN && weights.length >= 5) {
      lastDecision = now;
      decisions++;
      ctx.sensors(r);
      await ctx.tool('press.read_force_curve', { window: weights.length }, () => ctx.readings(['press.MainForce', 'press.PreForce', 'press.EjectionForce', 'press.DwellTime']), (f) => ({
        summary: `main ${fmt(f.get('press.MainForce')?.value)} kN, pre ${fmt(f.get('press.PreForce')?.value)} kN, ejection ${fmt(f.get('press.EjectionForce')?.value, 0)} N, dwell ${fmt(f.get('press.DwellTime')?.value, 1)} ms`,
        result: Object.fromEntries([...f].map(([k, v]) => [k, v.value])),
      }));
      const cur = current as Record<(typeof PRESS_SETPOINTS)[number], number>;
      // R8: does the twin still describe this plant at the setpoints in force? If not, it is lost for this run
      const fid = pressFidelity(twin.model.params, cur, { weights, hardness, thickness, capping }, twin.fidelity ?? { from: 'site', acceptance: TWIN_FIDELITY });
      fidelityChecks++;
      lastFidelity = fid;
      ctx.event('fidelity', `${twin.ref.id} v${twin.ref.version} against the press: ${fidelityText(fid)}${fid.ok ? '' : ' — beyond the card\'s acceptance'}`, { model: twin.ref, ...fid }, { agent: 'agent.orchestrator' });
      if (!fid.ok) {
        const out = fid.residuals.filter((x) => !x.ok);
        const raised = ctx.exception({
          kind: 'MODEL_FIDELITY', key: `MODEL_FIDELITY:${twin.ref.id}`, by: 'agent.orchestrator', tag: FIDELITY_ATTRIBUTES.find((a) => a.attribute === out[0]?.attribute)?.tag ?? 'press.Hardness',
          title: `MODEL_FIDELITY ${twin.ref.id} v${twin.ref.version}: ${out.map((x) => x.reason).join('; ')}`,
          evidence: { model: twin.ref, acceptanceFrom: fid.acceptanceFrom, setpoints: fid.setpoints, residuals: fid.residuals, tablets: Math.round(tablets) },
        });
        // once per run: after a person resumed a run whose model was lost, its agents stay at L0 and the step goes on
        if (raised) throw new ModelLost('twin', 'LK_MODEL_FIDELITY', `${twin.ref.id} v${twin.ref.version} no longer predicts the press at the setpoints in force (${out.map((x) => x.attribute).join(', ')} beyond the card's acceptance)`);
      }
      const cf = ctx.agent('compress_fill.decide', compressDecide, {
        now: ctx.now, seed: run.seed + decisions, weights, hardness, capping, current: cur, targets, cappingThresholdPct, model: twin.ref, params: twin.model.params, validRanges: twin.model.validRanges, designSpace: ds,
      }, twin.ref);
      const qc = ctx.agent('quality_conf.decide', confDecide, { now: ctx.now, weights: recentWeights, turretSpeed: cur['press.TurretSpeed'], targets: { weightMg: targets.weightMg, weightRsdMaxPct }, params: twin.model.params, ...(typeof blendRsd === 'number' ? { blendRsdPct: blendRsd } : {}) }, twin.ref, 'agent.quality_conf');
      const target = planned ?? out;
      const yt = ctx.agent('yield_takt.decide', taktDecide, { now: ctx.now, outputTabletsPerHour: out, targetTabletsPerHour: target, turretSpeed: cur['press.TurretSpeed'], designSpace: ds['press.TurretSpeed'] }, null, 'agent.yield_takt');
      const raise = yt.proposals[0];
      const hold = qc.verdict.holdSpeed ? qc.proposals[0] : undefined;
      if (raise && hold) {
        contests++;
        // the orchestrator's round: two requests for one setpoint, decided on the quality attributes
        // the writer arbitrates the site's tag that plays the turret-speed role
        const turret = ctx.tagOf('press.TurretSpeed');
        const reqs: ArbitrationRequest[] = [raise, hold].map((p, i) => ({ id: `${run.id}:${ctx.step.seq}:${ctx.attempt}:c${decisions}:${i}`, agent: p.agent, setpoint: turret, value: { value: p.moves[0]!.value, unit: p.moves[0]!.unit }, attribute: p.attribute, justification: p.justification, at: ctx.now }));
        // arbitrated against the owners and escalations in force and persisted by the writer with the round's audit
        // entry: a deadlock is pending for a person (GET /arbitration/escalations) and holds the setpoint
        const res = await ctx.contest({
          agent: 'agent.orchestrator', setpoint: turret, requests: reqs,
          outcome: (r) => {
            const rec = roundRecord(r, turret);
            return { record: rec, reason: rec.outcome === 'escalated' ? 'DEADLOCK_EQUAL_RANK' : rec.declined.map((d) => d.reason).join('; ') || 'no contest', summary: contestText(contestOutcome(turret, r)) };
          },
        });
        for (const d of res.declined) {
          if (d.request.agent !== 'agent.yield_takt') continue;
          const plan = ctx.agent('yield_takt.replan', (i: Parameters<typeof replan>) => replan(...i), [
            { setpoint: d.request.setpoint, reason: d.reason, score: d.score },
            { now: ctx.now, outputTabletsPerHour: out, targetTabletsPerHour: target, remainingTablets: Math.max(0, batchTablets - tablets), nextChangeover: { planned: true, plannedMin: 90, offlineMin: 35 } },
          ] as Parameters<typeof replan>, null, 'agent.yield_takt');
          ctx.event('recommendation', `agent.yield_takt re-plans: ${plan.action} (${plan.detail})`, { replan: plan }, { agent: 'agent.yield_takt' });
        }
      } else if (raise) {
        await ctx.propose(toWrite(raise), 'press.write_setpoint');
      }
      // what the agents judge next is what the press makes at its new setpoints (the readings start afresh there)
      const res = await proposeAll(ctx, cf, 'press.write_setpoint');
      written += res.written;
    }
    if (now - start > COMPRESS_TIMEOUT_PMIN * PMIN) return { status: 'HELD', detail: `${Math.round(tablets)} of ${batchTablets} tablets after ${COMPRESS_TIMEOUT_PMIN} process minutes: a person decides.` };
    await ctx.tick();
  }
};

/**
 * What the audit trail and the genealogy keep of one turret-speed round: its one outcome, the winner (none when
 * the owner keeps the setpoint or the round escalated), the losers with score and reason, and the escalation.
 */
function roundRecord(r: ArbitrationResult, turret: string): { outcome: string; winners: { agent: string; attribute: string; score: number; value: number | null }[]; declined: { agent: string; setpoint: string; score: number; reason: string }[]; escalated: ArbitrationResult['escalated'] } {
  const o = contestOutcome(turret, r);
  const winners = o.kind === 'won' && !o.winner.owner ? [{ agent: o.winner.agent, attribute: o.winner.attribute, score: o.winner.score, value: r.winners[0]?.valueInSetpointUnit ?? null }] : [];
  const declined = o.kind === 'won' ? o.declined.map((d) => ({ agent: d.agent, setpoint: d.setpoint, score: d.score, reason: d.reason })) : [];
  return { outcome: o.kind, winners, declined, escalated: r.escalated };
}

/** Samples that fix the centre line of an attribute the batch record gives no target for (hardness, thickness). */
const BASELINE_SAMPLES = 10;

/**
 * The monitor's limits for the next sample. Weight is charted against the record's target; hardness and thickness
 * have only min–max, so their trend is judged against the press's own level over its first samples of the step
 * (a Phase I baseline), not against the middle of the specification: OOT says "this moved", OOS says "out of limits".
 */
function centred(m: Monitored, kept: readonly number[]): MonitorLimits {
  if (m.key === 'weightMg' || kept.length < BASELINE_SAMPLES) return m.limits;
  const base = kept.slice(0, BASELINE_SAMPLES);
  return { ...m.limits, target: +(base.reduce((a, b) => a + b, 0) / base.length).toPrecision(6) };
}

/** In-process samples kept per attribute for the specification table (a batch's press samples are far fewer). */
const MAX_SAMPLES = 20_000;

export interface Monitored {
  readonly tag: string;
  readonly key: keyof PressSamples;
  readonly unit: string;
  readonly limits: MonitorLimits;
}

/**
 * What the press aims at, in the units the agents and the monitor work in (mg, N): the record's weight target in
 * its own mass unit converted, the hardness range from the run's limits (limits.ts converted the record's force
 * unit to N), else from the record converted.
 */
export function pressTargets(ctx: Pick<StepContext, 'run'>, limits: Record<string, number>): { weightMg: number; weightTolerancePct: number; hardnessMinN: number; hardnessMaxN: number } {
  return {
    weightMg: num(recordIn(ctx, 'specifications.tablet_weight', 'target', 'mg'), 300),
    weightTolerancePct: num(limits['weightTolerancePct'], 5),
    hardnessMinN: num(limits['hardnessMinN'], num(recordIn(ctx, 'specifications.hardness', 'min', 'N'), 80)),
    hardnessMaxN: num(limits['hardnessMaxN'], num(recordIn(ctx, 'specifications.hardness', 'max', 'N'), 150)),
  };
}

/**
 * The press attributes watched in process, with the batch record's limits in the unit the specification table
 * uses (mg, N, mm): weight against target ± tolerance, hardness and thickness against their min–max (centre line
 * their mid-point). `t` is in mg and N already (the press's targets); the thickness comes from the record in its
 * own unit. An attribute whose record unit does not convert is not watched (the table says why).
 */
export function monitoredAttributes(ctx: Pick<StepContext, 'run'>, t: { weightMg: number; weightTolerancePct: number; hardnessMinN: number; hardnessMaxN: number }): Monitored[] {
  const out: Monitored[] = [];
  const tol = t.weightTolerancePct / 100;
  const target = t.weightMg;
  if (Number.isFinite(target)) out.push({ tag: 'press.TabletWeight', key: 'weightMg', unit: 'mg', limits: { min: target * (1 - tol), max: target * (1 + tol), target, unit: 'mg' } });
  const hMin = t.hardnessMinN;
  const hMax = t.hardnessMaxN;
  if (Number.isFinite(hMin) && Number.isFinite(hMax)) out.push({ tag: 'press.Hardness', key: 'hardnessN', unit: 'N', limits: { min: hMin, max: hMax, target: (hMin + hMax) / 2, unit: 'N' } });
  const th = recordAt(ctx, 'specifications.thickness') as { min?: number; max?: number; unit?: string } | undefined;
  const tMin = th?.min !== undefined && th.unit ? convertUnit(th.min, th.unit, 'mm') : undefined;
  const tMax = th?.max !== undefined && th.unit ? convertUnit(th.max, th.unit, 'mm') : undefined;
  if (tMin !== undefined && tMax !== undefined) out.push({ tag: 'press.Thickness', key: 'thicknessMm', unit: 'mm', limits: { min: tMin, max: tMax, target: (tMin + tMax) / 2, unit: 'mm' } });
  return out;
}

/**
 * A quantity of the batch record (`<path>.<field>` in `<path>.unit`) in `to`; undefined when the record has none.
 * @throws LkError LK_BATCH_RECORD_INVALID when its unit does not convert to `to` (the record's validation admits
 *   only units of the right kind, so this is a record that bypassed it: the press does not guess a target)
 */
function recordIn(ctx: Pick<StepContext, 'run'>, path: string, field: string, to: string): number | undefined {
  const v = recordAt(ctx, `${path}.${field}`);
  const unit = recordAt(ctx, `${path}.unit`);
  if (typeof v !== 'number') return undefined;
  if (typeof unit !== 'string') return v;
  const x = convertUnit(v, unit, to);
  if (x === undefined) throw new LkError('LK_BATCH_RECORD_INVALID', `the batch record's ${path}.${field} is in ${unit}, which does not convert to ${to}`);
  return x;
}

function avg(xs: readonly { value: number }[]): number {
  return xs.length === 0 ? Number.NaN : xs.reduce((a, b) => a + b.value, 0) / xs.length;
}

function fmt(v: number | undefined, digits = 2): string {
  return v === undefined ? '?' : v.toFixed(digits);
}
