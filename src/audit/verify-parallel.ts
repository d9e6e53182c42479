/**
 * `audit verify` across cores. The sequential walk (verify.ts) reads, serialises and hashes one row after
 * another on one core. Every entry stores its prev_hash, so each range of a chain can be checked on its own
 * (verify-worker.ts, one read-only connection per worker thread) and the ranges linked afterwards: a range's
 * first prev_hash must be the hash that ends the range before it (genesis for the first). `PRAGMA quick_check`
 * runs on a worker too, beside the ranges.
 *
 * Detection is not weakened: a range is accepted only when every seq is present in order, every row hashes to
 * its stored hash with the same bytes as the sequential walk and links to its predecessor; the ranges must
 * cover 1..max(seq) and nothing else may be in the chain. For a chain where anything is in doubt the exact
 * sequential walk runs instead, so the damage kind and first bad seq are those of {@link verifyStore}. The
 * checkpoints, the log file and the report are the sequential code's own ({@link verifyInner}).
 */
import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import { workerScript } from '../worker-script.js';
import type { Database } from 'better-sqlite3';
import { LkError } from '../errors.js';
import { mapSqliteError } from '../store/sqlite-errors.js';
import { checkpointLogFile, readCheckpointLog } from './checkpoints.js';
import { GENESIS_HASH } from './entry.js';
import { type VerifyOptions, type VerifyReport, type Walk, verifyInner, walkChain } from './verify.js';
import type { RangeResult, RangeTask, WorkerMessage, WorkerReply, WorkerSetup } from './verify-worker.js';

export interface ParallelOptions extends VerifyOptions {
  /** Worker threads (default: the cores available). */
  workers?: number;
  /** Rows per range handed to a worker (default 50,000). */
  rangeRows?: number;
  /** Chains shorter than this are walked on the calling thread (default 20,000): a worker costs more than it saves. */
  minRows?: number;
  /** Called as ranges finish: entries checked so far of the total. */
  onProgress?: (done: number, total: number) => void;
  /**
   * Read the file through memory mapping in the workers (default true): a read-only walk of a long trail spends
   * about a tenth less CPU (no copy of each page through a system call). Off inside the daemon (a release
   * package's verification), where the pages touched would count in its resident memory for the run.
   */
  mapFile?: boolean;
}

/** How much of the file a worker maps: past it, pages are read by system call as usual. */
const MMAP_BYTES = 4 * 2 ** 30;

interface Source {
  readonly db: Database;
  readonly dataDir: string;
}

/**
 * Verify the audit chains and checkpoints of a store, as {@link verifyStore} does and with the same report,
 * using worker threads for long chains.
 * @throws LkError as verifyStore; LK_INTERNAL when a worker cannot start or fails.
 */
export async function verifyStoreParallel(src: Source, opts: ParallelOptions = {}): Promise<VerifyReport> {
  const { db } = src;
  const rangeRows = Math.max(1, opts.rangeRows ?? 50_000);
  const minRows = opts.minRows ?? 20_000;
  try {
    // One snapshot for the chain lengths here and the checkpoints verifyInner reads: an entry or checkpoint
    // appended meanwhile by a running daemon is not half seen. Rows up to max(seq) never change (append-only).
    db.exec('BEGIN');
    try {
      const mine = chainExtents(db, opts.tenant);
      const total = mine.reduce((n, c) => n + Math.max(0, c.n), 0);
      const big = mine.filter((c) => c.n >= minRows);
      const n = Math.max(1, Math.min(opts.workers ?? availableParallelism(), 16));
      if (big.length === 0) return verifyInner(src, opts);
      const wantedOf = checkpointSeqs(db, src.dataDir);
      const pool = await WorkerPool.open(db.name, n, opts.mapFile === false ? 0 : MMAP_BYTES);
      let walks: Map<string, Walk | null>;
      let quickCheck: string;
      try {
        const qc = pool.quickCheck();
        let done = total - big.reduce((k, c) => k + c.n, 0);
        walks = new Map(await Promise.all(big.map(async (c) => [c.tenant, await parallelWalk(pool, c, rangeRows, wantedOf.get(c.tenant) ?? [], (rows) => {
          done += rows;
          opts.onProgress?.(done, total);
        })] as const)));
        quickCheck = await qc;
      } finally {
        pool.close();
      }
      return verifyInner(src, opts, {
        quickCheck,
        walker: (d, tenant, wanted) => walks.get(tenant) ?? walkChain(d, tenant, wanted),
      });
    } finally {
      if (db.inTransaction) db.exec('COMMIT');
    }
  } catch (err) {
    throw mapSqliteError(err);
  }
}

interface Extent {
  readonly tenant: string;
  /** Rows of the chain as far as the index tells without a scan: `hi` when no row lies below seq 1, else -1. */
  readonly n: number;
  readonly hi: unknown;
}

/**
 * The chains and their highest seq, from index seeks alone: `count(*)` would read the whole table once more
 * (a full pass over the file before any worker starts). A chain is taken to hold exactly the rows 1..max(seq)
 * only when max(seq) is an integer and no row has a seq below 1 or NULL: then the ranges (0, max] the workers
 * check, each seq present once and in order, are every row of the chain (a text or blob seq sorts above every
 * number, so it would be the max). Tenants that are not text are left to the sequential walk.
 */
