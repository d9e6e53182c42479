/**
 * Supervision profiles: how one PLC is supervised, as its own program does it, not as linekeeper's simulator
 * does. Per equipment the site configuration says (`supervision`, `heartbeat`):
 *
 * - the **mode**: `supervised` (linekeeper beats the PLC's watchdog, may write setpoints through the guarded
 *   writer and commands the PLC's revert to its last known-good recipe) or `monitor_only` (read only: no
 *   heartbeat, no setpoint write, no command; a site starts here, in shadow mode, without changing a PLC program);
 * - the **heartbeat**: a `counter` linekeeper increments, wrapping to 0 past the tag's type (or `wrap_at`), or a
 *   `toggle` bit it inverts every period (the most common PLC life bit);
 * - the **state encoding** of `SupervisorState`: which values mean supervised and which mean fallback (the PLC
 *   runs its LKG recipe), and which value commands the revert and the re-arm. Everything downstream of the
 *   connectors speaks `LOST` (fallback) and `ATTENDED` (supervised); only this module knows a PLC's own words.
 *
 * Defaults keep the embedded simulator's conventions: a String state `LOST` / `ATTENDED`, a numeric one 1 / 0.
 * Pure: no I/O.
 */
import { counterMax, type EquipmentConfig } from '../src/config/schema.js';
import { LkError } from '../src/errors.js';

export { counterMax };

/** A state value as a PLC holds it: a word, an integer code, or a bit. */
export type StateValue = string | number | boolean;

/** The canonical names: `LOST` = the PLC runs its LKG recipe (fallback), `ATTENDED` = supervised. */
export const FALLBACK = 'LOST';
export const SUPERVISED = 'ATTENDED';

export interface SupervisionProfile {
  readonly equipment: string;
  readonly mode: 'supervised' | 'monitor_only';
  readonly heartbeat: { readonly kind: 'counter' | 'toggle'; readonly periodMs: number; readonly wrapAt: number | null };
  readonly state: { readonly supervised: readonly StateValue[]; readonly fallback: readonly StateValue[]; readonly revert: StateValue; readonly rearm: StateValue };
}

/** The data type of a tag of the equipment (OPC UA `data_type`, Modbus `type`), or undefined. */
export function tagType(eq: EquipmentConfig, name: string): string | undefined {
  const t = (eq.tags as readonly { name: string; data_type?: string; type?: string }[]).find((x) => x.name === name);
  return t ? (t.data_type ?? t.type) : undefined;
}

/** The profile of one equipment, defaults filled in from its tags' types. */
export function profileOf(eq: EquipmentConfig): SupervisionProfile {
  const s = eq.supervision;
  const stateType = tagType(eq, 'SupervisorState');
  const words = stateType === 'String';
  const supervised = s?.state?.supervised ?? [words ? SUPERVISED : 0];
  const fallback = s?.state?.fallback ?? [words ? FALLBACK : 1];
  const hbType = tagType(eq, 'Heartbeat');
  const kind = eq.heartbeat.kind ?? 'counter';
  return Object.freeze({
    equipment: eq.id,
    mode: s?.mode ?? 'supervised',
    heartbeat: Object.freeze({ kind, periodMs: eq.heartbeat.period_ms, wrapAt: eq.heartbeat.wrap_at ?? (hbType ? counterMax(hbType) : null) }),
    state: Object.freeze({ supervised: Object.freeze([...supervised]), fallback: Object.freeze([...fallback]), revert: s?.state?.revert ?? fallback[0]!, rearm: s?.state?.rearm ?? supervised[0]! }),
  });
}

/** Profiles of a set of equipment by id. */
export function profilesOf(equipment: readonly EquipmentConfig[]): ReadonlyMap<string, SupervisionProfile> {
  return new Map(equipment.map((e) => [e.id, profileOf(e)]));
}

/** A value equal to a state value: `true` and 1, `false` and 0 are the same bit; strings compare exactly. */
function same(raw: unknown, v: StateValue): boolean {
  if (typeof raw === 'string' || typeof v === 'string') return raw === v;
  const n = typeof raw === 'boolean' ? Number(raw) : raw;
  return typeof n === 'number' && n === Number(v);
}

/**
 * A raw SupervisorState value in canonical words: `LOST` for a fallback value, `ATTENDED` for a supervised one;
 * anything else as the PLC said it (`REMOTE`, `code 7`), never guessed; undefined when there is no value.
 * Without a profile, the simulator's conventions (strings as they are, 0 ATTENDED, 1 LOST).
 */
export function stateOf(raw: unknown, profile?: SupervisionProfile): string | undefined {
  if (raw === null || raw === undefined) return undefined;
  if (profile) {
    if (profile.state.fallback.some((v) => same(raw, v))) return FALLBACK;
    if (profile.state.supervised.some((v) => same(raw, v))) return SUPERVISED;
  } else {
    if (typeof raw === 'string') return raw;
    if (raw === 0) return SUPERVISED;
    if (raw === 1) return FALLBACK;
  }
  if (typeof raw === 'string') return raw;
  if (typeof raw === 'number') return `code ${raw}`;
  if (typeof raw === 'boolean') return `bit ${raw ? 1 : 0}`;
  return undefined;
}

/** The value written to command `target` (the revert: LOST; the re-arm: ATTENDED). */
export function commandValue(profile: SupervisionProfile, target: typeof FALLBACK | typeof SUPERVISED): StateValue {
  return target === FALLBACK ? profile.state.revert : profile.state.rearm;
}

/**
 * The next heartbeat value after `prev`: a counter adds 1 and wraps to 0 past `wrapAt` (the tag's type: an Int16
 * counter goes 32767 → 0, never overflowing into a write the PLC refuses); a toggle inverts the bit. `prev`
 * undefined (nothing read yet) starts from 0.
 */
export function nextBeat(prev: number | undefined, hb: SupervisionProfile['heartbeat']): number {
  const p = prev !== undefined && Number.isFinite(prev) ? prev : 0;
  if (hb.kind === 'toggle') return p === 0 ? 1 : 0;
  const max = hb.wrapAt ?? Number.MAX_SAFE_INTEGER;
  return p >= max || p < 0 ? 0 : p + 1;
}

/**
 * Refuse anything written to a monitor-only unit (fail safe: linekeeper only watches it).
 * @throws LkError LK_MONITOR_ONLY
 */
export function assertSupervised(profiles: ReadonlyMap<string, SupervisionProfile>, tagId: string): void {
  const equipment = tagId.slice(0, tagId.indexOf('.'));
  if (profiles.get(equipment)?.mode === 'monitor_only') {
    throw new LkError('LK_MONITOR_ONLY', `${equipment} is monitor-only: linekeeper reads it and writes nothing to it (${tagId})`, { tag: tagId, equipment });
  }
}

