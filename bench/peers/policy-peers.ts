/**
 * The policy decision's peers, built from the same loaded bundle and fed the
 * same requests: Cedar (cedar-wasm, the checks in entity attributes and one
 * policy's conditions), casbin (an ABAC model: limits as policy rows, request
 * attributes in the matcher) and json-rules-engine (one rule whose conditions
 * are the checks, design-space limits and allow-lists as computed facts).
 *
 * Each answers "may this move be written?" — true when none of linekeeper's
 * deny checks fires: agent known and the setpoint on its allow-list, a design
 * space for (product, tooling, setpoint), the value inside the instrument
 * range, |value − current| ≤ max step, the rate since the last move ≤ max
 * rate, a writable batch state, the agent's model family owned, pinned to the
 * site, validated and the named version, and for a press move a known capping
 * risk under the threshold. The bench asserts that this equals linekeeper's
 * `outcome !== 'deny'` on every request. What linekeeper decides on top
 * (design-space bounds → QA, autonomy, attendance, approvals) the peers do not.
 * Values reach the peers already in the setpoint's unit (Cedar: integer
 * milli-units, it has no floats): the unit parsing and conversion is work
 * linekeeper does per call and they are spared.
 */
import * as cedar from '@cedar-policy/cedar-wasm/nodejs';
import { newEnforcer, newModelFromString, StringAdapter } from 'casbin';
import { Engine } from 'json-rules-engine';
import type { PolicyBundle } from '../../src/policy/index.js';
import { boundEpsilon } from '../../src/policy/value.js';

/** One request as the peers see it (numbers in the setpoint's unit). */
export interface Facts {
  agent: string;
  setpoint: string;
  product: string;
  tooling: string;
  value: number;
  current: number;
  last: { value: number; at: number } | null;
  now: number;
  batchState: string;
  /** The named model and the registry's record of it, or null when none is named. */
  model: { version: string; owner: string; family: string; recordVersion: number; status: string; sites: string[] } | null;
  /** Predicted capping risk (fraction) of the move's vector, or null when unknown. */
  capping: number | null;
}

const SCALE = 1000;
const milli = (x: number): number => Math.round(x * SCALE);

interface Limit {
  key: string;
  setpoint: string;
  step: number;
  rate: number;
  eps: number;
  imin: number;
  imax: number;
  ieps: number;
  press: boolean;
}

/** Every (product, tooling, setpoint) limit of the bundle, with the setpoint's instrument range. */
function limitsOf(bundle: PolicyBundle): Map<string, Limit> {
  const out = new Map<string, Limit>();
  for (const ds of Object.values(bundle.content.designSpaces)) {
    for (const [sp, lim] of Object.entries(ds.setpoints)) {
      const s = bundle.index.setpoints.get(sp);
      if (!s) continue;
      const ir = s.instrumentRange ?? { min: -1e300, max: 1e300 };
      const key = `${ds.product}|${ds.tooling}|${sp}`;
      out.set(key, { key, setpoint: sp, step: lim.maxStep, rate: lim.maxRatePerMin, eps: boundEpsilon(lim.min, lim.max), imin: ir.min, imax: ir.max, ieps: boundEpsilon(ir.min, ir.max), press: s.equipmentType === 'press' });
    }
  }
  return out;
}

// ── Cedar ──────────────────────────────────────────────────────────────────────────────────────────

export interface CedarPeer {
  /** One call as the bench times it: prebuilt arguments for `statefulIsAuthorized`. */
  call(f: Facts): cedar.StatefulAuthorizationCall;
  /** Number of policies in the set. */
  policies: number;
  version: string;
}

/**
 * Cedar: agents and limits as entities (attributes: allow-list, model family; step, rate, instrument range,
 * press), one permit whose conditions are the checks, preparsed once. Each call carries only its two entities.
 */
