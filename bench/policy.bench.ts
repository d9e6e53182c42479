/**
 * Policy decisions: linekeeper `evaluate` against Cedar (@cedar-policy/cedar-wasm)
 * evaluating an equivalent allow-list + numeric-range + step + batch-state
 * policy on the same requests in the same run. Cedar runs in its fastest
 * mode: the policy set preparsed once (`preparsePolicySet`), then
 * `statefulIsAuthorized` with no entities. Cedar has no decimals beyond 4
 * places, so its values are scaled to integer milli-units beforehand (work
 * Cedar is spared: ours parses "12.5 kN" strings and converts units per call).
 *
 * Part 2: one end-to-end guarded write (arbitration + policy + audit intent +
 * OPC UA write + read-back + audit outcome, SQLite at synchronous=FULL) on
 * loopback against the simulator, vs a raw node-opcua write + read of the
 * same node in the same run; the difference is the guard's overhead.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { AttributeIds, DataType, OPCUACertificateManager, OPCUAClient } from 'node-opcua';
import { createConnectors } from '../connectors/index.js';
import { startSimulator } from '../connectors/sim/index.js';
import * as cedar from '@cedar-policy/cedar-wasm/nodejs';
import { loadConfig } from '../src/config/load.js';
import type { PolicyContext, PolicyRequest } from '../src/domain/policy.js';
import { convertUnit } from '../src/domain/units.js';
import { ManualClock, createRng } from '../src/clock.js';
import { GuardedWriter } from '../src/engine/guarded-writer.js';
import { changeAutonomy, evaluate, initialAutonomy, loadPolicyBundle } from '../src/policy/index.js';
import { openStore } from '../src/store/store.js';
import { cloneParams, NOMINAL_PARAMS } from '../src/twin/truth.js';
import { latencies, opsPerSecond, percentile, report } from './lib.js';

const cfg = loadConfig();
const { bundle } = loadPolicyBundle(cfg.policyDir, { site: cfg.config });
const NOW = Date.UTC(2026, 2, 3, 8);
const SCALE = 1000;

// ── the equivalent Cedar policy: one permit per (agent, setpoint, product, tooling) ──
const policies: string[] = [];
for (const [agent, a] of Object.entries(bundle.content.agents)) {
  for (const sp of a.allow) {
    for (const ds of Object.values(bundle.content.designSpaces)) {
      const lim = ds.setpoints[sp];
      if (!lim) continue;
      const [min, max, step] = [lim.min, lim.max, lim.maxStep].map((v) => Math.round(v * SCALE));
      policies.push(
        `permit(principal == Agent::"${agent}", action == Action::"write", resource == Setpoint::"${sp}") when {\n` +
          `  context.product == "${ds.product}" && context.tooling == "${ds.tooling}" &&\n` +
          `  context.value >= ${min} && context.value <= ${max} &&\n` +
          `  context.value - context.current <= ${step} && context.current - context.value <= ${step} &&\n` +
          `  ["setup", "running"].contains(context.batchState) };`,
      );
    }
  }
}
const parsed = cedar.preparsePolicySet('lk', { staticPolicies: policies.join('\n') });
if (parsed.type !== 'success') throw new Error(`cedar parse failed: ${JSON.stringify(parsed.errors)}`);

// ── one shared pool of requests: allowed, out of range, wrong agent, other units, wrong batch state ──
const rng = createRng(20260303);
const agents = Object.entries(bundle.content.agents).filter(([, a]) => a.allow.length > 0);
const alt: Record<string, string[]> = { kN: ['kN', 'N'], mm: ['mm', 'cm'], 'g/min': ['g/min', 'g/h'], Cel: ['Cel', '[degF]'], '{rev}/min': ['{rev}/min'], 'm3/h': ['m3/h'], s: ['s'], '%': ['%'], '{rev}': ['{rev}'] };
interface Case {
  ours: { req: PolicyRequest; ctx: PolicyContext };
  cedar: cedar.StatefulAuthorizationCall;
}
const pool: Case[] = [];
for (let i = 0; i < 2000; i++) {
  const [agent, a] = agents[rng.int(0, agents.length - 1)]!;
  const sp = rng.next() < 0.1 ? 'press.MainForce' : a.allow[rng.int(0, a.allow.length - 1)]!;
  const product = rng.next() < 0.5 ? 'ir-family-a' : 'ir-family-b';
  const lim = bundle.designSpace.approved(product, 'round-10mm-ff').setpoints[sp]!;
  const x = Math.round((lim.min + (lim.max - lim.min) * rng.uniform(-0.15, 1.15)) * SCALE) / SCALE;
  const current = Math.round((x + lim.maxStep * rng.uniform(-1.3, 1.3)) * SCALE) / SCALE;
  const units = alt[lim.unit] ?? [lim.unit];
  const unit = units[rng.int(0, units.length - 1)]!;
  const value = `${convertUnit(x, lim.unit, unit)} ${unit}`;
  const batchState = rng.next() < 0.9 ? 'running' : 'hold';
  const family = a.modelFamily;
  // the safety inputs the guarded writer computes at call time (registry record, twin capping risk), as values
  const registry = family
    ? { model: { id: `${family}-v1`, version: '1' }, modelRecord: { owner: 'own' as const, family, version: 1, status: 'validated', sites: [bundle.content.site] } }
    : {};
  const capping = bundle.content.setpoints[sp]?.equipmentType === 'press' ? { capping: { risk: 0.004, model: { id: 'process-twin-v1', version: '1' } } } : {};
  pool.push({
    ours: {
      req: { agent, setpoint: sp, value, product, tooling: 'round-10mm-ff' },
      ctx: {
        now: NOW,
        batchState,
        autonomy: { agent: 'L3' },
        ...registry,
        ...capping,
        current,
        lastMove: null,
        reviewer: 'a.bianchi',
        attendance: { operator: 'l.verdi', lastPresenceAt: NOW - 1000 },
        approval: { by: 'q.russo', role: 'qa_reviewer', kind: 'qa' },
      },
    },
    cedar: {
      principal: { type: 'Agent', id: agent },
      action: { type: 'Action', id: 'write' },
      resource: { type: 'Setpoint', id: sp },
      context: { product, tooling: 'round-10mm-ff', value: Math.round(x * SCALE), current: Math.round(current * SCALE), batchState },
      preparsedPolicySetId: 'lk',
      entities: [],
    },
  });
}

// same requests, same verdict? Ours passes its checks (outcome ≠ deny) ⇔ Cedar allows. Compared on the in-space
// subset: ours lets an out-of-space move through with a QA approval, and caps autonomy per setpoint, which this
// Cedar policy does not express.
let agree = 0;
let compared = 0;
for (const c of pool) {
  const d = evaluate(c.ours.req, bundle, c.ours.ctx);
  const z = cedar.statefulIsAuthorized(c.cedar);
  if (z.type !== 'success') throw new Error(`cedar failed: ${JSON.stringify(z.errors)}`);
  if (d.reasons.includes('OUTSIDE_DESIGN_SPACE') || d.reasons.includes('VALIDATED_PARAMETER')) continue;
  compared++;
  if ((d.outcome !== 'deny') === (z.response.decision === 'allow')) agree++;
  else if (process.env.LK_BENCH_DEBUG) process.stderr.write(`disagree: ${JSON.stringify(c.ours.req)} cur=${c.ours.ctx.current} ours=${d.outcome} ${d.reasons.join(',')} cedar=${z.response.decision}\n`);
}

function syncLatencies(fn: (i: number) => unknown, n: number): number[] {
  for (let i = 0; i < 2000; i++) fn(i);
  const out = new Array<number>(n);
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    fn(i);
    out[i] = (performance.now() - t0) * 1000; // µs
  }
  return out;
}

let k = 0;
const ours = (): unknown => {
  const c = pool[k++ % pool.length]!;
  return evaluate(c.ours.req, bundle, c.ours.ctx);
};
let j = 0;
const peer = (): unknown => cedar.statefulIsAuthorized(pool[j++ % pool.length]!.cedar);

const oursOps = await opsPerSecond(ours, 2500);
const peerOps = await opsPerSecond(peer, 2500);
const oursLat = syncLatencies((i) => evaluate(pool[i % pool.length]!.ours.req, bundle, pool[i % pool.length]!.ours.ctx), 50_000);
const peerLat = syncLatencies((i) => cedar.statefulIsAuthorized(pool[i % pool.length]!.cedar), 20_000);

report({
  name: 'policy decision',
  unit: 'decisions/s',
  ours: { label: 'linekeeper evaluate (units, allow-list, range, step, rate, batch state, model, autonomy, attendance)', value: oursOps },
  peer: { label: `cedar-wasm ${cedar.getCedarVersion()} statefulIsAuthorized, preparsed (${policies.length} policies)`, value: peerOps },
  higherIsBetter: true,
  target: 'ours ≥ 20 × Cedar, p99 < 10 µs',
  extra: {
    ours_p50_us: percentile(oursLat, 50),
    ours_p99_us: percentile(oursLat, 99),
    cedar_p50_us: percentile(peerLat, 50),
    cedar_p99_us: percentile(peerLat, 99),
    verdicts_agree: `${agree}/${compared}`,
  },
});

// ── part 2: end-to-end guarded write vs raw node-opcua write + read ──
{
  const dir = mkdtempSync(join(tmpdir(), 'lk-bench-gw-'));
  const sim = await startSimulator({ config: cfg, timeScale: 1, seed: 1, watchdogTimeoutMs: 600_000, scanMs: 20 });
  const store = openStore({ dataDir: join(dir, 'data') });
  const opcua = createConnectors(cfg.config, { dataDir: join(dir, 'data'), sim: { opcuaUrl: sim.opcuaUrl, modbusHost: sim.modbusHost, modbusPort: sim.modbusPort } }).filter((c) => c.protocol === 'opcua');
  await Promise.all(opcua.map((c) => c.connect()));
  const clock = new ManualClock(NOW);
  const qa = { person: 'q.russo', role: 'qa_reviewer' };
  const autonomy = changeAutonomy(initialAutonomy(bundle), { target: { agent: 'agent.compress_fill' }, to: 'L3', by: qa, changeRef: 'CC-BENCH', at: NOW }, bundle).state;
  // the writer predicts capping itself: here from the nominal twin (the cost is the same as a fitted one's)
  const twin = { id: 'process-twin-v1', version: 1, params: cloneParams(NOMINAL_PARAMS), validRanges: {} };
  const view = { tenant: 'acme-pharma', id: 'process-twin-v1', analyte: 'process', family: 'twin', version: 1, kind: 'twin' as const, status: 'validated' as const, sites: [cfg.config.site.id], sha256: '0'.repeat(64) };
  const writer = new GuardedWriter({
    batches: () => ({ state: 'running', reviewer: 'a.bianchi' }),
    store,
    site: cfg.config,
    connectors: opcua,
    clock,
    policy: () => bundle,
    autonomy: () => autonomy,
    attendance: () => ({ operator: 'l.verdi', lastPresenceAt: clock.now() }),
    twin: () => twin,
    models: (tenant, id) => (tenant === view.tenant && id === view.id ? view : null),
  });
  let flip = 0;
  const guarded = async (): Promise<void> => {
    clock.advance(60_000); // one move a minute keeps inside the rate-of-change limit
    const out = await writer.propose({
      id: `bench-${flip}`,
      tenant: 'acme-pharma',
      batch: 'B-BENCH',
      agent: 'agent.compress_fill',
      product: 'ir-family-a',
      tooling: 'round-10mm-ff',
      moves: [{ setpoint: 'press.MainForce', value: flip++ % 2 === 0 ? '12.5 kN' : '12 kN' }],
      attribute: 'content_uniformity',
      justification: 'bench',
      model: { id: 'process-twin-v1', version: '1' },
    });
    if (out.status !== 'written') throw new Error(`guarded write ${out.status}: ${JSON.stringify(out.decisions.map((d) => d.reasons))}`);
  };
  const client = OPCUAClient.create({
    endpointMustExist: false,
    connectionStrategy: { maxRetry: 0 },
    clientCertificateManager: new OPCUACertificateManager({ rootFolder: join(dir, 'raw-pki'), automaticallyAcceptUnknownCertificate: true }),
  });
  await client.connect(sim.opcuaUrl);
  const session = await client.createSession();
  const ns = (await session.readNamespaceArray()).indexOf(sim.namespaceUri);
  const nodeId = `ns=${ns};s=press.Setpoints.MainForce`;
  let rawFlip = 0;
  const raw = async (): Promise<void> => {
    const value = rawFlip++ % 2 === 0 ? 12.5 : 12;
    const st = await session.write({ nodeId, attributeId: AttributeIds.Value, value: { value: { dataType: DataType.Double, value } } });
    if (!st.isGood()) throw new Error(`raw write ${st.name}`);
    const dv = await session.read({ nodeId, attributeId: AttributeIds.Value });
    if (Math.abs((dv.value.value as number) - value) > 1e-9) throw new Error('raw read-back differs');
  };
  // both sides in alternating blocks of 20, so a shared machine's load swings hit both alike: the overhead is
  // their difference, and measuring one after the other would put whatever load came and went into it
  await latencies(guarded, 0, 30);
  await latencies(raw, 0, 30);
  const gLat: number[] = [];
  const rLat: number[] = [];
  for (let block = 0; block < 20; block++) {
    gLat.push(...(await latencies(guarded, 20, 0)));
    rLat.push(...(await latencies(raw, 20, 0)));
  }
  const g50 = percentile(gLat, 50);
  const r50 = percentile(rLat, 50);
  report({
    name: 'guarded write end-to-end (loopback)',
    unit: 'ms p50',
    ours: { label: 'GuardedWriter.propose: arbitration + policy + audit intent + OPC UA write + read-back + audit outcome', value: g50 },
    peer: { label: 'raw node-opcua session.write + session.read', value: r50 },
    higherIsBetter: false,
    extra: { ours_p99_ms: percentile(gLat, 99), raw_p99_ms: percentile(rLat, 99), overhead_p50_ms: g50 - r50, overhead_p99_ms: percentile(gLat, 99) - percentile(rLat, 99), audit_entries_per_write: 3 },
  });
  await session.close();
  await client.disconnect();
  await Promise.all(opcua.map((c) => c.close()));
  store.close();
  await sim.close();
  rmSync(dir, { recursive: true, force: true });
}
