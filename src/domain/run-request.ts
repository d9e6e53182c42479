/**
 * The run request an operator types (`linekeeper run "<free-text run request>"`),
 * read by a fixed grammar — never a language model — into batch, line, goal,
 * objectives, the limits it states and an optional autonomy level.
 *
 * Pieces: `run-request-lexer.ts` (tokens), `run-request-vocabulary.ts` (every
 * accepted word and phrase), `run-request-parser.ts` (the grammar),
 * `run-request-goal.ts` (the normalised goal sentence), `run-request-limits.ts`
 * (a request may only tighten the site's limits). All pure: no I/O, no clock.
 */
import { LkError } from '../errors.js';
import type { AutonomyLevel } from './policy.js';
import { tokenize } from './run-request-lexer.js';
import { formatGoal } from './run-request-goal.js';
import { readClauses, type Draft } from './run-request-parser.js';
import { OBJECTIVES, type Objective } from './run-request-vocabulary.js';

export { OBJECTIVES, type Objective } from './run-request-vocabulary.js';
export { tightenLimits, type EffectiveLimits, type EffectiveValue, type LimitSource, type SiteLimits } from './run-request-limits.js';

/** Limits a request states; every field optional (the site's apply to the rest, see `tightenLimits`). */
export interface RunLimits {
  /** Maximum predicted capping risk, % (0 < x < 100). */
  cappingRiskPct?: number;
  /** Tablet weight tolerance around target, ± % (0 < x ≤ 100). */
  weightTolerancePct?: number;
  /** Maximum relative standard deviation of tablet weight, %. */
  weightRsdMaxPct?: number;
  /** Hardness (breaking force) bounds in N; kN is converted. */
  hardnessN?: { min?: number; max?: number };
  /** Maximum defect rate, %. */
  defectRateMaxPct?: number;
  /** Maximum USP <905> acceptance value (a plain number). */
  avMax?: number;
}

export interface RunRequest {
  /** Batch id, upper case. */
  batch: string;
  /** `line-<n>`. */
  line: string;
  /** The request as one normalised sentence (what the plan and the audit trail show). */
  goal: string;
  /** Attributes the request names, in the canonical order of {@link OBJECTIVES}, each once. */
  objectives: Objective[];
  limits: RunLimits;
  /** Only when the text states it; the CLI flag may give it instead. */
  autonomy?: AutonomyLevel;
  /** The request exactly as typed. */
  text: string;
}

/**
 * Parse a free-text run request. Deterministic: the same text gives a deep-equal result.
 * @throws LkError `LK_RUN_REQUEST_INVALID` — `detail.missing` (`['batch']`, `['line']`) when the
 *   text names no batch or no line; `detail.unrecognised` + `detail.at` (UTF-16 offset) for a clause
 *   it cannot read, a limit without a number or unit, a negative, zero or absurd number (capping risk
 *   ≥ 100 %, any % > 100, hardness > 1000 N), a hardness minimum not below its maximum, an unknown
 *   autonomy level, or a batch, line, autonomy or limit given twice.
 */
export function parseRunRequest(text: string): RunRequest {
  if (typeof text !== 'string') throw new LkError('LK_RUN_REQUEST_INVALID', `a run request is a text, not ${typeof text}`);
  const draft: Draft = { objectives: new Set(), limits: {} };
  readClauses(text, tokenize(text), draft);
  const missing = (['batch', 'line'] as const).filter((k) => draft[k] === undefined);
  if (missing.length > 0) {
    throw new LkError('LK_RUN_REQUEST_INVALID', `the run request names no ${missing.join(' and no ')} (e.g. "run batch B-1042 on line-3 …")`, { missing });
  }
  const objectives = OBJECTIVES.filter((o) => draft.objectives.has(o));
  // field order fixed, whatever order the clauses came in: the request is hashed into the audit trail
  const limits: RunLimits = {};
  for (const k of LIMIT_ORDER) if (draft.limits[k] !== undefined) Object.assign(limits, { [k]: draft.limits[k] });
  if (limits.hardnessN) limits.hardnessN = Object.freeze(hardnessOf(limits.hardnessN));
  return Object.freeze({
    batch: draft.batch!,
    line: draft.line!,
    goal: formatGoal(objectives, limits),
    objectives: Object.freeze(objectives) as Objective[],
    limits: Object.freeze(limits),
    ...(draft.autonomy ? { autonomy: draft.autonomy } : {}),
    text,
  });
}

const LIMIT_ORDER = ['cappingRiskPct', 'weightTolerancePct', 'weightRsdMaxPct', 'hardnessN', 'defectRateMaxPct', 'avMax'] as const;

function hardnessOf(h: { min?: number; max?: number }): { min?: number; max?: number } {
  return { ...(h.min !== undefined ? { min: h.min } : {}), ...(h.max !== undefined ? { max: h.max } : {}) };
}
