/**
 * The limits the Line page holds the key process values to (src/quality/line-limits.ts): the batch record's,
 * tightened by the run request where it stated a stricter one, in the site tag's own unit; a limit whose unit does
 * not convert to the tag's is left out rather than compared as if it did.
 */
import { describe, expect, it } from 'vitest';
import { lineLimits, type LineLimitRole } from '../../src/quality/line-limits.js';

const record = {
  batch: 'B-1',
  specifications: {
    tablet_weight: { target: 0.3, unit: 'g', rsd_max_pct: 2 },
    hardness: { min: 0.08, max: 0.15, unit: 'kN' },
    thickness: { min: 2.6, max: 3.4, unit: 'mm' },
    lod_end_pct: 2,
  },
};
const UNITS: Record<LineLimitRole, string> = { 'press.TabletWeight': 'mg', 'press.Hardness': 'N', 'press.Thickness': 'mm', 'press.CappingRate': '%', 'fluidbed.Lod': '%' };
const tagOf = (role: LineLimitRole) => ({ tag: role, unit: UNITS[role] });

describe('lineLimits', () => {
  it('converts the record\u2019s limits to each tag\u2019s unit and names their source', () => {
    const l = lineLimits({ record, runLimits: {}, cappingThresholdPct: 1.5, siteWeightTolerancePct: 5, tagOf });
    expect(l['press.TabletWeight']!.min).toBeCloseTo(285, 9);
    expect(l['press.TabletWeight']!.max).toBeCloseTo(315, 9);
    expect(l['press.TabletWeight']!.unit).toBe('mg');
    expect(l['press.Hardness']!.min).toBeCloseTo(80, 9);
    expect(l['press.Hardness']!.max).toBeCloseTo(150, 9);
    expect(l['press.Hardness']).toMatchObject({ unit: 'N', source: 'batch record B-1', applies: 'in_process' });
    expect(l['press.CappingRate']).toEqual({ max: 1.5, unit: '%', source: 'policy bundle: capping threshold', applies: 'in_process' });
    expect(l['fluidbed.Lod']).toEqual({ max: 2, unit: '%', source: 'batch record B-1: LOD at end of drying', applies: 'end_point' });
  });

  it('takes the run\u2019s effective limits, and says when the request tightened them', () => {
    const runLimits = {
      weightTolerancePct: { value: 3, source: 'request' }, hardnessMinN: { value: 90, source: 'request' }, hardnessMaxN: { value: 150, source: 'site' },
      cappingRiskPct: { value: 1, source: 'request' },
    };
    const l = lineLimits({ record, runLimits, cappingThresholdPct: 1.5, siteWeightTolerancePct: 5, tagOf });
    expect(l['press.TabletWeight']!.min).toBeCloseTo(291, 9);
    expect(l['press.TabletWeight']!.source).toContain('tolerance of the run request');
    expect(l['press.Hardness']).toMatchObject({ min: 90, max: 150, source: 'run request (tighter than batch record B-1)' });
    expect(l['press.CappingRate']).toMatchObject({ max: 1, source: expect.stringContaining('run request') });
  });

  it('leaves out a role the site lacks and a limit whose unit does not convert to the tag\u2019s', () => {
    const l = lineLimits({
      record, runLimits: {}, cappingThresholdPct: undefined, siteWeightTolerancePct: 5,
      tagOf: (role) => (role === 'press.Thickness' ? undefined : role === 'press.Hardness' ? { tag: 'kp.Haerte', unit: 'mm' } : tagOf(role)),
    });
    expect(Object.keys(l).sort()).toEqual(['fluidbed.Lod', 'press.TabletWeight']);
  });
});
