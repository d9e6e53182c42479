/**
 * A rehearsal's answer as the API sends it: the whole result as JSON bytes, and the summary its audit entry
 * records (the counts and the best candidate, never the 10,000 entries). Encoded where the rehearsal ran, so a
 * large one's result (about 10,000 ranked and discarded entries, megabytes of JSON) is neither copied into nor
 * encoded on the main thread: the bytes arrive as a transferred buffer and go to the socket as they are.
 */
import type { SimulationResult } from '../twin/simulate.js';

/** What the audit entry of a rehearsal records about its result. */
export interface RehearsalSummary {
  readonly model: { readonly id: string; readonly version: number };
  readonly requested: number;
  readonly ranked: number;
  readonly discarded: number;
  readonly best: { readonly index: number; readonly score: number; readonly cappingRiskPct: number } | null;
}

export interface EncodedRehearsal {
  /** The result as UTF-8 JSON; its own ArrayBuffer (transferable, not a pooled slice). */
  readonly body: Uint8Array;
  readonly summary: RehearsalSummary;
}

export function summariseRehearsal(r: SimulationResult): RehearsalSummary {
  const best = r.ranked[0];
  return {
    model: { id: r.model.id, version: r.model.version }, requested: r.requested, ranked: r.ranked.length, discarded: r.discarded.length,
    best: best ? { index: best.index, score: best.score, cappingRiskPct: best.predicted.cappingRiskPct } : null,
  };
}

export function encodeRehearsal(r: SimulationResult): EncodedRehearsal {
  return { body: new TextEncoder().encode(JSON.stringify(r)), summary: summariseRehearsal(r) };
}
