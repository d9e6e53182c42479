/**
 * The free-text run request: exact parses of the spec's example and of the
 * variations operators write, every refusal with its code and detail,
 * determinism, and the rule that a request may only tighten the site's limits.
 * Grammar-generated requests (property tests) are in run-request-property.unit.spec.ts.
 */
import { describe, expect, it } from 'vitest';
import { LkError } from '../../src/errors.js';
import { parseRunRequest, tightenLimits, type RunRequest, type SiteLimits } from '../../src/domain/run-request.js';
import { codeOf } from '../helpers/codes.js';

const DEFAULT_GOAL = 'run to the batch record within the site limits';

function expected(text: string, over: Partial<RunRequest> = {}): RunRequest {
  return { batch: 'B-1042', line: 'line-3', goal: DEFAULT_GOAL, objectives: [], limits: {}, text, ...over };
}

/** The LkError `text` is refused with. */
function refusal(text: string): LkError {
  try {
    parseRunRequest(text);
  } catch (e) {
    if (e instanceof LkError) return e;
    throw e;
  }
  throw new Error(`expected "${text}" to be refused`);
}

describe('parseRunRequest: the spec example', () => {
  it('reads batch, line, objectives, the capping limit and a normalised goal', () => {
    const text = 'run batch B-1042 on line-3, keep weight and hardness on target, capping risk under 2%';
    expect(parseRunRequest(text)).toStrictEqual({
      batch: 'B-1042',
      line: 'line-3',
      goal: 'keep tablet weight and hardness on target with capping risk under 2 %',
      objectives: ['weight', 'hardness'],
      limits: { cappingRiskPct: 2 },
      text,
    });
  });
});

