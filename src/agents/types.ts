/**
 * The shapes every agent of the line speaks in. Agents are pure functions
 * (observations, model, goal, limits) → proposals with a reasoning trace; the
 * run engine records each call's input and output as JSON and replays them
 * (R11), so everything here is plain JSON data: no class instances, no typed
 * arrays, no `undefined` values, finite numbers only.
 */

/** An agent as the SDK declares it (spec, "Agent"). Autonomy as in config/policy/agents.yaml. */
export interface AgentDeclaration {
  id: `agent.${string}`;
  role: string;
  goal: string;
  tools: string[];
  autonomy: 'L0' | 'L1' | 'L2' | 'L3';
  verify: 'twin';
  audit: 'part11';
}

/** One good-quality numeric sample of a measurement tag (`<equipment>.<Tag>`), `at` in epoch ms. */
export interface Reading {
  tag: string;
  value: number;
  unit: string;
  at: number;
}

/** A registry model, e.g. `{ id: 'process-twin-v1', version: 1 }`. */
export interface ModelRef {
  id: string;
  version: number;
}

/** One setpoint move: the value to write, in the setpoint's UCUM unit. */
export interface Move {
  setpoint: string;
  value: number;
  unit: string;
}

/** A candidate the agent weighed (the hold candidate has no moves). */
export interface CandidateConsidered {
  moves: Move[];
  predicted: Record<string, number>;
  /** Lower is better; the agent's file documents the score. */
  score: number;
  chosen: boolean;
  why: string;
}

/** The expandable reasoning of a decision (R10). */
export interface Trace {
  inputs: Record<string, unknown>;
  prediction?: Record<string, number>;
  candidates: CandidateConsidered[];
  why: string;
}

/** The attributes arbitration ranks: the first four (quality) outrank the last three (throughput). */
export type ProposalAttribute = 'content_uniformity' | 'potency' | 'dissolution' | 'defect_rate' | 'yield' | 'energy' | 'takt';

export interface Proposal {
  agent: string;
  attribute: ProposalAttribute;
  moves: Move[];
  justification: string;
  model?: ModelRef;
  predicted?: Record<string, number>;
  trace: Trace;
}

export interface AgentOutput<V = unknown> {
  proposals: Proposal[];
  verdict: V;
  trace: Trace;
}

/**
 * An approved limit of one setpoint as the policy bundle compiles it (already
 * in the setpoint's unit): `maxStep` bounds one move |new − current|.
 */
export interface DesignLimit {
  min: number;
  max: number;
  unit: string;
  maxStep: number;
}