export function cedarPeer(bundle: PolicyBundle): CedarPeer {
  const site = bundle.content.site;
  const threshold = milli(bundle.content.cappingRiskThreshold * 100); // risk in milli-% (fractions are too small for milli-units)
  const states = [...bundle.index.writableBatchStates].map((s) => JSON.stringify(s)).join(', ');
  const policy =
    `permit(principal, action == Action::"write", resource) when {\n` +
    `  principal.allow.contains(resource.setpoint) &&\n` +
    `  context.value >= resource.imin && context.value <= resource.imax &&\n` +
    `  context.value - context.current <= resource.step && context.current - context.value <= resource.step &&\n` +
    `  (if context has lastValue then (context.value == context.lastValue ||\n` +
    `     (context.dt > 0 && (context.value - context.lastValue) * 60000 <= resource.rate * context.dt &&\n` +
    `                        (context.lastValue - context.value) * 60000 <= resource.rate * context.dt)) else true) &&\n` +
    `  [${states}].contains(context.batchState) &&\n` +
    `  (if principal has family then (context has model && context.model.owner == "own" && context.model.family == principal.family &&\n` +
    `     context.model.sites.contains(${JSON.stringify(site)}) && context.model.status == "validated" && context.model.recordVersion == context.model.version)\n` +
    `   else (if context has model then (context.model.owner == "own" && context.model.sites.contains(${JSON.stringify(site)}) &&\n` +
    `     context.model.status == "validated" && context.model.recordVersion == context.model.version) else true)) &&\n` +
    `  (if resource.press then (context has capping && context.capping <= ${threshold}) else true)\n` +
    `};`;
  const parsed = cedar.preparsePolicySet('lk', { staticPolicies: policy });
  if (parsed.type !== 'success') throw new Error(`cedar parse failed: ${JSON.stringify(parsed.errors)}`);
  const agents = new Map<string, cedar.EntityJson>();
  for (const [id, a] of Object.entries(bundle.content.agents)) {
    agents.set(id, { uid: { type: 'Agent', id }, attrs: { allow: [...a.allow], ...(a.modelFamily ? { family: a.modelFamily } : {}) }, parents: [] });
  }
  const limits = new Map<string, cedar.EntityJson>();
  for (const l of limitsOf(bundle).values()) {
    // integer milli-units; the 1e-9 relative bound tolerance vanishes in the rounding
    limits.set(l.key, { uid: { type: 'Limit', id: l.key }, attrs: { setpoint: l.setpoint, step: milli(l.step), rate: milli(l.rate), imin: milli(Math.max(l.imin, -1e12)), imax: milli(Math.min(l.imax, 1e12)), press: l.press }, parents: [] });
  }
  return {
    policies: 1,
    version: cedar.getCedarVersion(),
    call(f) {
      const key = `${f.product}|${f.tooling}|${f.setpoint}`;
      const entities = [agents.get(f.agent), limits.get(key)].filter((e): e is cedar.EntityJson => e !== undefined);
      const context: Record<string, cedar.CedarValueJson> = { value: milli(f.value), current: milli(f.current), batchState: f.batchState };
      if (f.last) Object.assign(context, { lastValue: milli(f.last.value), dt: f.now - f.last.at });
      if (f.model) context.model = { owner: f.model.owner, family: f.model.family, sites: f.model.sites, status: f.model.status, recordVersion: String(f.model.recordVersion), version: f.model.version };
      if (f.capping !== null) context.capping = milli(f.capping * 100);
      return { principal: { type: 'Agent', id: f.agent }, action: { type: 'Action', id: 'write' }, resource: { type: 'Limit', id: key }, context, preparsedPolicySetId: 'lk', entities };
    },
  };
}

/** Cedar's boundary cost alone: an empty policy set, no entities, an empty context (every call denies). */
export function cedarEmptyCall(): cedar.StatefulAuthorizationCall {
  const parsed = cedar.preparsePolicySet('empty', { staticPolicies: '' });
  if (parsed.type !== 'success') throw new Error('cedar: empty policy set failed to parse');
  return { principal: { type: 'Agent', id: 'a' }, action: { type: 'Action', id: 'write' }, resource: { type: 'Limit', id: 'x' }, context: {}, preparsedPolicySetId: 'empty', entities: [] };
}

