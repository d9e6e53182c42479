/**
 * The twin's view of an approved design space: the policy engine's limits
 * for one product × tooling pair, restricted to the setpoints the process
 * relations use. Pure; the caller loads the bundle.
 */
import { LkError } from '../errors.js';
import { SETPOINT_IDS, type DesignSpaceRanges } from './setpoints.js';

/** One approved limit as the policy bundle compiles it (already in the tag's unit). */
export interface ApprovedLimit {
  readonly min: number;
  readonly max: number;
  readonly unit: string;
}

/**
 * Map approved limits onto the twin's setpoint vector.
 * @throws LkError(LK_POLICY_BUNDLE) when the approved design space lacks a setpoint the twin varies
 *   (the twin would otherwise have to invent a limit).
 */
export function twinDesignSpace(approved: Readonly<Record<string, ApprovedLimit>>, label: string): DesignSpaceRanges {
  const out: Partial<DesignSpaceRanges> = {};
  const missing: string[] = [];
  for (const id of SETPOINT_IDS) {
    const l = approved[id];
    if (!l) missing.push(id);
    else out[id] = { min: l.min, max: l.max, unit: l.unit };
  }
  if (missing.length > 0) {
    throw new LkError('LK_POLICY_BUNDLE', `approved design space ${label} has no limits for ${missing.join(', ')}`, { missing });
  }
  return out as DesignSpaceRanges;
}
