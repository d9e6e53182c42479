/**
 * Types of R8's active revert (`GuardedWriter.revertToLkg`): command the equipment's own revert to its last
 * known-good recipe (SupervisorState := LOST). It is the fail-safe, so no policy decision can refuse it; the
 * writer audits it like a write — an intent before the command, an outcome with what the equipment reports
 * after it — and the PLC then refuses supervisory writes until a named person re-arms it.
 */
import type { LkgCommandResult } from '../../connectors/types.js';

export interface RevertCause {
  /** The chain the revert is recorded on: the tenant whose batch was running, or `site`. */
  readonly tenant: string;
  readonly reason: string;
  readonly run?: string;
  readonly batch?: string;
  /** Who decided it: `system` for the model watchdog, or a person. */
  readonly actor?: string;
}

export type RevertOutcome =
  | { readonly equipment: string; readonly ok: true; readonly result: LkgCommandResult }
  | { readonly equipment: string; readonly ok: false; readonly error: { readonly code: string; readonly message: string } };
