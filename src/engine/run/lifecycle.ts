/**
 * The ways out of every state a run can stop in, taken by named people: resume (a HELD or INTERRUPTED run runs
 * its stopped step again from its start), abort (any state that is not final: signed, the line back to its last
 * known-good recipe, the gate withdrawn, a package that says "not a release") and the reassignment of the QA
 * reviewer (signed). Also the intake check of the people a batch record names. The engine (engine.ts) holds the
 * state changes; this module holds who may do what and the records that are signed.
 */
import { LkError } from '../../errors.js';
import type { PolicyBundle } from '../../policy/index.js';
import type { RunRecord } from '../../store/run-store.js';
import { json } from '../json.js';
import { canonical, sha256Hex, signRecord, type ActSignature, type Signer } from './approval.js';
import type { SiteKey } from '../../audit/keys.js';

/** A person as the site's identities know them. */
export interface Person {
  readonly id: string;
  readonly name: string;
  readonly role: string;
  readonly tenants: readonly string[];
  /** Not disabled and not locked out. */
  readonly active: boolean;
}

/**
 * Who the site's identities say a user id is; null when nobody has that id; undefined when linekeeper cannot
 * tell (a site whose people also sign in through its identity provider: someone not among the local users may
 * still be a person of the provider, whose role is known only when they sign in).
 */
export type PeopleLookup = (id: string) => Person | null | undefined;

type Approvers = NonNullable<PolicyBundle['content']['approvers']>;

function approvers(bundle: PolicyBundle | null): Approvers {
  return bundle?.content.approvers ?? { qa: ['qa_reviewer'], reviewer: ['process_engineer'], change: ['qa_reviewer'] };
}

/** Roles that may resume or abort a run: the bundle's reviewers (process engineers) and QA. */
export function steeringRoles(bundle: PolicyBundle | null): string[] {
  const a = approvers(bundle);
  return [...new Set([...a.reviewer, ...a.qa])];
}

/** Roles that may reassign the QA reviewer of a run: the bundle's `approvers.reassign`, else qa_reviewer and admin. */
export function reassignRoles(bundle: PolicyBundle | null): readonly string[] {
  return approvers(bundle).reassign ?? ['admin', 'qa_reviewer'];
}

/** Roles that count as QA (release, needs_qa, the run's named QA reviewer). */
export function qaRoles(bundle: PolicyBundle | null): readonly string[] {
  return approvers(bundle).qa;
}

/** The QA reviewer the run waits for: the one it was reassigned to, else the batch record's. */
export function qaReviewerOf(run: Pick<RunRecord, 'record' | 'data'>): string | null {
  const re = run.data['qaReviewer'];
  if (typeof re === 'string' && re.length > 0) return re;
  return typeof run.record['qa_reviewer'] === 'string' ? run.record['qa_reviewer'] : null;
}

/**
 * Why `user` cannot be named for `roles` of `tenant`, or null when they can: an active user of the site's
 * identities who works for the tenant and holds one of the roles.
 */
export function personProblem(people: PeopleLookup, user: string, tenant: string, roles: readonly string[], what: string, unknown: 'accept' | 'refuse' = 'refuse'): string | null {
  const p = people(user);
  if (p === undefined) return unknown === 'accept' ? null : `${user} is not a local user, and the role of a person of the identity provider is known only when they sign in`;
  if (!p) return `${user} is not a user of this site`;
  if (!p.active) return `${user} is disabled or locked out`;
  if (!p.tenants.includes(tenant)) return `${user} does not work for ${tenant}`;
  if (!roles.includes(p.role)) return `${user} holds the role ${p.role}, not a ${what} role (${roles.join(', ')})`;
  return null;
}

/**
 * Batch-record intake: the people the record names must be active users holding their role for the tenant —
 * `qa_reviewer` a QA role of the bundle, `reviewer` (who reviews L2 moves) a reviewer or QA role. A record
 * naming anyone else would reach a gate nobody may sign.
 * @throws LkError LK_BATCH_RECORD_INVALID naming the field (`detail.field`, `detail.issues`); nothing is written.
 */
export function checkNamedPeople(record: Record<string, unknown>, tenant: string, people: PeopleLookup, bundle: PolicyBundle | null): void {
  const a = approvers(bundle);
  const fields: { field: 'qa_reviewer' | 'reviewer'; roles: readonly string[]; what: string }[] = [
    { field: 'qa_reviewer', roles: a.qa, what: 'QA reviewer' },
    { field: 'reviewer', roles: [...new Set([...a.reviewer, ...a.qa])], what: 'reviewer of moves' },
  ];
  const batch = String(record['batch'] ?? '?');
  for (const f of fields) {
    const user = record[f.field];
    if (typeof user !== 'string') continue;
    // someone only the identity provider knows is checked when they sign (their role comes with their token)
    const problem = personProblem(people, user, tenant, f.roles, f.what, 'accept');
    if (problem) {
      throw new LkError('LK_BATCH_RECORD_INVALID', `${tenant}/${batch}: ${f.field}: ${problem}; the MES record must name a person who can sign`, {
        source: `${tenant}/${batch}`, field: f.field, user, issues: [{ path: f.field, message: problem }],
      });
    }
  }
}

/** Why a person signs a run-level act, and what they sign. */
export interface ActInput {
  readonly signer: Signer;
  readonly reason: string;
}

/** The reason of an act in words, trimmed. @throws LkError LK_VALIDATION when it has fewer than 3 characters. */
export function reasonOf(reason: unknown): string {
  const r = typeof reason === 'string' ? reason.trim() : '';
  if (r.length < 3) throw new LkError('LK_VALIDATION', 'a reason in words is required', { issues: [{ path: 'body.reason', message: 'required (3 characters or more)' }] });
  return r;
}

/**
 * The Part 11 signature of an abort or a reassignment: the record (run, batch, what changes, who, why, when, the
 * meaning from the site's list and its id), its SHA-256, and the site's Ed25519 signature over identity, meaning
 * and time bound to that hash
 * (`verifySignature` checks it like a release signature).
 */
export function signAct(key: SiteKey, run: RunRecord, act: 'abort' | 'reassign', signer: Signer, meaning: { readonly id: string; readonly text: string }, at: number, extra: Record<string, unknown>): { record: Record<string, unknown>; signature: ActSignature } {
  const record = json({ format: 1, kind: `run_${act}`, run: run.id, tenant: run.tenant, batch: run.batch, from: run.status, user: signer.user, name: signer.name, role: signer.role, meaning: meaning.text, meaningId: meaning.id, at: new Date(at).toISOString(), ...extra }) as Record<string, unknown>;
  const signature = signRecord(key, {
    format: 1, approval: run.id, run: run.id, tenant: run.tenant, batch: run.batch, recordHash: sha256Hex(canonical(record)), user: signer.user, name: signer.name, role: signer.role,
    decision: act, meaning: meaning.text, meaningId: meaning.id, timestamp: new Date(at).toISOString(),
  });
  return { record, signature };
}
