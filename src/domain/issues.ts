/**
 * Validation issues of documents that arrive from outside (batch records,
 * QC results) in one readable form: a path a person can find in the file and
 * a message. Pure: shared by the domain schemas, no I/O.
 */
import type { z } from 'zod';

/** One problem of a document: where (`specifications.hardness.min`) and what. */
export interface DocumentIssue {
  readonly path: string;
  readonly message: string;
}

/** The form of every field name of these documents (snake_case). */
const PLAIN_KEY = /^[a-z_][a-z0-9_]*$/;
/** The form of the field names of declarations written in code (the SDK's camelCase: `autonomyNeeded`). */
export const CAMEL_KEY = /^[a-z][A-Za-z0-9]*$/;

/**
 * `specifications.hardness.min`, `master_recipe["press.MainForce"].unit`, `items[2]`:
 * keys that are not snake_case field names (tag ids: a dot, upper case) are quoted, so the
 * path stays unambiguous and data keys stand out from field names. `plainKey` is the form of a field name
 * (snake_case unless given).
 */
export function formatIssuePath(path: readonly PropertyKey[], plainKey: RegExp = PLAIN_KEY): string {
  let out = '';
  for (const p of path) {
    if (typeof p === 'number') out += `[${p}]`;
    else if (typeof p === 'string' && plainKey.test(p)) out += out === '' ? p : `.${p}`;
    else out += `[${JSON.stringify(String(p))}]`;
  }
  return out || '(root)';
}

/** zod issues as {@link DocumentIssue}s, in zod's order (the order of the schema's keys); field names of the form `plainKey`. */
export function issuesOf(error: z.core.$ZodError, plainKey: RegExp = PLAIN_KEY): DocumentIssue[] {
  return error.issues.map((i) => {
    let path: readonly PropertyKey[] = i.path;
    let message = i.message;
    if (i.code === 'unrecognized_keys') {
      // name the offending key itself, so "the first bad field" is the unknown one
      const keys = i.keys;
      message = `unknown key${keys.length > 1 ? 's' : ''} ${keys.map((k) => JSON.stringify(k)).join(', ')}`;
      if (keys.length === 1) path = [...i.path, keys[0]!];
    } else if (i.code === 'invalid_key') {
      message = `invalid key: ${i.issues.map((n) => n.message).join('; ')}`;
    } else if (i.code === 'invalid_type' && /received undefined/.test(i.message)) {
      message = `required (${i.message.replace(/^Invalid input: /, '')})`;
    }
    return { path: formatIssuePath(path, plainKey), message };
  });
}

/** Deep-freeze a validated value: what crossed the boundary cannot be changed afterwards. */
export function deepFreeze<T>(value: T): T {
  if (value && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const v of Object.values(value as object)) deepFreeze(v);
  }
  return value;
}