function chainExtents(db: Database, only: string | undefined): Extent[] {
  const tenants: string[] = [];
  if (only !== undefined) tenants.push(only);
  else {
    const first = db.prepare('SELECT tenant FROM audit_entry WHERE tenant IS NOT NULL ORDER BY tenant LIMIT 1').pluck();
    const next = db.prepare('SELECT tenant FROM audit_entry WHERE tenant > ? ORDER BY tenant LIMIT 1').pluck();
    for (let t = first.get() as unknown; t !== undefined; t = next.get(t) as unknown) if (typeof t === 'string') tenants.push(t);
  }
  const max = db.prepare('SELECT max(seq) FROM audit_entry WHERE tenant = ?').pluck();
  const below = db.prepare('SELECT EXISTS (SELECT 1 FROM audit_entry WHERE tenant = ? AND (seq IS NULL OR seq < 1))').pluck();
  return tenants.flatMap((tenant) => {
    const hi = max.get(tenant) as unknown;
    if (hi === null || hi === undefined) return [];
    return [{ tenant, hi, n: typeof hi === 'number' && below.get(tenant) === 0 ? hi : -1 }];
  });
}

/** Every seq at which some checkpoint (database or log file) names a head, per tenant: a superset of what verify compares. */
function checkpointSeqs(db: Database, dataDir: string): Map<string, number[]> {
  const out = new Map<string, number[]>();
  const add = (tenant: unknown, seq: unknown): void => {
    if (typeof tenant !== 'string' || typeof seq !== 'number' || !Number.isSafeInteger(seq)) return;
    out.set(tenant, [...(out.get(tenant) ?? []), seq]);
  };
  for (const r of db.prepare('SELECT tenant, seq FROM audit_checkpoint').raw().all() as unknown[][]) add(r[0], r[1]);
  for (const c of readCheckpointLog(checkpointLogFile(dataDir)).checkpoints) add(c.tenant, c.seq);
  return out;
}

/** A chain checked in ranges and linked; null when anything is in doubt (the sequential walk decides then). */
async function parallelWalk(pool: WorkerPool, c: Extent, rangeRows: number, wanted: readonly number[], progress: (rows: number) => void): Promise<Walk | null> {
  // a seq that is not an integer, a gap, a row outside 1..max: the walk names it
  if (typeof c.hi !== 'number' || !Number.isSafeInteger(c.hi) || c.hi !== c.n) return null;
  const hiSeq = c.hi;
  // Ranges are handed out as workers free up and stop at the first one in doubt: max(seq) alone does not bound
  // the rows (a forged row at seq 10^12 must not queue millions of ranges before the gap is seen).
  const results: RangeResult[] = [];
  let next = 0;
  let failed = false;
  const puller = async (): Promise<void> => {
    while (!failed && next < hiSeq) {
      const lo = next;
      const hi = Math.min(hiSeq, lo + rangeRows);
      next = hi;
      const r = await pool.range({ id: 0, tenant: c.tenant, lo, hi, wanted: wanted.filter((s) => s > lo && s <= hi) });
      if (!r.ok) failed = true;
      results[Math.floor(lo / rangeRows)] = r;
      progress(hi - lo);
    }
  };
  await Promise.all(Array.from({ length: pool.size }, puller));
  if (failed) return null;
  const hashAt = new Map<number, string>();
  let ph = GENESIS_HASH;
  for (const r of results) {
    if (!r.ok || r.firstPrev !== ph) return null;
    for (const [s, h] of r.hashes) hashAt.set(s, h);
    ph = r.lastHash;
  }
  return { head: c.hi, ph, hashAt };
}

/** Worker threads with one connection each; tasks go to whichever is free. */
class WorkerPool {
  private readonly idle: Worker[] = [];
  private readonly waiting: (() => void)[] = [];
  private nextId = 1;

  private constructor(private readonly workers: Worker[]) {
    this.idle.push(...workers);
  }

  get size(): number {
    return this.workers.length;
  }

  static async open(file: string, n: number, mmapBytes: number): Promise<WorkerPool> {
    const script = workerScript(new URL('./verify-worker.js', import.meta.url));
    const setup: WorkerSetup = { lkVerify: file, mmapBytes };
    const ws = Array.from({ length: n }, () => new Worker(script.code, { eval: script.eval, workerData: setup }));
    return new WorkerPool(ws);
  }

  quickCheck(): Promise<string> {
    return this.run({ kind: 'quick_check' }).then((r) => (r.kind === 'quick_check' ? r.result : 'worker answered out of turn'));
  }

  range(t: RangeTask): Promise<RangeResult> {
    const task = { ...t, id: this.nextId++ };
    return this.run({ kind: 'range', task }).then((r) => (r.kind === 'range' ? r.result : { id: task.id, ok: false }));
  }

  close(): void {
    for (const w of this.workers) void w.terminate();
  }

  private async run(m: WorkerMessage): Promise<WorkerReply> {
    while (this.idle.length === 0) await new Promise<void>((res) => this.waiting.push(res));
    const w = this.idle.pop()!;
    try {
      return await new Promise<WorkerReply>((resolve, reject) => {
        const onMsg = (r: WorkerReply): void => {
          cleanup();
          if (r.kind === 'error') reject(new LkError('LK_INTERNAL', `audit verify worker failed: ${r.message}`));
          else resolve(r);
        };
        const onErr = (err: Error): void => {
          cleanup();
          reject(new LkError('LK_INTERNAL', `audit verify worker failed: ${err.message}`, undefined, { cause: err }));
        };
        const onExit = (code: number): void => onErr(new Error(`exited with code ${code}`));
        const cleanup = (): void => {
          w.off('message', onMsg);
          w.off('error', onErr);
          w.off('exit', onExit);
        };
        w.on('message', onMsg);
        w.on('error', onErr);
        w.on('exit', onExit);
        w.postMessage(m);
      });
    } finally {
      this.idle.push(w);
      this.waiting.shift()?.();
    }
  }
}

