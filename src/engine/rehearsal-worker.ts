/**
 * Worker of large rehearsals (rehearsal.ts): runs the pure twin's {@link simulate} on a worker thread, so a
 * 10,000-candidate rehearsal does not hold the event loop that feeds the PLC heartbeats. The same function on
 * the same data: the result is the one the calling thread would compute.
 */
import { parentPort } from 'node:worker_threads';
import { LkError } from '../errors.js';
import { simulate, type SimulateRequest, type SimulationResult, type TwinModel } from '../twin/simulate.js';

export interface RehearsalTask {
  readonly id: number;
  readonly model: TwinModel;
  readonly req: SimulateRequest;
}

export type RehearsalReply =
  | { readonly id: number; readonly ok: true; readonly result: SimulationResult }
  | { readonly id: number; readonly ok: false; readonly error: { readonly code: string | null; readonly message: string; readonly detail?: Record<string, unknown> } };

parentPort?.on('message', (t: RehearsalTask) => {
  let reply: RehearsalReply;
  try {
    reply = { id: t.id, ok: true, result: simulate(t.model, t.req) };
  } catch (e) {
    reply = LkError.is(e)
      ? { id: t.id, ok: false, error: { code: e.code, message: e.message, ...(e.detail ? { detail: e.detail as Record<string, unknown> } : {}) } }
      : { id: t.id, ok: false, error: { code: null, message: (e as Error).message ?? String(e) } };
  }
  parentPort!.postMessage(reply);
});
