/**
 * Property tests of the range rules, and a differential test against a
 * small independent reference: it reads design-space.yaml itself and calls
 * UCUM directly for every value (no compiled conversions, no shared code
 * with src/policy).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { AUTONOMY_LEVELS, DENY_REASONS, type PolicyContext } from '../../src/domain/policy.js';
import { convertUnit, isValidUnit } from '../../src/domain/units.js';
import { evaluate } from '../../src/policy/index.js';
import { T0, bundle, context, policyDir, request, site } from './policy-helpers.js';

/**
 * Setpoints an attended L3 agent may move without review, with the agent allowed to and the model it names
 * (agent.coat_dry's bundle entry names no model family: it names none).
 */
const MOVABLE = [
  ['press.MainForce', 'agent.compress_fill', 'process-twin-v1', '1'],
  ['press.PreForce', 'agent.compress_fill', 'process-twin-v1', '1'],
  ['press.TurretSpeed', 'agent.compress_fill', 'process-twin-v1', '1'],
  ['press.FillDepth', 'agent.compress_fill', 'process-twin-v1', '1'],
  ['coater.SprayRate', 'agent.coat_dry', null, null],
  ['coater.Airflow', 'agent.coat_dry', null, null],
  ['coater.PanSpeed', 'agent.coat_dry', null, null],
] as const;

/** The model a case names, as the context carries it (the registry's record comes from policy-helpers' context). */
const named = (model: string | null, version: string | null): Pick<PolicyContext, 'model'> => ({ model: model && version ? { id: model, version } : undefined });

/** Compatible units a caller may use per tag unit (all convert through UCUM). */
const ALT_UNITS: Record<string, string[]> = {
  kN: ['kN', 'N', 'mN', 'daN'],
  '{rev}/min': ['{rev}/min', '/min', '/h'],
  mm: ['mm', 'cm', 'um', 'm'],
  'g/min': ['g/min', 'g/h', 'kg/h', 'mg/s'],
  'm3/h': ['m3/h', 'L/min', 'm3/min', 'L/s'],
};

const PRODUCTS = ['ir-family-a', 'ir-family-b'] as const;

interface RawLimit {
  min: number;
  max: number;
  unit: string;
  max_step: number;
}

const raw = parse(readFileSync(join(policyDir, 'design-space.yaml'), 'utf8')) as { design_spaces: { product: string; setpoints: Record<string, RawLimit> }[] };

/** The reference: raw YAML + per-call UCUM. Returns the class of outcome an attended L3 agent must get. */
function reference(product: string, setpoint: string, value: number, unit: string, current: number): 'allow' | 'deny' | 'needs_qa' {
  const lim = raw.design_spaces.find((d) => d.product === product)!.setpoints[setpoint]!;
  const [eq, name] = setpoint.split('.') as [string, string];
  const tag = site.equipment.find((e) => e.id === eq)!.tags.find((t) => t.name === name)!;
  const x = convertUnit(value, unit, tag.unit);
  if (x === undefined || !Number.isFinite(x)) return 'deny';
  const lo = convertUnit(lim.min, lim.unit, tag.unit)!;
  const hi = convertUnit(lim.max, lim.unit, tag.unit)!;
  const step = Math.abs(convertUnit(lim.max_step, lim.unit, tag.unit)! - convertUnit(0, lim.unit, tag.unit)!);
  const eps = (a: number, b: number): number => 1e-9 * Math.max(1, Math.abs(a), Math.abs(b));
  const ir = tag.range!;
  if (x < ir.min - eps(ir.min, ir.max) || x > ir.max + eps(ir.min, ir.max)) return 'deny';
  if (Math.abs(x - current) > step + eps(lo, hi)) return 'deny';
  if (x < lo - eps(lo, hi) || x > hi + eps(lo, hi)) return 'needs_qa';
  return 'allow';
}

const movable = fc.constantFrom(...MOVABLE);

/** A value in the tag unit biased towards the bounds, expressed in a random compatible unit. */
const caseArb = fc
  .tuple(movable, fc.constantFrom(...PRODUCTS), fc.double({ min: -0.2, max: 1.2, noNaN: true }), fc.constantFrom(-1, 0, 1, 2), fc.oneof(fc.double({ min: -1.5, max: 1.5, noNaN: true }), fc.constantFrom(-1, 1, 1 + 1e-6, -1 - 1e-6, 1.001, -1.001)), fc.nat(3))
  .map(([[setpoint, agent, model, version], product, frac, snap, stepFrac, unitPick]) => {
    const lim = bundle.designSpace.approved(product, 'round-10mm-ff').setpoints[setpoint]!;
    const span = lim.max - lim.min;
    // snap: 0 → exact lower bound, 1 → exact upper bound, 2 → a hair outside the upper bound, -1 → anywhere
    const x = snap === 0 ? lim.min : snap === 1 ? lim.max : snap === 2 ? lim.max + span * 1e-6 : lim.min + frac * span;
    const units = ALT_UNITS[lim.unit]!;
    const unit = units[unitPick % units.length]!;
    const value = convertUnit(x, lim.unit, unit)!;
    const current = x - stepFrac * lim.maxStep;
    return { setpoint, agent, model, version, product, x, unit, value, current, lim };
  });

