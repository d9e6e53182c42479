/**
 * The run view cache behind GET /runs/{id} never serves a stale view. A real SQLite store, the real run engine
 * and REST API over HTTP on loopback, a manual clock, and step handlers the test releases one at a time, so
 * every state change happens when the test says. After EVERY commit that writes what a view shows (run row,
 * steps, approval), the cached body is compared, byte for byte, with the body serialised from a fresh read of
 * the store at the same clock reading — the bytes the response schema's serializer would have written. Also: a
 * running step's duration moves with the clock alone, a rolled-back write leaves no trace, another tenant gets
 * 404 (R1) whether or not the view is cached, and a restarted daemon shows what the store says.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createApi, type ApiServer } from '../../src/api/index.js';
import { Identity } from '../../src/api/identity.js';
import { RunView } from '../../src/api/schemas.js';
import { ManualClock } from '../../src/clock.js';
import { defaultConfigFile, loadConfig } from '../../src/config/load.js';
import { loadPolicyBundle } from '../../src/config/policy-bundle.js';
import { composePlan, type StepName } from '../../src/domain/run.js';
import { parseRunRequest } from '../../src/domain/run-request.js';
import { RunEngine, type RunEngineOptions, type RunView as EngineRunView } from '../../src/engine/run/engine.js';
import { StepAborted } from '../../src/engine/run/step-context.js';
import { judgeRun } from '../../src/engine/run/quality.js';
import { json } from '../../src/engine/json.js';
import type { ParsedRequest, StepHandler, StepResult } from '../../src/engine/run/types.js';
import { silentLogger } from '../../src/log.js';
import { openStore, type Store } from '../../src/store/store.js';
import { codeOf } from '../helpers/codes.js';
import { waitFor } from '../helpers/run-site.js';
import { addUser } from '../helpers/users.js';

const A = 'acme-pharma';
const B = 'borealis-bio';
const loaded = loadConfig(defaultConfigFile());
const records: Record<string, unknown> = {
  [`${A}/B-1042`]: JSON.parse(readFileSync(join(defaultConfigFile(), '..', 'batches', A, 'B-1042.json'), 'utf8')),
  // a second batch of the same product (a batch runs once: LK_BATCH_CLOSED), for the run the crash interrupts
  [`${A}/B-1043`]: { ...JSON.parse(readFileSync(join(defaultConfigFile(), '..', 'batches', A, 'B-1042.json'), 'utf8')), batch: 'B-1043' },
  [`${B}/B-2001`]: JSON.parse(readFileSync(join(defaultConfigFile(), '..', 'batches', B, 'B-2001.json'), 'utf8')),
};
const clock = new ManualClock(Date.UTC(2026, 10, 23, 8));
// the line must be ready for a run to start (LK_LINE_NOT_READY): the site's own bundle, and models that load
const bundle = loadPolicyBundle(loaded.policyDir, { site: loaded.config }).bundle;
const models = { twin: () => ({}), potency: () => ({}), defects: () => ({}) } as unknown as RunEngineOptions['models'];
const dir = mkdtempSync(join(tmpdir(), 'lk-view-cache-'));

/** The step under way, released by the test with the result it should return. */
const waiting = new Map<string, (r: StepResult) => void>();
const held: StepHandler = (ctx) =>
  new Promise((resolve, reject) => {
    waiting.set(ctx.step.seq, (r) => {
      waiting.delete(ctx.step.seq);
      resolve(r);
    });
    ctx.signal.addEventListener('abort', () => reject(new StepAborted('stopped')), { once: true });
  });

function engineOn(store: Store): RunEngine {
  const options: RunEngineOptions = {
    store, site: loaded.config, dataDir: dir, clock, processClock: clock, log: silentLogger,
    writer: {} as RunEngineOptions['writer'],
    read: async () => [],
    mes: { read: (tenant, batch) => records[`${tenant}/${batch}`] },
    sequencer: { kind: 'plc', tag: 'plc.BatchPhase', enter: async () => {} },
    policy: () => bundle,
    models,
    parseRequest: (text) => parseRunRequest(text) as unknown as ParsedRequest,
    checkRecord: () => {},
    effectiveLimits: () => ({}),
    steps: Object.fromEntries(composePlan().map((p) => [p.name, held])) as Record<StepName, StepHandler>,
    // the test closes a store under a live engine (the crash): no model watch to trip over it
    modelWatchMs: 3_600_000,
  };
  return new RunEngine(options);
}

