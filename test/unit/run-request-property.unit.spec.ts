/**
 * Property tests of the run-request grammar: requests built from clause
 * generators (every phrasing the grammar documents, in any order, with any
 * joiner) parse back to exactly the content they were built from, two
 * phrasings of the same content give the same request, an unknown word
 * anywhere is refused, no input crashes the parser, and tightenLimits never
 * lets a request loosen a site limit.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { LkError } from '../../src/errors.js';
import { AUTONOMY_LEVELS, type AutonomyLevel } from '../../src/domain/policy.js';
import { OBJECTIVES, parseRunRequest, tightenLimits, type Objective, type RunLimits, type RunRequest, type SiteLimits } from '../../src/domain/run-request.js';
import { codeOf } from '../helpers/codes.js';

interface Content {
  readonly batch: string;
  readonly line: number;
  readonly autonomy: AutonomyLevel | null;
  readonly limits: RunLimits;
  /** Named in a "keep … on target" clause. */
  readonly kept: readonly Objective[];
  readonly maximiseYield: boolean;
  readonly minimise: readonly Objective[];
}

/** A positive decimal with at most two places, below `max`. */
const pct = (max: number) => fc.integer({ min: 1, max: max * 100 }).map((n) => n / 100);
/** Hardness in tenths of a newton, 0.1 … 999.9 N. */
const tenths = fc.integer({ min: 1, max: 9999 });

const hardnessArb = fc.oneof(
  tenths.map((t) => ({ min: t / 10 })),
  tenths.map((t) => ({ max: t / 10 })),
  fc.tuple(tenths, tenths).filter(([a, b]) => a !== b).map(([a, b]) => ({ min: Math.min(a, b) / 10, max: Math.max(a, b) / 10 })),
);

const contentArb: fc.Arbitrary<Content> = fc.record({
  batch: fc.tuple(fc.constantFrom('B', 'LOT', 'PB', 'X'), fc.integer({ min: 1, max: 999_999 }), fc.option(fc.stringMatching(/^[A-Z0-9]{1,3}$/), { nil: undefined })).map(
    ([p, n, s]) => `${p}-${n}${s ? `-${s}` : ''}`,
  ),
  line: fc.integer({ min: 1, max: 40 }),
  autonomy: fc.option(fc.constantFrom(...AUTONOMY_LEVELS), { nil: null }),
  limits: fc.record(
    { cappingRiskPct: pct(99.99), weightTolerancePct: pct(100), weightRsdMaxPct: pct(100), hardnessN: hardnessArb, defectRateMaxPct: pct(100), avMax: pct(100) },
    { requiredKeys: [] },
  ).map((l): RunLimits => ({ ...l, ...(l.hardnessN ? { hardnessN: { ...l.hardnessN } } : {}) })), // plain objects, as the parser returns
  kept: fc.subarray(['weight', 'hardness', 'thickness', 'content_uniformity', 'dissolution', 'potency'] as Objective[]),
  maximiseYield: fc.boolean(),
  minimise: fc.subarray(['defect_rate', 'takt'] as Objective[]),
});

/** Choices of phrasing: the renderer takes them in turn (a fixed-length list shrinks well). */
const picksArb = fc.array(fc.nat(), { minLength: 64, maxLength: 64 });

/** `n` (tenths of a newton, as a decimal text) written in kN without binary rounding: "140.5" → "0.1405". */
function kN(newtons: number): string {
  const t = String(Math.round(newtons * 10)).padStart(5, '0');
  return `${t.slice(0, -4)}.${t.slice(-4)}`.replace(/\.?0+$/, '');
}

