/**
 * The meaning of a signature given on the command line (`--meaning`: an id of the site's list or its text), checked
 * against the daemon's list (GET /signature-meanings) before the password is asked for, so a meaning the site does
 * not allow costs no password and prints the entries that would do. The daemon checks it again when it signs: a
 * command sends the words it printed (the entry's text as filled), never just the id, so a list changed by a reload
 * meanwhile refuses them instead of signing words the person did not see.
 */
import { chooseMeaning, type ChosenMeaning, type SignaturePurpose } from '../domain/signature-meanings.js';
import { LkError } from '../errors.js';
import type { LinekeeperClient } from '../sdk/client.js';

/**
 * The entry `chosen` names among the daemon's meanings for `purpose` on this record (`values` fill its
 * placeholders), or the first that fits when nothing was chosen.
 * @throws LkError LK_MEANING_NOT_ALLOWED with the entries that would do (and how to pass one) in the message and hint.
 */
export async function meaningFromList(client: Pick<LinekeeperClient, 'signatureMeanings'>, purpose: SignaturePurpose, chosen: string | undefined, values: Readonly<Record<string, string | undefined>>, decision?: string): Promise<ChosenMeaning> {
  const list = await client.signatureMeanings(purpose);
  try {
    return chooseMeaning(list.items, purpose, chosen, values, decision);
  } catch (err) {
    if (!LkError.is(err, 'LK_MEANING_NOT_ALLOWED')) throw err;
    const ids = ((err.detail?.['meanings'] ?? []) as { id: string }[]).map((m) => m.id);
    throw new LkError('LK_MEANING_NOT_ALLOWED', err.message, { ...err.detail, hint: `nothing was signed and no password asked: pass ${ids.length ? `one of ${ids.join(', ')}` : 'a meaning the site lists'} with --meaning (its id, or its text as listed); your own words go beside it (--comment, --reason)` });
  }
}

/** `QA release of batch B-1042 (qa-release)`: a meaning as a person confirms it before signing. */
export const meaningLine = (m: ChosenMeaning): string => `${m.text} (${m.id})`;
