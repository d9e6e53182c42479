/**
 * Is the line ready for a run? A pure judgement over a snapshot that the daemon gathers (the PLCs' supervisor
 * state as their tags last reported it, each connection's state, the tenant's models as the registry gives them
 * now, the policy bundle in force). Before a run starts the engine asks it, and refuses with
 * `409 LK_LINE_NOT_READY` listing every reason; `GET /line/readiness`, `linekeeper line readiness` and the
 * console's line page show the same list (with another run on the line as `LINE_BUSY`; `start` refuses that
 * with `LK_LINE_BUSY` first, the run store's lock).
 *
 * What is not known is not ready: a PLC whose supervisor state has not been read (its connection never came up)
 * is refused like a LOST one, because a run must not start on equipment whose watchdog state nobody has seen.
 */
import { LkError } from '../../errors.js';

/** Stable, machine-readable reasons; the text beside each is for people. */
export type NotReadyCode = 'LINE_BUSY' | 'PLC_LOST' | 'PLC_STATE_UNKNOWN' | 'PLC_NOT_SUPERVISED' | 'CONNECTION_DOWN' | 'MODEL_INVALID' | 'POLICY_BUNDLE_MISSING';

export interface NotReadyReason {
  readonly code: NotReadyCode;
  /** The equipment, connection or model kind the reason is about. */
  readonly subject: string;
  readonly message: string;
}

export interface ReadinessSnapshot {
  /** Every PLC with a supervisor state tag, with what its tags last said (`state` undefined: not known — never read, or a revert counted and its state not read since). */
  readonly plcs: readonly { readonly equipment: string; readonly connection: string; readonly state: string | undefined; readonly supervised: boolean }[];
  readonly connections: readonly { readonly id: string; readonly state: string }[];
  /** The first model of the tenant the registry refuses (missing, corrupt, not validated, not pinned…), or null. */
  readonly model: { readonly kind: string; readonly code: string; readonly message: string } | null;
  readonly policyBundle: boolean;
  /** The run active on the line (its id null when it is another tenant's: R9), or null. `start` refuses a busy line with LK_LINE_BUSY before it judges readiness. */
  readonly activeRun?: { readonly id: string | null; readonly status: string } | null;
}

export interface Readiness {
  readonly ready: boolean;
  readonly reasons: readonly NotReadyReason[];
}

/** Judge a snapshot: every reason the line is not ready, in a stable order (another run, PLCs, connections, models, policy). */
export function judgeReadiness(s: ReadinessSnapshot): Readiness {
  const reasons: NotReadyReason[] = [];
  if (s.activeRun) reasons.push({ code: 'LINE_BUSY', subject: 'line', message: `the line runs ${s.activeRun.id ?? 'another tenant\'s run'} (${s.activeRun.status}); one run at a time per line` });
  const down = new Set(s.connections.filter((c) => c.state !== 'connected').map((c) => c.id));
  for (const p of s.plcs) {
    if (!p.supervised) {
      reasons.push({ code: 'PLC_NOT_SUPERVISED', subject: p.equipment, message: `${p.equipment} is not supervised: its watchdog times out before linekeeper's next heartbeat (see watchdog.supervision_refused)` });
    } else if (p.state === 'LOST') {
      reasons.push({ code: 'PLC_LOST', subject: p.equipment, message: `${p.equipment} is LOST on its last known-good recipe; a named person re-arms it (linekeeper line rearm ${p.equipment})` });
    } else if (p.state !== 'ATTENDED' && !down.has(p.connection)) {
      reasons.push({ code: 'PLC_STATE_UNKNOWN', subject: p.equipment, message: `${p.equipment}'s supervisor state is ${p.state === undefined ? 'not known (never read, or a revert counted and its state not read since)' : `"${p.state}"`}, not ATTENDED` });
    }
  }
  for (const c of s.connections) {
    if (c.state !== 'connected') reasons.push({ code: 'CONNECTION_DOWN', subject: c.id, message: `connection ${c.id} is ${c.state}` });
  }
  if (s.model) reasons.push({ code: 'MODEL_INVALID', subject: s.model.kind, message: `the ${s.model.kind} model is not usable (${s.model.code}): ${s.model.message}` });
  if (!s.policyBundle) reasons.push({ code: 'POLICY_BUNDLE_MISSING', subject: 'policy', message: 'no signed policy bundle is in force' });
  return { ready: reasons.length === 0, reasons };
}

/**
 * The refusal of a run on a line that is not ready.
 * @returns an LkError LK_LINE_NOT_READY whose detail lists every reason (`detail.reasons`).
 */
export function notReadyError(line: string, r: Readiness): LkError {
  const what = r.reasons.map((x) => x.message).join('; ');
  return new LkError('LK_LINE_NOT_READY', `line ${line} is not ready for a run: ${what}`, { line, reasons: r.reasons.map((x) => ({ ...x })) });
}