function render(c: Content, picks: readonly number[]): string {
  let i = 0;
  const pick = <T,>(options: readonly T[]): T => options[picks[i++ % picks.length]! % options.length]!;
  const list = (items: readonly string[]): string => {
    if (items.length <= 1) return items.join('');
    return `${items.slice(0, -1).join(pick([', ', ' and ']))}${pick([' and ', ', and ', ', '])}${items.at(-1)!}`;
  };
  const max = (): string => pick(['under ', 'below ', 'less than ', 'lower than ', 'at most ', 'no more than ', 'not more than ', 'not above ', 'not exceeding ', 'up to ', 'max ', 'maximum ', '< ', '<', '≤ ', '≤', '<= ', '=<']);
  const min = (): string => pick(['above ', 'over ', 'more than ', 'greater than ', 'at least ', 'no less than ', 'not below ', 'min ', 'minimum ', '> ', '>', '≥ ', '>=']);
  const percent = (): string => pick(['%', ' %', '\u202f%', ' percent', ' pct', ' per cent']);
  const copula = (): string => pick(['', '', ' is', ' must be', ' stays']);
  /** A force in N or kN; the first number of a range may leave its unit to the second, so both share one. */
  const force = (n: number, unit = true, inKn = pick([false, true])): string =>
    inKn ? `${kN(n)}${unit ? pick([' kN', 'kN', ' kn']) : ''}` : `${n}${unit ? pick([' N', 'N', ' newtons']) : ''}`;
  const names: Record<Objective, readonly string[]> = {
    weight: ['weight', 'tablet weight', 'the weight'], hardness: ['hardness', 'tablet hardness', 'breaking force'], thickness: ['thickness', 'tablet thickness'],
    content_uniformity: ['content uniformity', 'CU', 'content-uniformity'], dissolution: ['dissolution'], potency: ['potency', 'assay'],
    defect_rate: ['defects', 'defect rate', 'defect-rate'], takt: ['takt', 'takt time'], yield: ['yield'],
  };

  const clauses: string[] = [];
  const id = pick([c.batch, c.batch.toLowerCase()]);
  clauses.push(pick([`batch ${id}`, id, `batch: ${id}`, `batch no. ${id}`, `batch #${id}`, `batch number ${id}`]));
  clauses.push(pick([`line-${c.line}`, `on line ${c.line}`, `on line-${c.line}`, `line ${c.line}`, `Line ${c.line}`, `at line #${c.line}`, `in line no. ${c.line}`, `on line 0${c.line}`, `line${c.line}`]));
  if (c.autonomy) {
    const a = c.autonomy;
    clauses.push(pick([`at ${a}`, `autonomy ${a}`, `with autonomy ${a}`, `at autonomy level ${a}`, `autonomy level ${a.slice(1)}`, `autonomy: ${a.toLowerCase()}`, `at level ${a}`]));
  }
  const l = c.limits;
  if (l.cappingRiskPct !== undefined) {
    clauses.push(`${pick(['capping risk', 'capping', 'Capping', 'capping rate', 'predicted capping risk', 'risk of capping', 'keep capping risk'])}${copula()} ${max()}${l.cappingRiskPct}${percent()}`);
  }
  if (l.weightTolerancePct !== undefined) {
    const v = l.weightTolerancePct;
    clauses.push(pick([`weight within ±${v}%`, `weight within ${v} %`, `tablet weight ± ${v}${percent()}`, `weight within +/- ${v}% of target`, `weight ±${v}%`, `keep weight on target within +-${v} %`]));
  }
  if (l.weightRsdMaxPct !== undefined) clauses.push(`${pick(['weight RSD', 'RSD of weight', 'tablet weight RSD', 'Weight rsd'])}${copula()} ${max()}${l.weightRsdMaxPct}${percent()}`);
  const h = l.hardnessN;
  if (h?.min !== undefined && h.max !== undefined) {
    const subject = pick(names.hardness);
    const inKn = pick([false, true]);
    clauses.push(pick([
      `${subject} ${force(h.min, false, inKn)}${pick(['-', ' - ', '–', ' – ', ' to '])}${force(h.max, true, inKn)}`,
      `${subject} between ${force(h.min, false, inKn)} and ${force(h.max, true, inKn)}`,
      `${subject} between ${force(h.min)} and ${force(h.max)}`,
      `${subject} from ${force(h.min)} to ${force(h.max)}`,
      `${subject} ${min()}${force(h.min)}${pick([' and ', ', ', ', and '])}${max()}${force(h.max)}`,
      `${subject} ${max()}${force(h.max)}${pick([' and ', ', '])}${min()}${force(h.min)}`,
    ]));
  } else if (h?.min !== undefined) {
    clauses.push(`${pick(names.hardness)}${copula()} ${min()}${force(h.min)}`);
  } else if (h?.max !== undefined) {
    clauses.push(`${pick(names.hardness)}${copula()} ${max()}${force(h.max)}`);
  }
  if (l.defectRateMaxPct !== undefined) clauses.push(`${pick(['defects', 'defect rate', 'reduce defects', 'Defect rate'])}${copula()} ${max()}${l.defectRateMaxPct}${percent()}`);
  if (l.avMax !== undefined) clauses.push(`${pick(['AV', 'acceptance value', 'CU AV', 'content uniformity AV'])}${copula()} ${max()}${l.avMax}`);
  if (c.kept.length > 0) {
    const verb = pick(['keep', 'hold', 'maintain', 'Keep', 'keep']);
    clauses.push(`${verb} ${list(c.kept.map((o) => pick(names[o])))}${pick([' on target', ' in spec', ' within spec', '', ' at target'])}`);
  }
  if (c.maximiseYield) clauses.push(pick(['maximise yield', 'maximize yield', 'increase the yield', 'maximise the yield']));
  if (c.minimise.length > 0) clauses.push(`${pick(['minimise', 'minimize', 'reduce', 'lower'])} ${list(c.minimise.map((o) => pick(names[o])))}`);

  const order = clauses.map((text, k) => ({ text, key: picks[(k * 7 + 3) % picks.length]! })).sort((a, b) => a.key - b.key);
  const body = order.map((o, k) => (k === 0 ? o.text : `${pick([', ', '; ', ' and ', ', and ', ' with ', '. ', ' & ', ' — ', ',', ';'])}${o.text}`)).join('');
  return `${pick(['', 'please ', 'run ', 'please run ', 'start '])}${body}${pick(['', '.', ' please', ' now.', ' !'])}`;
}

