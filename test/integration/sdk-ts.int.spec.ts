/**
 * The TypeScript SDK (src/sdk, `linekeeper/sdk`) against a real daemon on the embedded default with its REST
 * API on a free loopback port (simulator fast-forwarded, small batch): sign-in and its refusals as
 * LinekeeperError codes, Tool and Agent declarations validated against the approved design space read from the
 * daemon, agent.start of B-1042 on line-3 followed with run.stream() — the plan's steps in order with statuses
 * and durations, the gate as APPROVAL signed by m.rossi, the run SUCCEEDED — across a connection closed under
 * it mid-run (resumed with Last-Event-ID, no status twice), and the raw tool-call lines across a cut stream. The
 * daemon runs on virtual time paced at TEST_PACE (50) times the wall clock (test/helpers/virtual-line.ts).
 */
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { every } from '../../src/clock.js';
import { STEP_NAMES } from '../../src/domain/run.js';
import { Agent, DesignSpace, LinekeeperClient, LinekeeperError, setDefaultClient, Tool, type FetchLike, type Signature, type Step, type ToolCallLine } from '../../src/sdk/index.js';
import { startApiNode, type ApiNode } from '../helpers/api.js';
import { TEST_PACE } from '../helpers/virtual-line.js';

const GOAL = 'keep weight and hardness on target, capping risk under 1.5%';
let node: ApiNode;
let url: string;
let presence: (() => void) | undefined;
let paced: (() => Promise<void>) | undefined;
const pw = (u: string): string => node.passwords.get(u)!;

/** The LinekeeperError `p` rejects with (anything else fails the test). */
async function refusal(p: Promise<unknown>): Promise<LinekeeperError> {
  try {
    await p;
  } catch (err) {
    if (LinekeeperError.is(err)) return err;
    throw err;
  }
  throw new Error('expected a LinekeeperError, got a result');
}

interface StreamRequest {
  readonly lastEventId: string | null;
  /** Events received on it so far. */
  received: number;
  close(): void;
}

/** A transport that records each event-stream request and can close the underlying request of one. */
function closingTransport(): { fetch: FetchLike; streams: StreamRequest[] } {
  const streams: StreamRequest[] = [];
  const fetch: FetchLike = async (u, init) => {
    if (!u.endsWith('/stream')) return globalThis.fetch(u, init);
    const ctl = new AbortController();
    init.signal?.addEventListener('abort', () => ctl.abort(), { once: true });
    const req: StreamRequest = { lastEventId: new Headers(init.headers as Record<string, string>).get('last-event-id'), received: 0, close: () => ctl.abort() };
    streams.push(req);
    const res = await globalThis.fetch(u, { ...init, signal: ctl.signal });
    const dec = new TextDecoder();
    const counted = res.body?.pipeThrough(new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, c) {
        req.received += (dec.decode(chunk, { stream: true }).match(/^id: /gm) ?? []).length;
        c.enqueue(chunk);
      },
    }));
    return new Response(counted ?? null, { status: res.status, headers: res.headers });
  };
  return { fetch, streams };
}

/** A transport whose first event stream is cut (the socket "terminated") right after its `k`-th event. */
function cuttingTransport(k: number): { fetch: FetchLike; streams: (string | null)[] } {
  const streams: (string | null)[] = [];
  const fetch: FetchLike = async (u, init) => {
    if (!u.endsWith('/stream')) return globalThis.fetch(u, init);
    streams.push(new Headers(init.headers as Record<string, string>).get('last-event-id'));
    const ctl = new AbortController();
    init.signal?.addEventListener('abort', () => ctl.abort(), { once: true });
    const res = await globalThis.fetch(u, { ...init, signal: ctl.signal });
    if (streams.length > 1 || !res.body) return res;
    const reader = res.body.getReader();
    const dec = new TextDecoder();
    const enc = new TextEncoder();
    let buf = '';
    let events = 0;
    const body = new ReadableStream<Uint8Array>({
      async pull(c) {
        if (events >= k) {
          ctl.abort();
          return c.error(new TypeError('terminated'));
        }
        for (;;) {
          const i = buf.indexOf('\n\n');
          if (i >= 0) {
            const block = buf.slice(0, i + 2);
            buf = buf.slice(i + 2);
            c.enqueue(enc.encode(block));
            if (/^id: /m.test(block)) events++;
            return;
          }
          const { done, value } = await reader.read();
          if (done) return c.close();
          buf += dec.decode(value, { stream: true });
        }
      },
    });
    return new Response(body, { status: res.status, headers: res.headers });
  };
  return { fetch, streams };
}

