/**
 * Worker of the release package (release-offload.ts): seals a prepared package on its own read-only connection,
 * so that verifying the tenant's chain, exporting and re-verifying the bundle, rendering the PDF and the fsyncs
 * never hold the daemon's event loop, where the PLC heartbeats are written. It reads the store and writes only
 * the package's files; every audit entry stays with the main thread.
 *
 * Errors travel back as plain data (code, message, detail) and are rebuilt as LkError by the caller.
 */
import { parentPort, workerData, type MessagePort } from 'node:worker_threads';
import { verifyStoreParallel } from '../audit/verify-parallel.js';
import { LkError } from '../errors.js';
import { openStore } from '../store/store.js';
import { assertVerified, sealReleasePackage, type ReleasePackageOptions } from './release-seal.js';
import type { ReleaseInput, ReleasePackage } from './release-types.js';
import { lowerThreadPriority } from './worker-priority.js';

/** What the caller hands over: plain data only. */
export interface ReleaseTask {
  readonly dataDir: string;
  readonly target: string;
  readonly input: ReleaseInput;
  /** The caller's clock at hand-over: the bundle header's `exported_at`. */
  readonly now: number;
  readonly opts: ReleasePackageOptions;
}

/**
 * The conversation: the worker verifies the chain and says `verified`; the caller then signs a checkpoint at the
 * head (an audit write, on its own connection) and says `seal`; the worker seals and answers with the package.
 * Any failure ends it with an error reply. Nothing is signed on a chain that did not verify.
 */
export type ReleaseReply =
  | { readonly kind: 'verified' }
  | { readonly kind: 'sealed'; readonly pkg: ReleasePackage }
  | { readonly kind: 'error'; readonly code: string; readonly message: string; readonly detail?: Record<string, unknown> };
export type ReleaseCommand = { readonly kind: 'seal' } | { readonly kind: 'abandon' };

async function run(t: ReleaseTask, port: MessagePort): Promise<ReleasePackage | undefined> {
  const store = openStore({ dataDir: t.dataDir, readonly: true, clock: { now: () => t.now } });
  try {
    // the long chains across cores (src/audit/verify-parallel.ts); the bundle is verified again while it is sealed
    assertVerified(await verifyStoreParallel(store, { tenant: t.input.tenant, mapFile: false }), t.input.tenant);
    const next = new Promise<ReleaseCommand>((resolve) => port.once('message', resolve));
    port.postMessage({ kind: 'verified' } satisfies ReleaseReply);
    if ((await next).kind !== 'seal') return undefined;
    // one snapshot for the export: it holds the caller's checkpoint; entries appended meanwhile are not half seen
    store.db.exec('BEGIN');
    try {
      return sealReleasePackage(store, t.target, t.input, t.opts);
    } finally {
      if (store.db.inTransaction) store.db.exec('COMMIT');
    }
  } finally {
    store.close();
  }
}

const task = (workerData as { lkRelease?: ReleaseTask } | null)?.lkRelease;
if (parentPort && task) {
  // the heartbeat loop goes first when this thread (and the verify threads it starts) and it want the same core
  lowerThreadPriority();
  const port = parentPort;
  run(task, port).then(
    (pkg) => {
      if (pkg) port.postMessage({ kind: 'sealed', pkg } satisfies ReleaseReply);
    },
    (err: unknown) => {
      const reply: ReleaseReply = LkError.is(err)
        ? { kind: 'error', code: err.code, message: err.message, ...(err.detail ? { detail: JSON.parse(JSON.stringify(err.detail)) as Record<string, unknown> } : {}) }
        : { kind: 'error', code: 'LK_INTERNAL', message: err instanceof Error ? err.message : String(err) };
      port.postMessage(reply);
    },
  );
}