function expectedObjectives(c: Content): Objective[] {
  const l = c.limits;
  const named = new Set<Objective>([...c.kept, ...c.minimise, ...(c.maximiseYield ? (['yield'] as const) : [])]);
  if (l.weightTolerancePct !== undefined || l.weightRsdMaxPct !== undefined) named.add('weight');
  if (l.hardnessN !== undefined) named.add('hardness');
  if (l.defectRateMaxPct !== undefined) named.add('defect_rate');
  if (l.avMax !== undefined) named.add('content_uniformity');
  return OBJECTIVES.filter((o) => named.has(o));
}

function withoutText(r: RunRequest): Omit<RunRequest, 'text'> {
  const { text: _text, ...rest } = r;
  return rest;
}

describe('run-request grammar (properties)', () => {
  it('parses any request built from the clause generators back to the content it was built from', () => {
    fc.assert(
      fc.property(contentArb, picksArb, (c, picks) => {
        const text = render(c, picks);
        const r = parseRunRequest(text);
        expect(r.batch, text).toBe(c.batch);
        expect(r.line, text).toBe(`line-${c.line}`);
        expect(r.autonomy, text).toBe(c.autonomy ?? undefined);
        expect(r.limits, text).toStrictEqual(c.limits);
        expect(r.objectives, text).toStrictEqual(expectedObjectives(c));
        expect(r.text).toBe(text);
      }),
      { numRuns: 1500 },
    );
  });

  it('gives two phrasings of the same content the same request, goal and limit order included', () => {
    fc.assert(
      fc.property(contentArb, picksArb, picksArb, (c, a, b) => {
        const ra = parseRunRequest(render(c, a));
        const rb = parseRunRequest(render(c, b));
        expect(withoutText(rb)).toStrictEqual(withoutText(ra));
        expect(JSON.stringify(withoutText(rb))).toBe(JSON.stringify(withoutText(ra)));
      }),
      { numRuns: 500 },
    );
  });

  it('refuses a request with an unknown word inserted anywhere: nothing the operator wrote is skipped', () => {
    fc.assert(
      fc.property(contentArb, picksArb, fc.nat(), (c, picks, where) => {
        const text = render(c, picks);
        const gaps = [0, ...[...text.matchAll(/\s/gu)].map((m) => m.index), text.length];
        const g = gaps[where % gaps.length]!;
        const broken = `${text.slice(0, g)} zorp ${text.slice(g)}`;
        expect(codeOf(() => parseRunRequest(broken))).toBe('LK_RUN_REQUEST_INVALID');
      }),
      { numRuns: 1000 },
    );
  });

  it('reads any text to a request or an LK_RUN_REQUEST_INVALID that points at the text it names', () => {
    const words = ['run', 'batch', 'B-1042', 'line', '3', 'line-3', 'on', 'at', 'L2', 'autonomy', 'keep', 'maximise', 'weight', 'hardness', 'capping', 'risk',
      'under', 'above', 'between', 'and', 'within', '±', '2', '1.5', '-', '–', '90-140', 'N', 'kN', '%', ',', ';', '.', 'AV', 'RSD', 'defects', 'on target', 'the', 'to'];
    const textArb = fc.array(fc.oneof(fc.constantFrom(...words), fc.string({ maxLength: 4 }), fc.string({ unit: 'grapheme', maxLength: 3 })), { maxLength: 16 })
      .chain((parts) => fc.array(fc.constantFrom(' ', '', ', '), { minLength: parts.length, maxLength: parts.length }).map((seps) => parts.map((p, k) => p + seps[k]!).join('')));
    fc.assert(
      fc.property(textArb, (text) => {
        let r: RunRequest | undefined;
        try {
          r = parseRunRequest(text);
        } catch (e) {
          expect(LkError.is(e, 'LK_RUN_REQUEST_INVALID')).toBe(true);
          const d = (e as LkError).detail ?? {};
          if (d.unrecognised !== undefined) expect(text.slice(d.at as number)).toMatch(new RegExp(`^${(d.unrecognised as string).replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`, 'u'));
          else expect((d.missing as string[]).length).toBeGreaterThan(0);
          return;
        }
        expect(r.batch).toMatch(/^[A-Z0-9][A-Z0-9-]{1,31}$/);
        expect(r.line).toMatch(/^line-[a-z0-9]+$/);
        expect(parseRunRequest(text)).toStrictEqual(r);
      }),
      { numRuns: 3000 },
    );
  });
});

