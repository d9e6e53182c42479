/** Types of the plant simulator's public surface (plant.ts). */
import type { Clock } from '../../src/clock.js';
import type { EquipmentConfig } from '../../src/config/schema.js';

export type SupervisorState = 'ATTENDED' | 'LOST';

/** ActiveRecipe while a supervisor has moved a setpoint away from the recipe. */
export const SUPERVISED = 'SUPERVISED';

export interface LkgRecipe {
  /** OPC UA form, e.g. `LKG-press-0007`. */
  readonly id: string;
  /** Modbus form (recipe number), e.g. 7. Never 0: 0 means SUPERVISED. */
  readonly number: number;
  readonly setpoints: Readonly<Record<string, number>>;
}

export interface SupervisorStatus {
  readonly state: SupervisorState;
  readonly heartbeat: number;
  /** Wall-clock ms of the last heartbeat CHANGE, if any. */
  readonly lastHeartbeatAt: number | undefined;
  /** The watchdog runs once a supervisor has shown up (first heartbeat change or first setpoint write). */
  readonly armed: boolean;
  readonly watchdogTimeoutMs: number;
  /** `SUPERVISED` or the LKG recipe id. */
  readonly activeRecipe: string;
  /** Modbus form of activeRecipe: 0 = SUPERVISED, else the LKG recipe number. */
  readonly activeRecipeNumber: number;
  readonly lkg: LkgRecipe;
  readonly revertCount: number;
}

export interface RevertEvent {
  readonly equipment: string;
  readonly reason: 'watchdog' | 'commanded';
  /** Wall-clock ms. */
  readonly at: number;
  readonly revertCount: number;
  readonly recipe: string;
}

export type PlantEvent = ({ type: 'revert' } & RevertEvent) | { type: 'rearm'; equipment: string; at: number };

export interface PlantOptions {
  readonly equipment: readonly EquipmentConfig[];
  /** Wall clock: the watchdog's time, and the base of process time. */
  readonly clock: Clock;
  /** Process time advances timeScale × wall time. Default 1. */
  readonly timeScale?: number;
  readonly seed: number;
  readonly watchdogTimeoutMs: number;
  /** Punch diameter of the tooling in use, mm (default 10). */
  readonly punchDiameterMm?: number;
  /** Initial batch phase reported by the line PLC. */
  readonly batchPhase?: string;
  /** Slow drift of material parameters (drift.ts); default true. */
  readonly drift?: boolean;
}