describe('parseRunRequest: accepted variations, each with its exact parse', () => {
  const H = (min?: number, max?: number) => ({ hardnessN: { ...(min !== undefined ? { min } : {}), ...(max !== undefined ? { max } : {}) } });
  const cases: [string, Partial<RunRequest>][] = [
    ['B-1042 line-3', {}],
    ['please run batch b-1042 on line 3', {}],
    ['capping risk less than 2 percent, run batch B-1042 on line 3', { limits: { cappingRiskPct: 2 }, goal: 'keep capping risk under 2 %' }],
    ['run B-1042 on line-3; capping below 1.5 %', { limits: { cappingRiskPct: 1.5 }, goal: 'keep capping risk under 1.5 %' }],
    ['run B-1042 on line-3, capping risk at most 2\u202f%', { limits: { cappingRiskPct: 2 }, goal: 'keep capping risk under 2 %' }],
    ['run B-1042 on line-3 & keep capping risk ≤2 %, defect rate <= 0.25 %', {
      objectives: ['defect_rate'], limits: { cappingRiskPct: 2, defectRateMaxPct: 0.25 },
      goal: 'minimise defect rate with capping risk under 2 % and defect rate under 0.25 %',
    }],
    ['run batch B-1042 on line-3 with weight within ±1.5% and weight RSD under 1.5%', {
      objectives: ['weight'], limits: { weightTolerancePct: 1.5, weightRsdMaxPct: 1.5 },
      goal: 'keep tablet weight on target with tablet weight within ±1.5 % and weight RSD under 1.5 %',
    }],
    ['run batch B-1042 on line-3, weight within 2 %', { objectives: ['weight'], limits: { weightTolerancePct: 2 }, goal: 'keep tablet weight on target with tablet weight within ±2 %' }],
    ['run B-1042 on line-3, keep tablet weight +/- 1.5 % of target', { objectives: ['weight'], limits: { weightTolerancePct: 1.5 }, goal: 'keep tablet weight on target with tablet weight within ±1.5 %' }],
    ['start batch B-1042 on Line-3, hardness 90-140 N', { objectives: ['hardness'], limits: H(90, 140), goal: 'keep hardness on target with hardness between 90 and 140 N' }],
    ['run B-1042 on line-3, hardness between 90 and 140 N', { objectives: ['hardness'], limits: H(90, 140), goal: 'keep hardness on target with hardness between 90 and 140 N' }],
    ['run B-1042 on line-3, hardness 0.09–0.14 kN', { objectives: ['hardness'], limits: H(90, 140), goal: 'keep hardness on target with hardness between 90 and 140 N' }],
    ['run B-1042 on line-3, hardness 90 N to 140.5N', { objectives: ['hardness'], limits: H(90, 140.5), goal: 'keep hardness on target with hardness between 90 and 140.5 N' }],
    ['run B-1042 on line-3, hardness above 90 N and below 140 N', { objectives: ['hardness'], limits: H(90, 140), goal: 'keep hardness on target with hardness between 90 and 140 N' }],
    ['run B-1042 on line-3, hardness above 90 N', { objectives: ['hardness'], limits: H(90), goal: 'keep hardness on target with hardness above 90 N' }],
    ['run B-1042 on line-3, breaking force ≤ 0.14 kN', { objectives: ['hardness'], limits: H(undefined, 140), goal: 'keep hardness on target with hardness under 140 N' }],
    ['run B-1042 on line-3, defects under 0.5%', { objectives: ['defect_rate'], limits: { defectRateMaxPct: 0.5 }, goal: 'minimise defect rate with defect rate under 0.5 %' }],
    ['run B-1042 on line-3, AV under 10', { objectives: ['content_uniformity'], limits: { avMax: 10 }, goal: 'keep content uniformity on target with acceptance value under 10' }],
    ['run B-1042 on line-3, acceptance value below 12 at L1', {
      objectives: ['content_uniformity'], limits: { avMax: 12 }, autonomy: 'L1', goal: 'keep content uniformity on target with acceptance value under 12',
    }],
    ['run B-1042 on line-3 with autonomy L2', { autonomy: 'L2' }],
    ['run B-1042 on line 03 at autonomy level l3', { autonomy: 'L3' }],
    ['batch no. 2026-11 line #7, autonomy: 0', { batch: '2026-11', line: 'line-7', autonomy: 'L0' }],
    ['run B-1042 on line-3, keep weight, hardness and thickness on target and maximise yield', {
      objectives: ['weight', 'hardness', 'thickness', 'yield'], goal: 'keep tablet weight, hardness and thickness on target and maximise yield',
    }],
    ['run B-1042 on line-3, minimise defects and takt time', { objectives: ['defect_rate', 'takt'], goal: 'minimise defect rate and takt time' }],
    ['Run batch B-1042 on line-3. Keep the content uniformity, dissolution and potency in spec.', {
      objectives: ['content_uniformity', 'dissolution', 'potency'], goal: 'keep content uniformity, dissolution and potency on target',
    }],
    ['run B-1042 on line-3 capping risk is under 2 % — hardness 90-140N', {
      objectives: ['hardness'], limits: { cappingRiskPct: 2, ...H(90, 140) }, goal: 'keep hardness on target with capping risk under 2 % and hardness between 90 and 140 N',
    }],
    ['hardness below 140 N; hardness above 90 N; B-1042 on line-3', { objectives: ['hardness'], limits: H(90, 140), goal: 'keep hardness on target with hardness between 90 and 140 N' }],
  ];
  it.each(cases)('%s', (text, over) => {
    expect(parseRunRequest(text)).toStrictEqual(expected(text, over));
  });

  it('gives the same request, whatever the wording, order and punctuation (only `text` differs)', () => {
    const a = parseRunRequest('run batch B-1042 on line-3, keep weight and hardness on target, capping risk under 2%');
    const b = parseRunRequest('Capping < 2 %; hardness and tablet weight on target. b-1042, line 3');
    expect({ ...b, text: a.text }).toStrictEqual(a);
  });
});

