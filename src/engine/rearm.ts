/**
 * Re-arming a LOST PLC: only a named person does it, never the daemon (R8: "nothing is re-armed without a named
 * human"). The person holds a role of the policy bundle's `approvers.reviewer` (process engineers by default): a
 * re-arm hands the equipment back to supervisory control after a fail-safe, a decision of the same weight as
 * approving a setpoint move; an operator reports what they see, the engineer decides. A reason is required; the
 * command goes through the guarded writer (audited intent `plc.rearm` with the person and the reason, and its
 * outcome with what the PLC reports), and the PLC's own watchdog report of the re-arm goes to the site chain.
 */
import type { SiteConfig } from '../config/schema.js';
import { LkError } from '../errors.js';
import type { PolicyBundle } from '../policy/index.js';
import type { GuardedWriter } from './guarded-writer.js';
import type { LkgCommandResult, Sample } from '../../connectors/types.js';
import { stateName } from '../supervision/plc-watch.js';
import { profileOf } from '../../connectors/supervision.js';

export interface RearmDeps {
  readonly site: SiteConfig;
  readonly writer: Pick<GuardedWriter, 'rearm'>;
  readonly policy: () => PolicyBundle | null;
  /** Read tags from the equipment now (the engine's batched read): the state is read, not taken from a subscription that may lag a revert. */
  readonly read: (tags: readonly string[]) => Promise<readonly Sample[]>;
  /** The tenant whose run is active on the line, or null. */
  readonly activeTenant: () => string | null;
}

export interface RearmInput {
  readonly tenant: string;
  readonly equipment: string;
  readonly person: string;
  readonly role: string;
  readonly reason: string;
}

/** The roles that may re-arm a PLC under the bundle in force. */
export function rearmRoles(bundle: PolicyBundle | null): readonly string[] {
  return bundle?.content.approvers.reviewer ?? ['process_engineer'];
}

/**
 * Re-arm a LOST PLC as a named person.
 * @throws LkError LK_NOT_FOUND (no such equipment, or it has no supervisor state), LK_VALIDATION (no reason),
 *   LK_FORBIDDEN (a role the bundle does not name), LK_LINE_BUSY (the line runs another tenant's batch: its own
 *   people decide about its equipment, R9), LK_CONFLICT (the PLC reports ATTENDED: nothing to re-arm),
 *   the equipment's refusal (LK_WRITE_FAILED, LK_CONN_UNAVAILABLE, LK_CONN_TIMEOUT…), or LK_PLC_LOST when the PLC
 *   accepted the command and still reports LOST. Each attempt that reaches the equipment is audited.
 */
export async function rearmPlc(d: RearmDeps, i: RearmInput): Promise<LkgCommandResult> {
  const eq = d.site.equipment.find((e) => e.id === i.equipment && e.tags.some((t) => t.name === 'SupervisorState'));
  if (!eq) throw new LkError('LK_NOT_FOUND', `no supervised equipment ${i.equipment} on line ${d.site.line.id}`, { equipment: i.equipment });
  const reason = i.reason.trim();
  if (reason.length < 3) throw new LkError('LK_VALIDATION', 'a re-arm needs its reason in words', { issues: [{ path: 'body.reason', message: 'required' }] });
  const roles = rearmRoles(d.policy());
  if (!roles.includes(i.role)) throw new LkError('LK_FORBIDDEN', `a PLC is re-armed by ${roles.join(', ')} (the policy bundle's approvers.reviewer), not ${i.role}`, { role: i.role, roles: [...roles] });
  const active = d.activeTenant();
  if (active !== null && active !== i.tenant) throw new LkError('LK_LINE_BUSY', `the line runs another tenant's batch: ${eq.id} is re-armed by that tenant's people`, { equipment: eq.id });
  const [sample] = await d.read([`${eq.id}.SupervisorState`]);
  const state = sample?.quality === 'good' ? stateName(sample.value, profileOf(eq)) : undefined;
  if (state === 'ATTENDED') throw new LkError('LK_CONFLICT', `${eq.id} is ATTENDED: there is nothing to re-arm`, { equipment: eq.id, state });
  const out = await d.writer.rearm(eq.id, { tenant: i.tenant, actor: i.person, reason });
  if (!out.ok) throw new LkError(out.error.code as ConstructorParameters<typeof LkError>[0], `${eq.id} was not re-armed: ${out.error.message}`, { equipment: eq.id, refusal: out.error.code });
  if (!out.result.verified) throw new LkError('LK_PLC_LOST', `${eq.id} accepted the re-arm but reports ${out.result.state}`, { equipment: eq.id, state: out.result.state });
  return out.result;
}
