/**
 * The release package written without holding the event loop. The PLC heartbeats are written on the daemon's
 * main thread (a hung daemon must lose them), so nothing that grows with the audit trail may run there:
 * the main thread checks the input and, once a worker thread (release-worker.ts) has verified the tenant's chain on
 * its own read-only connection, signs a checkpoint at the head (one short transaction); the worker then exports
 * and re-verifies the bundle, renders the PDF, writes and fsyncs. The package is the one {@link writeReleasePackage} writes, byte for byte.
 */
import { Worker } from 'node:worker_threads';
import { workerScript } from '../worker-script.js';
import { ERRORS, LkError, type ErrorCode } from '../errors.js';
import type { Store } from '../store/store.js';
import { prepareReleasePackage, type ReleasePackageOptions } from './release-package.js';
import type { ReleaseInput, ReleasePackage } from './release-types.js';
import type { ReleaseCommand, ReleaseReply, ReleaseTask } from './release-worker.js';

/**
 * Write the release package of a run into `dir`, sealing it in a worker thread.
 * @throws LkError as writeReleasePackage; LK_INTERNAL when the worker cannot start or dies.
 */
export async function writeReleasePackageOffLoop(store: Store, dir: string, releaseInput: ReleaseInput, opts: ReleasePackageOptions = {}): Promise<ReleasePackage> {
  const { target, input } = prepareReleasePackage(store, dir, releaseInput);
  const task: ReleaseTask = { dataDir: store.dataDir, target, input, now: store.clock.now(), opts };
  const pkg = await converse(task, () => {
    // the chain verified: a fresh signed checkpoint at the current head (none when it is signed already), which
    // the worker's bundle then ends at
    store.audit.checkpoint(input.tenant);
  });
  // The store's head may only have moved on since the worker's snapshot, never back.
  if (store.audit.head(input.tenant).seq < pkg.auditHead.seq) {
    throw new LkError('LK_AUDIT_BROKEN', `audit chain "${input.tenant}" is shorter than its exported bundle`, { tenant: input.tenant });
  }
  return pkg;
}

/** Run the worker's conversation (release-worker.ts); `verified` runs on this thread between its two halves. */
function converse(task: ReleaseTask, verified: () => void): Promise<ReleasePackage> {
  const script = workerScript(new URL('./release-worker.js', import.meta.url));
  return new Promise<ReleasePackage>((resolve, reject) => {
    let settled = false;
    const w = new Worker(script.code, { eval: script.eval, workerData: { lkRelease: task } });
    const done = (f: () => void): void => {
      if (settled) return;
      settled = true;
      f();
      void w.terminate();
    };
    w.on('message', (r: ReleaseReply) => {
      if (r.kind === 'verified') {
        try {
          verified();
        } catch (err) {
          w.postMessage({ kind: 'abandon' } satisfies ReleaseCommand);
          done(() => reject(err));
          return;
        }
        w.postMessage({ kind: 'seal' } satisfies ReleaseCommand);
      } else if (r.kind === 'sealed') {
        done(() => resolve(r.pkg));
      } else {
        done(() => reject(new LkError(r.code in ERRORS ? (r.code as ErrorCode) : 'LK_INTERNAL', r.message, r.detail)));
      }
    });
    w.once('error', (err) => done(() => reject(new LkError('LK_INTERNAL', `release package worker failed: ${err.message}`, undefined, { cause: err }))));
    w.once('exit', (code) => done(() => reject(new LkError('LK_INTERNAL', `release package worker exited with code ${code} before answering`))));
  });
}

