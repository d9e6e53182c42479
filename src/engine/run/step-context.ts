/**
 * What a step of a run works with: the tool-call log (each call and its result commit with their audit
 * entries), agent calls recorded for replay, readings from the equipment, waits in process time, and
 * proposals and arbitration rounds through the guarded writer — the only way a step reaches the writer (a step
 * holds no writer, store or engine: step-services.ts). This is I/O code; the agents it calls are pure.
 */
import type { Sample } from '../../../connectors/types.js';
import type { Json } from '../../audit/index.js';
import { sleep, type Clock } from '../../clock.js';
import type { PlanStep } from '../../domain/run.js';
import { LkError } from '../../errors.js';
import type { Logger } from '../../log.js';
import type { RunRecord, RunStore, ToolCallRecord } from '../../store/run-store.js';
import type { ExceptionRecord } from '../../store/exception-store.js';
import type { Store } from '../../store/store.js';
import type { GuardedWriter, WriteOutcome, WriteProposal } from '../guarded-writer.js';
import type { ArbitrationRequest, ArbitrationResult } from '../../arbitration/index.js';
import { stateName } from '../../supervision/plc-watch.js';
import type { SupervisionProfile } from '../../../connectors/supervision.js';
import type { RaiseInput } from './exceptions.js';
import { json } from '../json.js';
import type { RoleMap } from '../../domain/roles.js';

/** A numeric reading of good quality, as agents take them. */
export interface Reading {
  readonly tag: string;
  readonly value: number;
  readonly unit: string;
  readonly at: number;
}

export interface StepHost {
  readonly store: Store;
  readonly runs: RunStore;
  readonly clock: Clock;
  /** Process time: the simulator's scaled clock, or the wall clock on a real line. */
  readonly processClock: Clock;
  readonly writer: GuardedWriter;
  readonly read: (tags: readonly string[]) => Promise<Sample[]>;
  readonly log: Logger;
  readonly pollMs: number;
  /** Tool-call lines after their commit (the SSE stream's source). */
  readonly notify: (row: ToolCallRecord) => void;
  /** State of the connection serving a tag (`connected`, `lost`, …), or undefined when no connection serves it. */
  readonly connection: (tag: string) => string | undefined;
  /** Raise an exception of a run (audited, in the log and the genealogy); null when the run has one for that condition. */
  readonly raise: (run: RunRecord, e: RaiseInput) => ExceptionRecord | null;
  /** Each equipment's supervision profile (what its SupervisorState values mean); absent: the simulator's conventions. */
  readonly profiles?: ReadonlyMap<string, SupervisionProfile>;
  /** The site's role map: steps read and propose by role; the line, the writer and the audit trail see site tags. */
  readonly roles?: RoleMap;
}

/** What a proposal through {@link StepContext.propose} came to (the steps name it from here, not from the writer). */
export type { WriteOutcome };

/** Thrown inside a step when the engine stops or the run is held: the step is left for the engine to close. */
export class StepAborted extends Error {
  constructor(readonly why: string) {
    super(why);
    this.name = 'StepAborted';
  }
}

export class StepContext {
  private proposals = 0;
  /** Vectors the writer answered in this step without writing them (recommended, pending, denied…). */
  private readonly unanswered = new Set<string>();
  /** Units whose connection is down now (one CONNECTION_LOST per outage), and how many outages each had in this step. */
  private readonly down = new Map<string, { since: number; state: string }>();
  private readonly outages = new Map<string, number>();

  constructor(
    private readonly h: StepHost,
    readonly run: RunRecord,
    readonly step: PlanStep,
    readonly signal: AbortSignal,
    /** The run's data so far (results of earlier steps). */
    readonly data: Record<string, unknown>,
    /** Which attempt of the step this is (a resumed step runs again as attempt 2, 3…): part of every proposal id. */
    readonly attempt = 1,
  ) {}

  get now(): number {
    return this.h.clock.now();
  }

  get processNow(): number {
    return this.h.processClock.now();
  }

