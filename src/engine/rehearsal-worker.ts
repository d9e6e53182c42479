/**
 * Worker of large rehearsals (rehearsal.ts): runs the pure twin's {@link simulate} on a worker thread, so a
 * 10,000-candidate rehearsal does not hold the event loop that feeds the PLC heartbeats. The same function on
 * the same data: the result is the one the calling thread would compute. Asked for the encoded form (the API's
 * answer), it also encodes the result here and transfers the bytes: decoding 10,000 entries on the main thread
 * and encoding them again as JSON held that loop for about 300 ms.
 */
import { parentPort } from 'node:worker_threads';
import { LkError } from '../errors.js';
import { simulate, type SimulateRequest, type SimulationResult, type TwinModel } from '../twin/simulate.js';
import { encodeRehearsal, type EncodedRehearsal } from './rehearsal-encode.js';
import { lowerThreadPriority } from './worker-priority.js';

export interface RehearsalTask {
  readonly id: number;
  readonly model: TwinModel;
  readonly req: SimulateRequest;
  /** 'result': the result as a value (structured clone); 'encoded': its JSON bytes and audit summary. */
  readonly form: 'result' | 'encoded';
}

export type RehearsalReply =
  | { readonly id: number; readonly ok: true; readonly result: SimulationResult }
  | { readonly id: number; readonly ok: true; readonly encoded: EncodedRehearsal }
  | { readonly id: number; readonly ok: false; readonly error: { readonly code: string | null; readonly message: string; readonly detail?: Record<string, unknown> } };

// the heartbeat loop goes first when this thread and it want the same core
if (parentPort) lowerThreadPriority();

parentPort?.on('message', (t: RehearsalTask) => {
  let reply: RehearsalReply;
  const transfer: ArrayBuffer[] = [];
  try {
    const result = simulate(t.model, t.req);
    if (t.form === 'encoded') {
      const encoded = encodeRehearsal(result);
      transfer.push(encoded.body.buffer as ArrayBuffer);
      reply = { id: t.id, ok: true, encoded };
    } else {
      reply = { id: t.id, ok: true, result };
    }
  } catch (e) {
    reply = LkError.is(e)
      ? { id: t.id, ok: false, error: { code: e.code, message: e.message, ...(e.detail ? { detail: e.detail as Record<string, unknown> } : {}) } }
      : { id: t.id, ok: false, error: { code: null, message: (e as Error).message ?? String(e) } };
  }
  parentPort!.postMessage(reply, transfer);
});