function l3(c: { model: string | null; version: string | null; current: number }): PolicyContext {
  return context({ autonomy: { agent: 'L3' }, ...named(c.model, c.version), current: c.current, lastMove: null });
}

describe('policy properties (fast-check)', () => {
  it('[LIM-SETPOINT-BOUNDS] [R4] every value outside its range after unit conversion is needs_qa or deny, never allow', () => {
    fc.assert(
      fc.property(caseArb, (c) => {
        fc.pre(c.x < c.lim.min - 1e-6 * (c.lim.max - c.lim.min) || c.x > c.lim.max + 1e-7 * (c.lim.max - c.lim.min));
        const d = evaluate(request({ agent: c.agent, setpoint: c.setpoint, value: `${c.value} ${c.unit}`, product: c.product }), bundle, l3(c));
        expect(['needs_qa', 'deny']).toContain(d.outcome);
      }),
      { numRuns: 400 },
    );
  });

  it('[LIM-SETPOINT-BOUNDS] every value inside its range, within the step, and otherwise allowed is allow', () => {
    fc.assert(
      fc.property(caseArb, (c) => {
        const inside = c.x >= c.lim.min && c.x <= c.lim.max;
        fc.pre(inside && Math.abs(c.x - c.current) <= c.lim.maxStep * 0.999);
        const d = evaluate(request({ agent: c.agent, setpoint: c.setpoint, value: { value: c.value, unit: c.unit }, product: c.product }), bundle, l3(c));
        expect(d.outcome).toBe('allow');
        expect(d.valueInSetpointUnit).toBeCloseTo(c.x, 6);
      }),
      { numRuns: 400 },
    );
  });

  it('NaN, Infinity, non-numeric strings and unknown units are always denied', () => {
    const nonFinite = fc.constantFrom(Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY);
    const junk = fc.string({ maxLength: 30 }).filter((s) => !/^\s*[+-]?(\d|\.\d)/.test(s));
    const unknownUnit = fc
      .tuple(fc.double({ min: 1, max: 20, noNaN: true }), fc.stringMatching(/^[a-z]{2,6}$/))
      .filter(([, u]) => !isValidUnit(u))
      .map(([v, u]) => `${v} ${u}`);
    const wrongType = fc.oneof(fc.boolean(), fc.constant(null), fc.array(fc.double()), fc.object());
    fc.assert(
      fc.property(movable, fc.oneof(nonFinite, junk, unknownUnit, wrongType), ([setpoint, agent, model, version], value) => {
        const d = evaluate({ ...request({ agent, setpoint }), value: value as never }, bundle, l3({ model, version, current: 10 }));
        expect(d.outcome).toBe('deny');
        expect(d.reasons.some((r) => ['VALUE_NOT_FINITE', 'VALUE_NOT_NUMERIC', 'UNIT_UNKNOWN', 'UNIT_INCOMPATIBLE'].includes(r))).toBe(true);
      }),
      { numRuns: 400 },
    );
  });

  it('agrees with the independent reference implementation of the range rules', () => {
    fc.assert(
      fc.property(caseArb, (c) => {
        const d = evaluate(request({ agent: c.agent, setpoint: c.setpoint, value: `${c.value} ${c.unit}`, product: c.product }), bundle, l3(c));
        expect(d.outcome).toBe(reference(c.product, c.setpoint, c.value, c.unit, c.current));
      }),
      { numRuns: 500 },
    );
  });

  it('deny reasons are identical at every autonomy level (checks do not depend on the level)', () => {
    fc.assert(
      fc.property(caseArb, fc.constantFrom('running', 'hold'), fc.boolean(), (c, batchState, attended) => {
        const denies = AUTONOMY_LEVELS.map((level) =>
          evaluate(
            request({ agent: c.agent, setpoint: c.setpoint, value: `${c.value} ${c.unit}`, product: c.product }),
            bundle,
            context({ autonomy: { agent: level }, ...named(c.model, c.version), current: c.current, batchState, attendance: attended ? { operator: 'x', lastPresenceAt: T0 } : null }),
          ).reasons.filter((r) => DENY_REASONS.has(r)),
        );
        for (const r of denies) expect(r).toEqual(denies[0]);
      }),
      { numRuns: 200 },
    );
  });
});
