/**
 * The limits a run works to: the batch record's specifications and the site's policy bundle, each tightened
 * where the operator's request states a stricter one (a request never loosens a validated limit).
 */
import type { BatchRecord } from '../../domain/batch-record.js';
import { convertUnit } from '../../domain/units.js';
import { tightenLimits, type SiteLimits } from '../../domain/run-request-limits.js';
import type { RunRequest } from '../../domain/run-request.js';
import { LkError } from '../../errors.js';
import type { PolicyBundle } from '../../policy/index.js';
import type { ParsedRequest } from './types.js';

/** Tablet weight tolerance of the site when the record names none (USP <2091> weight variation, 130–324 mg: ±7.5 %; we hold ±5 %). */
export const SITE_WEIGHT_TOLERANCE_PCT = 5;

/** The site's limits for a batch: its record's specifications and the bundle's capping threshold. */
export function siteLimitsOf(record: BatchRecord, bundle: PolicyBundle | null): SiteLimits {
  if (!bundle) throw new LkError('LK_POLICY_BUNDLE', 'no policy bundle is loaded: the site limits are unknown');
  const s = record.specifications;
  const toN = (v: number): number => {
    const n = convertUnit(v, s.hardness.unit, 'N');
    if (n === undefined) throw new LkError('LK_BATCH_RECORD_INVALID', `hardness unit ${s.hardness.unit} is not a force`);
    return n;
  };
  return {
    cappingRiskPct: bundle.content.cappingRiskThreshold * 100,
    weightRsdMaxPct: s.tablet_weight.rsd_max_pct,
    weightTolerancePct: SITE_WEIGHT_TOLERANCE_PCT,
    hardnessN: { min: toN(s.hardness.min), max: toN(s.hardness.max) },
    defectRateMaxPct: s.defect_rate_max_pct,
    avMax: s.content_uniformity.av_max,
  };
}

/**
 * Effective limits of a run, flat, each with its source: `{ cappingRiskPct: { value, source }, …,
 * hardnessMinN, hardnessMaxN }`.
 * @throws LkError LK_RUN_REQUEST_LOOSENS when the request would loosen a limit.
 */
export function effectiveLimits(req: ParsedRequest, record: unknown, bundle: PolicyBundle | null): Record<string, unknown> {
  const e = tightenLimits(req as unknown as RunRequest, siteLimitsOf(record as BatchRecord, bundle));
  const { hardnessN, ...rest } = e;
  return { ...rest, hardnessMinN: hardnessN.min, hardnessMaxN: hardnessN.max };
}
