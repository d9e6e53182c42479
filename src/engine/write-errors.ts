import { LkError } from '../errors.js';

/**
 * Whether a failed connector write may have changed the equipment. Only a refusal before sending or by the
 * equipment itself is known to have changed nothing; a timeout, a channel lost mid-request
 * (`detail.outcome: 'unknown'`, see connectors/types.ts) or an unexpected exception might not have —
 * fail safe: treat those as applied, so the vector's revert includes them.
 */
export function outcomeUnknown(err: unknown): boolean {
  if (!LkError.is(err)) return true;
  return err.code === 'LK_CONN_TIMEOUT' || err.detail?.['outcome'] === 'unknown';
}
