/**
 * Rehearsals on the twin, off the main event loop when they are large. The twin is pure and quick per
 * candidate, but a process engineer's 10,000-candidate rehearsal held the loop for 1.4 s on the edge node, and
 * the loop is what feeds the PLC heartbeats (issue 20). Above {@link WORKER_MIN_CANDIDATES} the same
 * {@link simulate} runs on a worker thread (rehearsal-worker.ts); smaller ones (a run's step 02 draws 64) run
 * here, where a worker would cost more than it saves. Either way the result is the same for the same model,
 * request and seed: the worker runs the same function on a structured clone of the same data.
 *
 * The API's answer is {@link rehearseEncoded}: the result encoded as JSON where it was computed (on the worker
 * for a large one) with the summary its audit entry records, so the main thread neither decodes nor encodes
 * the 10,000 entries.
 *
 * At most {@link MAX_REHEARSAL_WORKERS} worker runs at once: rehearsals beyond wait their turn, so a burst of
 * requests takes a core, not the machine. Workers are kept for the next rehearsal and do not keep the process
 * alive while idle.
 */
import { Worker } from 'node:worker_threads';
import { workerScript } from '../worker-script.js';
import { ERRORS, type ErrorCode, LkError } from '../errors.js';
import { simulate, type SimulateRequest, type SimulationResult, type TwinModel } from '../twin/simulate.js';
import { encodeRehearsal, type EncodedRehearsal } from './rehearsal-encode.js';
import type { RehearsalReply, RehearsalTask } from './rehearsal-worker.js';

/** Rehearsals of more candidates than this run on a worker thread (a few ms of twin work in-thread at most). */
export const WORKER_MIN_CANDIDATES = 256;
/** Worker threads at most: one leaves the other core of a two-core edge node to the loop. */
export const MAX_REHEARSAL_WORKERS = 1;

export interface RehearseOptions {
  /** Force where it runs (tests compare the two): default by size. */
  readonly where?: 'thread' | 'worker';
}

/**
 * Rehearse `req.candidates` candidates on `model`, on a worker thread when the rehearsal is large.
 * @throws LkError as {@link simulate} (LK_VALIDATION, LK_VALUE_INVALID, design-space errors); LK_INTERNAL when
 *   a worker cannot start or dies.
 */
export async function rehearse(model: TwinModel, req: SimulateRequest, o: RehearseOptions = {}): Promise<SimulationResult> {
  const where = o.where ?? (req.candidates > WORKER_MIN_CANDIDATES ? 'worker' : 'thread');
  if (where === 'thread') return simulate(model, req);
  return pool.run(model, req, 'result') as Promise<SimulationResult>;
}

/**
 * As {@link rehearse}, answered as the API sends it: the result's JSON bytes and the summary its audit entry
 * records, both made where the rehearsal ran (a large one's on the worker, the bytes transferred, not copied).
 */
export async function rehearseEncoded(model: TwinModel, req: SimulateRequest, o: RehearseOptions = {}): Promise<EncodedRehearsal> {
  const where = o.where ?? (req.candidates > WORKER_MIN_CANDIDATES ? 'worker' : 'thread');
  if (where === 'thread') return encodeRehearsal(simulate(model, req));
  return pool.run(model, req, 'encoded') as Promise<EncodedRehearsal>;
}

/** Rehearsals that ran on workers since the process began, running and waiting now, the most at once, workers alive. */
export function rehearsalWorkerStats(): { readonly ran: number; readonly running: number; readonly waiting: number; readonly peak: number; readonly workers: number } {
  return { ran: pool.ran, running: pool.running, waiting: pool.waiting, peak: pool.peak, workers: pool.size };
}

interface Pending {
  readonly task: RehearsalTask;
  readonly resolve: (r: SimulationResult | EncodedRehearsal) => void;
  readonly reject: (e: unknown) => void;
}

class RehearsalPool {
  ran = 0;
  peak = 0;
  private nextId = 1;
  private readonly idle: Worker[] = [];
  private readonly busy = new Map<Worker, Pending>();
  private readonly queue: Pending[] = [];

  get size(): number {
    return this.idle.length + this.busy.size;
  }

  get running(): number {
    return this.busy.size;
  }

  get waiting(): number {
    return this.queue.length;
  }

  run(model: TwinModel, req: SimulateRequest, form: RehearsalTask['form']): Promise<SimulationResult | EncodedRehearsal> {
    return new Promise((resolve, reject) => {
      this.queue.push({ task: { id: this.nextId++, model, req, form }, resolve, reject });
      this.pump();
    });
  }

  private pump(): void {
    while (this.queue.length > 0) {
      let w = this.idle.pop();
      if (!w) {
        if (this.size >= MAX_REHEARSAL_WORKERS) return;
        try {
          w = this.spawn();
        } catch (err) {
          const p = this.queue.shift()!;
          p.reject(new LkError('LK_INTERNAL', `a rehearsal worker could not start: ${(err as Error).message}`, undefined, { cause: err }));
          continue;
        }
      }
      const p = this.queue.shift()!;
      this.busy.set(w, p);
      this.peak = Math.max(this.peak, this.busy.size);
      w.ref();
      w.postMessage(p.task);
    }
  }

  private spawn(): Worker {
    const script = workerScript(new URL('./rehearsal-worker.js', import.meta.url));
    const w = new Worker(script.code, { eval: script.eval });
    w.on('message', (r: RehearsalReply) => {
      const p = this.busy.get(w);
      if (!p || p.task.id !== r.id) return;
      this.busy.delete(w);
      this.ran++;
      w.unref();
      this.idle.push(w);
      if (r.ok) p.resolve('encoded' in r ? r.encoded : r.result);
      else p.reject(r.error.code !== null && r.error.code in ERRORS ? new LkError(r.error.code as ErrorCode, r.error.message, r.error.detail) : new LkError('LK_INTERNAL', `rehearsal failed: ${r.error.message}`));
      this.pump();
    });
    const gone = (err: Error): void => {
      const i = this.idle.indexOf(w);
      if (i >= 0) this.idle.splice(i, 1);
      const p = this.busy.get(w);
      this.busy.delete(w);
      p?.reject(new LkError('LK_INTERNAL', `the rehearsal worker stopped: ${err.message}`, undefined, { cause: err }));
      this.pump();
    };
    w.on('error', gone);
    w.on('exit', (code) => gone(new Error(`exit code ${code}`)));
    return w;
  }
}

const pool = new RehearsalPool();

