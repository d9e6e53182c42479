import { describe, expect, it } from 'vitest';
import { createRng } from '../../src/clock.js';
import { recordBatches } from '../../connectors/sim/ground/batches.js';
import { evaluateTwin, fitTwin, TWIN_ATTRIBUTES } from '../../src/twin/fit.js';
import { DEFAULT_DESIGN_SPACE, widen } from '../../src/twin/setpoints.js';
import { perturbParams } from '../../connectors/sim/ground/truth.js';
import { NOMINAL_PARAMS } from '../../src/twin/params.js';

describe('twin fitting (Levenberg–Marquardt on recorded batches)', () => {
  // attributes whose nominal error on these plants is well above measurement noise
  const FITTED = ['blendRsdPct', 'lodPct', 'tabletWeightMg', 'thicknessMm', 'hardnessN', 'cappingPct', 'ejectionN', 'coatExhaustC', 'dissolutionPct'] as const;

  for (const seed of [11, 20261121]) {
    it(`predicts held-out batches of plant ${seed} at least 30 % better than the nominal twin`, () => {
      const truth = perturbParams(NOMINAL_PARAMS, seed);
      const rng = createRng(seed);
      const train = recordBatches(truth, widen(DEFAULT_DESIGN_SPACE, 0.1), 14, rng, 'T');
      const held = recordBatches(truth, DEFAULT_DESIGN_SPACE, 8, rng, 'H');
      const fit = fitTwin(train, { tenant: 'acme-pharma', seed });
      const nominal = evaluateTwin(NOMINAL_PARAMS, held);
      const fitted = evaluateTwin(fit.params, held);
      const oracle = evaluateTwin(truth, held);
      for (const attr of FITTED) {
        expect(fitted[attr].rmse, attr).toBeLessThan(0.7 * nominal[attr].rmse);
      }
      // and near the noise floor that the true parameters reach (parameter uncertainty of 14 batches allowed for)
      for (const attr of TWIN_ATTRIBUTES) expect(fitted[attr].rmse, attr).toBeLessThan(1.75 * oracle[attr].rmse + 1e-9);
      expect(fit.card.tenant).toBe('acme-pharma');
      expect(fit.card.trainingData.ids).toEqual(train.map((b) => b.id));
      expect(fit.card.metrics['rmse.cappingPct']).toBeGreaterThan(0);
      expect(fit.card.validRanges['press.MainForce']!.min).toBeLessThanOrEqual(DEFAULT_DESIGN_SPACE['press.MainForce'].min);
    });
  }

  it('perturbParams is deterministic per seed and leaves geometry alone', () => {
    const a = perturbParams(NOMINAL_PARAMS, 5);
    expect(perturbParams(NOMINAL_PARAMS, 5)).toEqual(a);
    expect(perturbParams(NOMINAL_PARAMS, 6)).not.toEqual(a);
    expect(a.press.punchDiameterMm).toBe(NOMINAL_PARAMS.press.punchDiameterMm);
    expect(a.press.capForce).not.toBe(NOMINAL_PARAMS.press.capForce);
    expect(Math.abs(a.press.capForce / NOMINAL_PARAMS.press.capForce - 1)).toBeLessThanOrEqual(0.2);
  });

  it('refuses too few batches and non-finite observations', () => {
    const truth = perturbParams(NOMINAL_PARAMS, 1);
    const batches = recordBatches(truth, DEFAULT_DESIGN_SPACE, 3, createRng(1));
    expect(() => fitTwin(batches.slice(0, 2), { tenant: 't' })).toThrow(expect.objectContaining({ code: 'LK_VALIDATION' }));
    batches[1]!.press[0]!.hardnessN = Number.NaN;
    expect(() => fitTwin(batches, { tenant: 't' })).toThrow(expect.objectContaining({ code: 'LK_VALUE_INVALID' }));
  });
});
