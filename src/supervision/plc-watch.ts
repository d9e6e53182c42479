/**
 * What the PLCs' own watchdogs did, read from their supervisor tags (pure).
 *
 * Each PLC reverts to its last known-good recipe by itself when linekeeper's
 * heartbeat stops (R8). The daemon watches `SupervisorState`, `RevertCount`
 * and `ActiveRecipe` of every equipment and turns their changes into site
 * events for the audit trail: a revert, a re-arm, and — at start — a PLC
 * found already LOST (it reverted while linekeeper was down, the very case
 * R8 is about). A bad-quality sample changes nothing: a missing reading is
 * not evidence of a state change.
 *
 * A revert is recorded with the state read after it. The count and the state are read apart (two Modbus register
 * blocks, two OPC UA monitored items), so a batch can hold the count of a revert beside a state read a moment
 * before it: the revert then waits for the next reading of the state (the daemon asks for one at once), and is
 * never recorded as a PLC still ATTENDED because of the order of two reads. A state read ATTENDED after a counted
 * revert is a revert and a re-arm, recorded as two events.
 */
import type { Sample } from '../../connectors/types.js';
import { stateOf, type SupervisionProfile } from '../../connectors/supervision.js';

export const WATCHED_SUPERVISOR_TAGS = ['SupervisorState', 'RevertCount', 'ActiveRecipe'] as const;
type Watched = (typeof WATCHED_SUPERVISOR_TAGS)[number];

export interface SupervisorView {
  readonly state?: string;
  readonly revertCount?: number;
  readonly activeRecipe?: string;
}

/** What the observer keeps per equipment: the view, and a revert counted whose state has not been read since. */
export interface SupervisorWatch extends SupervisorView {
  /** The view before a revert whose count was read and whose state was not read after it yet. */
  readonly pendingRevert?: SupervisorView;
}

export interface SupervisionEvent {
  /** `lkg_revert`, `rearm` or `found_lost`. */
  readonly event: 'lkg_revert' | 'rearm' | 'found_lost';
  readonly equipment: string;
  readonly old?: SupervisorView;
  readonly new: SupervisorView;
}

/** A PLC linekeeper cannot keep alive: its heartbeat period is not below the watchdog timeout it reports. */
export interface KeepAliveRefusal {
  readonly equipment: string;
  readonly periodMs: number;
  readonly watchdogTimeoutMs: number;
}

/**
 * Compare each equipment's configured heartbeat period with the `WatchdogTimeoutMs` its PLC reports
 * (samples of `<equipment>.WatchdogTimeoutMs`). A period at or above the timeout reverts the PLC between two
 * beats, again and again: such a PLC is refused, not supervised. A PLC that reports nothing readable (not
 * connected yet, bad quality) cannot be judged and is not refused.
 */
export function keepAliveRefusals(
  equipment: readonly { readonly id: string; readonly heartbeat: { readonly period_ms: number } }[],
  samples: readonly Sample[],
): KeepAliveRefusal[] {
  const reported = new Map<string, number>();
  for (const s of samples) {
    if (s.quality !== 'good' || typeof s.value !== 'number' || !Number.isFinite(s.value) || !s.tag.endsWith('.WatchdogTimeoutMs')) continue;
    reported.set(s.tag.slice(0, -'.WatchdogTimeoutMs'.length), s.value);
  }
  const out: KeepAliveRefusal[] = [];
  for (const e of equipment) {
    const t = reported.get(e.id);
    if (t !== undefined && e.heartbeat.period_ms >= t) out.push({ equipment: e.id, periodMs: e.heartbeat.period_ms, watchdogTimeoutMs: t });
  }
  return out;
}

/**
 * A SupervisorState value in canonical words (`LOST`, `ATTENDED`) through the equipment's supervision profile
 * (an inverted convention, a PLC's own words); without one, the simulator's (0 ATTENDED, 1 LOST, words as they are).
 */
export function stateName(v: unknown, profile?: SupervisionProfile): string | undefined {
  return stateOf(v, profile);
}

/** Modbus gives the recipe as a number, OPC UA as a string id. */
function recipeName(v: unknown): string | undefined {
  if (typeof v === 'string') return v;
  return typeof v === 'number' && Number.isFinite(v) ? String(v) : undefined;
}

/**
 * What the line's readiness, the API and the console are shown: each PLC's view, with no state while a counted
 * revert waits for its state to be read (the state in hand may be from before the revert: not known, not ATTENDED).
 */
export function supervisorViews(watch: ReadonlyMap<string, SupervisorWatch>): Map<string, SupervisorView> {
  const out = new Map<string, SupervisorView>();
  for (const [equipment, w] of watch) out.set(equipment, w.pendingRevert ? stateless(w) : viewOf(w));
  return out;
}

