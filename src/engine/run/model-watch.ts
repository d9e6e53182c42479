/**
 * The daemon side of R8 for models: a model a run depends on is lost when the registry no longer gives it
 * (file missing, SHA-256 mismatch, not validated, retired, not pinned, another tenant's) or when inference on
 * it fails (inputs outside its valid range). The watch checks every executing run's models on a timer, and
 * the steps' own model loads report the same errors; either way the engine reverts the line to its last
 * known-good recipe actively, drops the agents that use the model to L0 and holds the run for a person.
 */
import { LkError, type ErrorCode } from '../../errors.js';
import type { ModelAccess } from './types.js';

export type ModelKind = 'twin' | 'potency' | 'defects';

/** The errors that mean a model is lost (as opposed to an equipment or input problem). */
export const MODEL_LOST_CODES: ReadonlySet<ErrorCode> = new Set<ErrorCode>(['LK_MODEL_MISSING', 'LK_MODEL_CORRUPT', 'LK_MODEL_NOT_VALIDATED', 'LK_MODEL_NOT_PINNED', 'LK_MODEL_TENANT', 'LK_MODEL_OUT_OF_RANGE']);

/** The agents that act on each model's predictions (dropped to L0 when it is lost). */
export const AGENTS_OF_MODEL: Readonly<Record<ModelKind, readonly string[]>> = Object.freeze({
  twin: ['agent.compress_fill', 'agent.granulate_dry', 'agent.coat_dry', 'agent.quality_conf'],
  potency: ['agent.quality_potency'],
  defects: ['agent.defect_inspect'],
});

/** Why a run lost its model. */
export class ModelLost extends Error {
  constructor(
    readonly kind: ModelKind,
    readonly code: string,
    readonly detail: string,
  ) {
    super(`${kind} model lost: ${code}: ${detail}`);
    this.name = 'ModelLost';
  }
}

/** Is `err` a lost model? Returns its cause, or null for any other error. */
export function modelLostOf(err: unknown): ModelLost | null {
  if (err instanceof ModelLost) return err;
  if (LkError.is(err) && MODEL_LOST_CODES.has(err.code)) {
    const kind = (err.detail?.['modelKind'] as ModelKind | undefined) ?? 'twin';
    return new ModelLost(kind, err.code, err.message);
  }
  return null;
}

/** Model access whose errors name the kind of model that failed (so the right agents are dropped). */
export function tagged(models: ModelAccess): ModelAccess {
  const wrap = <T>(kind: ModelKind, fn: () => T): T => {
    try {
      return fn();
    } catch (err) {
      if (LkError.is(err)) throw new LkError(err.code, err.message, { ...(err.detail ?? {}), modelKind: kind }, { cause: err });
      throw err;
    }
  };
  return {
    twin: (t) => wrap('twin', () => models.twin(t)),
    potency: (t) => wrap('potency', () => models.potency(t)),
    defects: (t) => wrap('defects', () => models.defects(t)),
  };
}

/** Check every model of a tenant once. @returns the first lost model, or null. */
export function checkModels(models: ModelAccess, tenant: string): ModelLost | null {
  for (const kind of ['twin', 'potency', 'defects'] as const) {
    try {
      models[kind](tenant);
    } catch (err) {
      const lost = modelLostOf(err);
      if (lost) return lost;
      throw err;
    }
  }
  return null;
}
