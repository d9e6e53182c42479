/**
 * Replay (R11): re-run every recorded agent decision of a run through the same pure agent function, on the
 * recorded input — or on the recorded input with another registered version of the tenant's twin in it —
 * and report, call by call, whether the output is byte-identical and how the recommendations changed.
 *
 * {@link replayRun} reads the run's agent calls and the model from the store and the registry, then hands
 * them to {@link replayCalls}, which is pure: agents get exactly what the run gave them (the parsed recorded
 * JSON), nothing here reads a clock or draws a random number, and nothing is written anywhere.
 */
import { LkError } from '../../errors.js';
import { twinModelOf } from '../../models/artefacts.js';
import { loadModel } from '../../models/registry.js';
import { RunStore, type AgentCallRecord, type RunRecord } from '../../store/run-store.js';
import type { Store } from '../../store/store.js';
import type { TwinModel } from '../../twin/simulate.js';
import { fieldsOf, replayableAgent } from './replay-agents.js';
import { diffProposals, diffVerdict, firstDifference, type FirstDifference, type ProposalDiff, type VerdictChange } from './replay-diff.js';

export type { FirstDifference, ProposalChange, ProposalDiff, VerdictChange } from './replay-diff.js';

/** A registry model: `{ id: 'process-twin-v2', version: 2 }`. */
export interface ModelRef {
  id: string;
  version: number;
}

export interface ReplayOptions {
  /** Another version of the tenant's twin to replay against; without it, the models the run recorded. */
  model?: ModelRef;
  /** Site the model must be pinned to (the registry's rule for loading a model). */
  site: string;
}

/** One recorded agent call, as `run_agent_call` holds it and {@link exportAgentCalls} exports it. */
export type RecordedAgentCall = Omit<AgentCallRecord, 'run'>;

/** The run a replay is of (the part of its record the report names). */
export interface ReplayRunRef {
  id: string;
  tenant: string;
  batch: string;
  line: string;
  product: string;
  tooling: string;
}

export interface ReplayCall {
  /** The call's id in the run (its order). */
  id: number;
  /** Epoch ms the agent was called at (an input of the agent, so replayed as it was). */
  at: number;
  step: string;
  agent: string;
  fn: string;
  /** `<id>@<version>` the run used, or null for an agent without a model. */
  recordedModel: string | null;
  /** `<id>@<version>` of this replay: the substituted twin, or the recorded model. */
  replayModel: string | null;
  /** True when the twin in the input was replaced for this replay. */
  substituted: boolean;
  /** The replayed output's JSON text is byte-equal to the recorded one. */
  identical: boolean;
  /** The agent threw on replay (or its function is unknown to this version): no output to compare. */
  error?: { code: string; message: string };
  /** Setpoint moves that differ (value, attribute or predicted attributes). */
  proposals: ProposalDiff[];
  /** Verdict fields that differ. */
  verdict: VerdictChange[];
  /** Where the outputs first part, when they are not identical (for tracing a determinism bug). */
  firstDifference?: FirstDifference;
}

export interface ReplaySummary {
  calls: number;
  identical: number;
  differing: number;
  errors: number;
  /** Calls whose input got the substituted twin. */
  substituted: number;
  /** Calls whose proposals differ in any way (a move, its attribute or its predicted attributes). */
  proposalsChanged: number;
  /** Calls that propose another move: another value, a move more or a move less. */
  movesChanged: number;
  /** Calls with at least one changed verdict field. */
  verdictsChanged: number;
  /**
   * Calls replayed on their recorded input, unchanged, whose output is not byte-identical (or that threw):
   * each one is a determinism bug of its agent (R11) and must be 0.
   */
  nondeterministic: number;
}

export interface ReplayReport {
  format: 1;
  run: ReplayRunRef;
  /** `<id>@<version>` of the twin replayed against, or null for the recorded models. */
  model: string | null;
  calls: ReplayCall[];
  summary: ReplaySummary;
}

const MODEL_ID_RE = /^([a-z][a-z0-9]*-[a-z][a-z0-9]*)-v([1-9][0-9]*)$/;

