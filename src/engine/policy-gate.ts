/**
 * The daemon's side of policy change control: load the bundle, compare it
 * with the last version accepted on this node, and record what happened on
 * the site chain — in the same transaction as the acceptance row. A bundle
 * that is missing, invalid or changed without a new change reference is not
 * used: the daemon runs without one and every write is denied (fail closed).
 */
import type { LoadedConfig } from '../config/load.js';
import { LkError } from '../errors.js';
import type { Logger } from '../log.js';
import { loadPolicyBundle } from '../config/policy-bundle.js';
import type { AcceptedBundle, ChangeControlEvent, PolicyBundle } from '../policy/index.js';
import type { Store } from '../store/store.js';
import { SITE_TENANT } from '../audit/entry.js';

export interface PolicyGateResult {
  /** The bundle in force, or null: then every write is denied. */
  readonly bundle: PolicyBundle | null;
  readonly event?: ChangeControlEvent;
  readonly error?: LkError;
}

/** The newest accepted bundle version on this node, or null before the first. */
export function lastAcceptedBundle(store: Store): AcceptedBundle | null {
  const row = store.db.prepare('SELECT version, change_ref AS changeRef FROM policy_acceptance ORDER BY id DESC LIMIT 1').get() as AcceptedBundle | undefined;
  return row ?? null;
}

/** Every accepted bundle version with its change reference, oldest first (change references are never reused). */
export function acceptedBundles(store: Store): AcceptedBundle[] {
  return store.db.prepare('SELECT version, change_ref AS changeRef FROM policy_acceptance ORDER BY id').all() as AcceptedBundle[];
}

/**
 * Load the policy bundle of `loaded` under change control and audit the outcome on the site chain.
 * Never throws for a bad bundle (that is a recorded, fail-closed outcome); throws only when the
 * audit trail itself cannot be written, because a daemon that cannot audit must not run.
 */
export function openPolicy(store: Store, loaded: LoadedConfig, log: Logger): PolicyGateResult {
  const last = lastAcceptedBundle(store);
  try {
    const { bundle, changeControl: ev } = loadPolicyBundle(loaded.policyDir, { site: loaded.config, lastAccepted: last, history: acceptedBundles(store) });
    store.tx(({ db, audit }) => {
      if (ev.kind !== 'unchanged') {
        db.prepare('INSERT INTO policy_acceptance (version, change_ref, approver, role, reason, accepted_at) VALUES (?, ?, ?, ?, ?, ?)').run(
          ev.version, ev.changeRef, ev.approver.name, ev.approver.role, ev.reason, new Date(store.clock.now()).toISOString(),
        );
      }
      audit.append({
        tenant: SITE_TENANT,
        actor: ev.kind === 'unchanged' ? 'system' : ev.approver.name,
        kind: ev.kind === 'unchanged' ? 'system' : 'config_change',
        action: ev.kind === 'unchanged' ? 'policy.loaded' : 'policy.accepted',
        args: { change_ref: ev.changeRef, approver: { name: ev.approver.name, role: ev.approver.role }, date: ev.date, dir: loaded.policyDir, kind: ev.kind },
        reason: ev.reason,
        ...(ev.previousVersion !== null && ev.kind === 'changed' ? { old: ev.previousVersion } : {}),
        new: ev.version,
      });
    });
    log.info({ version: bundle.version, changeRef: ev.changeRef, kind: ev.kind }, 'policy bundle in force');
    return { bundle, event: ev };
  } catch (err) {
    if (!LkError.is(err) || !(err.code === 'LK_POLICY_BUNDLE' || err.code === 'LK_POLICY_CHANGE_CONTROL' || err.code === 'LK_POLICY_CHANGE_REF_REUSED')) throw err;
    store.tx(({ audit }) =>
      audit.append({
        tenant: SITE_TENANT,
        actor: 'system',
        kind: 'config_change',
        action: 'policy.refused',
        args: { code: err.code, dir: loaded.policyDir, ...(last ? { in_force_before: last.version } : {}), ...(err.detail ? { detail: jsonDetail(err.detail) } : {}) },
        reason: err.message,
      }),
    );
    log.error({ code: err.code, err: err.message }, 'policy bundle refused: every write is denied until a valid bundle is accepted');
    return { bundle: null, error: err };
  }
}

/** The error's detail as JSON for the trail (strings, numbers, booleans; the rest dropped). */
function jsonDetail(d: Readonly<Record<string, unknown>>): Record<string, string | number | boolean> {
  const out: Record<string, string | number | boolean> = {};
  for (const [k, v] of Object.entries(d)) if (typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean') out[k] = v;
  return out;
}
