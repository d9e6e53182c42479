/**
 * Setpoint vectors (several moves proposed together), pure: the hash an
 * approval binds to, and how the decisions of a vector combine. A vector is
 * atomic: it is written whole or not at all, so its outcome is the most
 * restrictive of its moves' outcomes.
 */
import { hash } from 'node:crypto';
import canonicalize from 'canonicalize';
import type { Decision, Outcome } from '../domain/policy.js';

export interface VectorMove {
  readonly setpoint: string;
  /** Value in the setpoint's own unit (after conversion). */
  readonly value: number;
  readonly unit: string;
}

/**
 * SHA-256 of the canonical JSON of the vector (moves sorted by setpoint, values in setpoint units), with the
 * agent and the product × tooling: "12.5 kN" and "12500 N" are the same vector; any other value is not.
 */
export function vectorHash(v: { readonly agent: string; readonly product: string; readonly tooling: string; readonly moves: readonly VectorMove[] }): string {
  const moves = [...v.moves].sort((a, b) => (a.setpoint < b.setpoint ? -1 : a.setpoint > b.setpoint ? 1 : 0)).map((m) => ({ setpoint: m.setpoint, value: m.value, unit: m.unit }));
  return hash('sha256', canonicalize({ agent: v.agent, product: v.product, tooling: v.tooling, moves }) ?? '');
}

const RANK: Record<Outcome, number> = { deny: 3, needs_qa: 2, recommend_only: 1, allow: 0 };

/** The vector's outcome and who must approve it: the most restrictive move decides. */
export function combineDecisions(ds: readonly Decision[]): { outcome: Outcome; pendingApproval: Decision['pendingApproval'] } {
  let outcome: Outcome = 'allow';
  for (const d of ds) if (RANK[d.outcome] > RANK[outcome]) outcome = d.outcome;
  if (ds.length === 0) return { outcome: 'deny', pendingApproval: 'none' };
  if (outcome === 'needs_qa') return { outcome, pendingApproval: 'qa' };
  if (outcome === 'recommend_only') {
    // executable on approval only when every recommend-only move waits for a reviewer (none is L0/L1 or unattended)
    const all = ds.filter((d) => d.outcome === 'recommend_only').every((d) => d.pendingApproval === 'reviewer');
    return { outcome, pendingApproval: all ? 'reviewer' : 'none' };
  }
  return { outcome, pendingApproval: 'none' };
}