describe('parseRunRequest: refusals', () => {
  it.each([
    ['on line-3, keep weight on target', ['batch']],
    ['run batch B-1042, capping under 2%', ['line']],
    ['keep weight on target', ['batch', 'line']],
    ['', ['batch', 'line']],
  ])('%j lacks %j', (text, missing) => {
    const e = refusal(text);
    expect(e.code).toBe('LK_RUN_REQUEST_INVALID');
    expect(e.detail?.missing).toStrictEqual(missing);
    for (const m of missing) expect(e.message).toContain(m);
  });

  /** [text, the clause the error names (at its first occurrence in the text)] */
  const unreadable: [string, string][] = [
    ['run B-1042 on line-3, capping risk under 2%, hardness nice', 'nice'],
    ['run B-1042 on line-3 and frobnicate the widget, capping under 2%', 'frobnicate the widget'],
    ['run B-1042 on line-3, capping risk below two %', 'capping risk below two %'],
    ['run B-1042 on line-3, capping under NaN%', 'capping under NaN%'],
    ['run B-1042 on line-3, capping under Infinity %', 'capping under Infinity %'],
    ['run B-1042 on line-3, capping under -2%', 'capping under -2%'],
    ['run B-1042 on line-3, hardness −90-140 N', 'hardness −90-140 N'],
    ['run B-1042 on line-3, capping risk under 100 %', 'capping risk under 100 %'],
    ['run B-1042 on line-3, defects under 101 %', 'defects under 101 %'],
    ['run B-1042 on line-3, weight within ±150%', 'weight within ±150%'],
    ['run B-1042 on line-3, weight within ±0 %', 'weight within ±0 %'],
    ['run B-1042 on line-3, hardness 90-140 kN', 'hardness 90-140 kN'],
    ['run B-1042 on line-3, capping under 2', 'capping under 2'],
    ['run B-1042 on line-3, capping risk 2%', 'capping risk 2%'],
    ['run B-1042 on line-3, capping risk above 2%', 'capping risk above 2%'],
    ['run B-1042 on line-3, hardness 140-90 N', 'hardness 140-90 N'],
    ['run B-1042 on line-3, hardness 90-140', 'hardness 90-140'],
    ['run B-1042 on line-3, hardness 9-14 kp', 'hardness 9-14 kp'],
    ['run B-1042 on line-3, hardness above 90 N and above 100 N', 'hardness above 90 N and above 100 N'],
    ['run B-1042 on line-3, AV under 10%', 'AV under 10%'],
    ['run B-1042 on line-3, weight under 305 mg', 'weight under 305 mg'],
    ['run B-1042 on line-3, weight within 2 mg', 'weight within 2 mg'],
    ['run B-1042 on line-3, thickness under 4.4 mm', 'thickness under 4.4 mm'],
    ['run B-1042 on line-3, keep capping risk low', 'capping risk low'],
    ['run B-1042 on line-3, minimise capping', 'capping'],
    ['run B-1042 on line-3, maximise weight', 'weight'],
    ['run B-1042 on line-3, reduce yield', 'yield'],
    ['run B-1042 on line-3, keep', 'keep'],
    ['run B-1042 on line-3 at L4', 'at L4'],
    ['run B-1042 on line-3, autonomy L9', 'autonomy L9'],
    ['run B-1042 on line-3 L2', 'L2'],
    ['run B-1042 on line-3, capping under 2%, capping under 1%', 'capping under 1%'],
    ['run B-1042 on line-3, hardness above 90 N, hardness above 95 N', 'hardness above 95 N'],
    ['run B-1042 on line-3, hardness above 150 N, hardness under 140 N', 'hardness under 140 N'],
    ['run B-1042 B-1043 on line-3', 'B-1043'],
    ['run B-1042 on line 3 and line 4', 'line 4'],
    ['run B-1042 on line-3 at L1 at L2', 'at L2'],
    ['run batch on line-3', 'batch'],
    ['run batch B_1042 on line-3', 'batch B_1042'],
    ['run B-1042 on line-x', 'on line-x'],
    ['run B-1042 on line', 'on line'],
    ['run B-1042 on line-3, autonomy level high', 'autonomy level'],
    ['run B-1042 on line-3, capping under 1,5%', '1,5'],
    ['run B-1042 on line-3 (capping under 2%)', '('],
    ['run B-1042 on line-3, capping = 2%', '='],
  ];
  it.each(unreadable)('%j names %j and where it starts', (text, clause) => {
    const e = refusal(text);
    expect(e.code).toBe('LK_RUN_REQUEST_INVALID');
    expect(e.status).toBe(422);
    expect(e.detail).toStrictEqual({ unrecognised: clause, at: text.indexOf(clause) });
    expect(e.message).toContain(clause);
    expect(e.message).toContain(String(text.indexOf(clause)));
  });

  it('refuses a text that is not a string (a hand-built API call)', () => {
    expect(codeOf(() => parseRunRequest(42 as unknown as string))).toBe('LK_RUN_REQUEST_INVALID');
  });
});

describe('parseRunRequest: deterministic and immutable', () => {
  const text = 'run batch B-1042 on line 3 at L2; hardness 0.09-0.14 kN, weight RSD < 1.5 %, keep dissolution on target, maximise yield';
  it('parses the same text to deep-equal results, with the same serialisation', () => {
    const runs = Array.from({ length: 5 }, () => parseRunRequest(text));
    for (const r of runs) {
      expect(r).toStrictEqual(runs[0]);
      expect(JSON.stringify(r)).toBe(JSON.stringify(runs[0]));
    }
    expect(Object.keys(runs[0]!.limits)).toStrictEqual(['weightRsdMaxPct', 'hardnessN']);
  });
  it('returns a frozen request', () => {
    const r = parseRunRequest(text);
    expect(Object.isFrozen(r) && Object.isFrozen(r.limits) && Object.isFrozen(r.limits.hardnessN) && Object.isFrozen(r.objectives)).toBe(true);
  });
});

