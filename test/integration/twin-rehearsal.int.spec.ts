/**
 * Large rehearsals run on a worker thread (issue 20: a 10,000-candidate `twin/simulate` held the event loop,
 * and with it /healthz and the PLC heartbeats, for 1.4 s). The worker runs the same pure function: its result
 * is the calling thread's, value for value, for the same model, request and seed. The daemon answers /healthz
 * while a large rehearsal runs; asserted by order (the answer came while the rehearsal was still running and
 * before its audit entry), not by time.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { recordBatches } from '../../connectors/sim/ground/batches.js';
import { perturbParams } from '../../connectors/sim/ground/truth.js';
import { createRng } from '../../src/clock.js';
import { getPriority } from 'node:os';
import { Worker } from 'node:worker_threads';
import { MAX_REHEARSAL_WORKERS, rehearsalWorkerStats, rehearse, rehearseEncoded, WORKER_MIN_CANDIDATES } from '../../src/engine/rehearsal.js';
import { summariseRehearsal } from '../../src/engine/rehearsal-encode.js';
import { WORKER_NICENESS } from '../../src/engine/worker-priority.js';
import { twinModelOf } from '../../src/models/artefacts.js';
import { loadValidated } from '../../src/models/registry.js';
import { twinDesignSpace } from '../../src/twin/design-space.js';
import { fitTwin } from '../../src/twin/fit.js';
import { NOMINAL_PARAMS } from '../../src/twin/params.js';
import { DEFAULT_DESIGN_SPACE, widen } from '../../src/twin/setpoints.js';
import { simulate, type TwinModel } from '../../src/twin/simulate.js';
import { call, signIn, startApiNode, type ApiNode } from '../helpers/api.js';
import { rejectionCode } from '../helpers/codes.js';

const truth = perturbParams(NOMINAL_PARAMS, 3);
const fit = fitTwin(recordBatches(truth, widen(DEFAULT_DESIGN_SPACE, 0.1), 12, createRng(3), 'T'), { tenant: 'acme-pharma' });
const model: TwinModel = { id: 'process-twin-v1', version: 1, params: fit.params, validRanges: fit.card.validRanges };
const req = { candidates: 10_000, horizon: 'full batch', seed: 42, designSpace: DEFAULT_DESIGN_SPACE } as const;

describe('rehearsal on a worker thread', () => {
  it('gives the calling thread\'s result for the same seed, value for value, and another for another seed', async () => {
    const ran = rehearsalWorkerStats().ran;
    const inThread = simulate(model, req);
    const onWorker = await rehearse(model, req, { where: 'worker' });
    expect(rehearsalWorkerStats().ran).toBe(ran + 1);
    expect(onWorker).toEqual(inThread);
    expect(JSON.stringify(onWorker)).toBe(JSON.stringify(inThread));
    expect(onWorker.ranked.length + onWorker.discarded.length).toBe(10_000);
    const other = await rehearse(model, { ...req, seed: 43 });
    expect(other.ranked[0]!.setpoints).not.toEqual(inThread.ranked[0]!.setpoints);
  });

  it('chooses by size: a large rehearsal goes to the worker, a small one (a run\'s step 02 draws 64) stays', async () => {
    const before = rehearsalWorkerStats().ran;
    const small = await rehearse(model, { ...req, candidates: 64 });
    expect(rehearsalWorkerStats().ran).toBe(before);
    expect(small).toEqual(simulate(model, { ...req, candidates: 64 }));
    await rehearse(model, { ...req, candidates: WORKER_MIN_CANDIDATES + 1 });
    expect(rehearsalWorkerStats().ran).toBe(before + 1);
  });

  it('[INV-HEARTBEAT] the loop turns while a worker rehearses: a timer set after the call fires before the result', async () => {
    const order: string[] = [];
    const p = rehearse(model, req).then(() => order.push('result'));
    setImmediate(() => order.push('loop'));
    await p;
    expect(order).toEqual(['loop', 'result']);
  });

  it('a bad request is refused with the twin\'s own code from the worker as from the thread', async () => {
    expect(await rejectionCode(rehearse(model, { ...req, seed: 1.5 }, { where: 'worker' }))).toBe('LK_VALIDATION');
    expect(await rejectionCode(rehearse(model, { ...req, cappingThresholdPct: -1 }, { where: 'worker' }))).toBe('LK_VALUE_INVALID');
  });

  it('the API\'s form: the result encoded where it ran, the bytes the calling thread\'s JSON, with the audit summary', async () => {
    const ran = rehearsalWorkerStats().ran;
    const inThread = simulate(model, req);
    const onWorker = await rehearseEncoded(model, req, { where: 'worker' });
    expect(rehearsalWorkerStats().ran).toBe(ran + 1);
    expect(Buffer.from(onWorker.body).toString('utf8')).toBe(JSON.stringify(inThread));
    expect(onWorker.summary).toEqual(summariseRehearsal(inThread));
    expect(onWorker.summary).toMatchObject({ requested: 10_000, ranked: inThread.ranked.length, discarded: inThread.discarded.length, best: { index: inThread.ranked[0]!.index } });
    // a small one is encoded on this thread, the same way
    const small = await rehearseEncoded(model, { ...req, candidates: 64 });
    expect(rehearsalWorkerStats().ran).toBe(ran + 1);
    expect(Buffer.from(small.body).toString('utf8')).toBe(JSON.stringify(simulate(model, { ...req, candidates: 64 })));
  });

  it.runIf(process.platform === 'linux')('a worker runs nicer than the heartbeat loop: only its own thread is lowered', async () => {
    const main = getPriority();
    const url = new URL('../../src/engine/worker-priority.ts', import.meta.url).href;
    const api = new URL('../../node_modules/tsx/dist/esm/api/index.mjs', import.meta.url).href;
    const w = new Worker(`const { parentPort } = require('node:worker_threads'); import(${JSON.stringify(api)}).then((m) => { m.register(); return import(${JSON.stringify(url)}); }).then((m) => parentPort.postMessage(m.lowerThreadPriority()));`, { eval: true });
    const nice = await new Promise<number>((resolve, reject) => {
      w.once('message', resolve);
      w.once('error', reject);
    });
    await w.terminate();
    expect(nice).toBe(Math.min(19, main + WORKER_NICENESS));
    expect(getPriority()).toBe(main);
  });

  it('runs at most the bounded number of workers at once, the rest wait their turn', async () => {
    const results = await Promise.all([1, 2, 3].map((seed) => rehearse(model, { ...req, candidates: 2_000, seed })));
    expect(rehearsalWorkerStats().peak).toBeLessThanOrEqual(MAX_REHEARSAL_WORKERS);
    expect(rehearsalWorkerStats().workers).toBeLessThanOrEqual(MAX_REHEARSAL_WORKERS);
    results.forEach((r, i) => expect(r).toEqual(simulate(model, { ...req, candidates: 2_000, seed: i + 1 })));
  });
});

describe('POST /twin/simulate with 10,000 candidates on the real daemon', () => {
  let node: ApiNode;
  beforeAll(async () => {
    node = await startApiNode({ timeScale: 600, tablets: 30_000, memory: true });
  });
  afterAll(async () => node?.close());

  const rehearsals = (): number => (node.daemon.store.db.prepare("SELECT count(*) AS n FROM audit_entry WHERE tenant = 'acme-pharma' AND action = 'twin.simulate'").get() as { n: number }).n;

  it('/healthz answers while the rehearsal runs, before its result is audited; the result is the twin\'s for the seed', async () => {
    const token = await signIn(node.url, 'p.bianchi', node.passwords.get('p.bianchi')!);
    const audited = rehearsals();
    const sim = call(node.url, 'POST', '/v1/tenants/acme-pharma/twin/simulate', { token, body: { candidates: 10_000, horizon: 'full batch', seed: 7 } });
    // the rehearsal has reached its worker (bounded wait: on code that rehearses on the loop this never happens)
    for (let i = 0; i < 600 && rehearsalWorkerStats().running === 0; i++) await new Promise((r) => setTimeout(r, 50));
    expect(rehearsalWorkerStats().running).toBe(1);
    const health = await call(node.url, 'GET', '/healthz');
    const auditedAtHealth = rehearsals();
    const runningAtHealth = rehearsalWorkerStats().running;
    const r = await sim;
    expect(health.status).toBe(200);
    expect(runningAtHealth).toBe(1);
    expect(auditedAtHealth).toBe(audited);
    expect(r.status).toBe(200);
    expect(r.body.requested).toBe(10_000);
    expect(r.body.ranked.length + r.body.discarded.length).toBe(10_000);
    expect(rehearsals()).toBe(audited + 1);
  });

  it('answers with the bytes the worker encoded (the twin\'s JSON for the seed, as JSON), and audits the summary only', async () => {
    const d = node.daemon;
    const { config } = d.loaded;
    const product = config.tenants.find((t) => t.id === 'acme-pharma')!.products[0]!;
    const tooling = config.products.find((p) => p.id === product)!.tooling[0]!;
    const bundle = d.policy.bundle!;
    const twin = twinModelOf(loadValidated(d.store, d.loaded.dataDir, 'acme-pharma', config.site.id, 'process', 'twin'));
    const designSpace = twinDesignSpace(bundle.designSpace.approved(product, tooling).setpoints, `${product} × ${tooling}`);
    const expected = simulate(twin, { candidates: 10_000, horizon: 'full batch', seed: 11, designSpace, cappingThresholdPct: bundle.content.cappingRiskThreshold * 100 });
    const token = await signIn(node.url, 'p.bianchi', node.passwords.get('p.bianchi')!);
    const ran = rehearsalWorkerStats().ran;
    const res = await fetch(`${node.url}/v1/tenants/acme-pharma/twin/simulate`, {
      method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify({ candidates: 10_000, horizon: 'full batch', seed: 11 }),
    });
    const text = await res.text();
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(rehearsalWorkerStats().ran).toBe(ran + 1);
    // byte for byte the result's JSON (the response schema's re-encoding put model, ranked and discarded first)
    expect(text).toBe(JSON.stringify(expected));
    const entry = d.store.db.prepare("SELECT result FROM audit_entry WHERE tenant = 'acme-pharma' AND action = 'twin.simulate' ORDER BY seq DESC LIMIT 1").get() as { result: string };
    const best = expected.ranked[0]!;
    expect(JSON.parse(entry.result)).toEqual({
      model: `${twin.id}@${twin.version}`, ranked: expected.ranked.length, discarded: expected.discarded.length,
      best: { index: best.index, score: best.score, cappingRiskPct: best.predicted.cappingRiskPct },
    });
  });
});