interface Node { store: Store; engine: RunEngine; api: ApiServer; url: string; tokens: Map<string, string> }
const nodes: Node[] = [];

async function boot(withUsers: boolean): Promise<Node> {
  const store = openStore({ dataDir: join(dir, 'data'), clock });
  const engine = engineOn(store);
  const identity = new Identity({ store, clock, scryptLog2N: 4, tokenTtlMs: 30 * 24 * 3_600_000 });
  if (withUsers) {
    await addUser(identity, { id: 'p.bianchi', name: 'Paolo Bianchi', role: 'process_engineer', tenants: [A], password: 'correct horse battery' }, 'system', 'test');
    await addUser(identity, { id: 'l.conti', name: 'Luca Conti', role: 'process_engineer', tenants: [B], password: 'correct horse battery' }, 'system', 'test');
  }
  const api = await createApi({
    daemon: { engine, store, loaded, writer: { pending: () => [], approve: async () => { throw new Error('unused'); }, reject: async () => { throw new Error('unused'); } } as never, policy: { bundle: null }, connectors: [], live: new Map(), supervision: () => new Map() },
    clock, users: identity,
  });
  const url = await api.listen('127.0.0.1', 0);
  const tokens = new Map<string, string>();
  for (const u of ['p.bianchi', 'l.conti']) tokens.set(u, (await identity.signIn(u, 'correct horse battery')).token);
  const node = { store, engine, api, url, tokens };
  nodes.push(node);
  return node;
}

/** The route's encoder, as the API passes it (one function: the cache keeps one body per encoder). */
const encode = (v: EngineRunView): EngineRunView => z.encode(RunView, v as z.output<typeof RunView>) as never;

/** What the response schema's serializer writes for the view read fresh from the store now (no cache). */
function fresh(n: Node, id: string): string {
  return JSON.stringify(z.encode(RunView, n.engine.view(n.engine.runs.runById(id)!) as z.output<typeof RunView>));
}

async function get(n: Node, user: string, tenant: string, id: string): Promise<{ status: number; type: string | null; text: string }> {
  const res = await fetch(`${n.url}/v1/tenants/${tenant}/runs/${id}`, { headers: { authorization: `Bearer ${n.tokens.get(user)!}` } });
  return { status: res.status, type: res.headers.get('content-type'), text: await res.text() };
}

const status = (text: string): { status: string; steps: { seq: string; status: string; durationMs: number | null; duration: string }[]; approvalGate: { status: string; signature: unknown }; release: unknown } => JSON.parse(text);

let n1: Node;
let runId: string;
/** Every commit of a view-changing write, checked right after it: [what the cache serves, what the store says]. */
const afterCommits: [string, string][] = [];

async function release(seq: string, r: StepResult): Promise<void> {
  await waitFor(`step ${seq} to run`, () => waiting.has(seq));
  waiting.get(seq)!(r);
}

beforeAll(async () => {
  n1 = await boot(true);
  n1.engine.runs.onWrite((run) => n1.store.afterCommit(() => {
    if (run === runId) afterCommits.push([n1.engine.viewJson(A, run, encode), fresh(n1, run)]);
  }));
});

