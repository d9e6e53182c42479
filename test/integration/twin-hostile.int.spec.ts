/**
 * `twin simulate` with hostile what-if design spaces: bounds outside the instruments' ranges are refused before
 * anything is ranked (a MainForce of −4e306 kN was ranked first), prototype keys are unknown setpoints, and
 * candidates with non-finite predictions are counted in the summary among the discard reasons.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { formatSimulation } from '../../src/cli/commands/twin.js';
import { instrumentRanges } from '../../src/cli/design-space.js';
import { loadConfig } from '../../src/config/load.js';
import { checkDesignSpace, checkWithinInstruments, DEFAULT_DESIGN_SPACE } from '../../src/twin/setpoints.js';
import { simulate } from '../../src/twin/simulate.js';
import { cloneParams, NOMINAL_PARAMS } from '../../src/twin/params.js';
import { runCli } from '../helpers/cli.js';
import { codeOf } from '../unit/audit-helpers.js';

let dir: string;
const nominal = { id: 'process-twin-nominal', version: 0, params: cloneParams(NOMINAL_PARAMS), validRanges: {} };
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'lk-twin-hostile-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('a user-supplied design space', () => {
  it('is checked against the instrument ranges of the configuration (EURange), in the setpoint units', () => {
    const ranges = instrumentRanges(loadConfig().config);
    expect(ranges['press.MainForce']).toEqual({ min: 0, max: 40, unit: 'kN' });
    expect(codeOf(() => checkWithinInstruments({ ...DEFAULT_DESIGN_SPACE, 'press.MainForce': { min: -4e306, max: 20, unit: 'kN' } }, ranges))).toBe('LK_PLC_OUT_OF_RANGE');
    expect(codeOf(() => checkWithinInstruments({ ...DEFAULT_DESIGN_SPACE, 'coater.Airflow': { min: 800, max: 1e308, unit: 'm3/h' } }, ranges))).toBe('LK_PLC_OUT_OF_RANGE');
    expect(() => checkWithinInstruments({ ...DEFAULT_DESIGN_SPACE }, ranges)).not.toThrow();
  });

  it('twin simulate refuses it before ranking anything', async () => {
    const file = join(dir, 'wild.json');
    writeFileSync(file, JSON.stringify({ ...DEFAULT_DESIGN_SPACE, 'press.MainForce': { min: -4e306, max: 20, unit: 'kN' } }));
    const r = await runCli('twin', 'simulate', '--nominal', '--candidates', '20', '--design-space', file, '--json');
    expect(r.code).toBe(1);
    expect(r.err).toContain('[LK_PLC_OUT_OF_RANGE]');
    expect(r.err).toContain('press.MainForce');
    expect(r.out).toBe('');
    const missing = await runCli('twin', 'simulate', '--nominal', '--candidates', '20', '--design-space', join(dir, 'nope.json'));
    expect(missing.code).toBe(66);
    expect(missing.err).toContain('[LK_FILE_NOT_FOUND]');
  });

  it('prototype keys are unknown setpoints, not members of every object', () => {
    for (const key of ['constructor', 'toString', '__proto__']) {
      const space = JSON.parse(`{"${key}": {"min": 0, "max": 1, "unit": "kN"}}`) as Record<string, unknown>;
      // JSON.parse and spread make `__proto__` an own key too, as a JSON file read from disk would
      expect(codeOf(() => checkDesignSpace({ ...DEFAULT_DESIGN_SPACE, ...space })), key).toBe('LK_VALIDATION');
    }
  });
});

describe('non-finite predictions', () => {
  it('are discarded as not_finite and counted in the summary among the discard reasons', () => {
    // a turret that does not turn: no dwell, no output — every prediction is non-finite
    const r = simulate(nominal, { candidates: 5, horizon: 'full batch', seed: 1, designSpace: { ...DEFAULT_DESIGN_SPACE, 'press.TurretSpeed': { min: 0, max: 0, unit: '{rev}/min' } } });
    expect(r.ranked).toEqual([]);
    expect(r.discarded.map((d) => d.reasons[0]!.code)).toEqual(Array(5).fill('not_finite'));
    expect(formatSimulation(r, 10).split('\n')[0]).toContain('5 discarded (0 capping risk, 0 outside the model\'s valid ranges, 5 non-finite predictions)');
  });
});
