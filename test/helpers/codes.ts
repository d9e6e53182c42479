import { LkError } from '../../src/errors.js';

/**
 * The `LK_*` code of the error `fn` throws, or undefined when it throws nothing.
 * Anything that is not an LkError is rethrown: a test expecting a code must not pass on a crash.
 */
export function codeOf(fn: () => unknown): string | undefined {
  try {
    fn();
  } catch (e) {
    if (LkError.is(e)) return e.code;
    throw e;
  }
  return undefined;
}

/** The `LK_*` code `p` rejects with, or undefined when it resolves; anything not an LkError is rethrown. */
export async function rejectionCode(p: Promise<unknown>): Promise<string | undefined> {
  try {
    await p;
  } catch (e) {
    if (LkError.is(e)) return e.code;
    throw e;
  }
  return undefined;
}
