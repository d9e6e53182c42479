/**
 * Who signs a validation report: a named person of the site's user store, re-authenticated with the password they
 * type now (21 CFR 11.200), in a role that may sign one. The qualification runs offline (an IQ is done before the
 * daemon first serves), so the check is the store's own, as the offline `linekeeper users` commands do it: a wrong
 * password is audited and counts toward the account's lock-out exactly as a sign-in would.
 *
 * An administrator never signs (separation of duties, as for every other signature): the person who installs and
 * administers the node is not the one who attests that it was qualified.
 */
import { Identity, identitySettings } from '../api/identity.js';
import type { LoadedConfig } from '../config/load.js';
import { chooseMeaning, meaningsInForce, type ChosenMeaning } from '../domain/signature-meanings.js';
import { LkError } from '../errors.js';
import type { Store } from '../store/store.js';
import type { ReportKind, ReportSigner } from './report.js';

/** The roles that may sign a validation report. */
export const REPORT_SIGNER_ROLES = ['qa_reviewer', 'process_engineer'] as const;

/**
 * What a report's signature means: an entry of the site's controlled list for validation reports of this kind
 * (`signatures.meanings`, purpose `validation_report`; built in: "Operational qualification of linekeeper {version}
 * executed; results as recorded"), chosen by id or text, or the first that fits.
 * @throws LkError LK_MEANING_NOT_ALLOWED when `chosen` is not one of them.
 */
export function reportMeaning(loaded: LoadedConfig, kind: ReportKind, version: string, chosen?: string): ChosenMeaning {
  return chooseMeaning(meaningsInForce(loaded.config.signatures?.meanings), 'validation_report', chosen, { version, site: loaded.config.site.id }, kind);
}

/**
 * The signer of a `kind` report: `user` re-authenticated with `password` against `store`.
 * @throws LkError LK_MEANING_NOT_ALLOWED (a meaning not on the list), LK_FORBIDDEN (an administrator or a role that may not sign), LK_REAUTH_FAILED (a wrong password, or a user the store does not have — the same answer, so a guess learns nothing),
 *   LK_PASSWORD_CHANGE_REQUIRED, LK_LOCKED from the check — before anything is written.
 */
export async function reportSigner(o: { store: Store; loaded: LoadedConfig; user: string; password: string; kind: ReportKind; version: string; meaning?: string; comment?: string }): Promise<ReportSigner> {
  const meaning = reportMeaning(o.loaded, o.kind, o.version, o.meaning);
  const identity = new Identity({ store: o.store, clock: o.store.clock, ...identitySettings(o.loaded.config.api) });
  const rec = identity.users.get(o.user);
  if (rec && !(REPORT_SIGNER_ROLES as readonly string[]).includes(rec.role)) {
    throw new LkError('LK_FORBIDDEN', `${o.user} is a ${rec.role}: a validation report is signed by a ${REPORT_SIGNER_ROLES.join(' or ')} (an administrator never signs)`, { user: o.user });
  }
  const who = await identity.reauthenticate(o.user, o.password, { purpose_detail: `validation ${o.kind} report` });
  return {
    user: who.id, name: who.name, role: who.role, meaning: meaning.text, meaningId: meaning.id,
    ...(o.comment ? { comment: o.comment } : {}), timestamp: new Date(o.store.clock.now()).toISOString(),
  };
}