  /**
   * Log a tool call, run it, log its ok (or error) line. Call and result each commit with an audit entry
   * (kinds tool_call / tool_result) on the tenant chain. `fn`'s error is logged and rethrown, a stop of the
   * engine during the call (StepAborted) as an `interrupted` error line.
   */
  async tool<T>(tool: string, args: Record<string, unknown>, fn: () => Promise<T> | T, summarise: (r: T) => { summary: string; result?: unknown }, agent = this.step.agent): Promise<T> {
    this.line('call', tool, agent, { args });
    let r: T;
    try {
      r = await fn();
    } catch (err) {
      // no call stays open: a stop that aborts a call under way closes it too (the re-run logs a new call)
      if (err instanceof StepAborted) {
        this.line('error', tool, agent, { summary: `interrupted: ${err.why}`, result: { interrupted: true, reason: err.why } });
      } else {
        const e = LkError.is(err) ? { code: err.code, message: err.message } : { code: 'LK_INTERNAL', message: err instanceof Error ? err.message : String(err) };
        this.line('error', tool, agent, { summary: `${e.code}: ${e.message}`, result: e });
      }
      throw err;
    }
    // the call happened: its ok line is written even if its summary cannot be made (no call stays open)
    let s: { summary: string; result?: unknown };
    try {
      s = summarise(r);
    } catch (err) {
      s = { summary: `done (its summary failed: ${err instanceof Error ? err.message : String(err)})` };
    }
    this.line('ok', tool, agent, { summary: s.summary, ...(s.result !== undefined ? { result: s.result } : {}) });
    return r;
  }

  /**
   * One line of the tool-call log with its audit entry, for a call whose result arrives much later (the
   * approval gate's `approval.request` and its ok line once a reviewer signs).
   */
  line(kind: 'call' | 'ok' | 'error', tool: string, agent: string, v: { args?: Record<string, unknown>; summary?: string; result?: unknown }): void {
    const at = this.now;
    const { run } = this;
    const row = this.h.store.tx((t) => {
      const e = t.audit.append({
        tenant: run.tenant,
        actor: agent,
        kind: kind === 'call' ? 'tool_call' : 'tool_result',
        action: tool,
        subject: { run: run.id, batch: run.batch, agent, tool },
        ...(v.args ? { args: json(v.args) } : {}),
        ...(kind !== 'call' ? { result: json({ ok: kind === 'ok', summary: v.summary ?? '', ...(v.result !== undefined ? { detail: v.result } : {}) }) } : {}),
      });
      const rec: Omit<ToolCallRecord, 'id'> = { run: run.id, at, kind, step: this.step.name, agent, tool, args: v.args === undefined ? undefined : json(v.args), summary: v.summary ?? null, result: v.result === undefined ? undefined : json(v.result), auditSeq: e.seq };
      return { ...rec, id: this.h.runs.appendToolCall(t, rec) } as ToolCallRecord;
    });
    this.h.notify(row);
  }

  /**
   * Call a pure agent function and record its exact input and output (JSON text) for replay (R11).
   * The agent gets the parsed copy of what is recorded, so a replay feeds it the very same input.
   */
  agent<I, O>(fnName: string, fn: (input: I) => O, input: I, model?: { id: string; version: number } | null, agent = this.step.agent): O {
    const inputText = JSON.stringify(input);
    const output = fn(JSON.parse(inputText) as I);
    const outputText = JSON.stringify(output);
    this.h.store.tx((t) => this.h.runs.appendAgentCall(t, { run: this.run.id, at: this.now, step: this.step.name, agent, fn: fnName, model: model ? `${model.id}@${model.version}` : null, input: inputText, output: outputText }));
    return JSON.parse(outputText) as O;
  }

  /** Raise an exception seen in this step (by the step's agent unless `by` names another). */
  exception(e: Omit<RaiseInput, 'step' | 'by'> & { readonly by?: string }): ExceptionRecord | null {
    // a step names the tag by role; the exception, its audit entry and the reviewer see the site's tag
    return this.h.raise(this.run, { ...e, ...(e.tag !== undefined ? { tag: this.tagOf(e.tag) } : {}), by: e.by ?? this.step.agent, step: { seq: this.step.seq, name: this.step.name } });
  }

