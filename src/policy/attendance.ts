/**
 * Attendance (R5: no unattended level), pure. An operator is attended while
 * signed in and their last presence heartbeat (console or CLI) is at most
 * the bundle's window old. When it lapses, L2/L3 outcomes fall to
 * `recommend_only`; {@link attendanceTransition} yields the event the caller audits.
 */
import type { Attendance } from '../domain/policy.js';

/** True when an operator is signed in with a presence heartbeat no older than `windowMs` (a heartbeat from the future is not trusted). */
export function isAttended(att: Attendance | null | undefined, now: number, windowMs: number): boolean {
  if (!att || typeof att.operator !== 'string' || att.operator.length === 0) return false;
  const age = now - att.lastPresenceAt;
  return Number.isFinite(age) && age >= 0 && age <= windowMs;
}

export interface AttendanceEvent {
  readonly type: 'attendance_lapsed' | 'attendance_resumed';
  readonly operator: string | null;
  /** Evaluation time. */
  readonly at: number;
  /** When the window ran out (lapse) or the heartbeat that restored it (resume). */
  readonly effectiveAt: number | null;
  readonly windowMs: number;
}

/**
 * Compare the previous attendance state with the current one.
 * @returns the new state and an event when it changed (to be audited), else `event: null`.
 */
export function attendanceTransition(
  wasAttended: boolean,
  att: Attendance | null | undefined,
  now: number,
  windowMs: number,
): { attended: boolean; event: AttendanceEvent | null } {
  const attended = isAttended(att, now, windowMs);
  if (attended === wasAttended) return { attended, event: null };
  const operator = att?.operator ? att.operator : null;
  const last = att && Number.isFinite(att.lastPresenceAt) ? att.lastPresenceAt : null;
  return {
    attended,
    event: attended
      ? { type: 'attendance_resumed', operator, at: now, effectiveAt: last, windowMs }
      : { type: 'attendance_lapsed', operator, at: now, effectiveAt: last === null ? null : last + windowMs, windowMs },
  };
}
