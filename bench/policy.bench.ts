/**
 * Policy decisions: linekeeper `evaluate` against the peers a Node team would
 * pick instead, on the same requests in the same run (bench/peers/policy-peers.ts):
 * - Cedar (@cedar-policy/cedar-wasm): the checks in entity attributes and one
 *   permit's conditions, preparsed once, `statefulIsAuthorized` with the two
 *   entities of the request; plus its empty-policy-set baseline (no entities,
 *   empty context), which is the cost of the WASM boundary alone;
 * - casbin (ABAC, in-process JavaScript): limits as policy rows, request
 *   attributes in the matcher, `enforceSync`;
 * - json-rules-engine (in-process JavaScript): one rule whose conditions are
 *   the checks, limits and allow-lists as computed facts.
 * Every peer's verdict (may this move be written?) must equal linekeeper's
 * `outcome !== 'deny'` on every request of the pool, or the bench fails. The
 * ratio is against the fastest in-process peer (target ≥ 5×, p99 < 10 µs).
 *
 * The end-to-end guarded write against its durability floor is
 * bench/guarded-write.bench.ts.
 */
import { performance } from 'node:perf_hooks';
import * as cedar from '@cedar-policy/cedar-wasm/nodejs';
import { loadConfig } from '../src/config/load.js';
import type { PolicyContext, PolicyRequest } from '../src/domain/policy.js';
import { convertUnit } from '../src/domain/units.js';
import { createRng } from '../src/clock.js';
import { evaluate } from '../src/policy/index.js';
import { loadPolicyBundle } from '../src/config/policy-bundle.js';
import { opsPerSecond, percentile, report } from './lib.js';
import { casbinPeer, cedarAllows, cedarEmptyCall, cedarPeer, rulesPeer, type Facts } from './peers/policy-peers.js';

const cfg = loadConfig();
const { bundle } = loadPolicyBundle(cfg.policyDir, { site: cfg.config });
const NOW = Date.UTC(2026, 2, 3, 8);
const SCALE = 1000;

// ── one shared pool of requests: allowed, out of range, wrong agent, other units, wrong batch state, fast moves,
// models not validated / not pinned / another tenant's / another version, capping over the threshold ──
const rng = createRng(20260303);
const agents = Object.entries(bundle.content.agents).filter(([, a]) => a.allow.length > 0);
const alt: Record<string, string[]> = { kN: ['kN', 'N'], mm: ['mm', 'cm'], 'g/min': ['g/min', 'g/h'], Cel: ['Cel', '[degF]'], '{rev}/min': ['{rev}/min'], 'm3/h': ['m3/h'], s: ['s'], '%': ['%'], '{rev}': ['{rev}'] };
const site = bundle.content.site;
interface Case {
  ours: { req: PolicyRequest; ctx: PolicyContext };
  facts: Facts;
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
  const last = rng.next() < 0.3 ? { value: Math.round((x + lim.maxStep * rng.uniform(-1, 1)) * SCALE) / SCALE, at: NOW - rng.int(5_000, 600_000) } : null;
  const family = a.modelFamily;
  const u = rng.next();
  const record = family
    ? {
        owner: u < 0.04 ? ('other_tenant' as const) : ('own' as const),
        family,
        version: u >= 0.04 && u < 0.08 ? 2 : 1,
        status: u >= 0.08 && u < 0.14 ? 'shadow' : 'validated',
        sites: u >= 0.14 && u < 0.18 ? ['site-elsewhere'] : [site],
      }
    : null;
  // the safety inputs the guarded writer computes at call time (registry record, twin capping risk), as values
  const registry = record ? { model: { id: `${family}-v1`, version: '1' }, modelRecord: record } : {};
  const press = bundle.content.setpoints[sp]?.equipmentType === 'press';
  const risk = press ? (rng.next() < 0.1 ? 0.02 : 0.004) : null;
  const capping = risk !== null ? { capping: { risk, model: { id: 'process-twin-v1', version: '1' } } } : {};
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
        lastMove: last,
        reviewer: 'a.bianchi',
        attendance: { operator: 'l.verdi', lastPresenceAt: NOW - 1000 },
        approval: { by: 'q.russo', role: 'qa_reviewer', kind: 'qa' },
      },
    },
    facts: {
      agent,
      setpoint: sp,
      product,
      tooling: 'round-10mm-ff',
      value: x,
      current,
      last,
      now: NOW,
      batchState,
      model: record ? { version: '1', owner: record.owner, family: record.family, recordVersion: record.version, status: record.status, sites: record.sites } : null,
      capping: risk,
    },
  });
}