  /** A genealogy event of this step (sensor state, recommendation, action, response, arbitration, qc…). */
  event(kind: string, summary: string, data?: unknown, extra: { agent?: string; tag?: string } = {}): void {
    this.h.store.tx((t) =>
      this.h.runs.appendEvent(t, { run: this.run.id, at: this.now, kind, step: this.step.name, agent: extra.agent ?? this.step.agent, tag: extra.tag ?? null, summary, data: data === undefined ? null : json(data) }),
    );
  }

  /** Good-quality numeric readings of `tags` now; a tag that is bad or not numeric is left out. */
  async readings(roles: readonly string[]): Promise<Map<string, Reading>> {
    const samples = await this.samples(roles);
    const out = new Map<string, Reading>();
    for (const s of samples) {
      if (s.quality === 'good' && typeof s.value === 'number' && Number.isFinite(s.value)) out.set(s.tag, { tag: s.tag, value: s.value, unit: s.unit, at: this.processNow });
    }
    return out;
  }

  /**
   * Raw samples (spectra, frames, strings) of `roles`, keyed by role: each is read from the site tag that plays it
   * (a role the site does not map reads as a bad sample, LK_TAG_UNKNOWN).
   */
  async samples(roles: readonly string[]): Promise<Sample[]> {
    const tags = roles.map((r) => this.tagOf(r));
    this.watchConnections(tags);
    const samples = await this.h.read(tags);
    if (!this.h.roles) return samples;
    const roleOf = new Map(tags.map((t, i) => [t, roles[i]!]));
    return samples.map((s) => ({ ...s, tag: roleOf.get(s.tag) ?? s.tag }));
  }

  /** The site tag that plays a role (the role's id on a site that names its tags like the reference line). */
  tagOf(role: string): string {
    return this.h.roles ? this.h.roles.tag(role) : role;
  }

  /**
   * The connections serving the units of `tags`, as the step reads them: a connection that is not `connected` is a
   * CONNECTION_LOST exception of this step, once per outage (raised when the step first finds it down, with the
   * state and the tags it could not read); its return is a genealogy event, and a later drop is a new outage.
   */
  private watchConnections(tags: readonly string[]): void {
    const units = new Map<string, string[]>();
    for (const tag of tags) {
      const eq = tag.split('.')[0]!;
      const xs = units.get(eq);
      if (xs) xs.push(tag);
      else units.set(eq, [tag]);
    }
    for (const [eq, xs] of units) {
      const state = this.h.connection(xs[0]!);
      if (state === undefined) continue;
      const was = this.down.get(eq);
      if (state === 'connected') {
        if (was) {
          this.down.delete(eq);
          this.event('watchdog', `${eq}: connection back (${was.state} for ${Math.round((this.now - was.since) / 1000)} s)`, { equipment: eq, state, downMs: this.now - was.since });
        }
        continue;
      }
      if (was) continue;
      this.down.set(eq, { since: this.now, state });
      const n = (this.outages.get(eq) ?? 0) + 1;
      this.outages.set(eq, n);
      this.exception({
        kind: 'CONNECTION_LOST', key: `CONNECTION_LOST:${eq}:${this.step.seq}:${this.attempt}:${n}`, by: 'agent.orchestrator', tag: xs[0]!,
        title: `CONNECTION_LOST ${eq}: connection ${state} during ${this.step.seq} ${this.step.name}; its readings are missing and no move is sent to it until it is back`,
        evidence: { equipment: eq, state, outage: n, tags: xs, at: new Date(this.now).toISOString(), processTime: this.processNow },
      });
    }
  }

  /** Wait one poll period of the engine's clock (wall time on a line, virtual time in the core simulator). @throws StepAborted when the engine stops. */
  async tick(): Promise<void> {
    this.check();
    await sleep(this.h.clock, this.h.pollMs, this.signal);
    this.check();
  }

