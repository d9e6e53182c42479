/**
 * The quality layer: pure judgements of a batch's truth — the specification
 * table of the release, in-process OOS/OOT findings, count reconciliation and
 * the twin's fidelity against the plant. Pure: no I/O, no clock, no randomness.
 */
export * from './stats.js';
export * from './spec.js';
export * from './in-process.js';
export * from './reconcile.js';
export * from './fidelity.js';