const cedarP = cedarPeer(bundle);
const cedarCalls = pool.map((c) => cedarP.call(c.facts));
const casbin = await casbinPeer(bundle);
const casbinCtx = pool.map((c) => casbin.ctx(c.facts));
const rules = rulesPeer(bundle);

// same requests, same verdict, asserted on every request: a peer that disagrees fails the bench
const oursVerdicts = pool.map((c) => evaluate(c.ours.req, bundle, c.ours.ctx).outcome !== 'deny');
const permitted = oursVerdicts.filter(Boolean).length;
if (permitted < pool.length * 0.2 || permitted > pool.length * 0.8) throw new Error(`the pool is lopsided: ${permitted}/${pool.length} permitted`);
const disagreements: Record<string, number> = { cedar: 0, casbin: 0, 'json-rules-engine': 0 };
for (let i = 0; i < pool.length; i++) {
  const verdicts = { cedar: cedarAllows(cedarCalls[i]!), casbin: casbin.allows(pool[i]!.facts, casbinCtx[i]!), 'json-rules-engine': await rules.allows(pool[i]!.facts) };
  for (const [peer, v] of Object.entries(verdicts)) {
    if (v === oursVerdicts[i]) continue;
    disagreements[peer]!++;
    const d = evaluate(pool[i]!.ours.req, bundle, pool[i]!.ours.ctx);
    process.stderr.write(`disagree (${peer}): ${JSON.stringify(pool[i]!.facts)} ours=${d.outcome} ${d.reasons.join(',')} peer=${v}\n`);
  }
}
if (Object.values(disagreements).some((n) => n > 0)) throw new Error(`verdicts disagree: ${JSON.stringify(disagreements)}`);

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
async function asyncLatencies(fn: (i: number) => Promise<unknown>, n: number): Promise<number[]> {
  for (let i = 0; i < 500; i++) await fn(i);
  const out = new Array<number>(n);
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    await fn(i);
    out[i] = (performance.now() - t0) * 1000; // µs
  }
  return out;
}

const N = pool.length;
let k = 0;
const oursOps = await opsPerSecond(() => {
  const c = pool[k++ % N]!;
  return evaluate(c.ours.req, bundle, c.ours.ctx);
}, 2500);
k = 0;
const casbinOps = await opsPerSecond(() => {
  const i = k++ % N;
  return casbin.allows(pool[i]!.facts, casbinCtx[i]!);
}, 2000);
k = 0;
const rulesOps = await opsPerSecond(() => rules.allows(pool[k++ % N]!.facts), 2000);
k = 0;
const cedarOps = await opsPerSecond(() => cedar.statefulIsAuthorized(cedarCalls[k++ % N]!), 2000);
const empty = cedarEmptyCall();
const cedarEmptyOps = await opsPerSecond(() => cedar.statefulIsAuthorized(empty), 2000);

const oursLat = syncLatencies((i) => evaluate(pool[i % N]!.ours.req, bundle, pool[i % N]!.ours.ctx), 50_000);
const casbinLat = syncLatencies((i) => casbin.allows(pool[i % N]!.facts, casbinCtx[i % N]!), 10_000);
const rulesLat = await asyncLatencies((i) => rules.allows(pool[i % N]!.facts), 5_000);
const cedarLat = syncLatencies((i) => cedar.statefulIsAuthorized(cedarCalls[i % N]!), 10_000);
const cedarEmptyLat = syncLatencies(() => cedar.statefulIsAuthorized(empty), 10_000);

