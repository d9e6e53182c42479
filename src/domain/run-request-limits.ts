/**
 * The limits a run works to: the site's (batch record and policy bundle), each
 * tightened where the operator's run request states a stricter one. A request
 * can never loosen a validated limit — that is a change-control matter for QA,
 * not a sentence typed at the line. Pure.
 */
import { LkError } from '../errors.js';
import type { RunLimits, RunRequest } from './run-request.js';

/** The site's / batch record's limits, all in the units of {@link RunLimits} (%, N, plain AV). */
export interface SiteLimits {
  cappingRiskPct: number;
  weightRsdMaxPct: number;
  weightTolerancePct: number;
  hardnessN: { min: number; max: number };
  defectRateMaxPct: number;
  avMax: number;
}

/** Where an effective limit comes from: the site's value, or the request's stricter (or equal) one. */
export type LimitSource = 'site' | 'request';

export interface EffectiveValue {
  readonly value: number;
  readonly source: LimitSource;
}

export interface EffectiveLimits {
  readonly cappingRiskPct: EffectiveValue;
  readonly weightTolerancePct: EffectiveValue;
  readonly weightRsdMaxPct: EffectiveValue;
  readonly hardnessN: { readonly min: EffectiveValue; readonly max: EffectiveValue };
  readonly defectRateMaxPct: EffectiveValue;
  readonly avMax: EffectiveValue;
}

/** The upper limits: a request value must be ≤ the site's. */
const UPPER = ['cappingRiskPct', 'weightTolerancePct', 'weightRsdMaxPct', 'defectRateMaxPct', 'avMax'] as const;
type UpperLimit = (typeof UPPER)[number];

const NAMES: Readonly<Record<UpperLimit | 'hardnessN.min' | 'hardnessN.max', string>> = {
  cappingRiskPct: 'capping risk',
  weightTolerancePct: 'tablet weight tolerance',
  weightRsdMaxPct: 'weight RSD',
  defectRateMaxPct: 'defect rate',
  avMax: 'acceptance value',
  'hardnessN.min': 'hardness minimum',
  'hardnessN.max': 'hardness maximum',
};

/**
 * Effective limits of a run: the request's value where it states one, the site's elsewhere; a request
 * value equal to the site's counts as the request's.
 * @throws LkError `LK_RUN_REQUEST_LOOSENS` (`detail: { limit, requested, site }`) when a request
 *   limit is looser than the site's: an upper limit above it, a hardness minimum below the site's
 *   minimum or a maximum above its maximum.
 * @throws LkError `LK_RUN_REQUEST_INVALID` (same detail) when a request value is not a positive finite
 *   number, or the hardness range left would be empty (a minimum at or above the site's maximum).
 * @throws LkError `LK_VALUE_INVALID` (`detail: { limit, site }`) when a site limit is not a positive
 *   finite number or the site's hardness range is empty: no request can be checked against it.
 */
export function tightenLimits(request: RunRequest, site: SiteLimits): EffectiveLimits {
  checkSite(site);
  const r: RunLimits = request.limits;
  const out: Partial<Record<UpperLimit, EffectiveValue>> = {};
  for (const k of UPPER) {
    const requested = r[k];
    if (requested === undefined) {
      out[k] = { value: site[k], source: 'site' };
      continue;
    }
    checkRequested(k, requested, site[k]);
    if (requested > site[k]) throw loosens(k, requested, site[k], 'above');
    out[k] = { value: requested, source: 'request' };
  }
  const h = r.hardnessN ?? {};
  let min: EffectiveValue = { value: site.hardnessN.min, source: 'site' };
  let max: EffectiveValue = { value: site.hardnessN.max, source: 'site' };
  if (h.min !== undefined) {
    checkRequested('hardnessN.min', h.min, site.hardnessN);
    if (h.min < site.hardnessN.min) throw loosens('hardnessN.min', h.min, site.hardnessN, 'below');
    min = { value: h.min, source: 'request' };
  }
  if (h.max !== undefined) {
    checkRequested('hardnessN.max', h.max, site.hardnessN);
    if (h.max > site.hardnessN.max) throw loosens('hardnessN.max', h.max, site.hardnessN, 'above');
    max = { value: h.max, source: 'request' };
  }
  if (!(min.value < max.value)) {
    throw new LkError(
      'LK_RUN_REQUEST_INVALID',
      `the requested hardness leaves no range inside the site's ${site.hardnessN.min}–${site.hardnessN.max} N (min ${min.value} N, max ${max.value} N)`,
      { limit: 'hardnessN', requested: { ...h }, site: { ...site.hardnessN } },
    );
  }
  return Object.freeze({
    cappingRiskPct: out.cappingRiskPct!,
    weightTolerancePct: out.weightTolerancePct!,
    weightRsdMaxPct: out.weightRsdMaxPct!,
    hardnessN: Object.freeze({ min, max }),
    defectRateMaxPct: out.defectRateMaxPct!,
    avMax: out.avMax!,
  });
}

function loosens(limit: keyof typeof NAMES, requested: number, site: number | { min: number; max: number }, side: 'above' | 'below'): LkError {
  const siteText = typeof site === 'number' ? String(site) : String(side === 'below' ? site.min : site.max);
  return new LkError(
    'LK_RUN_REQUEST_LOOSENS',
    `the requested ${NAMES[limit]} ${requested} is ${side} the site's ${siteText}: a run request may only tighten a limit`,
    { limit, requested, site: typeof site === 'number' ? site : { ...site } },
  );
}

/** A hand-built request (API, SDK) may hold anything; NaN would pass every `>` check silently. */
function checkRequested(limit: keyof typeof NAMES, requested: unknown, site: number | { min: number; max: number }): void {
  if (typeof requested !== 'number' || !Number.isFinite(requested) || !(requested > 0)) {
    throw new LkError('LK_RUN_REQUEST_INVALID', `the requested ${NAMES[limit]} ${String(requested)} is not a positive number`, {
      limit,
      requested,
      site: typeof site === 'number' ? site : { ...site },
    });
  }
}

function checkSite(site: SiteLimits): void {
  const bad = (limit: string, value: unknown): LkError =>
    new LkError('LK_VALUE_INVALID', `the site's ${limit} limit ${String(value)} is not a usable number`, { limit, site: value });
  for (const k of UPPER) if (!(Number.isFinite(site[k]) && site[k] > 0)) throw bad(k, site[k]);
  const h = site.hardnessN;
  if (!(Number.isFinite(h?.min) && h.min >= 0)) throw bad('hardnessN.min', h?.min);
  if (!(Number.isFinite(h.max) && h.max > h.min)) throw bad('hardnessN.max', h.max);
}
