/**
 * agent.quality_potency — NIR potency evidence for release
 * (nir.evidence_chain): every scored spectrum's id, SHA-256 and model version
 * are kept in the trace, in order, so the release package can cite each one.
 *
 * The verdict: mean potency, its 95 % confidence interval with the Student t
 * quantile on n − 1 degrees of freedom and the larger of the sample SD and
 * the model's RMSEP (with few spectra the sample SD can understate the
 * analytical error the validation measured), and the USP <905> acceptance
 * value of the predictions (k = 2.4 under 30 units, 2.0 from 30). It passes
 * when at least {@link MIN_SCORES} spectra were scored, the whole interval
 * lies inside the specification and AV ≤ L1 = 15. It proposes nothing: the
 * release itself waits for the named QA reviewer (R3).
 */
import jStat from 'jstat';
import { LkError } from '../errors.js';
import { acceptanceValue } from '../twin/process.js';
import { checkModel, checkNow, finite, fmt, mean, plain, positive, sampleSd } from './support.js';
import type { AgentOutput, ModelRef } from './types.js';

export const AGENT = 'agent.quality_potency';
/** USP <905> stage 1 tests ten units. */
export const MIN_SCORES = 10;
export const AV_L1 = 15;
const SHA256 = /^[0-9a-f]{64}$/;

export interface PotencyScore {
  /** nir.SpectrumId of the scanned spectrum. */
  spectrumId: number;
  /** PLS prediction, % label claim. */
  potencyPct: number;
  /** SHA-256 (hex) of the spectrum, as the evidence chain hashes it. */
  sha256: string;
  model: ModelRef;
}

export interface QualityPotencyInput {
  now: number;
  /** Scored spectra, in scan order. */
  scores: PotencyScore[];
  spec: { minPct: number; maxPct: number };
  /** RMSEP of the PLS model (its card), % label claim. */
  rmsepPct: number;
}

export interface QualityPotencyVerdict {
  n: number;
  meanPct: number | null;
  sdPct: number | null;
  ciLowPct: number | null;
  ciHighPct: number | null;
  pass: boolean;
  av: number | null;
  /** The distinct models that scored the spectra (a release cites each). */
  models: ModelRef[];
}

/**
 * Assemble the potency evidence and judge it against the specification.
 * @throws LkError(LK_VALIDATION) for a bad `now`, model, hash, a repeated spectrum id or spec min ≥ max;
 *   LkError(LK_VALUE_INVALID) for non-finite numbers or a non-positive RMSEP.
 */
export function decide(input: QualityPotencyInput): AgentOutput<QualityPotencyVerdict> {
  const now = checkNow(input.now);
  const rmsep = positive('rmsepPct', input.rmsepPct);
  const lo = finite('spec.minPct', input.spec?.minPct);
  const hi = finite('spec.maxPct', input.spec.maxPct);
  if (!(hi > lo)) throw new LkError('LK_VALIDATION', 'spec.maxPct must exceed spec.minPct', { path: 'spec.maxPct' });
  if (!Array.isArray(input.scores)) throw new LkError('LK_VALIDATION', 'scores must be an array', { path: 'scores' });
  const ids = new Set<number>();
  const evidence = input.scores.map((s, i) => {
    const spectrumId = finite(`scores[${i}].spectrumId`, s.spectrumId);
    if (ids.has(spectrumId)) throw new LkError('LK_VALIDATION', `spectrum ${spectrumId} is scored twice (scores[${i}])`, { path: `scores[${i}].spectrumId` });
    ids.add(spectrumId);
    if (typeof s.sha256 !== 'string' || !SHA256.test(s.sha256)) throw new LkError('LK_VALIDATION', `scores[${i}].sha256 must be 64 lower-case hex digits`, { path: `scores[${i}].sha256` });
    return { spectrumId, sha256: s.sha256, model: checkModel(`scores[${i}].model`, s.model), potencyPct: finite(`scores[${i}].potencyPct`, s.potencyPct) };
  });
  const models = distinctModels(evidence.map((e) => e.model));
  const values = evidence.map((e) => e.potencyPct);
  const n = values.length;
  const inputs = { now, spec: { minPct: lo, maxPct: hi }, rmsepPct: rmsep, n, evidence };
  if (n < 2) {
    const verdict: QualityPotencyVerdict = { n, meanPct: n === 1 ? values[0]! : null, sdPct: null, ciLowPct: null, ciHighPct: null, pass: false, av: null, models };
    return plain({ proposals: [], verdict, trace: { inputs, candidates: [], why: `${n} scored spectrum(s): no evidence for release yet (at least ${MIN_SCORES} needed)` } });
  }
  const m = mean(values);
  const sd = sampleSd(values);
  const t = jStat.studentt.inv(0.975, n - 1);
  const half = (t * Math.max(sd, rmsep)) / Math.sqrt(n);
  const av = acceptanceValue(values);
  const outside = values.filter((v) => v < lo || v > hi).length;
  const enough = n >= MIN_SCORES;
  const inside = m - half >= lo && m + half <= hi;
  const pass = enough && inside && av.av <= AV_L1;
  const verdict: QualityPotencyVerdict = { n, meanPct: m, sdPct: sd, ciLowPct: m - half, ciHighPct: m + half, pass, av: av.av, models };
  const failures = [
    ...(enough ? [] : [`only ${n} spectra (≥ ${MIN_SCORES} needed)`]),
    ...(inside ? [] : [`the 95 % interval ${fmt(m - half)}–${fmt(m + half)} % is not inside ${fmt(lo, 1)}–${fmt(hi, 1)} %`]),
    ...(av.av <= AV_L1 ? [] : [`AV ${fmt(av.av)} over L1 = ${AV_L1}`]),
  ];
  const why =
    `${n} spectra scored by ${models.map((x) => `${x.id} v${x.version}`).join(', ')}: mean ${fmt(m)} %, SD ${fmt(sd)} %, 95 % interval ${fmt(m - half)}–${fmt(m + half)} % ` +
    `(t ${fmt(t, 3)}, ${sd >= rmsep ? 'sample SD' : `RMSEP ${fmt(rmsep)} % as the floor`}), AV ${fmt(av.av)} (k ${av.k}); ${outside} single prediction(s) outside the specification. ` +
    (pass ? 'The potency evidence supports release; release waits for the named QA reviewer.' : `Not passing: ${failures.join('; ')}.`);
  return plain({ proposals: [], verdict, trace: { inputs, prediction: { meanPct: m, ciLowPct: m - half, ciHighPct: m + half, av: av.av }, candidates: [], why } });
}

function distinctModels(ms: readonly ModelRef[]): ModelRef[] {
  const seen = new Map<string, ModelRef>();
  for (const m of ms) seen.set(`${m.id}\u0000${m.version}`, m);
  return [...seen.values()].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : a.version - b.version));
}
