/**
 * The signature meanings of the site (21 CFR 11.50, EU GMP Annex 11 §14; src/domain/signature-meanings.ts): `GET
 * /signature-meanings` lists the controlled list in force for every signed-in role, so a client offers exactly
 * those words, and {@link meaningOf} is how every signing route takes a meaning — an entry of the list for its
 * act, resolved for the object signed, or LK_MEANING_NOT_ALLOWED before any password is checked. The list is read
 * from the configuration in force at each request (`signatures` applies at a reload).
 */
import { z } from 'zod';
import {
  chooseMeaning, meaningsInForce, PURPOSE_DECISIONS, PURPOSE_PLACEHOLDERS, PURPOSE_TITLES, SIGNATURE_PURPOSES,
  type ChosenMeaning, type MeaningInForce, type SignaturePurpose,
} from '../domain/signature-meanings.js';
import { EVERYONE } from './auth.js';
import { BASE, type Api, type ApiContext, type ApiDaemon } from './context.js';
import { PROBLEM_RESPONSES } from './problem.js';
import { TenantParams } from './schemas.js';

/** The meanings in force: the site's `signatures.meanings`, and the built-in ones of the purposes it lists nothing for. */
export function meaningsOfSite(d: Pick<ApiDaemon, 'loaded'>): MeaningInForce[] {
  return meaningsInForce(d.loaded.config.signatures?.meanings);
}

/**
 * The meaning a signing request chose (an entry's id or its text), among the entries of the list in force for
 * `purpose` that fit this object (`values` fill the placeholders) and `decision`; without a choice, the first.
 * Call it before the password is checked: a refusal signs and audits nothing.
 * @throws LkError LK_MEANING_NOT_ALLOWED (detail.meanings: the entries that would do).
 */
export function meaningOf(ctx: Pick<ApiContext, 'daemon'>, purpose: SignaturePurpose, chosen: string | undefined, values: Readonly<Record<string, string | undefined>>, decision?: string): ChosenMeaning {
  return chooseMeaning(meaningsOfSite(ctx.daemon), purpose, chosen, values, decision);
}

const Purpose = z.enum(SIGNATURE_PURPOSES);
export const MeaningsQuery = z.strictObject({ for: Purpose.optional().describe('only the entries for this purpose') });
export const MeaningsView = z.object({
  items: z.array(z.object({
    id: z.string(), text: z.string().describe('the words, with placeholders such as {batch} that the signed object fills'),
    for: z.array(Purpose), decision: z.string().optional().describe('only with this decision of its purposes'),
    source: z.enum(['site', 'default']).describe('the site\'s signatures.meanings, or linekeeper\'s built-in entry of a purpose the site lists nothing for'),
  })),
  purposes: z.array(z.object({
    purpose: Purpose, title: z.string(), decisions: z.array(z.string()).describe('the decisions an entry may be limited to'),
    placeholders: z.array(z.string()).describe('what the signed object fills (without braces)'),
  })),
});

export function registerSignatureMeaningRoutes(app: Api, ctx: ApiContext): void {
  app.get(`${BASE}/signature-meanings`, {
    onRequest: ctx.guard(EVERYONE, 'read the signature meanings'),
    schema: {
      tags: ['signatures'],
      summary: 'The controlled list of signature meanings in force (21 CFR 11.50, Annex 11 §14): every signing request names one of the entries for its purpose, by id or by its text filled for the object; a free-text comment goes beside it',
      security: [{ bearer: [] }], params: TenantParams, querystring: MeaningsQuery, response: { 200: MeaningsView, ...PROBLEM_RESPONSES },
    },
  }, async (req) => {
    const wanted = req.query.for;
    const items = meaningsOfSite(ctx.daemon).filter((m) => wanted === undefined || m.for.includes(wanted));
    return {
      items: items.map((m) => ({ id: m.id, text: m.text, for: [...m.for], ...(m.decision !== undefined ? { decision: m.decision } : {}), source: m.source })),
      purposes: SIGNATURE_PURPOSES.filter((p) => wanted === undefined || p === wanted).map((p) => ({ purpose: p, title: PURPOSE_TITLES[p], decisions: [...PURPOSE_DECISIONS[p]], placeholders: [...PURPOSE_PLACEHOLDERS[p]] })),
    };
  });
}
