/**
 * The twin's fidelity at the press (R8): its prediction at the setpoints in force against the mean of the press's
 * readings there, judged by the card's acceptance — the default twin's card carries that section, a mean of fewer
 * than three readings is listed and not judged, and a plant whose tablets come out harder than the twin says is
 * beyond the acceptance with its residual.
 */
import { describe, expect, it } from 'vitest';
import type { Reading } from '../../src/agents/types.js';
import { FIDELITY_MIN_N, fidelityText, pressFidelity } from '../../src/engine/run/steps/press-fidelity.js';
import { TWIN_FIDELITY } from '../../src/models/golden.js';
import { pressModel } from '../../src/twin/process.js';
import { NOMINAL_PARAMS } from '../../src/twin/params.js';

const SP = { 'press.FillDepth': 8.8, 'press.MainForce': 10.5, 'press.PreForce': 3, 'press.TurretSpeed': 40 } as const;
const twin = pressModel({ fillDepthMm: 8.8, mainForceKn: 10.5, preForceKn: 3, turretRpm: 40 }, NOMINAL_PARAMS.press);
const readings = (tag: string, xs: number[]): Reading[] => xs.map((value, i) => ({ tag, value, unit: '', at: i }));
const card = { from: 'card' as const, acceptance: TWIN_FIDELITY };

describe('pressFidelity', () => {
  it('a plant that makes what the twin predicts is within the acceptance, each residual with its n and limit', () => {
    const f = pressFidelity(NOMINAL_PARAMS, SP, {
      weights: readings('press.TabletWeight', [1.01, 0.99, 1.005, 0.995, 1].map((k) => k * twin.tabletWeightMg)),
      hardness: readings('press.Hardness', [1.03, 0.97, 1.0].map((k) => k * twin.hardnessN)),
      thickness: readings('press.Thickness', [1, 1, 1].map((k) => k * twin.thicknessMm)),
      capping: readings('press.CappingRate', [twin.cappingPct, twin.cappingPct, twin.cappingPct + 0.3]),
    }, card);
    expect(f.ok).toBe(true);
    expect(f.residuals.map((r) => [r.attribute, r.n, r.ok])).toEqual([['tabletWeightMg', 5, true], ['hardnessN', 3, true], ['thicknessMm', 3, true], ['cappingPct', 3, true]]);
    expect(f.residuals[3]!.residual).toBeCloseTo(0.1, 9);
    expect(f.residuals[1]!.limit).toEqual({ maxRelResidualPct: 10 });
    expect([f.acceptanceFrom, f.setpoints]).toEqual(['card', { ...SP }]);
    expect(fidelityText(f)).toMatch(/^tabletWeightMg [\d.]+ vs [\d.]+ mg \(n 5, [+-][\d.e-]+ %, ≤ 5 %\); hardnessN/);
  });

  it('tablets 20 % harder than predicted are beyond the card (10 %); fewer than three readings are not judged', () => {
    const f = pressFidelity(NOMINAL_PARAMS, SP, {
      weights: readings('press.TabletWeight', [twin.tabletWeightMg, twin.tabletWeightMg]),
      hardness: readings('press.Hardness', [1.2, 1.21, 1.19].map((k) => k * twin.hardnessN)),
      thickness: [],
      capping: readings('press.CappingRate', [0.2, 0.2, 0.2]),
    }, card);
    expect(FIDELITY_MIN_N).toBe(3);
    expect(f.ok).toBe(false);
    const h = f.residuals.find((r) => r.attribute === 'hardnessN')!;
    expect([h.ok, +h.relPct!.toFixed(6)]).toEqual([false, 20]);
    expect(h.reason).toMatch(/> 10 %/);
    const w = f.residuals.find((r) => r.attribute === 'tabletWeightMg')!;
    expect([w.n, w.measuredMean, w.ok]).toEqual([0, null, true]);
    expect(fidelityText(f)).toMatch(/tabletWeightMg not judged \(n 0\)/);
    expect(fidelityText(f)).toMatch(/hardnessN .* OUT/);
  });
});