afterAll(async () => {
  for (const n of nodes) await n.api.close();
  nodes.at(-1)?.store.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('GET /runs/{id} from the view cache', () => {
  it('serves the response schema\'s bytes, and a running step\'s duration moves with the clock alone', async () => {
    runId = n1.engine.start({ tenant: A, request: 'run batch B-1042 on line-3', by: 'o.operator' }).id;
    await waitFor('step 01 to run', () => waiting.has('01'));
    const first = await get(n1, 'p.bianchi', A, runId);
    expect(first.status).toBe(200);
    expect(first.type).toBe('application/json; charset=utf-8');
    expect(first.text).toBe(fresh(n1, runId));
    expect(status(first.text).steps[0]).toMatchObject({ seq: '01', status: 'RUNNING', durationMs: 0, duration: '0.0s' });
    // no write between the two reads: only the clock moved
    clock.advance(75_000);
    const later = await get(n1, 'p.bianchi', A, runId);
    expect(status(later.text).steps[0]).toMatchObject({ status: 'RUNNING', durationMs: 75_000, duration: '1:15' });
    expect(later.text).toBe(fresh(n1, runId));
  });

  it('every state change shows at once: steps, the approval gate and its signature, the release, the end', async () => {
    for (const seq of ['01', '02', '03', '04', '05', '06', '07', '08']) {
      clock.advance(1_000);
      await release(seq, { status: 'SUCCEEDED', detail: `step ${seq} done` });
      await waitFor(`step ${seq} to be stored done`, () => n1.engine.runs.steps(runId)[Number(seq) - 1]!.status === 'SUCCEEDED');
      const r = await get(n1, 'p.bianchi', A, runId);
      expect(status(r.text).steps[Number(seq) - 1]!.status).toBe('SUCCEEDED');
      expect(r.text).toBe(fresh(n1, runId));
    }
    // the gate as steps/gate.ts writes it: approval row, the specification table judged on the run's data, step and
    // run in one transaction
    await waitFor('step 09 to run', () => waiting.has('09'));
    const approval = 'apr_0123456789abcdef';
    n1.store.tx((t) => {
      n1.engine.runs.insertApproval(t, { id: approval, run: runId, tenant: A, reviewer: 'm.rossi', record: '{}', recordHash: 'ab'.repeat(32), requestedAt: clock.now() });
      const before = n1.engine.runs.runById(runId)!;
      n1.engine.runs.setData(t, runId, { ...before.data, quality: json(judgeRun(before, before.data, [])) }, clock.now());
      const run = n1.engine.runs.runById(runId)!;
      n1.engine.setStep(t, run, n1.engine.runs.steps(runId).find((s) => s.seq === '09')!, 'APPROVAL', 'agent.orchestrator', 'waits for m.rossi');
      n1.engine.setRun(t, run, 'APPROVAL', 'waits for QA reviewer m.rossi', 'system', 'approval gate reached');
    });
    let v = status((await get(n1, 'p.bianchi', A, runId)).text);
    expect([v.status, v.steps[8]!.status, v.approvalGate.status]).toEqual(['APPROVAL', 'APPROVAL', 'pending']);
    n1.engine.decide(A, approval, { signer: { user: 'm.rossi', name: 'Maria Rossi', role: 'qa_reviewer' }, decision: 'approve', meaning: 'QA release of batch B-1042' });
    v = status((await get(n1, 'p.bianchi', A, runId)).text);
    expect(v.approvalGate.status).toBe('approved');
    expect(v.approvalGate.signature).toMatchObject({ user: 'm.rossi', decision: 'approve' });
    n1.store.tx((t) => n1.engine.setRun(t, n1.engine.runs.runById(runId)!, 'RUNNING', null, 'm.rossi', 'batch release approved'));
    await release('09', { status: 'SUCCEEDED', detail: 'approved' });
    const pkg = { json: 'release/B-1042.json', pdf: 'release/B-1042.pdf', bundle: 'release/B-1042.audit', sha256: { 'B-1042.json': 'cd'.repeat(32) } };
    await release('10', { status: 'SUCCEEDED', detail: 'released', data: { release: pkg } });
    await n1.engine.settled(runId);
    const end = await get(n1, 'p.bianchi', A, runId);
    // the view names the package by its download URLs, never by where the files lie on the server
    const dl = (file: string): string => `/v1/tenants/${A}/runs/${runId}/release?file=${file}`;
    expect(status(end.text)).toMatchObject({ status: 'SUCCEEDED', release: { json: dl('json'), pdf: dl('pdf'), bundle: dl('bundle'), sha256: pkg.sha256 } });
    expect(end.text).toBe(fresh(n1, runId));
    // and right after every commit of the run, not only when the test looked
    expect(afterCommits.length).toBeGreaterThanOrEqual(25);
    for (const [served, stored] of afterCommits) expect(served).toBe(stored);
  });

  it('a write rolled back leaves the view as committed, even when read inside the transaction', async () => {
    const before = (await get(n1, 'p.bianchi', A, runId)).text;
    expect(() => n1.store.tx((t) => {
      n1.engine.runs.setData(t, runId, { release: null }, clock.now());
      // read inside the transaction: it sees the uncommitted row, and must not keep it
      expect(n1.engine.get(A, runId).release).toBeNull();
      throw new Error('rolled back');
    })).toThrow('rolled back');
    const after = await get(n1, 'p.bianchi', A, runId);
    expect(after.text).toBe(before);
    expect(status(after.text).release).not.toBeNull();
  });

  it('the OpenAPI document still describes the body as the Run schema (the schema the cache encodes with)', async () => {
    const doc = (await (await fetch(`${n1.url}/openapi.json`)).json()) as {
      paths: Record<string, Record<string, { responses: Record<string, { content: Record<string, { schema: unknown }> }> }>>;
      components: { schemas: Record<string, { properties: Record<string, unknown>; required: string[] }> };
    };
    expect(doc.paths['/v1/tenants/{tenant}/runs/{id}']!['get']!.responses['200']!.content['application/json']!.schema).toEqual({ $ref: '#/components/schemas/Run' });
    const run = doc.components.schemas['Run']!;
    const body = JSON.parse((await get(n1, 'p.bianchi', A, runId)).text) as Record<string, unknown>;
    expect(Object.keys(body).sort()).toEqual(Object.keys(run.properties).sort());
    expect(run.required.sort()).toEqual(Object.keys(body).sort());
  });

  it('another tenant\'s people and paths get 404 for the run, cached or not [R1]', async () => {
    expect((await get(n1, 'p.bianchi', A, runId)).status).toBe(200);
    for (const [user, tenant] of [['l.conti', B], ['l.conti', A], ['p.bianchi', B]] as const) {
      const r = await get(n1, user, tenant, runId);
      expect(r.status, `${user} ${tenant}`).toBe(404);
      expect(JSON.parse(r.text).code).toBe('LK_NOT_FOUND');
      expect(r.text).not.toContain('B-1042');
    }
    expect(codeOf(() => n1.engine.get(B, runId))).toBe('LK_NOT_FOUND');
    // a run of the other tenant, read by its own people first, stays out of reach of the first tenant
    const other = 'run_0b0b0b0b0b0b0b0b0b0b';
    const rec = records[`${B}/B-2001`] as Record<string, unknown>;
    n1.store.tx((t) => n1.engine.runs.insertRun(t, { id: other, tenant: B, batch: 'B-2001', line: 'line-3', product: String(rec['product']), tooling: String(rec['tooling']), goal: 'g', request: {}, limits: {}, autonomy: 'L3', record: rec, recordSha: 'ef'.repeat(32), seed: 1, startedBy: 'l.conti', createdAt: clock.now() }, composePlan()));
    expect((await get(n1, 'l.conti', B, other)).status).toBe(200);
    expect((await get(n1, 'p.bianchi', A, other)).status).toBe(404);
    expect(codeOf(() => n1.engine.get(A, other))).toBe('LK_NOT_FOUND');
    n1.store.tx((t) => n1.engine.setRun(t, n1.engine.runs.runById(other)!, 'FAILED', 'test over', 'system', 'test over'));
  });

  it('after a crash and a restart, GET shows what the store says', async () => {
    const run = n1.engine.start({ tenant: A, request: 'run batch B-1043 on line-3', by: 'o.operator' }).id;
    await waitFor('step 01 of the second run to run', () => waiting.has('01'));
    expect(status((await get(n1, 'p.bianchi', A, run)).text).status).toBe('RUNNING');
    // the process dies: no clean stop, the engine never learns; a new one opens the same data directory
    await n1.api.close();
    n1.store.close();
    waiting.clear();
    const n2 = await boot(false);
    expect(n2.engine.recover().interrupted).toEqual([run]);
    const after = await get(n2, 'p.bianchi', A, run);
    expect(status(after.text).status).toBe('INTERRUPTED');
    expect(status(after.text).steps[0]).toMatchObject({ seq: '01', status: 'INTERRUPTED' });
    expect(after.text).toBe(fresh(n2, run));
    expect((await get(n2, 'l.conti', B, run)).status).toBe(404);
  });
});