beforeAll(async () => {
  node = await startApiNode({ timeScale: 300, tablets: 30_000, pollMs: 100, virtual: true });
  url = node.url;
  paced = node.line!.pace(TEST_PACE);
});
afterAll(async () => {
  setDefaultClient(undefined);
  presence?.();
  await paced?.();
  await node?.close();
});

describe('the TypeScript SDK against a real daemon', { timeout: 240_000 }, () => {
  let lk: LinekeeperClient;
  let transport: ReturnType<typeof closingTransport>;
  let limits: DesignSpace;
  let runId: string;

  it('is what package.json exports as linekeeper/sdk (the compiled file of src/sdk/index.ts), beside the bin', () => {
    const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { exports: Record<string, { types: string; default: string }>; bin: Record<string, string> };
    expect(pkg.exports['./sdk']).toEqual({ types: './dist/src/sdk/index.d.ts', default: './dist/src/sdk/index.js' });
    expect(pkg.bin).toEqual({ linekeeper: 'bin/linekeeper.js' });
    const build = JSON.parse(readFileSync(new URL('../../tsconfig.build.json', import.meta.url), 'utf8')) as { compilerOptions: Record<string, unknown>; include: string[] };
    expect(build.compilerOptions['declaration']).toBe(true);
    expect(build.include).toContain('src');
  });

  it('signs in with a user and password; a bad token, a wrong password, a bad URL and a daemon not there are errors with codes', async () => {
    transport = closingTransport();
    lk = new LinekeeperClient({ url, user: 'o.operator', password: pw('o.operator'), fetch: transport.fetch, pollMs: 250 });
    const t = await lk.signIn();
    expect(t.user).toMatchObject({ id: 'o.operator', role: 'operator', tenants: ['acme-pharma'] });
    expect(await lk.tenant()).toBe('acme-pharma');

    const bad = await refusal(new LinekeeperClient({ url, token: 'not-a-token', tenant: 'acme-pharma' }).listRuns());
    expect(bad).toMatchObject({ code: 'LK_UNAUTHENTICATED', status: 401 });
    expect(bad.detail.length).toBeGreaterThan(0);
    expect(await refusal(new LinekeeperClient({ url, user: 'o.operator', password: 'not the password' }).signIn())).toMatchObject({ code: 'LK_UNAUTHENTICATED', status: 401 });
    expect(() => new LinekeeperClient({ url: 'ftp://127.0.0.1', token: 't' })).toThrow(expect.objectContaining({ code: 'LK_VALIDATION' }));
    expect(await refusal(new LinekeeperClient({ url: 'http://127.0.0.1:1', token: 't', tenant: 'acme-pharma' }).listRuns())).toMatchObject({ code: 'LK_API_UNREACHABLE' });
    expect(await refusal(lk.getRun('run_00000000000000000000'))).toMatchObject({ code: 'LK_NOT_FOUND', status: 404 });
  });

  it('times its token on its own clock: ahead of the daemon\'s by weeks, a client renews neither in a loop nor at every call, and renews once when the lifetime the daemon gave has passed by its own clock', async () => {
    const refreshes: number[] = [];
    const counting: FetchLike = (u, init) => {
      if (new URL(u).pathname === '/v1/auth/token/refresh') refreshes.push(Date.now());
      return globalThis.fetch(u, init);
    };
    // this client's clock: thirty days ahead of the daemon's (its virtual line), moved on by the test
    let ahead = 30 * 86_400_000;
    const c = new LinekeeperClient({ url, user: 'a.ricci', password: pw('a.ricci'), tenant: 'acme-pharma', fetch: counting, now: () => node.line!.clock.now() + ahead });
    const refreshed = (): number => node.daemon.store.db.prepare("SELECT count(*) FROM audit_entry WHERE action = 'auth.token_refreshed'").pluck().get() as number;
    const before = refreshed();
    const t = await c.signIn();
    // the lifetime by the daemon's clock (this node's tokens last a virtual day): the daemon's expiresAt is long past by the client's
    expect(t.expiresIn).toBe(86_400);
    expect(Date.parse(t.expiresAt) - node.line!.clock.now()).toBeLessThanOrEqual(86_400_000);
    for (let i = 0; i < 5; i++) await c.listRuns();
    // the renewal timer's turn, had it been due (it was, at once and again after each renewal, when the expiry was the daemon's)
    await new Promise((r) => setTimeout(r, 250));
    expect(refreshes).toEqual([]);
    // a minute before the end of the lifetime, by the client's clock: the next call renews first, once
    ahead += 86_400_000 - 60_000;
    await c.listRuns();
    expect(refreshes).toHaveLength(1);
    await c.listRuns();
    await new Promise((r) => setTimeout(r, 250));
    expect(refreshes).toHaveLength(1);
    expect(refreshed() - before).toBe(1);
    c.close();
  });

  it('DesignSpace.approved reads the approved limits from the daemon; Tool and Agent validate their declarations against it', async () => {
    limits = await DesignSpace.approved('ir-family-a', 'round-10mm-ff', { client: lk });
    expect(limits.setpoints['press.MainForce']).toEqual({ min: 8, max: 18, unit: 'kN', maxStep: 1.5, maxRatePerMin: 3 });
    expect(limits.bundleVersion).toMatch(/^[0-9a-f]{64}$/);
    expect([limits.contains('press.MainForce', 12), limits.contains('press.MainForce', 19), limits.contains('press.Bogus', 1)]).toEqual([true, false, false]);
    expect(await refusal(DesignSpace.approved('ir-family-b', 'round-10mm-ff', { client: lk }))).toMatchObject({ code: 'LK_NOT_FOUND', status: 404 });

    const press = Tool({
      name: 'press.write_setpoint', tags: ['press.MainForce', 'press.PreForce'], schema: z.strictObject({ setpoint: z.string(), value: z.number() }),
      units: { 'press.MainForce': 'kN', 'press.PreForce': 'kN' }, limits, readOnly: false, autonomyNeeded: 'L2',
    });
    expect(press.check({ setpoint: 'press.MainForce', value: 12 })).toEqual({ setpoint: 'press.MainForce', value: 12 });
    expect(() => press.check({ setpoint: 'press.MainForce', value: '12' })).toThrow(expect.objectContaining({ code: 'LK_VALIDATION' }));

    // the declaration's limits are the daemon's: a written tag it does not approve is refused
    expect(() => Tool({ name: 'press.write_setpoint', tags: ['press.Bogus'], limits, readOnly: false, autonomyNeeded: 'L2' })).toThrow(expect.objectContaining({ code: 'LK_VALIDATION' }));
    const agent = Agent({ id: 'agent.compress_fill', goal: GOAL, tools: [press], autonomy: 'L2', verify: 'twin', audit: 'part11' });
    expect(agent.tools.map((t) => t.limits?.toString())).toEqual(['ir-family-a × round-10mm-ff']);
  });

  it('agent.start(line-3, B-1042): run.stream() yields the plan\'s steps in order with statuses and durations, the gate as APPROVAL signed by m.rossi, across a closed connection, and ends as its data allows (SUCCEEDED, or REJECTED when a specification failed)', async () => {
    const press = Tool({ name: 'press.write_setpoint', tags: ['press.MainForce', 'press.PreForce', 'press.TurretSpeed'], limits, readOnly: false, autonomyNeeded: 'L2' });
    const agent = Agent({ id: 'agent.compress_fill', goal: GOAL, tools: [press], autonomy: 'L2', verify: 'twin', audit: 'part11' });
    setDefaultClient(lk);
    const unreadable = await refusal(agent.start('line-3', 'B-1042', { goal: 'please make the tablets nicer' }));
    expect(unreadable).toMatchObject({ code: 'LK_RUN_REQUEST_INVALID', status: 422 });

    const run = await agent.start('line-3', 'B-1042');
    runId = run.id;
    expect(run.id).toMatch(/^run_[0-9a-f]{20}$/);
    expect(run.record).toMatchObject({ batch: 'B-1042', line: 'line-3', startedBy: 'o.operator', autonomy: 'L2', plan: { steps: 10, gates: 1 }, approvalGate: { reviewer: 'm.rossi' } });
    expect((await refusal(agent.start('line-3', 'B-1042'))).code).toBe('LK_LINE_BUSY');
    presence = every(node.line!.clock, 5000, () => void lk.attendance().catch(() => undefined));

    const rossi = new LinekeeperClient({ url, user: 'm.rossi', password: pw('m.rossi') });
    const steps: Step[] = [];
    let closedAt: number | undefined;
    let signature: Signature | undefined;
    // the batch's own data decides what QA can sign: a release, or — when a specification FAILed (a loaded machine
    // lets the press run out of its limits before the agents correct it) — only a rejection
    let released = true;
    for await (const step of run.stream()) {
      steps.push(step);
      if (closedAt === undefined && step.seq >= '03' && transport.streams[0]!.received > 0) {
        // close the underlying request of the event stream once, mid-run, after it delivered lines
        closedAt = steps.length;
        expect(transport.streams).toHaveLength(1);
        transport.streams[0]!.close();
      }
      if (step.gate && step.status === 'APPROVAL') {
        // the operator who started it may not sign, nor m.rossi with a wrong password; m.rossi with hers does
        expect(await refusal(run.approve({ decision: 'approve', meaning: 'QA release of batch B-1042', password: pw('o.operator') }))).toMatchObject({ code: 'LK_FORBIDDEN', status: 403 });
        expect(await refusal(rossi.run(run.id).approve({ decision: 'approve', meaning: 'QA release of batch B-1042', password: 'not hers' }))).toMatchObject({ code: 'LK_REAUTH_FAILED', status: 401 });
        // review by exception: the release waits until QA has closed each blocking exception with a comment
        const listed = await rossi.run(run.id).exceptions();
        expect(listed.specTable).toMatchObject({ results: expect.any(Array) });
        released = !(listed.specTable as { results: { verdict: string }[] }).results.some((r) => r.verdict === 'FAIL');
        const refusedWith = released ? 'LK_EXCEPTIONS_OPEN' : 'LK_SPEC_FAILED';
        if (listed.counts.blocking > 0 || !released) expect(await refusal(rossi.run(run.id).approve({ decision: 'approve', meaning: 'QA release of batch B-1042', password: pw('m.rossi') }))).toMatchObject({ code: refusedWith, status: 409 });
        for (const e of listed.items.filter((x) => x.status === 'open')) {
          const closed = await rossi.closeException(e.id, { comment: `${e.kind}: investigated; tablets of the excursion segregated`, deviation: 'DEV-2026-0142', password: pw('m.rossi') });
          expect(closed.exception).toMatchObject({ id: e.id, status: 'closed', closure: { user: 'm.rossi' } });
        }
        if (released) signature = await rossi.run(run.id).approve({ decision: 'approve', meaning: 'QA release of batch B-1042', password: pw('m.rossi') });
        else {
          // every exception closed, and still no release: the data failed
          expect(await refusal(rossi.run(run.id).approve({ decision: 'approve', meaning: 'QA release of batch B-1042', password: pw('m.rossi') }))).toMatchObject({ code: 'LK_SPEC_FAILED', status: 409 });
          signature = await rossi.run(run.id).approve({ decision: 'reject', meaning: 'QA rejection of batch B-1042', comment: 'a specification failed', password: pw('m.rossi') });
        }
      }
    }

    expect(run.record!.status).toBe(released ? 'SUCCEEDED' : 'REJECTED');
    expect(signature).toMatchObject({ run: run.id, batch: 'B-1042', user: 'm.rossi', role: 'qa_reviewer', decision: released ? 'approve' : 'reject' });
    // the stream resumed on a new request naming the last line it had
    expect(closedAt).toBeDefined();
    expect(transport.streams.length).toBeGreaterThanOrEqual(2);
    expect(transport.streams[0]!.lastEventId).toBeNull();
    expect(Number(transport.streams[1]!.lastEventId)).toBeGreaterThan(0);
    expect(steps.length).toBeGreaterThan(closedAt!);

    // the plan's steps, in plan order, no status yielded twice, each ending SUCCEEDED with its duration (a rejected
    // batch: the gate REJECTED and its release step SKIPPED)
    const order = [...new Set(steps.map((s) => s.name))];
    expect(order).toEqual([...STEP_NAMES]);
    const keys = steps.map((s) => `${s.seq}:${s.status}:${s.attempt}`);
    expect(new Set(keys).size).toBe(keys.length);
    expect(steps.map((s) => Number(s.seq))).toEqual([...steps.map((s) => Number(s.seq))].sort((a, b) => a - b));
    for (const name of STEP_NAMES) {
      const mine = steps.filter((s) => s.name === name);
      const last = mine.at(-1)!;
      expect(last.status, name).toBe(released ? 'SUCCEEDED' : name === 'approval.batch_release' ? 'REJECTED' : name === 'release.genealogy' ? 'SKIPPED' : 'SUCCEEDED');
      if (last.status === 'SKIPPED') continue;
      if (name === 'inspect.tablets') expect(last.duration).toBe('continuous');
      else {
        expect(last.duration, name).toMatch(/^(\d+\.\ds|\d+:\d{2})$/);
        expect(last.durationMs, name).toBeGreaterThanOrEqual(0);
      }
      expect(last.detail.length, name).toBeGreaterThan(0);
    }
    const gate = steps.filter((s) => s.name === 'approval.batch_release');
    expect(gate.every((s) => s.gate && s.agent === 'agent.orchestrator' && s.tool === 'approval.request')).toBe(true);
    expect(gate.map((s) => s.status).filter((s) => s !== 'RUNNING')).toEqual(['APPROVAL', released ? 'SUCCEEDED' : 'REJECTED']);
    expect(steps.find((s) => s.name === 'compress.press')).toMatchObject({ agent: 'agent.compress_fill', tool: 'press.write_setpoint', gate: false });
  });

  it('run.toolCalls() gives the finished run\'s lines once each, in order, across a cut connection, and returns its status', async () => {
    const cut = cuttingTransport(7);
    const reader = new LinekeeperClient({ url, user: 'a.ricci', password: pw('a.ricci'), tenant: 'acme-pharma', fetch: cut.fetch });
    const lines: ToolCallLine[] = [];
    const it = reader.run(runId).toolCalls();
    let r = await it.next();
    for (; !r.done; r = await it.next()) lines.push(r.value);
    const final = node.daemon.engine.get('acme-pharma', runId).status;
    expect(['SUCCEEDED', 'REJECTED']).toContain(final);
    expect(r.value).toBe(final);
    expect(cut.streams).toEqual([null, '7']);
    const stored = node.daemon.engine.toolCalls('acme-pharma', runId);
    expect(lines.map((l) => l.id)).toEqual(stored.map((s) => s.id));
    expect(lines.filter((l) => l.tool === 'approval.request').map((l) => l.kind)).toEqual(['call', 'ok']);
    if (final === 'SUCCEEDED') expect(lines.at(-1)).toMatchObject({ kind: 'ok', tool: 'audit.write_release_package' });
    // a stream request closed before it was answered, or answered 503 (the daemon not ready), is tried again
    let requests = 0;
    const notYet = new LinekeeperClient({
      url, user: 'a.ricci', password: pw('a.ricci'), tenant: 'acme-pharma',
      fetch: async (u, init) => {
        if (!u.endsWith('/stream')) return globalThis.fetch(u, init);
        requests++;
        if (requests === 1) throw new DOMException('This operation was aborted', 'AbortError');
        if (requests === 2) return new Response(JSON.stringify({ code: 'LK_NOT_READY', status: 503, detail: 'linekeeper is stopping' }), { status: 503, headers: { 'content-type': 'application/problem+json' } });
        return globalThis.fetch(u, init);
      },
    });
    const again: number[] = [];
    for await (const l of notYet.run(runId).toolCalls()) again.push(l.id);
    expect(requests).toBe(3);
    expect(again).toEqual(stored.map((s) => s.id));
    // after: only what follows
    const tail: number[] = [];
    for await (const l of reader.run(runId).toolCalls({ after: stored.length - 2 })) tail.push(l.id);
    expect(tail).toEqual([stored.length - 1, stored.length]);
  });

  it('has a typed method per route: runs, genealogy, approvals, models, twin rehearsal, attendance, line, audit; a revoked token signs in again', async () => {
    const pb = new LinekeeperClient({ url, user: 'p.bianchi', password: pw('p.bianchi') });
    const auditor = new LinekeeperClient({ url, user: 'a.ricci', password: pw('a.ricci'), tenant: 'acme-pharma' });
    expect((await pb.health()).status).toBe('ok');
    expect((await pb.listRuns({ limit: 5 })).items.map((r) => r.id)).toEqual([runId]);
    const g = await pb.genealogy(runId);
    const final = node.daemon.engine.get('acme-pharma', runId).status;
    expect(['SUCCEEDED', 'REJECTED']).toContain(final);
    expect(g).toMatchObject({ run: runId, batch: 'B-1042', status: final });
    expect(g.events.some((e) => e.kind === 'approval' && e.summary.includes('m.rossi'))).toBe(true);
    expect((await pb.approvals()).items.filter((i) => i.kind === 'batch_release')).toEqual([]);
    expect((await pb.models()).items.find((m) => m.id === 'process-twin-v1')).toMatchObject({ kind: 'twin', status: 'validated' });
    const sim = await pb.simulate({ candidates: 8, horizon: 'full batch', seed: 3 });
    expect(sim.ranked.length + sim.discarded.length).toBe(8);
    expect((await lk.attendance())).toMatchObject({ operator: 'o.operator', attended: true });
    expect((await pb.line())).toMatchObject({ line: 'line-3', busy: false });
    // readiness and the re-arm of a LOST PLC: an operator may not re-arm; an equipment the line lacks is 404
    const readiness = await lk.lineReadiness();
    expect(readiness.line).toBe('line-3');
    expect(readiness.ready).toBe(readiness.reasons.length === 0);
    expect(await refusal(lk.rearm('blender', { reason: 'an operator may not' }))).toMatchObject({ code: 'LK_FORBIDDEN', status: 403 });
    expect(await refusal(pb.rearm('nosuch', { reason: 'no such unit' }))).toMatchObject({ code: 'LK_NOT_FOUND', status: 404 });
    const page = await auditor.audit({ run: runId, reviewer: 'm.rossi', limit: 50 });
    expect(page.items.map((e) => e.action)).toContain('approval.decide');
    expect(await refusal(pb.audit({ run: runId }))).toMatchObject({ code: 'LK_FORBIDDEN', status: 403 });
    // the signer's sign-in and re-authentication live on the site chain; the tenant's auditor reads them as the person's
    const people = await auditor.auditPeople({ actor: 'm.rossi', limit: 200 });
    expect(people.items.map((e) => e.action)).toEqual(expect.arrayContaining(['auth.sign_in', 'auth.reauthenticated']));
    expect(people.items.every((e) => e.tenant === 'site')).toBe(true);
    expect(await refusal(pb.auditPeople())).toMatchObject({ code: 'LK_FORBIDDEN', status: 403 });
    // a token that no longer works (expired, revoked) is replaced by signing in again
    const before = (await pb.signIn()).token;
    node.daemon.identity!.revoke('p.bianchi');
    expect((await pb.getRun(runId)).status).toBe(node.daemon.engine.get('acme-pharma', runId).status);
    const token = (await pb.signIn()).token;
    expect(token).not.toBe(before);
    // a client given only a token uses it as it is
    const byToken = new LinekeeperClient({ url, token, tenant: 'acme-pharma' });
    expect((await byToken.getRun(runId)).id).toBe(runId);
  });
});
