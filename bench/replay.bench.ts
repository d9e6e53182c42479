/**
 * Replay (R11) of one recorded batch: the golden batch of test/fixtures (a real B-1042 run, every agent
 * decision's recorded input and output) replayed with its recorded twin and against a perturbed twin, the
 * recommendations diffed. Peer: the same agent functions called directly on the already-parsed inputs —
 * the floor a replay cannot go under (what deciding the batch costs the agents themselves), so the ratio is
 * the price of parsing, byte comparison and the diff. Target: one batch replayed in under 2 s.
 */
import { readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { replayableAgent } from '../src/engine/run/replay-agents.js';
import { replayCalls, type ExportedAgentCalls } from '../src/engine/run/replay.js';
import { twinModelOf } from '../src/models/artefacts.js';
import type { ModelSummary } from '../src/models/registry.js';
import { perturbParams } from '../connectors/sim/ground/truth.js';
import { percentile, report } from './lib.js';

const dir = new URL('../test/fixtures/golden-batch/', import.meta.url);
const golden = JSON.parse(readFileSync(new URL('agent-calls.json', dir), 'utf8')) as ExportedAgentCalls;
const artefact = JSON.parse(readFileSync(new URL('process-twin-v1/artefact.json', dir), 'utf8')) as unknown;
const v1 = twinModelOf({ model: { id: 'process-twin-v1', version: 1, kind: 'twin' } as ModelSummary, artefact });
const v2 = { ...v1, id: 'process-twin-v2', version: 2, params: perturbParams(v1.params, 1) };

function time(fn: () => void, n: number): number {
  fn(); // warm-up
  const xs: number[] = [];
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    fn();
    xs.push(performance.now() - t0);
  }
  return percentile(xs, 50);
}

const parsed = golden.calls.map((c) => ({ agent: replayableAgent(c.fn)!, input: JSON.parse(c.input) as unknown }));
let identical = 0;
let changed = 0;
const ours = time(() => {
  identical = replayCalls(golden.run, golden.calls).summary.identical;
}, 15);
const against = time(() => {
  changed = replayCalls(golden.run, golden.calls, { model: v2 }).summary.movesChanged;
}, 15);
const peer = time(() => {
  for (const p of parsed) p.agent.call(p.input);
}, 15);

report({
  name: 'replay of one recorded batch (golden B-1042), recorded models',
  unit: 'ms',
  ours: { label: `linekeeper replayCalls: ${golden.calls.length} agent calls, ${identical} byte-identical`, value: ours },
  peer: { label: 'the same agents called directly on parsed inputs (floor)', value: peer },
  higherIsBetter: false,
  target: 'one batch < 2000 ms',
  extra: { againstV2Ms: against, movesChangedAgainstV2: changed },
});