  /** @throws StepAborted when the engine stops or the run was held. */
  check(): void {
    if (this.signal.aborted) throw new StepAborted(String(this.signal.reason ?? 'stopped'));
  }

  /**
   * Send a proposal through the guarded writer (arbitration → policy → audit → write → read-back). The
   * writer audits every decision; the outcome lands in the genealogy as an action with its equipment response.
   * @throws StepAborted when the engine is stopping: nothing is proposed then.
   */
  async propose(p: Omit<WriteProposal, 'id' | 'tenant' | 'batch' | 'run' | 'product' | 'tooling'>, tool: string): Promise<WriteOutcome> {
    // once the engine stops, no new move starts (the writes under way drain; the step is interrupted)
    this.check();
    const { run } = this;
    // agents propose by role; the writer, the policy and the audit trail see the site's tags
    p = { ...p, moves: p.moves.map((m) => ({ ...m, setpoint: this.tagOf(m.setpoint) })) };
    // no proposal for a unit whose connection is lost: its PLC is on its own (and on LKG once its watchdog fires)
    const units = [...new Set(p.moves.map((m) => m.setpoint.split('.')[0]!))];
    this.watchConnections(p.moves.map((m) => m.setpoint));
    const down = units.filter((eq) => {
      const st = this.h.connection(p.moves.find((m) => m.setpoint.startsWith(`${eq}.`))!.setpoint);
      return st !== undefined && st !== 'connected';
    });
    if (down.length > 0) {
      this.event('watchdog', `${down.join(', ')}: connection not available, ${p.agent}'s proposal not sent`, { moves: json(p.moves), agent: p.agent }, { agent: p.agent });
      return { status: 'failed', proposalId: `${run.id}:${this.step.seq}:skipped:${this.proposals}`, decisions: [], vectorHash: null, error: { code: 'LK_CONN_UNAVAILABLE', message: `connection to ${down.join(', ')} is not available` } };
    }
    // nor for a PLC that reverted to its LKG recipe: it refuses supervisory writes until a named person re-arms
    // it. Its state is read now, not taken from the subscription, which may lag a re-arm or a revert.
    const states = await this.h.read(units.map((eq) => `${eq}.SupervisorState`));
    const lost = units.filter((eq) => {
      const s = states.find((x) => x.tag === `${eq}.SupervisorState`);
      return s?.quality === 'good' && stateName(s.value, this.h.profiles?.get(eq)) === 'LOST';
    });
    if (lost.length > 0) {
      this.event('watchdog', `${lost.join(', ')}: PLC is LOST on its last known-good recipe until a person re-arms it; ${p.agent}'s proposal not sent`, { moves: json(p.moves), agent: p.agent }, { agent: p.agent });
      return { status: 'failed', proposalId: `${run.id}:${this.step.seq}:skipped:${this.proposals}`, decisions: [], vectorHash: null, error: { code: 'LK_PLC_LOST', message: `${lost.join(', ')} is LOST (running its LKG recipe)` } };
    }
    const proposal: WriteProposal = { ...p, autonomyCap: run.autonomy, id: `${run.id}:${this.step.seq}:${this.attempt}:${++this.proposals}`, tenant: run.tenant, batch: run.batch, run: run.id, product: run.product, tooling: run.tooling };
    const moves = p.moves.map((m) => `${m.setpoint}=${typeof m.value === 'object' ? `${m.value.value} ${m.value.unit}` : String(m.value)}`).join(', ');
    const out = await this.tool(tool, { agent: p.agent, moves: p.moves.map((m) => ({ setpoint: m.setpoint, value: json(m.value) })), attribute: p.attribute }, () => this.h.writer.propose(proposal), (o) => ({ summary: `${o.status}${o.decisions.length ? ` (${[...new Set(o.decisions.flatMap((d): string[] => (d.reasons.length ? [...d.reasons] : [d.outcome])))].join(', ')})` : ''}: ${moves}`, result: outcomeSummary(o) }), p.agent);
    if (out.status !== 'written') this.unanswered.add(vectorKey(p));
    const kind = out.status === 'written' ? 'action' : 'recommendation';
    this.event(kind, `${p.agent} ${out.status}: ${moves}`, { proposal: proposal.id, attribute: p.attribute, justification: p.justification, outcome: outcomeSummary(out) }, { agent: p.agent });
    if (out.results?.length) for (const r of out.results) this.event('response', `${r.tag} read back ${r.readBack ?? 'nothing'} (${r.verified ? 'verified' : 'NOT verified'})`, r, { tag: r.tag, agent: p.agent });
    return out;
  }