/**
 * Replay a stored run of `tenant` against its recorded models, or against `opts.model`, another version of
 * the tenant's twin (a draft is allowed: a replay writes nothing). Reads only.
 * @throws LkError LK_NOT_FOUND for an unknown run or a run of another tenant (R1); LK_VALIDATION when
 *   `opts.model` is not a twin or its id and version disagree; the registry's LK_MODEL_TENANT (another
 *   tenant's model, R9), LK_MODEL_MISSING, LK_MODEL_CORRUPT, LK_MODEL_NOT_VALIDATED (retired),
 *   LK_MODEL_NOT_PINNED.
 */
export function replayRun(store: Store, dataDir: string, tenant: string, runId: string, opts: ReplayOptions): ReplayReport {
  const runs = new RunStore(store.db);
  const run = runs.run(tenant, runId);
  if (!run) throw new LkError('LK_NOT_FOUND', `run ${runId} not found for tenant ${tenant}`, { tenant, run: runId });
  const calls = runs.agentCalls(run.id).map(({ run: _run, ...c }) => c);
  const model = opts.model ? loadReplayTwin(store, dataDir, tenant, opts.site, opts.model) : undefined;
  return replayCalls(runRef(run), calls, model ? { model } : {});
}

/**
 * The twin `ref` names, from the registry, for `tenant` at `site`. Drafts load (replay is how a new version
 * is judged before it is validated); retired versions and other tenants' models do not.
 * @throws as {@link replayRun} for the model.
 */
export function loadReplayTwin(store: Pick<Store, 'db'>, dataDir: string, tenant: string, site: string, ref: ModelRef): TwinModel {
  checkModelRef(ref);
  const loaded = loadModel(store, dataDir, tenant, ref.id, { site, statuses: ['draft', 'shadow', 'validated'] });
  if (loaded.model.kind !== 'twin') {
    throw new LkError('LK_VALIDATION', `model ${ref.id} is a ${loaded.model.kind} model: replay substitutes versions of the twin only`, { id: ref.id, kind: loaded.model.kind });
  }
  if (loaded.model.version !== ref.version) throw new LkError('LK_VALIDATION', `model ${ref.id} is version ${loaded.model.version}, not ${ref.version}`, { id: ref.id });
  return twinModelOf(loaded);
}

/**
 * Parse `<id>@<version>` (e.g. `process-twin-v2@2`), the form runs record models in.
 * @throws LkError(LK_VALIDATION) naming what is wrong.
 */
export function parseModelRef(text: string): ModelRef {
  const at = text.lastIndexOf('@');
  if (at < 0) throw new LkError('LK_VALIDATION', `model "${text}" must be <id>@<version>, e.g. process-twin-v2@2`, { model: text });
  const ref = { id: text.slice(0, at), version: /^[1-9][0-9]*$/.test(text.slice(at + 1)) ? Number(text.slice(at + 1)) : Number.NaN };
  checkModelRef(ref, text);
  return ref;
}

function checkModelRef(ref: ModelRef, text = `${ref.id}@${ref.version}`): void {
  const m = MODEL_ID_RE.exec(ref.id);
  if (!m) throw new LkError('LK_VALIDATION', `model "${text}": "${ref.id}" is not a model id of the shape <analyte>-<family>-v<n>`, { model: text });
  if (!Number.isSafeInteger(ref.version) || ref.version < 1) throw new LkError('LK_VALIDATION', `model "${text}": the version must be a positive integer`, { model: text });
  if (Number(m[2]) !== ref.version) throw new LkError('LK_VALIDATION', `model "${text}": ${ref.id} is version ${m[2]}, not ${ref.version}`, { model: text });
}

/**
 * Replay recorded agent calls in order. Pure: the same calls and model give the same report.
 * With `opts.model`, every call of an agent that takes the twin gets that twin's parameters (and valid
 * ranges and model reference, where its input has them); every other call replays its recorded input.
 * Never throws for what an agent does: a call that throws is reported with its error.
 */
