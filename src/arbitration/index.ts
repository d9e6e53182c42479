/** Arbitration of contested setpoints (pure). */
export { EMPTY_ARBITRATION, arbitrate, resolveEscalation, scoreOf } from './arbitrate.js';
export type { ArbitrationRequest, ArbitrationResult, ArbitrationState, DeclineReason, Declined, Escalation, Ownership, Refused, Winner } from './arbitrate.js';
export { contestOutcome, contestText, requestedText, type ContestLoser, type ContestOutcome } from './outcome.js';
