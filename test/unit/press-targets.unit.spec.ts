/**
 * The press's targets and in-process limits in the units its agents and monitor work in (mg, N, mm), whatever
 * units the batch record states them in: a record in g and kN must aim at 300 mg and watch 80–150 N, exactly as
 * the same record in mg and N does (the record's units are any UCUM mass, force and length, batch-record.ts).
 */
import { describe, expect, it } from 'vitest';
import { monitoredAttributes, pressTargets } from '../../src/engine/run/steps/press.js';
import { siteLimitsOf } from '../../src/engine/run/limits.js';
import type { BatchRecord } from '../../src/domain/batch-record.js';
import type { PolicyBundle } from '../../src/policy/index.js';

const specs = (w: { target: number; unit: string }, h: { min: number; max: number; unit: string }, t: { min: number; max: number; unit: string }) => ({
  tablet_weight: { ...w, rsd_max_pct: 2 }, hardness: h, thickness: t, defect_rate_max_pct: 1, content_uniformity: { av_max: 15 },
});
const IN_MG = specs({ target: 300, unit: 'mg' }, { min: 80, max: 150, unit: 'N' }, { min: 3.6, max: 4.4, unit: 'mm' });
const IN_G = specs({ target: 0.3, unit: 'g' }, { min: 0.08, max: 0.15, unit: 'kN' }, { min: 0.36, max: 0.44, unit: 'cm' });
const bundle = { content: { cappingRiskThreshold: 0.015 } } as unknown as PolicyBundle;

/** The run's limits as limits.ts gives them (hardness in N), flat as runLimits reads them. */
function limitsOf(specifications: ReturnType<typeof specs>): Record<string, number> {
  const s = siteLimitsOf({ specifications } as unknown as BatchRecord, bundle);
  return { weightTolerancePct: s.weightTolerancePct, hardnessMinN: s.hardnessN.min, hardnessMaxN: s.hardnessN.max };
}
const ctxOf = (specifications: ReturnType<typeof specs>) => ({ run: { record: { specifications } } }) as never;

describe('the press works in mg, N and mm whatever the record\u2019s units', () => {
  for (const [name, s] of [['mg, N, mm', IN_MG], ['g, kN, cm', IN_G]] as const) {
    it(`a record in ${name}: aims at 300 mg within 80–150 N, and watches 285–315 mg, 80–150 N, 3.6–4.4 mm`, () => {
      const t = pressTargets(ctxOf(s), limitsOf(s));
      expect(t.weightMg).toBeCloseTo(300, 9);
      expect(t.hardnessMinN).toBeCloseTo(80, 9);
      expect(t.hardnessMaxN).toBeCloseTo(150, 9);
      const m = Object.fromEntries(monitoredAttributes(ctxOf(s), t).map((a) => [a.tag, a.limits]));
      expect(m['press.TabletWeight']).toMatchObject({ unit: 'mg' });
      expect(m['press.TabletWeight']!.min).toBeCloseTo(285, 9);
      expect(m['press.TabletWeight']!.max).toBeCloseTo(315, 9);
      expect(m['press.Hardness']!.min).toBeCloseTo(80, 9);
      expect(m['press.Hardness']!.max).toBeCloseTo(150, 9);
      expect(m['press.Thickness']!.min).toBeCloseTo(3.6, 9);
      expect(m['press.Thickness']!.max).toBeCloseTo(4.4, 9);
    });
  }

  it('a weight in a unit that is no mass (a record that bypassed validation) stops the press rather than guess a target', () => {
    const bad = { ...IN_MG, tablet_weight: { target: 300, unit: 'mm', rsd_max_pct: 2 } };
    expect(() => pressTargets(ctxOf(bad), limitsOf(IN_MG))).toThrow(expect.objectContaining({ code: 'LK_BATCH_RECORD_INVALID' }));
  });
});