/** Limits of the batch record example (capping threshold from the policy bundle: 0.015 = 1.5 %). */
const SITE: SiteLimits = { cappingRiskPct: 1.5, weightRsdMaxPct: 2, weightTolerancePct: 5, hardnessN: { min: 80, max: 150 }, defectRateMaxPct: 1, avMax: 15 };
const site = (v: number) => ({ value: v, source: 'site' });
const req = (v: number) => ({ value: v, source: 'request' });

describe('tightenLimits', () => {
  it('keeps every site limit when the request states none', () => {
    expect(tightenLimits(parseRunRequest('B-1042 line-3'), SITE)).toStrictEqual({
      cappingRiskPct: site(1.5), weightTolerancePct: site(5), weightRsdMaxPct: site(2),
      hardnessN: { min: site(80), max: site(150) }, defectRateMaxPct: site(1), avMax: site(15),
    });
  });

  it('takes each stricter (or equal) request limit and says it came from the request', () => {
    const r = parseRunRequest('B-1042 line-3, capping under 1%, weight within ±5%, weight RSD under 1.5%, hardness 90-140 N, defects under 0.5%, AV under 12');
    expect(tightenLimits(r, SITE)).toStrictEqual({
      cappingRiskPct: req(1), weightTolerancePct: req(5), weightRsdMaxPct: req(1.5),
      hardnessN: { min: req(90), max: req(140) }, defectRateMaxPct: req(0.5), avMax: req(12),
    });
  });

  it('mixes sources when the request bounds one side of hardness only', () => {
    const e = tightenLimits(parseRunRequest('B-1042 line-3, hardness above 100 N'), SITE);
    expect(e.hardnessN).toStrictEqual({ min: req(100), max: site(150) });
  });

  it.each([
    ['capping under 2%', 'cappingRiskPct', 2, 1.5],
    ['weight within ±6 %', 'weightTolerancePct', 6, 5],
    ['weight RSD under 2.5 %', 'weightRsdMaxPct', 2.5, 2],
    ['defects under 1.5 %', 'defectRateMaxPct', 1.5, 1],
    ['AV under 20', 'avMax', 20, 15],
    ['hardness 70-140 N', 'hardnessN.min', 70, { min: 80, max: 150 }],
    ['hardness 90-160 N', 'hardnessN.max', 160, { min: 80, max: 150 }],
    ['hardness under 0.2 kN', 'hardnessN.max', 200, { min: 80, max: 150 }],
  ])('refuses "%s": it would loosen %s', (clause, limit, requested, siteValue) => {
    let err: unknown;
    try {
      tightenLimits(parseRunRequest(`B-1042 line-3, ${clause}`), SITE);
    } catch (e) {
      err = e;
    }
    expect(LkError.is(err, 'LK_RUN_REQUEST_LOOSENS')).toBe(true);
    expect((err as LkError).status).toBe(422);
    expect((err as LkError).detail).toStrictEqual({ limit, requested, site: siteValue });
  });

  it('refuses a hardness bound that leaves no range inside the site’s', () => {
    expect(codeOf(() => tightenLimits(parseRunRequest('B-1042 line-3, hardness above 150 N'), SITE))).toBe('LK_RUN_REQUEST_INVALID');
    expect(codeOf(() => tightenLimits(parseRunRequest('B-1042 line-3, hardness under 80 N'), SITE))).toBe('LK_RUN_REQUEST_INVALID');
  });

  it('refuses a hand-built request whose limit is not a positive number (NaN passes every comparison)', () => {
    const base = parseRunRequest('B-1042 line-3');
    for (const limits of [{ cappingRiskPct: Number.NaN }, { avMax: -1 }, { hardnessN: { min: Number.POSITIVE_INFINITY } }]) {
      expect(codeOf(() => tightenLimits({ ...base, limits }, SITE))).toBe('LK_RUN_REQUEST_INVALID');
    }
  });

  it('refuses to check against a site limit that is not a usable number', () => {
    const base = parseRunRequest('B-1042 line-3, capping under 1%');
    expect(codeOf(() => tightenLimits(base, { ...SITE, cappingRiskPct: Number.NaN }))).toBe('LK_VALUE_INVALID');
    expect(codeOf(() => tightenLimits(base, { ...SITE, hardnessN: { min: 150, max: 80 } }))).toBe('LK_VALUE_INVALID');
  });
});
