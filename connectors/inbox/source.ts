/**
 * The life cycle both folder sources (MES inbox, LIMS results) share: options checked once, watches that
 * stop with `close()`, and every call after `close()` refused.
 */
import { LkError } from '../../src/errors.js';
import { watchInbox, type InboxChange } from './watch.js';

export interface FolderSourceOptions {
  readonly pollMs?: number;
  readonly fsWatch?: boolean;
  readonly onError?: (err: unknown) => void;
}

export interface FolderLifecycle {
  /** @throws LkError LK_CONN_UNAVAILABLE once the source is closed. */
  assertOpen(): void;
  /** Watch the folder; the returned function stops this watch (and `close` stops them all). */
  watch(onChange: (c: InboxChange) => void): () => void;
  close(): void;
}

/**
 * @param label what the source is called in its errors and warnings, e.g. `MES inbox`.
 * @throws LkError LK_VALIDATION when `pollMs` is not a positive number.
 */
export function folderLifecycle(root: string, label: string, opts: FolderSourceOptions): FolderLifecycle {
  const pollMs = opts.pollMs ?? 2000;
  if (!(pollMs > 0) || !Number.isFinite(pollMs)) throw new LkError('LK_VALIDATION', `pollMs must be a positive number, got ${pollMs}`);
  const onError = opts.onError ?? ((e: unknown) => process.emitWarning(`${label} watch: ${e instanceof Error ? e.message : String(e)}`));
  const stops = new Set<() => void>();
  let closed = false;
  const assertOpen = (): void => {
    if (closed) throw new LkError('LK_CONN_UNAVAILABLE', `the ${label} source is closed`);
  };
  return {
    assertOpen,
    watch(onChange) {
      assertOpen();
      const stop = watchInbox(root, { pollMs, fsWatch: opts.fsWatch ?? true, onError }, onChange);
      const unsubscribe = (): void => {
        stop();
        stops.delete(unsubscribe);
      };
      stops.add(unsubscribe);
      return unsubscribe;
    },
    close() {
      closed = true;
      for (const s of [...stops]) s();
    },
  };
}
