/**
 * Worker of the parallel `audit verify` (verify-parallel.ts): checks ranges of one chain's rows on its own
 * read-only connection. Each entry stores its prev_hash, so a range is checked without its neighbours: every
 * seq present in order, every row's record intact (canonical, hashing to its stored hash: body.ts) and stating its own position,
 * every row linking to the one before it: the same checks as the sequential walk. What links the ranges (a range's
 * first prev_hash to the hash ending the range before) is left to the caller. Any doubt is reported as `ok: false`; the caller then runs the exact
 * sequential walk, which names the damage.
 */
import { parentPort, workerData } from 'node:worker_threads';
import Database from 'better-sqlite3';
import { intactRecord } from './record.js';
import { quickCheck } from './quick-check.js';

/** One range of a chain: seqs lo+1..hi, and the positions whose hashes the caller wants back. */
export interface RangeTask {
  readonly id: number;
  readonly tenant: string;
  readonly lo: number;
  readonly hi: number;
  readonly wanted: readonly number[];
}

export type RangeResult =
  | { readonly id: number; readonly ok: true; readonly firstPrev: string; readonly lastHash: string; readonly hashes: readonly [number, string][] }
  | { readonly id: number; readonly ok: false };

export type WorkerMessage = { readonly kind: 'range'; readonly task: RangeTask } | { readonly kind: 'quick_check' } | { readonly kind: 'close' };
export type WorkerReply = { readonly kind: 'range'; readonly result: RangeResult } | { readonly kind: 'quick_check'; readonly result: string } | { readonly kind: 'error'; readonly message: string };

/** Rows fetched per statement step: `all()` over a slice costs less per row than stepping an iterator. */
const CHUNK = 2048;

/** Check one range on `db`; pure apart from the read. */
export function checkRange(db: Database.Database, t: RangeTask): RangeResult {
  const want = new Set(t.wanted);
  const hashes: [number, string][] = [];
  const stmt = db.prepare('SELECT seq, body, hash FROM audit_entry WHERE tenant = ? AND seq > ? AND seq <= ? ORDER BY seq').raw();
  let e = t.lo + 1;
  let firstPrev: string | undefined;
  let ph: string | undefined;
  // Slices by seq value; rows outside lo+1..hi or out of order fail the `seq === e` check below either way.
  for (let from = t.lo; from < t.hi; from += CHUNK) {
    for (const r of stmt.all(t.tenant, from, Math.min(t.hi, from + CHUNK)) as unknown[][]) {
      const h = r[2] as string;
      const at = r[0] === e ? intactRecord(r[1], h) : undefined;
      if (at === undefined || at.seq !== e || at.tenant !== t.tenant) return { id: t.id, ok: false };
      if (ph === undefined) firstPrev = at.prevHash;
      else if (at.prevHash !== ph) return { id: t.id, ok: false };
      if (want.has(e)) hashes.push([e, h]);
      ph = h;
      e++;
    }
  }
  if (e !== t.hi + 1 || firstPrev === undefined || ph === undefined) return { id: t.id, ok: false };
  return { id: t.id, ok: true, firstPrev, lastHash: ph, hashes };
}

/** What a worker is started with. */
export interface WorkerSetup {
  readonly lkVerify: string;
  /** `PRAGMA mmap_size` for its read-only connection, in bytes (0: read pages by system call, SQLite's default). */
  readonly mmapBytes: number;
}

if (parentPort && (workerData as Partial<WorkerSetup> | undefined)?.lkVerify) {
  const port = parentPort;
  const setup = workerData as WorkerSetup;
  const db = new Database(setup.lkVerify, { readonly: true, fileMustExist: true });
  if (setup.mmapBytes > 0) db.pragma(`mmap_size = ${Math.floor(setup.mmapBytes)}`);
  port.on('message', (m: WorkerMessage) => {
    try {
      if (m.kind === 'close') {
        db.close();
        port.close();
      } else if (m.kind === 'quick_check') port.postMessage({ kind: 'quick_check', result: quickCheck(db) } satisfies WorkerReply);
      else port.postMessage({ kind: 'range', result: checkRange(db, m.task) } satisfies WorkerReply);
    } catch (err) {
      port.postMessage({ kind: 'error', message: (err as Error).message } satisfies WorkerReply);
    }
  });
}