describe('tightenLimits (properties)', () => {
  const UPPER = ['cappingRiskPct', 'weightTolerancePct', 'weightRsdMaxPct', 'defectRateMaxPct', 'avMax'] as const;
  const siteArb: fc.Arbitrary<SiteLimits> = fc.record({
    cappingRiskPct: pct(50), weightRsdMaxPct: pct(50), weightTolerancePct: pct(50), defectRateMaxPct: pct(50), avMax: pct(50),
    hardnessN: fc.tuple(fc.integer({ min: 1, max: 400 }), fc.integer({ min: 1, max: 400 })).filter(([a, b]) => a !== b).map(([a, b]) => ({ min: Math.min(a, b), max: Math.max(a, b) })),
  });
  const base = parseRunRequest('B-1042 line-3');

  it('never returns a limit looser than the site’s, and refuses exactly the requests that would loosen one', () => {
    fc.assert(
      fc.property(siteArb, fc.record({ ...Object.fromEntries(UPPER.map((k) => [k, pct(100)])), hardnessN: hardnessArb } as Record<string, fc.Arbitrary<unknown>>, { requiredKeys: [] }), (site, limits) => {
        const l = limits as RunLimits;
        const h = l.hardnessN ?? {};
        const loosens = UPPER.some((k) => l[k] !== undefined && l[k]! > site[k]) || (h.min ?? Infinity) < site.hardnessN.min || (h.max ?? -Infinity) > site.hardnessN.max;
        const empty = !loosens && !((h.min ?? site.hardnessN.min) < (h.max ?? site.hardnessN.max));
        const request = { ...base, limits: l };
        if (loosens || empty) {
          expect(codeOf(() => tightenLimits(request, site))).toBe(loosens ? 'LK_RUN_REQUEST_LOOSENS' : 'LK_RUN_REQUEST_INVALID');
          return;
        }
        const e = tightenLimits(request, site);
        for (const k of UPPER) {
          expect(e[k]).toStrictEqual(l[k] === undefined ? { value: site[k], source: 'site' } : { value: l[k], source: 'request' });
          expect(e[k].value).toBeLessThanOrEqual(site[k]);
        }
        expect(e.hardnessN.min.value).toBeGreaterThanOrEqual(site.hardnessN.min);
        expect(e.hardnessN.max.value).toBeLessThanOrEqual(site.hardnessN.max);
        expect(e.hardnessN.min.source).toBe(h.min === undefined ? 'site' : 'request');
        expect(e.hardnessN.max.source).toBe(h.max === undefined ? 'site' : 'request');
      }),
      { numRuns: 1000 },
    );
  });
});