const inProcess = [
  { label: `casbin ${casbin.rules}-row ABAC model, enforceSync`, ops: casbinOps, lat: casbinLat },
  { label: 'json-rules-engine, one rule of 8 conditions, engine.run', ops: rulesOps, lat: rulesLat },
].sort((a, b) => b.ops - a.ops);
const fastest = inProcess[0]!;
const p99 = percentile(oursLat, 99);
const ratio = oursOps / fastest.ops;
process.stdout.write(
  `policy peers on ${N} requests (${permitted} permitted), verdicts agree on every request with each peer:\n` +
    `  linekeeper evaluate        ${Math.round(oursOps).toLocaleString('en-US').padStart(10)} /s  p50 ${percentile(oursLat, 50).toFixed(2)} µs  p99 ${p99.toFixed(2)} µs\n` +
    `  casbin (ABAC)              ${Math.round(casbinOps).toLocaleString('en-US').padStart(10)} /s  p50 ${percentile(casbinLat, 50).toFixed(2)} µs  p99 ${percentile(casbinLat, 99).toFixed(2)} µs\n` +
    `  json-rules-engine          ${Math.round(rulesOps).toLocaleString('en-US').padStart(10)} /s  p50 ${percentile(rulesLat, 50).toFixed(2)} µs  p99 ${percentile(rulesLat, 99).toFixed(2)} µs\n` +
    `  cedar-wasm ${cedar.getCedarVersion()} (checks)  ${Math.round(cedarOps).toLocaleString('en-US').padStart(10)} /s  p50 ${percentile(cedarLat, 50).toFixed(2)} µs  p99 ${percentile(cedarLat, 99).toFixed(2)} µs\n` +
    `  cedar-wasm empty set       ${Math.round(cedarEmptyOps).toLocaleString('en-US').padStart(10)} /s  p50 ${percentile(cedarEmptyLat, 50).toFixed(2)} µs  p99 ${percentile(cedarEmptyLat, 99).toFixed(2)} µs  (the WASM boundary alone)\n`,
);

report({
  name: 'policy decision vs fastest in-process peer',
  unit: 'decisions/s',
  ours: { label: 'linekeeper evaluate (units, allow-list, range, step, rate, batch state, model, capping, autonomy, attendance, approvals)', value: oursOps },
  peer: { label: fastest.label, value: fastest.ops },
  higherIsBetter: true,
  target: 'ours ≥ 5 × fastest in-process peer, p99 < 10 µs',
  extra: {
    ours_p99_us: p99,
    peer_p99_us: percentile(fastest.lat, 99),
    target_met: ratio >= 5 && p99 < 10 ? 'yes' : `NO (ratio ${ratio.toFixed(1)}, p99 ${p99.toFixed(2)} µs)`,
    verdicts_agree: `${N}/${N}`,
  },
});
report({
  name: 'policy decision vs Cedar (checks in entity attributes)',
  unit: 'decisions/s',
  ours: { label: 'linekeeper evaluate', value: oursOps },
  peer: { label: `cedar-wasm ${cedar.getCedarVersion()} statefulIsAuthorized, preparsed, 2 entities per call`, value: cedarOps },
  higherIsBetter: true,
  extra: { cedar_p99_us: percentile(cedarLat, 99), cedar_empty_set_per_s: cedarEmptyOps, cedar_empty_p99_us: percentile(cedarEmptyLat, 99), verdicts_agree: `${N}/${N}` },
});
report({
  name: 'Cedar WASM boundary (empty policy set)',
  unit: 'decisions/s',
  ours: { label: 'linekeeper evaluate', value: oursOps },
  peer: { label: 'cedar-wasm statefulIsAuthorized, empty policy set, no entities', value: cedarEmptyOps },
  higherIsBetter: true,
  extra: { note: 'the floor of any Cedar call from Node: argument serialisation across the WASM boundary' },
});
