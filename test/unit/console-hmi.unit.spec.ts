/**
 * What the Line page says about a reading besides its value (console/hmi.js): its age on linekeeper's clock (the
 * view's `at` minus the value's, whatever the browser's clock says), when it is stale, and its judgement against
 * the limit in force — an in-process limit out of spec, an end-point limit (LOD) not judged while drying.
 */
import { describe, expect, it } from 'vitest';
// @ts-expect-error -- the console's plain ES module, without declarations
import { ageMs, ageText, isStale, judge, judgementText, limitText } from '../../console/hmi.js';

const HARDNESS = { min: 80, max: 150, unit: 'N', source: 'batch record B-1042', applies: 'in_process' };
const LOD = { max: 2, unit: '%', source: 'batch record B-1042: LOD at end of drying', applies: 'end_point' };
const good = (value: unknown) => ({ value, unit: 'N', quality: 'good', at: '2026-11-02T06:00:00.000Z' });

describe('console/hmi.js', () => {
  it('ages a value on the view\u2019s clock, and says it as people do', () => {
    expect(ageMs('2026-11-02T06:00:14.500Z', '2026-11-02T06:00:00.000Z')).toBe(14_500);
    expect(ageMs('2026-11-02T06:00:00.000Z', '2026-11-02T06:00:01.000Z')).toBe(0);
    expect(ageMs(undefined, '2026-11-02T06:00:00.000Z')).toBeNull();
    expect([0, 14_500, 185_000, 7_440_000, 3 * 86_400_000].map(ageText)).toEqual(['0 s', '14 s', '3 min 5 s', '2 h 4 min', '3 d 0 h']);
    expect(ageText(null)).toBe('age unknown');
    expect(isStale(10_000, 10_000)).toBe(false);
    expect(isStale(10_001, 10_000)).toBe(true);
    expect(isStale(null, 10_000)).toBe(false);
  });

  it('judges a reading against its limit, in words with a glyph', () => {
    expect(judge(good(152.3), HARDNESS)).toBe('out');
    expect(judgementText('out', HARDNESS)).toBe('✗ out of spec (limit 80–150 N)');
    expect(judge(good(120), HARDNESS)).toBe('in');
    expect(judgementText('in', HARDNESS)).toBe('✓ in spec (80–150 N)');
    // a bad-quality reading or a non-number is not judged
    expect(judge({ ...good(200), quality: 'bad' }, HARDNESS)).toBeNull();
    expect(judge(good('n/a'), HARDNESS)).toBeNull();
    expect(judge(good(200), null)).toBeNull();
    expect(judgementText(null, null)).toBe('no limit in force');
    // the LOD end point is judged when drying ends, not while the granulate dries
    expect(judge(good(16.9), LOD)).toBe('above_end');
    expect(judge(good(16.9), LOD, 'DRY')).toBe('above_end');
    // once the line is past drying the dryer's reading is no longer the batch's: neither passed nor failed here
    expect(judge(good(3.3), LOD, 'COMPRESS')).toBe('after_end');
    expect(judge(good(1.2), LOD, 'COAT')).toBe('after_end');
    expect(judgementText('after_end', LOD)).toContain('specification table');
    // an in-process limit is judged in every phase
    expect(judge(good(152.3), HARDNESS, 'COMPRESS')).toBe('out');
    expect(judgementText('above_end', LOD)).toBe('◇ above the end-of-drying limit ≤ 2 %: judged when drying ends');
    expect(judge(good(1.2), LOD)).toBe('in');
    expect(limitText({ max: 1.5, unit: '%' })).toBe('≤ 1.5 %');
    expect(limitText({ min: 284.99999999999994, max: 315.00000000000006, unit: 'mg' })).toBe('285–315 mg');
    expect(limitText({ min: 20, unit: 'Cel' })).toBe('≥ 20 °C');
  });
});