  /**
   * One arbitration round of `agent` (the orchestrator) for a contested setpoint, through the guarded writer: the
   * requests are arbitrated against the owners and escalations in force, and the state the round leaves (a new
   * owner, or a deadlock pending for a person that holds the setpoint) commits with the round's audit entry
   * (kind `arbitration`, action `arbitration.round`, the requests as its args, `outcome(r).record` as its result).
   * The round then lands in the genealogy as an `arbitration` event on the setpoint. Nothing is written to the
   * equipment here. @throws LkError LK_POLICY_BUNDLE when no bundle is loaded.
   */
  async contest(c: { agent: string; setpoint: string; requests: readonly ArbitrationRequest[]; outcome: (r: ArbitrationResult) => { record: unknown; reason: string; summary: string } }): Promise<ArbitrationResult> {
    const { run } = this;
    const res = await this.h.writer.contest({
      tenant: run.tenant, product: run.product, tooling: run.tooling, requests: c.requests,
      audit: (r) => {
        const o = c.outcome(r);
        return { tenant: run.tenant, actor: c.agent, kind: 'arbitration', action: 'arbitration.round', subject: { run: run.id, batch: run.batch, agent: c.agent, setpoint: c.setpoint }, args: json({ requests: c.requests }), result: json(o.record), reason: o.reason };
      },
    });
    const o = c.outcome(res);
    this.event('arbitration', o.summary, o.record, { agent: c.agent, tag: c.setpoint });
    return res;
  }

  /** True when the writer already answered this agent's exact vector in this step without writing it. */
  answered(p: { agent: string; moves: readonly { setpoint: string; value: unknown }[] }): boolean {
    return this.unanswered.has(vectorKey(p));
  }

  /** Record a sensor snapshot in the genealogy. */
  sensors(readings: ReadonlyMap<string, Reading>): void {
    if (readings.size === 0) return;
    const values: Record<string, Json> = {};
    for (const [tag, r] of readings) values[tag] = { value: +r.value.toPrecision(6), unit: r.unit };
    this.event('sensor', [...readings.values()].map((r) => `${r.tag} ${+r.value.toPrecision(4)}${r.unit === '1' ? '' : ` ${r.unit}`}`).join(', '), values);
  }
}

function vectorKey(p: { agent: string; moves: readonly { setpoint: string; value: unknown }[] }): string {
  return JSON.stringify([p.agent, p.moves.map((m) => [m.setpoint, typeof m.value === 'object' && m.value !== null ? (m.value as { value: number }).value : m.value])]);
}

/** What of a write outcome goes into the tool-call log and the genealogy (no policy inputs, which the audit trail has). */
export function outcomeSummary(o: WriteOutcome): Json {
  return json({
    status: o.status,
    proposal: o.proposalId,
    vectorHash: o.vectorHash,
    decisions: o.decisions.map((d) => ({ id: d.id, outcome: d.outcome, reasons: d.reasons, autonomy: d.autonomy, value: d.valueInSetpointUnit, unit: d.setpointUnit })),
    ...(o.pending ? { pending: o.pending } : {}),
    ...(o.declined ? { declined: o.declined.map((d) => ({ request: d.request.id, agent: d.request.agent, setpoint: d.request.setpoint, reason: d.reason })) } : {}),
    ...(o.escalation ? { escalation: o.escalation } : {}),
    ...(o.results ? { results: o.results } : {}),
    ...(o.error ? { error: o.error } : {}),
  });
}