/** Cedar's verdict, or a thrown error when the call failed. */
export function cedarAllows(call: cedar.StatefulAuthorizationCall): boolean {
  const r = cedar.statefulIsAuthorized(call);
  if (r.type !== 'success') throw new Error(`cedar failed: ${JSON.stringify(r.errors)}`);
  return r.response.decision === 'allow';
}

// ── casbin ─────────────────────────────────────────────────────────────────────────────────────────

const CASBIN_MODEL = `
[request_definition]
r = sub, obj, ctx

[policy_definition]
p = sub, obj, product, tooling, stepMax, rate, eps, lo, hi, press, family

[policy_effect]
e = some(where (p.eft == allow))

[matchers]
m = r.sub == p.sub && r.obj == p.obj && r.ctx.product == p.product && r.ctx.tooling == p.tooling && \\
  r.ctx.value >= p.lo && r.ctx.value <= p.hi && \\
  abs(r.ctx.value - r.ctx.current) <= p.stepMax && \\
  (r.ctx.hasLast == false || abs(r.ctx.value - r.ctx.lastValue) <= p.eps || \\
    (r.ctx.dtMin > 0 && abs(r.ctx.value - r.ctx.lastValue) / r.ctx.dtMin <= p.rate * 1.000000001)) && \\
  writable(r.ctx.batchState) && \\
  (r.ctx.hasModel == false ? p.family == "" : \\
    (r.ctx.modelOwner == "own" && (p.family == "" || r.ctx.modelFamily == p.family) && r.ctx.modelPinned && \\
     r.ctx.modelStatus == "validated" && r.ctx.modelRecordVersion == r.ctx.modelVersion)) && \\
  (p.press == "no" || (r.ctx.hasCapping && r.ctx.capping <= ${'${threshold}'}))
`;

export interface CasbinPeer {
  /** The request attributes casbin's matcher reads (built once per request, as the caller would). */
  ctx(f: Facts): Record<string, unknown>;
  allows(f: Facts, ctx: Record<string, unknown>): boolean;
  rules: number;
}

/** casbin (ABAC): one policy row per (agent, setpoint, product, tooling) with its limits; the checks in the matcher. */
export async function casbinPeer(bundle: PolicyBundle): Promise<CasbinPeer> {
  const site = bundle.content.site;
  const model = newModelFromString(CASBIN_MODEL.replace('${threshold}', String(bundle.content.cappingRiskThreshold)));
  const rows: string[] = [];
  const limits = limitsOf(bundle);
  for (const [agent, a] of Object.entries(bundle.content.agents)) {
    for (const sp of a.allow) {
      for (const l of limits.values()) {
        if (l.setpoint !== sp) continue;
        const [product, tooling] = l.key.split('|');
        // policy fields are strings: bounds are written with their tolerance added (a `+` in the matcher would concatenate)
        rows.push(['p', agent, sp, product, tooling, l.step + l.eps, l.rate, l.eps, l.imin - l.ieps, l.imax + l.ieps, l.press ? 'yes' : 'no', a.modelFamily ?? ''].join(', '));
      }
    }
  }
  const e = await newEnforcer(model, new StringAdapter(rows.join('\n')));
  const states = bundle.index.writableBatchStates;
  await e.addFunction('abs', (x: number) => Math.abs(x));
  await e.addFunction('writable', (s: string) => states.has(s));
  return {
    rules: rows.length,
    ctx: (f) => ({
      product: f.product,
      tooling: f.tooling,
      value: f.value,
      current: f.current,
      hasLast: f.last !== null,
      lastValue: f.last?.value ?? 0,
      dtMin: f.last ? (f.now - f.last.at) / 60_000 : 0,
      batchState: f.batchState,
      hasModel: f.model !== null,
      modelOwner: f.model?.owner ?? '',
      modelFamily: f.model?.family ?? '',
      modelPinned: f.model?.sites.includes(site) ?? false,
      modelStatus: f.model?.status ?? '',
      modelRecordVersion: String(f.model?.recordVersion ?? ''),
      modelVersion: f.model?.version ?? '',
      hasCapping: f.capping !== null,
      capping: f.capping ?? 0,
    }),
    allows: (f, ctx) => e.enforceSync(f.agent, f.setpoint, ctx),
  };
}