export function replayCalls(run: ReplayRunRef, calls: readonly RecordedAgentCall[], opts: { model?: TwinModel } = {}): ReplayReport {
  const model = opts.model;
  const modelText = model ? `${model.id}@${model.version}` : null;
  const out: ReplayCall[] = [...calls].sort((a, b) => a.id - b.id).map((c) => replayOne(c, model, modelText));
  const summary: ReplaySummary = { calls: out.length, identical: 0, differing: 0, errors: 0, substituted: 0, proposalsChanged: 0, movesChanged: 0, verdictsChanged: 0, nondeterministic: 0 };
  for (const c of out) {
    if (c.error) summary.errors++;
    else if (c.identical) summary.identical++;
    else summary.differing++;
    if (c.substituted) summary.substituted++;
    if (c.proposals.length > 0) summary.proposalsChanged++;
    if (c.proposals.some((p) => p.change === 'proposed' || p.change === 'withdrawn' || p.change === 'value')) summary.movesChanged++;
    if (c.verdict.length > 0) summary.verdictsChanged++;
    if (!c.substituted && !c.identical) summary.nondeterministic++;
  }
  return { format: 1, run, model: modelText, calls: out, summary };
}

function replayOne(c: RecordedAgentCall, model: TwinModel | undefined, modelText: string | null): ReplayCall {
  const agent = replayableAgent(c.fn);
  const base = { id: c.id, at: c.at, step: c.step, agent: c.agent, fn: c.fn, recordedModel: c.model };
  const failed = (code: string, message: string, substituted = false): ReplayCall => ({
    ...base, replayModel: substituted ? modelText : c.model, substituted, identical: false, error: { code, message }, proposals: [], verdict: [],
  });
  if (!agent) return failed('LK_NOT_FOUND', `no agent function "${c.fn}" is known to this version: the call cannot be replayed`);
  let recordedInput: unknown;
  let input: unknown;
  try {
    // the very bytes StepContext.agent() parsed for the agent when the run recorded the call
    recordedInput = JSON.parse(c.input);
    input = model ? (agent.withTwin(fieldsOf(recordedInput), model) ?? recordedInput) : recordedInput;
  } catch (err) {
    return LkError.is(err) ? failed(err.code, err.message) : failed('LK_INTERNAL', err instanceof Error ? err.message : String(err));
  }
  const substituted = input !== recordedInput;
  let text: string;
  try {
    text = JSON.stringify(agent.call(input));
  } catch (err) {
    return LkError.is(err) ? failed(err.code, err.message, substituted) : failed('LK_INTERNAL', err instanceof Error ? err.message : String(err), substituted);
  }
  const head = { ...base, replayModel: substituted ? modelText : c.model, substituted };
  if (text === c.output) return { ...head, identical: true, proposals: [], verdict: [] };
  const recorded: unknown = JSON.parse(c.output);
  const replayed: unknown = JSON.parse(text);
  return {
    ...head,
    identical: false,
    proposals: diffProposals(recorded, replayed, agent.current(fieldsOf(recordedInput))),
    verdict: diffVerdict(recorded, replayed),
    // equal values in other bytes cannot come out of JSON.stringify; say so rather than print nothing
    firstDifference: firstDifference(recorded, replayed) ?? { path: '$', recorded: 'the same JSON value', replayed: 'in other bytes' },
  };
}

function runRef(r: RunRecord): ReplayRunRef {
  return { id: r.id, tenant: r.tenant, batch: r.batch, line: r.line, product: r.product, tooling: r.tooling };
}

/** A run's recorded agent calls as a self-contained document: what a golden batch fixture holds. */
export interface ExportedAgentCalls {
  format: 1;
  run: ReplayRunRef & { seed: number };
  calls: RecordedAgentCall[];
}

/**
 * Export a run's agent calls (inputs and outputs as the exact recorded JSON text) for a golden batch.
 * @throws LkError(LK_NOT_FOUND) for an unknown run or a run of another tenant.
 */
export function exportAgentCalls(store: Store, tenant: string, runId: string): ExportedAgentCalls {
  const runs = new RunStore(store.db);
  const run = runs.run(tenant, runId);
  if (!run) throw new LkError('LK_NOT_FOUND', `run ${runId} not found for tenant ${tenant}`, { tenant, run: runId });
  return { format: 1, run: { ...runRef(run), seed: run.seed }, calls: runs.agentCalls(run.id).map(({ run: _run, ...c }) => c) };
}