/** The view without the observer's bookkeeping. */
function viewOf(w: SupervisorWatch): SupervisorView {
  const { pendingRevert: _pending, ...v } = w;
  return v;
}

/** The view's count and recipe, without a state (one not read, or not read after the revert). */
function stateless(w: SupervisorWatch): SupervisorView {
  const { state: _state, ...v } = viewOf(w);
  return v;
}

/**
 * Fold a batch of samples into the per-equipment view and return the events the changes mean.
 * `views` is the state before; the returned map is the state after (the input is not changed). `unconfirmed` names
 * the equipment whose revert was counted in this batch without a state read after it: the caller reads their
 * `SupervisorState` again and passes the reading in a batch of its own, which records the revert.
 */
export function observeSupervision(
  views: ReadonlyMap<string, SupervisorWatch>,
  samples: readonly Sample[],
  profiles?: ReadonlyMap<string, SupervisionProfile>,
): { views: Map<string, SupervisorWatch>; events: SupervisionEvent[]; unconfirmed: string[] } {
  const next = new Map(views);
  const touched = new Set<string>();
  const stateRead = new Set<string>();
  for (const s of samples) {
    if (s.quality !== 'good') continue;
    const dot = s.tag.indexOf('.');
    const equipment = s.tag.slice(0, dot);
    const name = s.tag.slice(dot + 1) as Watched;
    const v = next.get(equipment) ?? {};
    if (name === 'SupervisorState') {
      const st = stateName(s.value, profiles?.get(equipment));
      if (st === undefined) continue;
      next.set(equipment, { ...v, state: st });
      stateRead.add(equipment);
    } else if (name === 'RevertCount') {
      if (typeof s.value === 'number' && Number.isFinite(s.value)) next.set(equipment, { ...v, revertCount: s.value });
    } else if (name === 'ActiveRecipe') {
      const r = recipeName(s.value);
      if (r !== undefined) next.set(equipment, { ...v, activeRecipe: r });
    } else continue;
    touched.add(equipment);
  }
  const events: SupervisionEvent[] = [];
  const unconfirmed: string[] = [];
  for (const equipment of touched) {
    const before = views.get(equipment);
    const after = next.get(equipment)!;
    if (before?.state === undefined) {
      if (after.state === 'LOST') events.push({ event: 'found_lost', equipment, new: viewOf(after) });
      continue;
    }
    // RevertCount is the revert signal (state and count may arrive in separate notifications: one event,
    // not two); the state change to LOST stands in only where no count is known.
    const counted = before.revertCount !== undefined && after.revertCount !== undefined;
    const reverted = counted ? after.revertCount! > before.revertCount! : before.state !== 'LOST' && after.state === 'LOST';
    const pending = before.pendingRevert;
    if (reverted && after.state !== 'LOST') {
      // counted, but the state in hand may have been read before the revert: wait for a reading after it
      next.set(equipment, { ...after, pendingRevert: pending ?? viewOf(before) });
      unconfirmed.push(equipment);
    } else if (reverted || (pending && after.state === 'LOST')) {
      next.set(equipment, viewOf(after));
      events.push({ event: 'lkg_revert', equipment, old: pending ?? viewOf(before), new: viewOf(after) });
    } else if (pending && stateRead.has(equipment)) {
      // the state read after the count is not LOST: the PLC reverted (its count says so) and was re-armed since.
      // Two events, each with what was read: the revert (its count and recipe; its LOST was never read), the re-arm.
      next.set(equipment, viewOf(after));
      events.push({ event: 'lkg_revert', equipment, old: pending, new: stateless(after) });
      events.push({ event: 'rearm', equipment, old: stateless(after), new: viewOf(after) });
    } else if (!pending && before.state === 'LOST' && after.state === 'ATTENDED') {
      events.push({ event: 'rearm', equipment, old: viewOf(before), new: viewOf(after) });
    }
  }
  return { views: next, events, unconfirmed };
}

/**
 * The reverts still waiting for a state reading (its read failed, the connection went): recorded with what was read
 * — the count and the recipe, the state left out — so that no counted revert goes unrecorded.
 */
export function flushPendingReverts(views: ReadonlyMap<string, SupervisorWatch>, equipment: readonly string[]): { views: Map<string, SupervisorWatch>; events: SupervisionEvent[] } {
  const next = new Map(views);
  const events: SupervisionEvent[] = [];
  for (const e of equipment) {
    const w = views.get(e);
    if (!w?.pendingRevert) continue;
    next.set(e, viewOf(w));
    events.push({ event: 'lkg_revert', equipment: e, old: w.pendingRevert, new: stateless(w) });
  }
  return { views: next, events };
}