// ── json-rules-engine ──────────────────────────────────────────────────────────────────────────────

export interface RulesPeer {
  allows(f: Facts): Promise<boolean>;
}

/**
 * json-rules-engine: one rule "writable" whose `all` conditions are the checks; the design-space limit, the
 * allow-list and the derived step and rate are computed facts (the bundle's maps, looked up per request).
 */
export function rulesPeer(bundle: PolicyBundle): RulesPeer {
  const site = bundle.content.site;
  const limits = limitsOf(bundle);
  const agents = bundle.content.agents;
  const engine = new Engine([], { allowUndefinedFacts: true });
  engine.addOperator('isTrue', (a: unknown) => a === true);
  const limitOf = (f: Facts): Limit | undefined => limits.get(`${f.product}|${f.tooling}|${f.setpoint}`);
  type A = { factValue<T>(name: string): Promise<T> };
  const facts = async (al: A): Promise<Facts> => al.factValue<Facts>('request');
  engine.addFact('allowed', async (_p: unknown, al: A) => {
    const f = await facts(al);
    return agents[f.agent]?.allow.includes(f.setpoint) === true;
  });
  engine.addFact('limitKnown', async (_p: unknown, al: A) => limitOf(await facts(al)) !== undefined);
  engine.addFact('inInstrumentRange', async (_p: unknown, al: A) => {
    const f = await facts(al);
    const l = limitOf(f);
    return !!l && f.value >= l.imin - l.ieps && f.value <= l.imax + l.ieps;
  });
  engine.addFact('stepOk', async (_p: unknown, al: A) => {
    const f = await facts(al);
    const l = limitOf(f);
    return !!l && Math.abs(f.value - f.current) <= l.step + l.eps;
  });
  engine.addFact('rateOk', async (_p: unknown, al: A) => {
    const f = await facts(al);
    const l = limitOf(f);
    if (!l) return false;
    if (!f.last) return true;
    const dv = Math.abs(f.value - f.last.value);
    const dtMin = (f.now - f.last.at) / 60_000;
    return dv <= l.eps || (dtMin > 0 && dv / dtMin <= l.rate * (1 + 1e-9));
  });
  engine.addFact('modelOk', async (_p: unknown, al: A) => {
    const f = await facts(al);
    const family = agents[f.agent]?.modelFamily ?? null;
    if (!f.model) return family === null;
    const m = f.model;
    return m.owner === 'own' && (family === null || m.family === family) && m.sites.includes(site) && m.status === 'validated' && String(m.recordVersion) === m.version;
  });
  engine.addFact('cappingOk', async (_p: unknown, al: A) => {
    const f = await facts(al);
    const l = limitOf(f);
    return !!l && (!l.press || (f.capping !== null && f.capping <= bundle.content.cappingRiskThreshold));
  });
  const yes = (fact: string): { fact: string; operator: string; value: boolean } => ({ fact, operator: 'isTrue', value: true });
  engine.addRule({
    name: 'writable',
    conditions: {
      all: [
        yes('allowed'),
        yes('limitKnown'),
        yes('inInstrumentRange'),
        yes('stepOk'),
        yes('rateOk'),
        { fact: 'request', path: '$.batchState', operator: 'in', value: [...bundle.index.writableBatchStates] },
        yes('modelOk'),
        yes('cappingOk'),
      ],
    },
    event: { type: 'writable' },
  });
  return {
    allows: async (f) => (await engine.run({ request: f })).events.length > 0,
  };
}
