/**
 * The safety inputs the guarded writer computes itself (src/engine/capping.ts):
 * the capping risk of a press vector from the tenant's twin, and the model
 * registry's record of a named model — both unknown, with why, whenever they
 * cannot be computed, never an exception and never the proposer's value.
 */
import { describe, expect, it } from 'vitest';
import { cappingRisk, isPressMove, modelRecordOf, PRESS_SETPOINTS } from '../../src/engine/capping.js';
import type { WriteProposal } from '../../src/engine/writer-types.js';
import { LkError } from '../../src/errors.js';
import { pressModel } from '../../src/twin/process.js';
import type { TwinModel } from '../../src/twin/simulate.js';
import { cloneParams, NOMINAL_PARAMS } from '../../src/twin/params.js';
import { view, viewsOf } from '../helpers/models.js';
import { bundle } from './policy-helpers.js';

const TWIN: TwinModel = {
  id: 'process-twin-v1',
  version: 1,
  params: cloneParams(NOMINAL_PARAMS),
  validRanges: { 'press.MainForce': { min: 6, max: 24, unit: 'kN' }, 'press.PreForce': { min: 0.5, max: 5.5, unit: 'kN' } },
};
const CURRENT = new Map<string, number | null>([
  ['press.FillDepth', 8.5],
  ['press.MainForce', 12],
  ['press.PreForce', 2.5],
  ['press.TurretSpeed', 40],
]);
const p = (moves: WriteProposal['moves'], over: Partial<WriteProposal> = {}): WriteProposal => ({
  id: 'p1', tenant: 'acme-pharma', batch: 'B-1', agent: 'agent.compress_fill', product: 'ir-family-a', tooling: 'round-10mm-ff', moves, attribute: 'content_uniformity', justification: 't', ...over,
});
const nominal = (mf: number, pf: number): number => pressModel({ fillDepthMm: 8.5, mainForceKn: mf, preForceKn: pf, turretRpm: 40 }, NOMINAL_PARAMS.press).cappingPct / 100;

describe('capping risk of a press vector', () => {
  it('applies the proposed moves (any compatible unit) to the current press setpoints and predicts with the twin', () => {
    const r = cappingRisk(() => TWIN, p([{ setpoint: 'press.MainForce', value: '16500 N' }]), CURRENT, bundle);
    expect(r.model).toEqual({ id: 'process-twin-v1', version: '1' });
    expect(r.press).toEqual({ 'press.FillDepth': 8.5, 'press.MainForce': 16.5, 'press.PreForce': 2.5, 'press.TurretSpeed': 40 });
    expect(r.risk).toBeCloseTo(nominal(16.5, 2.5), 12);
    expect(r.error).toBeUndefined();
    // a second move of the vector counts too
    expect(cappingRisk(() => TWIN, p([{ setpoint: 'press.MainForce', value: '16.5 kN' }, { setpoint: 'press.PreForce', value: '3.5 kN' }]), CURRENT, bundle).risk).toBeCloseTo(nominal(16.5, 3.5), 12);
  });

  it('is unknown, with why, when there is no twin, the twin is not usable, a value is unknown, or the vector is outside the twin’s valid ranges', () => {
    const move = p([{ setpoint: 'press.MainForce', value: '13 kN' }]);
    expect(cappingRisk(undefined, move, CURRENT, bundle)).toEqual({ risk: null, model: null, error: 'LK_MODEL_MISSING' });
    for (const code of ['LK_MODEL_NOT_VALIDATED', 'LK_MODEL_NOT_PINNED', 'LK_MODEL_CORRUPT', 'LK_MODEL_TENANT'] as const) {
      expect(cappingRisk(() => { throw new LkError(code); }, move, CURRENT, bundle)).toEqual({ risk: null, model: null, error: code });
    }
    expect(cappingRisk(() => { throw new Error('boom'); }, move, CURRENT, bundle).risk).toBeNull();
    expect(cappingRisk(() => TWIN, move, new Map([...CURRENT, ['press.TurretSpeed', null]]), bundle)).toMatchObject({ risk: null, error: 'CURRENT_VALUE_UNKNOWN' });
    expect(cappingRisk(() => TWIN, p([{ setpoint: 'press.MainForce', value: '13 Cel' }]), CURRENT, bundle)).toMatchObject({ risk: null, error: 'UNIT_INCOMPATIBLE' });
    expect(cappingRisk(() => TWIN, p([{ setpoint: 'press.MainForce', value: '25 kN' }]), CURRENT, bundle)).toMatchObject({ risk: null, error: 'LK_MODEL_OUT_OF_RANGE', model: { id: 'process-twin-v1' } });
    const broken = { ...TWIN, params: { ...TWIN.params, press: { ...TWIN.params.press, capForce: Number.NaN } } };
    expect(cappingRisk(() => broken, move, CURRENT, bundle)).toMatchObject({ risk: null, error: 'PREDICTION_NOT_FINITE' });
  });

  it('knows which moves are press moves (the bundle says so) and which setpoints the twin needs', () => {
    expect(isPressMove(bundle, 'press.TurretSpeed')).toBe(true);
    expect(isPressMove(bundle, 'coater.SprayRate')).toBe(false);
    expect(isPressMove(bundle, 'press.Unknown')).toBe(false);
    expect(isPressMove(null, 'press.MainForce')).toBe(false);
    expect([...PRESS_SETPOINTS]).toEqual(['press.FillDepth', 'press.MainForce', 'press.PreForce', 'press.TurretSpeed']);
  });
});

describe('the registry record of a named model', () => {
  const models = viewsOf(view(), view({ id: 'process-twin-v2', version: 2, status: 'draft' }), view({ tenant: 'borealis-bio', id: 'process-twin-v7', version: 7 }));
  it('is the tenant’s own record in full, only "another tenant’s" for another tenant’s id [R9], null when unknown or unanswerable', () => {
    expect(modelRecordOf(models, p([], { model: { id: 'process-twin-v2', version: '2' } }))).toEqual({ owner: 'own', family: 'process-twin', version: 2, status: 'draft', sites: ['site-ravenna'], sha256: 'a'.repeat(64) });
    expect(modelRecordOf(models, p([], { model: { id: 'process-twin-v7', version: '7' } }))).toEqual({ owner: 'other_tenant' });
    expect(modelRecordOf(models, p([], { model: { id: 'process-twin-v8', version: '8' } }))).toBeNull();
    expect(modelRecordOf(undefined, p([], { model: { id: 'process-twin-v1', version: '1' } }))).toBeNull();
    expect(modelRecordOf(() => { throw new Error('database locked'); }, p([], { model: { id: 'process-twin-v1', version: '1' } }))).toBeNull();
    expect(modelRecordOf(models, p([]))).toBeUndefined();
  });
});
