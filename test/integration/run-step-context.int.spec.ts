/**
 * The tool-call log of a step context on a real SQLite store: a call always gets its result line, also when
 * the engine stops while the call is under way (a call that polls the equipment, like vision.stream or the
 * NIR evidence scoring), and a failing call gets an error line; each line has its audit entry. Once the
 * engine is stopping, a step starts no new setpoint move. An arbitration round asked through the context goes
 * through a real guarded writer, with its audit entry and its genealogy event.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { composePlan } from '../../src/domain/run.js';
import { LkError } from '../../src/errors.js';
import { StepAborted, StepContext, type StepHost } from '../../src/engine/run/step-context.js';
import { GuardedWriter } from '../../src/engine/guarded-writer.js';
import { contestOutcome, contestText, type ArbitrationRequest } from '../../src/arbitration/index.js';
import { defaultConfigFile, loadConfig } from '../../src/config/load.js';
import { loadPolicyBundle } from '../../src/config/policy-bundle.js';
import { silentLogger } from '../../src/log.js';
import { raiseException } from '../../src/engine/run/exceptions.js';
import { ExceptionStore } from '../../src/store/exception-store.js';
import { RunStore, type RunRecord } from '../../src/store/run-store.js';
import { openStore, type Store } from '../../src/store/store.js';
import { auditOfRun } from '../helpers/run-site.js';

const T = 'acme-pharma';
const clock = new ManualClock(Date.UTC(2026, 10, 23, 8));
let dir: string;
let store: Store;
let runs: RunStore;
let host: StepHost;
let n = 0;

/** A run on a line of its own (the store allows one active run per line). */
function newRun(): RunRecord {
  const id = `run_${String(++n).padStart(10, '0')}`;
  store.tx((t) =>
    runs.insertRun(t, {
      id, tenant: T, batch: `B-${1000 + n}`, line: `line-${n}`, product: 'ir-family-a', tooling: 'round-10mm-ff', goal: 'test', request: {}, limits: {}, autonomy: 'L3',
      record: {}, recordSha: '0'.repeat(64), seed: 1, startedBy: 'o.operator', createdAt: clock.now(),
    }, composePlan()),
  );
  return runs.runById(id)!;
}

function contextOf(run: RunRecord, signal: AbortSignal): StepContext {
  return new StepContext(host, run, composePlan()[6]!, signal, {});
}

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'lk-step-context-'));
  store = openStore({ dataDir: dir, clock, logger: silentLogger });
  runs = new RunStore(store.db);
  host = {
    store, runs, clock, processClock: clock, log: silentLogger, pollMs: 5, notify: () => undefined,
    connection: () => undefined,
    writer: {} as GuardedWriter,
    read: () => Promise.resolve([]),
    raise: () => null,
  };
});

