/**
 * The protocol-independent half of `WriteCapability.commandLkg`: which
 * supervisor tags are read back after a commanded revert, and when the
 * read-back proves the equipment runs its last known-good recipe. Pure.
 */
import type { LkgCommandResult, TagValue } from './types.js';

/** Supervisor tag that commands the revert (written `LOST`, Modbus 1). */
export const SUPERVISOR_STATE_TAG = 'SupervisorState';

/** Supervisor tags read back after the command, in this order. */
export const LKG_READBACK_TAGS = ['SupervisorState', 'ActiveRecipe', 'LkgRecipeId', 'RevertCount'] as const;

/** State reported when SupervisorState could not be read back. */
export const STATE_UNKNOWN = 'UNKNOWN';

export interface SupervisorReadback {
  readonly state: string;
  readonly activeRecipe: string | number | null;
  readonly lkgRecipe: string | number | null;
  readonly revertCount: number | null;
}

/** A recipe id (OPC UA String) or number (Modbus register); anything else is null. */
export function recipeOf(v: TagValue | null | undefined): string | number | null {
  if (typeof v === 'string') return v;
  if (typeof v === 'number' && Number.isFinite(v)) return v;
  return null;
}

/** A revert counter: a non-negative integer, else null. */
export function countOf(v: TagValue | null | undefined): number | null {
  return typeof v === 'number' && Number.isInteger(v) && v >= 0 ? v : null;
}

/**
 * The result of a commanded revert. Verified only when the equipment says
 * LOST *and* its active recipe is its LKG recipe: a PLC that accepted the
 * state change but still runs a supervised recipe has not reverted.
 */
export function lkgResult(equipment: string, r: SupervisorReadback, at: number): LkgCommandResult {
  const verified = r.state === 'LOST' && r.activeRecipe !== null && r.activeRecipe === r.lkgRecipe;
  return Object.freeze({ equipment, state: r.state, activeRecipe: r.activeRecipe, lkgRecipe: r.lkgRecipe, revertCount: r.revertCount, verified, at });
}

/**
 * The result of a commanded re-arm (SupervisorState := ATTENDED, Modbus 0). Verified only when the equipment
 * says ATTENDED afterwards: a PLC without heartbeats refuses the re-arm and stays LOST.
 */
export function rearmResult(equipment: string, r: SupervisorReadback, at: number): LkgCommandResult {
  return Object.freeze({ equipment, state: r.state, activeRecipe: r.activeRecipe, lkgRecipe: r.lkgRecipe, revertCount: r.revertCount, verified: r.state === 'ATTENDED', at });
}
