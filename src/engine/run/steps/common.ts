/**
 * What the steps of a run share: the run's limits, the design space, recipe moves toward the rehearsed candidate,
 * agents' proposals sent through the guarded writer. A step imports these from here, never from another step.
 */
import type { AgentOutput, Proposal } from '../../../agents/types.js';
import type { PolicyBundle } from '../../../policy/index.js';
import { LkError } from '../../../errors.js';
import type { StepContext, WriteOutcome } from '../step-context.js';
import type { StepServices } from '../step-services.js';
import type { ArbitrationAttribute } from '../../../domain/policy.js';

export interface Limit {
  readonly min: number;
  readonly max: number;
  readonly unit: string;
  readonly maxStep: number;
}

/** The policy bundle in force. @throws LkError LK_POLICY_BUNDLE when none is loaded (every write would be denied anyway). */
export function bundleOf(services: Pick<StepServices, 'policy'>): PolicyBundle {
  const b = services.policy();
  if (!b) throw new LkError('LK_POLICY_BUNDLE', 'no policy bundle is loaded: the run cannot move any setpoint');
  return b;
}

/** Approved limits of the run's product × tooling, for the given setpoint roles (tag unit, max step), keyed by role. */
export function limitsOf(services: Pick<StepServices, 'policy'>, ctx: StepContext, setpoints: readonly string[]): Record<string, Limit> {
  const approved = bundleOf(services).designSpace.approved(ctx.run.product, ctx.run.tooling).setpoints;
  const out: Record<string, Limit> = {};
  // by role: the design space is approved on the site's tags
  for (const id of setpoints) {
    const l = approved[ctx.tagOf(id)];
    if (l) out[id] = { min: l.min, max: l.max, unit: l.unit, maxStep: l.maxStep };
  }
  return out;
}

/** A number from the run's data or record, or the fallback. */
export function num(v: unknown, fallback: number): number {
  return typeof v === 'number' && Number.isFinite(v) ? v : fallback;
}

/** The batch record's field at a dotted path. */
export function recordAt(ctx: Pick<StepContext, 'run'>, path: string): unknown {
  let v: unknown = ctx.run.record;
  for (const k of path.split('.')) v = v && typeof v === 'object' ? (v as Record<string, unknown>)[k] : undefined;
  return v;
}

/** The run's effective limits (request ∩ record ∩ site). */
export function runLimits(ctx: StepContext): Record<string, number> {
  const l = ctx.run.limits as Record<string, unknown>;
  const out: Record<string, number> = {};
  for (const [k, v] of Object.entries(l ?? {})) {
    const value = v && typeof v === 'object' ? (v as { value?: unknown }).value : v;
    if (typeof value === 'number' && Number.isFinite(value)) out[k] = value;
  }
  return out;
}

/**
 * Recipe download for a unit: move each setpoint toward the rehearsed candidate, by at most its approved
 * max_step (the design space bounds one move). Moves smaller than a deadband are not proposed. `model` is the
 * twin the candidate was rehearsed on, for an agent that must name its model (else policy denies MODEL_MISSING).
 */
export async function moveTowardCandidate(ctx: StepContext, services: Pick<StepServices, 'policy'>, agent: string, tool: string, setpoints: readonly string[], attribute: ArbitrationAttribute, why: string): Promise<WriteOutcome | null> {
  const rehearsed = ctx.data['candidate'] as { setpoints?: Record<string, { value: number; unit: string }>; model?: { id: string; version: number } } | undefined;
  const candidate = rehearsed?.setpoints;
  if (!candidate) return null;
  const limits = limitsOf(services, ctx, setpoints);
  const current = await ctx.readings(setpoints);
  const moves: { setpoint: string; value: { value: number; unit: string } }[] = [];
  for (const sp of setpoints) {
    const target = candidate[sp];
    const cur = current.get(sp);
    const lim = limits[sp];
    if (!target || !cur || !lim) continue;
    const diff = target.value - cur.value;
    if (Math.abs(diff) <= Math.max(1e-6, lim.maxStep * 0.02)) continue;
    const step = Math.sign(diff) * Math.min(Math.abs(diff), lim.maxStep * 0.98);
    moves.push({ setpoint: sp, value: { value: +(cur.value + step).toPrecision(6), unit: cur.unit } });
  }
  if (moves.length === 0) return null;
  // the move comes from the twin that rehearsed the candidate: the writer checks that model in the registry
  const model = rehearsed.model ? { model: { id: rehearsed.model.id, version: String(rehearsed.model.version) } } : {};
  // a vector is written whole or not at all: the low-risk setpoints (which an attended L3 agent may move) go as
  // one vector, the others (which wait for a reviewer or QA) as another, so one does not hold the other back
  const info = bundleOf(services).content.setpoints;
  const low = (m: { setpoint: string }): boolean => info[ctx.tagOf(m.setpoint)]?.lowRisk === true;
  const groups = [moves.filter(low), moves.filter((m) => !low(m))].filter((g) => g.length > 0);
  let last: WriteOutcome | null = null;
  for (const g of groups) last = await ctx.propose({ agent, moves: g, attribute, justification: why, ...model }, tool);
  return last;
}

/** Send an agent's proposals through the guarded writer; returns how many were written. A vector the writer already answered in this step without writing it is not sent again (it is in the log). */
export async function proposeAll(ctx: StepContext, out: AgentOutput, tool: string): Promise<{ written: number; other: string[] }> {
  let written = 0;
  const other: string[] = [];
  for (const p of out.proposals) {
    if (ctx.answered(p)) continue;
    const r = await ctx.propose(toWrite(p), tool);
    if (r.status === 'written') written++;
    else other.push(r.status);
  }
  return { written, other };
}

/** An agent's proposal as the guarded writer takes it. */
export function toWrite(p: Proposal): Parameters<StepContext['propose']>[0] {
  return {
    agent: p.agent,
    moves: p.moves.map((m) => ({ setpoint: m.setpoint, value: { value: m.value, unit: m.unit } })),
    attribute: p.attribute,
    ...(p.serves?.length ? { serves: p.serves } : {}),
    ...(p.predicted ? { predicted: p.predicted } : {}),
    justification: p.justification,
    ...(p.model ? { model: { id: p.model.id, version: String(p.model.version) } } : {}),
  };
}
