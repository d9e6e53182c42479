import { describe, expect, it } from 'vitest';
import { withOpenExceptions } from '../../src/engine/run/exceptions.js';

const e = (step: string | null, status: 'open' | 'closed', severity: 'critical' | 'major' | 'minor', kind: 'OOS' | 'OOT' | 'MOVE_UNREVIEWED') => ({ step, status, severity, kind });

describe("a succeeded step's line names the exceptions it left open", () => {
  it('counts the open ones of that step by severity (critical first) and kind; closed ones and other steps are not counted; none open leaves the line as it was', () => {
    const records = [
      e('05 compress.press', 'open', 'minor', 'OOT'),
      e('05 compress.press', 'open', 'major', 'OOS'),
      e('05 compress.press', 'open', 'minor', 'OOT'),
      e('05 compress.press', 'closed', 'critical', 'OOS'),
      e('06 coat.spray', 'open', 'minor', 'MOVE_UNREVIEWED'),
      e(null, 'open', 'critical', 'OOS'),
    ];
    expect(withOpenExceptions('Pressed 300,686 tablets', records, '05 compress.press')).toBe('Pressed 300,686 tablets; 3 exceptions of this step are open for QA: 1 major OOS, 2 minor OOT');
    // a line that ends its sentence: the words follow it as one
    expect(withOpenExceptions('Coating end point: weight gain 3.01 %; 0 moves written.', records, '06 coat.spray')).toBe('Coating end point: weight gain 3.01 %; 0 moves written; 1 exception of this step is open for QA: 1 minor MOVE_UNREVIEWED');
    expect(withOpenExceptions('Blend end point', records, '03 blend.uniformity')).toBe('Blend end point');
    expect(withOpenExceptions('Blend end point', [], '03 blend.uniformity')).toBe('Blend end point');
  });
});
