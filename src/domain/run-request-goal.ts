/**
 * The normalised goal sentence of a run request: the same objectives and limits
 * always give the same sentence, whatever words, order or punctuation the
 * operator used ("keep tablet weight and hardness on target with capping risk
 * under 2 %"). It is what the plan, the console and the audit trail show. Pure.
 */
import type { RunLimits } from './run-request.js';
import type { Objective } from './run-request-vocabulary.js';

/** Attributes held on target, and what they are called in the sentence. */
const ON_TARGET: Partial<Record<Objective, string>> = {
  weight: 'tablet weight',
  hardness: 'hardness',
  thickness: 'thickness',
  content_uniformity: 'content uniformity',
  dissolution: 'dissolution',
  potency: 'potency',
};
const MINIMISE: Partial<Record<Objective, string>> = { defect_rate: 'defect rate', takt: 'takt time' };
const MAXIMISE: Partial<Record<Objective, string>> = { yield: 'yield' };

/** `a`, `a and b`, `a, b and c`. */
function list(items: readonly string[]): string {
  return items.length <= 1 ? (items[0] ?? '') : `${items.slice(0, -1).join(', ')} and ${items.at(-1)!}`;
}

function names(objectives: readonly Objective[], table: Partial<Record<Objective, string>>): string[] {
  return objectives.flatMap((o) => (table[o] === undefined ? [] : [table[o]]));
}

/** The limits as phrases, in the field order of {@link RunLimits}. */
export function limitPhrases(l: RunLimits): string[] {
  const out: string[] = [];
  if (l.cappingRiskPct !== undefined) out.push(`capping risk under ${l.cappingRiskPct} %`);
  if (l.weightTolerancePct !== undefined) out.push(`tablet weight within ±${l.weightTolerancePct} %`);
  if (l.weightRsdMaxPct !== undefined) out.push(`weight RSD under ${l.weightRsdMaxPct} %`);
  const h = l.hardnessN;
  if (h?.min !== undefined && h.max !== undefined) out.push(`hardness between ${h.min} and ${h.max} N`);
  else if (h?.min !== undefined) out.push(`hardness above ${h.min} N`);
  else if (h?.max !== undefined) out.push(`hardness under ${h.max} N`);
  if (l.defectRateMaxPct !== undefined) out.push(`defect rate under ${l.defectRateMaxPct} %`);
  if (l.avMax !== undefined) out.push(`acceptance value under ${l.avMax}`);
  return out;
}

/** One sentence from objectives (canonical order) and limits. */
export function formatGoal(objectives: readonly Objective[], limits: RunLimits): string {
  const parts: string[] = [];
  const kept = names(objectives, ON_TARGET);
  if (kept.length > 0) parts.push(`keep ${list(kept)} on target`);
  const lowered = names(objectives, MINIMISE);
  if (lowered.length > 0) parts.push(`minimise ${list(lowered)}`);
  const raised = names(objectives, MAXIMISE);
  if (raised.length > 0) parts.push(`maximise ${list(raised)}`);
  const bounds = limitPhrases(limits);
  if (parts.length === 0) return bounds.length > 0 ? `keep ${list(bounds)}` : 'run to the batch record within the site limits';
  return bounds.length > 0 ? `${list(parts)} with ${list(bounds)}` : list(parts);
}
