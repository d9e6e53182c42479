/**
 * The schema of what a caller hands to `audit.append` (zod): the authority on a valid entry, and what says which
 * field is wrong. entry.ts loads it on the main thread only (see there); it imports nothing of entry.ts.
 */
import { z } from 'zod';
import { MANIFESTATION_MEANING_MAX } from '../domain/signature-meanings.js';
import { LkError } from '../errors.js';
import { jsonProblem, LONE_SURROGATE, type Json } from './json-value.js';

const JsonValue = z.custom<Json>((v) => v !== undefined && jsonProblem(v) === undefined, { message: 'must be a JSON value: finite numbers, plain objects, well-formed strings' });
const text = (max: number) => z.string().min(1).max(max).refine((s) => !LONE_SURROGATE.test(s), 'has a lone surrogate');
const ref = text(200);
const tenantId = z.string().regex(/^[a-z][a-z0-9-]{0,63}$/, 'tenant must be lower-case letters, digits and dashes');

export const AuditSubject = z.strictObject({
  run: ref.optional(), batch: ref.optional(), agent: ref.optional(), tool: ref.optional(), setpoint: ref.optional(), reviewer: ref.optional(),
});

/** Part 11 §11.50 signature manifestation: printed name, date/time, meaning; `value` is the signature itself (base64). */
export const AuditSignature = z.strictObject({
  user: ref,
  name: text(200),
  // every meaning chooseMeaning returns fits whole, after the longest act (src/domain/signature-meanings.ts)
  meaning: text(MANIFESTATION_MEANING_MAX),
  time: z.iso.datetime({ offset: false, precision: 3 }),
  value: text(1024).optional(),
});

/** What a caller hands to `audit.append`: validated with zod; nothing is written when it fails. */
export const AuditEntryInput = z.strictObject({
  tenant: tenantId,
  /** user id, `agent.<role>` or `system`. */
  actor: z.string().regex(/^(system|agent\.[a-z][a-z0-9_]*|(?!agent\.)[A-Za-z0-9][A-Za-z0-9._@-]{0,127})$/, 'actor must be a user id, agent.<role> or system'),
  kind: z.string().regex(/^[a-z][a-z0-9_]{0,39}$/, 'kind must be snake_case'),
  /** What happened, e.g. the tool name or `setpoint.write`. */
  action: text(200),
  subject: AuditSubject.optional(),
  args: JsonValue.optional(),
  result: JsonValue.optional(),
  reason: text(4000).optional(),
  /** Value before a change (Annex 11 §9). */
  old: JsonValue.optional(),
  /** Value after a change. */
  new: JsonValue.optional(),
  signature: AuditSignature.optional(),
});
export type AuditEntryInput = z.input<typeof AuditEntryInput>;

/**
 * Validate an input entry with the schema.
 * @throws LkError LK_VALIDATION naming the first bad field.
 */
export function parseWithSchema(input: unknown): z.output<typeof AuditEntryInput> {
  const r = AuditEntryInput.safeParse(input);
  if (!r.success) {
    const i = r.error.issues[0]!;
    throw new LkError('LK_VALIDATION', `audit entry ${i.path.join('.') || '(root)'}: ${i.message}`, { issues: r.error.issues.map((x) => ({ path: x.path.join('.'), message: x.message })) });
  }
  return r.data;
}