afterAll(() => {
  store?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('StepContext.tool', () => {
  it('closes a call the engine stops while it runs with an error line saying why, and rethrows StepAborted', async () => {
    const run = newRun();
    const abort = new AbortController();
    const ctx = contextOf(run, abort.signal);
    const call = ctx.tool('vision.stream', { cameras: 6 }, async () => {
      for (;;) await ctx.tick();
    }, () => ({ summary: 'never' }));
    setTimeout(() => abort.abort('stop requested'), 20);
    await expect(call).rejects.toBeInstanceOf(StepAborted);
    const rows = runs.toolCalls(run.id);
    expect(rows.map((r) => [r.id, r.kind, r.tool, r.step])).toEqual([[1, 'call', 'vision.stream', 'inspect.tablets'], [2, 'error', 'vision.stream', 'inspect.tablets']]);
    expect(rows[1]!.result).toEqual({ interrupted: true, reason: 'stop requested' });
    const audit = auditOfRun(store, T, run.id);
    expect(rows.map((r) => [audit.get(r.auditSeq)?.kind, audit.get(r.auditSeq)?.action])).toEqual([['tool_call', 'vision.stream'], ['tool_result', 'vision.stream']]);
  });

  it('[R10] logs a failing call as an error line with its code, and its result as an ok line otherwise', async () => {
    const run = newRun();
    const ctx = contextOf(run, new AbortController().signal);
    await expect(ctx.tool('vision.stream', {}, () => {
      throw new LkError('LK_MODEL_MISSING', 'no defect classifier');
    }, () => ({ summary: 'never' }))).rejects.toMatchObject({ code: 'LK_MODEL_MISSING' });
    await expect(ctx.tool('nir.score', { spectra: 1 }, () => 42, (r) => ({ summary: `${r} scored`, result: { n: r } }))).resolves.toBe(42);
    const rows = runs.toolCalls(run.id);
    expect(rows.map((r) => [r.id, r.kind, r.tool])).toEqual([[1, 'call', 'vision.stream'], [2, 'error', 'vision.stream'], [3, 'call', 'nir.score'], [4, 'ok', 'nir.score']]);
    expect(rows[1]!.result).toMatchObject({ code: 'LK_MODEL_MISSING' });
    expect([rows[3]!.summary, rows[3]!.result]).toEqual(['42 scored', { n: 42 }]);
  });
});

describe('StepContext.propose', () => {
  it('starts no move once the engine is stopping: nothing reaches the writer, nothing is logged', async () => {
    const run = newRun();
    const abort = new AbortController();
    let proposed = 0;
    const ctx = new StepContext({ ...host, writer: { propose: () => (proposed++, Promise.reject(new Error('must not be called'))) } as unknown as GuardedWriter }, run, composePlan()[4]!, abort.signal, {});
    abort.abort('stop requested');
    const move = ctx.propose({ agent: 'agent.compress_fill', moves: [{ setpoint: 'press.MainForce', value: { value: 12.5, unit: 'kN' } }], attribute: 'content_uniformity', justification: 'test' }, 'press.write_setpoint');
    await expect(move).rejects.toBeInstanceOf(StepAborted);
    expect(proposed).toBe(0);
    expect(runs.toolCalls(run.id)).toEqual([]);
    expect(runs.events(run.id)).toEqual([]);
  });
});

describe('StepContext: a connection lost during a step', () => {
  it('raises one CONNECTION_LOST per outage of a unit (major by the defaults table) with its evidence; its return is a genealogy event', async () => {
    const run = newRun();
    const exceptions = new ExceptionStore(store);
    const deps = { store, runs, exceptions, policy: () => null, notify: () => undefined };
    let blender = 'connected';
    const h: StepHost = { ...host, connection: (tag) => (tag.startsWith('blender.') ? blender : tag.startsWith('press.') ? 'connected' : undefined), raise: (r, e) => raiseException(deps, r, e, clock.now()) };
    const ctx = new StepContext(h, run, composePlan()[2]!, new AbortController().signal, {});
    const tags = ['blender.Revolutions', 'blender.Speed', 'press.Hardness'];
    await ctx.readings(tags);
    expect(exceptions.ofRun(run.id)).toEqual([]);
    // first outage: seen at three reads, raised once
    blender = 'reconnecting';
    for (let i = 0; i < 3; i++) {
      clock.advance(1_000);
      await ctx.readings(tags);
    }
    blender = 'connected';
    clock.advance(1_000);
    await ctx.readings(tags);
    // a second outage is a second exception
    blender = 'lost';
    await ctx.samples(['blender.Revolutions']);
    await ctx.readings(tags);
    const xs = exceptions.ofRun(run.id);
    expect(xs.map((e) => [e.kind, e.severity, e.key, e.step, e.status])).toEqual([
      ['CONNECTION_LOST', 'major', 'CONNECTION_LOST:blender:03:1:1', '03 blend.uniformity', 'open'],
      ['CONNECTION_LOST', 'major', 'CONNECTION_LOST:blender:03:1:2', '03 blend.uniformity', 'open'],
    ]);
    expect(xs[0]!.evidence).toMatchObject({ equipment: 'blender', state: 'reconnecting', outage: 1, tags: ['blender.Revolutions', 'blender.Speed'] });
    expect(xs[1]!.evidence).toMatchObject({ equipment: 'blender', state: 'lost', outage: 2 });
    // each is a tool call of the run (call, ok) and the return of the first is in the genealogy, in order
    expect(runs.toolCalls(run.id).filter((r) => r.tool === 'exception.raise').map((r) => r.kind)).toEqual(['call', 'ok', 'call', 'ok']);
    const ev = runs.events(run.id).map((e) => [e.kind, e.summary.split(':')[0]]);
    expect(ev).toEqual([['exception', 'major CONNECTION_LOST'], ['watchdog', 'blender'], ['exception', 'major CONNECTION_LOST']]);
    expect(runs.events(run.id)[1]!.summary).toMatch(/^blender: connection back \(reconnecting for 3 s\)$/);
    // the press stayed connected throughout: nothing raised for it; a new attempt of the step counts afresh
    expect(xs.some((e) => (e.evidence as { equipment: string }).equipment === 'press')).toBe(false);
    const again = new StepContext(h, run, composePlan()[2]!, new AbortController().signal, {}, 2);
    await again.readings(tags);
    expect(exceptions.ofRun(run.id).map((e) => e.key).filter((k) => !xs.some((x) => x.key === k))).toEqual(['CONNECTION_LOST:blender:03:2:1']);
  });
});

describe('StepContext.contest', () => {
  it('runs the orchestrator\'s round through the guarded writer: one arbitration.round audit entry with the requests and the outcome, then the round in the genealogy', async () => {
    const loaded = loadConfig(defaultConfigFile());
    const bundle = loadPolicyBundle(loaded.policyDir, { site: loaded.config }).bundle;
    const writer = new GuardedWriter({ store, site: loaded.config, connectors: [], clock, policy: () => bundle, batches: () => null });
    const run = newRun();
    const ctx = new StepContext({ ...host, writer }, run, composePlan()[4]!, new AbortController().signal, {});
    const turret = 'press.TurretSpeed';
    const reqs: ArbitrationRequest[] = [
      { id: `${run.id}:05:1:c1:0`, agent: 'agent.yield_takt', setpoint: turret, value: '44 {rev}/min', attribute: 'takt', justification: 'behind takt', at: clock.now() },
      { id: `${run.id}:05:1:c1:1`, agent: 'agent.quality_conf', setpoint: turret, value: '40 {rev}/min', attribute: 'content_uniformity', justification: 'RSD near its limit', at: clock.now() },
    ];
    const seen: unknown[] = [];
    const res = await ctx.contest({
      agent: 'agent.orchestrator', setpoint: turret, requests: reqs,
      outcome: (r) => {
        seen.push(r);
        const o = contestOutcome(turret, r);
        return { record: { outcome: o.kind, declined: r.declined.map((d) => ({ agent: d.request.agent, reason: d.reason })) }, reason: r.declined.map((d) => d.reason).join('; ') || 'no contest', summary: contestText(o) };
      },
    });
    // the quality side outranks the throughput side (rule 1); the round's outcome is made of the writer's own result
    expect(res.winners.map((w) => w.request.agent)).toEqual(['agent.quality_conf']);
    expect(res.declined.map((d) => [d.request.agent, d.reason.split(' ')[0]])).toEqual([['agent.yield_takt', 'OUTRANKED']]);
    expect(seen).toEqual([res, res]);
    const rounds = [...auditOfRun(store, T, run.id).values()].filter((e) => e.kind === 'arbitration');
    expect(rounds).toHaveLength(1);
    expect(rounds[0]).toMatchObject({
      actor: 'agent.orchestrator', action: 'arbitration.round', subject: { run: run.id, batch: run.batch, agent: 'agent.orchestrator', setpoint: turret },
      args: { requests: reqs }, result: { outcome: 'won', declined: [{ agent: 'agent.yield_takt', reason: res.declined[0]!.reason }] }, reason: res.declined[0]!.reason,
    });
    const ev = runs.events(run.id);
    expect(ev.map((e) => [e.kind, e.step, e.agent, e.tag, e.summary])).toEqual([['arbitration', 'compress.press', 'agent.orchestrator', turret, contestText(contestOutcome(turret, res))]]);
    expect(ev[0]!.data).toEqual({ outcome: 'won', declined: [{ agent: 'agent.yield_takt', reason: res.declined[0]!.reason }] });
    // nothing reached the equipment, and no tool-call line was written (a round is audited, not a tool call)
    expect(runs.toolCalls(run.id)).toEqual([]);
  });
});
