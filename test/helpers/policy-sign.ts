/**
 * Sign the policy bundle a test site names, through the real signing path (src/ops/policy-change.ts
 * `signPolicyBundle`: the site key, the `policy.signed` entry on the site chain) by a real user of the site's
 * store (created when missing, audited): what `linekeeper policy apply` does after the password prompt.
 * For sites whose bundle is not the embedded default (which signs its own first bundle at first start).
 */
import { Identity } from '../../src/api/identity.js';
import type { LoadedConfig } from '../../src/config/load.js';
import { readPolicyBundle } from '../../src/config/policy-bundle.js';
import { lastAcceptedBundle } from '../../src/engine/policy-gate.js';
import { signPolicyBundle } from '../../src/ops/policy-change.js';
import { diffBundles } from '../../src/policy/diff.js';
import type { Store } from '../../src/store/store.js';

export interface TestSigner {
  readonly id: string;
  readonly name?: string;
  readonly role?: 'qa_reviewer' | 'process_engineer' | 'operator' | 'auditor' | 'admin';
}

/**
 * Sign the bundle in `loaded.policyDir` as a change from the last accepted version; the signer defaults to the
 * approver its CHANGE.yaml names (created as a QA reviewer of every tenant when missing) and the change reference
 * to its CHANGE.yaml's. Returns the `policy.signed` seq.
 */
export async function signTestBundle(store: Store, loaded: LoadedConfig, o: { signer?: TestSigner; changeRef?: string; allowedRoles?: readonly string[] } = {}): Promise<number> {
  const bundle = readPolicyBundle(loaded.policyDir, loaded.config);
  const id = o.signer?.id ?? bundle.change.approver.name;
  const identity = new Identity({ store, clock: store.clock, scryptLog2N: 10 });
  const u = identity.users.get(id) ?? (await identity.create({ id, name: o.signer?.name ?? id, role: o.signer?.role ?? 'qa_reviewer', tenants: loaded.config.tenants.map((t) => t.id), password: 'test-signer-password-1' }, 'system', 'test signer'));
  return signPolicyBundle(store, {
    bundle, previous: lastAcceptedBundle(store)?.version ?? null, changeRef: o.changeRef ?? bundle.change.change_ref,
    signer: { id: u.id, name: u.name, role: u.role }, allowedRoles: o.allowedRoles ?? bundle.content.approvers.change, method: 'password',
    changes: diffBundles(null, bundle.content), reason: bundle.change.reason, from: loaded.policyDir,
  });
}
