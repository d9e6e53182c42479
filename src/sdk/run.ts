/**
 * A run as the SDK follows it. `run.stream()` is the spec's "yields steps with name, status and duration":
 * every time a step's status changes, that step, in plan order, until the run is terminal. The daemon keeps
 * step statuses in the run record (GET /runs/{id}) and streams the tool-call log (SSE); a new line means the
 * run moved, so each burst of lines triggers one read of the record, and while the stream is quiet (the gate
 * waiting for QA, a held run) the record is read every `pollMs`. A step status is yielded once: the iterator
 * remembers what it yielded, so neither a reconnection (resumed with Last-Event-ID) nor a repeated read can
 * repeat one.
 */
import type { LinekeeperClient } from './client.js';
import { sdkError } from './errors.js';
import type { Channel, ToolCallStreamOptions } from './events.js';
import type { Decision, ExceptionList, Genealogy, RunRecord, RunStatus, Signature, Step, StepRecord, ToolCallLine } from './types.js';

/** Reads of the run record triggered by lines are at least this far apart (a burst of lines is one read). */
const MIN_REREAD_MS = 100;

export interface StreamOptions {
  /** Read the run record this often while no line arrives (ms; default the client's `pollMs`). */
  readonly pollMs?: number;
}

function stepOf(s: StepRecord): Step {
  return { seq: s.seq, name: s.name, status: s.status, duration: s.duration, durationMs: s.durationMs, agent: s.agent, tool: s.tool, detail: s.detail, attempt: s.attempt, gate: s.gate };
}

/** A timer that can be raced and cancelled, so a finished wait leaves nothing behind. */
function delay(ms: number): { readonly done: Promise<'timeout'>; cancel(): void } {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const done = new Promise<'timeout'>((resolve) => {
    timer = setTimeout(() => resolve('timeout'), Math.max(0, ms));
  });
  return { done, cancel: () => clearTimeout(timer) };
}

export class Run {
  #record: RunRecord | undefined;

  constructor(readonly client: LinekeeperClient, readonly id: string, record?: RunRecord) {
    this.#record = record;
  }

  /** The run record as last read (the plan and steps at start, until {@link refresh} or `stream()` reads it again). */
  get record(): RunRecord | undefined {
    return this.#record;
  }

  /** Read the run again (GET /runs/{id}). */
  async refresh(): Promise<RunRecord> {
    this.#record = await this.client.getRun(this.id);
    return this.#record;
  }

  /** The raw tool-call lines as they are logged (SSE, resumed with Last-Event-ID); returns the terminal status. */
  toolCalls(o: ToolCallStreamOptions = {}): Channel<ToolCallLine, RunStatus> {
    return this.client.toolCalls(this.id, o);
  }

  /**
   * Each step every time its status changes, in plan order; steps already under way or done when it starts are
   * yielded first. Ends (returning the final run record) once the run is terminal and its stream has ended.
   * @throws LinekeeperError what reading the run or its stream is refused with (LK_NOT_FOUND, LK_TOO_MANY_STREAMS, …).
   */
  async *stream(o: StreamOptions = {}): AsyncGenerator<Step, RunRecord, undefined> {
    const pollMs = o.pollMs ?? this.client.pollMs;
    const yielded = new Map<string, string>();
    const lines = this.toolCalls();
    let pending: Promise<IteratorResult<ToolCallLine, RunStatus | undefined>> | undefined;
    let ended = false;
    let readAt = 0;
    try {
      for (;;) {
        readAt = Date.now();
        const record = await this.refresh();
        for (const s of record.steps) {
          const seen = `${s.status}#${s.attempt}`;
          if (s.status === 'PENDING' || yielded.get(s.seq) === seen) continue;
          yielded.set(s.seq, seen);
          yield stepOf(s);
        }
        if (ended) return record;
        // wait for a line (then for the burst to pass), the end, or the poll interval
        let wait = pollMs;
        let moved = false;
        for (;;) {
          if (moved && wait <= 0) break;
          const timer = delay(wait);
          pending ??= lines.next();
          const r = await Promise.race([pending, timer.done]);
          timer.cancel();
          if (r === 'timeout') break;
          pending = undefined;
          if (r.done) {
            ended = true;
            break;
          }
          moved = true;
          wait = readAt + MIN_REREAD_MS - Date.now();
        }
      }
    } finally {
      await lines.return();
    }
  }

  /**
   * Sign the run's approval gate as this client's user (a QA reviewer, re-authenticated with the password).
   * @throws LinekeeperError LK_RUN_STATE when the run has no gate request yet; what POST /approvals/{id} refuses.
   */
  async approve(d: Decision): Promise<Signature> {
    const gate = (await this.refresh()).approvalGate;
    if (!gate.id) throw sdkError('LK_RUN_STATE', `run ${this.id} has not reached its approval gate (step ${gate.step} is ${gate.status})`);
    return this.client.approve(gate.id, d);
  }

  /** GET /runs/{id}/genealogy. */
  genealogy(): Promise<Genealogy> {
    return this.client.genealogy(this.id);
  }

  /** GET /runs/{id}/exceptions: what deviated in this run, open or closed, and its specification table. */
  exceptions(): Promise<ExceptionList> {
    return this.client.exceptions(this.id);
  }
}
