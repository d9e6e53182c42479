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

/**
 * A measured attribute a move steers toward its target, in the words of the agent's own reasoning (the press's
 * tablet weight, hardness, capping rate): what it is now (measured, or the twin's at the current setpoints before
 * any measurement) and what the twin predicts after the move, in `unit` (UCUM).
 */
export interface Served {
  tag: string;
  from: number;
  to: number;
  unit: string;
}

export interface Proposal {
  agent: string;
  /** The attribute class arbitration ranks the move by (quality over throughput). */
  attribute: ProposalAttribute;
  /**
   * What the move serves as the agent reasoned it, largest improvement first, when that is not the class itself
   * (a press move about weight and hardness is ranked as a quality move, but it is about weight and hardness).
   */
  serves?: Served[];
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
