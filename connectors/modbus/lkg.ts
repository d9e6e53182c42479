/**
 * The commanded revert to LKG over Modbus (`WriteCapability.commandLkg`):
 * write 1 (LOST) to the equipment's SupervisorState holding register through
 * its unit's lane — the same FIFO as polls and heartbeats, one request in
 * flight, so the command never interleaves with them on the wire — then read
 * the supervisor registers back through the same lane.
 */
import type { Clock } from '../../src/clock.js';
import { LkError } from '../../src/errors.js';
import { countOf, LKG_READBACK_TAGS, lkgResult, rearmResult, recipeOf, STATE_UNKNOWN, SUPERVISOR_STATE_TAG } from '../lkg.js';
import type { LkgCommandResult, Sample } from '../types.js';
import { encode } from './codec.js';
import type { UnitLane } from './lane.js';
import type { TagEntry } from './plan.js';
import { assertSupervised, commandValue, stateOf, type SupervisionProfile } from '../supervision.js';

/** SupervisorState as a number on Modbus (REGISTER_MAP.md): 0 = ATTENDED, 1 = LOST. */
export const MODBUS_SUPERVISOR_STATE = { ATTENDED: 0, LOST: 1 } as const;

export interface LkgHost {
  readonly tags: ReadonlyMap<string, TagEntry>;
  /** Each equipment's supervision profile: which register values mean supervised and fallback, and what commands them. */
  readonly profiles?: ReadonlyMap<string, SupervisionProfile>;
  readonly clock: Clock;
  lane(unitId: number): UnitLane;
  /** The connector's batched read (bad values are bad samples; never throws). */
  read(tags: readonly string[]): Promise<Sample[]>;
}

/** The register value of SupervisorState as its name; another number as its decimal text. */
export function stateName(v: Sample['value']): string {
  if (v === MODBUS_SUPERVISOR_STATE.LOST) return 'LOST';
  if (v === MODBUS_SUPERVISOR_STATE.ATTENDED) return 'ATTENDED';
  return typeof v === 'number' ? String(v) : STATE_UNKNOWN;
}

/**
 * A lane failure of the command as the capability reports it: exception replies (the unit answered and
 * refused) become LK_WRITE_FAILED naming the exception; a malformed reply leaves the outcome unknown.
 */
function commandError(err: unknown, tag: string, what: string): LkError {
  if (!LkError.is(err)) return new LkError('LK_CONN_UNAVAILABLE', `${tag}: ${what} failed: ${String((err as Error)?.message ?? err)}`, { tag, outcome: 'unknown' }, { cause: err });
  if (err.code === 'LK_MODBUS_PROTOCOL') return new LkError('LK_CONN_UNAVAILABLE', `${tag}: ${err.message}`, { tag, status: err.code, outcome: 'unknown' }, { cause: err });
  if (err.code.startsWith('LK_MODBUS_')) {
    return new LkError('LK_WRITE_FAILED', `${tag}: equipment refused the ${what} (${err.code})`, { ...(err.detail ?? {}), tag, status: err.code }, { cause: err });
  }
  return err;
}

/**
 * Write SupervisorState := 1 (LOST) and read SupervisorState, ActiveRecipe,
 * LkgRecipeId and RevertCount back.
 *
 * @throws LkError LK_TAG_UNKNOWN (no SupervisorState supervisor tag), LK_TAG_NOT_WRITABLE (it is an input
 *   register), LK_CODEC (its codec cannot hold 1; nothing sent), LK_CONN_TIMEOUT / LK_CONN_UNAVAILABLE
 *   (detail.outcome 'unknown' when it may have been applied), LK_WRITE_FAILED (an exception reply, detail.status the LK_MODBUS_* code).
 */
export function commandLkg(host: LkgHost, equipment: string): Promise<LkgCommandResult> {
  return commandState(host, equipment, 'LOST');
}

/** Write SupervisorState := 0 (ATTENDED) and read the supervisor registers back; throws as {@link commandLkg}. */
export function commandRearm(host: LkgHost, equipment: string): Promise<LkgCommandResult> {
  return commandState(host, equipment, 'ATTENDED');
}

async function commandState(host: LkgHost, equipment: string, target: 'LOST' | 'ATTENDED'): Promise<LkgCommandResult> {
  const tag = `${equipment}.${SUPERVISOR_STATE_TAG}`;
  const e = host.tags.get(tag);
  if (!e || e.config.kind !== 'supervisor') throw new LkError('LK_TAG_UNKNOWN', `${equipment} has no supervisor tag ${SUPERVISOR_STATE_TAG}`, { tag, equipment });
  if (e.table !== 'holding') throw new LkError('LK_TAG_NOT_WRITABLE', `${tag} is an input register`, { tag });
  if (host.profiles) assertSupervised(host.profiles, tag);
  const profile = host.profiles?.get(equipment);
  // the value this PLC's program understands (by default 1 commands the revert, 0 the re-arm)
  const wanted = profile ? commandValue(profile, target) : MODBUS_SUPERVISOR_STATE[target];
  if (typeof wanted === 'string') throw new LkError('LK_WRITE_FAILED', `${tag}: a register cannot hold ${JSON.stringify(wanted)}; nothing was sent`, { tag, sent: false });
  let regs: number[];
  try {
    regs = encode(e.config, typeof wanted === 'boolean' ? Number(wanted) : wanted);
  } catch (err) {
    throw new LkError('LK_WRITE_FAILED', `${tag}: ${wanted} does not fit ${e.config.type}; nothing was sent`, { tag, sent: false }, { cause: err });
  }
  try {
    await host.lane(e.unitId).writeRegisters(e.address, regs);
  } catch (err) {
    throw commandError(err, tag, target === 'LOST' ? 'LKG command' : 're-arm command');
  }
  const ids = LKG_READBACK_TAGS.map((n) => `${equipment}.${n}`).filter((id) => host.tags.has(id));
  const samples = await host.read(ids);
  const good = new Map(samples.filter((s) => s.quality === 'good').map((s) => [s.tag.slice(equipment.length + 1), s.value]));
  return (target === 'LOST' ? lkgResult : rearmResult)(
    equipment,
    {
      state: good.has('SupervisorState') ? (profile ? (stateOf(good.get('SupervisorState'), profile) ?? STATE_UNKNOWN) : stateName(good.get('SupervisorState')!)) : STATE_UNKNOWN,
      activeRecipe: recipeOf(good.get('ActiveRecipe')),
      lkgRecipe: recipeOf(good.get('LkgRecipeId')),
      revertCount: countOf(good.get('RevertCount')),
    },
    host.clock.now(),
  );
}
