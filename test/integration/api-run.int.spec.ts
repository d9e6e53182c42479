/**
 * A full supervised run driven through the REST API over real HTTP on loopback, against a real daemon on the
 * embedded default (plant simulator fast-forwarded, small batch): started by the operator, followed over
 * server-sent events (call/ok in order, ids increasing by one), a reconnection with Last-Event-ID mid-run that
 * gets exactly what was missed, the approval gate signed by the batch's QA reviewer re-authenticated with
 * their password (a wrong password signs nothing, the operator who started it and another QA reviewer are
 * refused), the run completing, and its genealogy. Tenant isolation (R1) is checked on the live objects.
 * The batch is disturbed at the press (hardness over its limit): its specification table FAILs, so no one can
 * release it — not before QA closes its exceptions and not after (409 LK_SPEC_FAILED); the QA reviewer rejects it.
 * The daemon runs on virtual time paced at TEST_PACE (50) times the wall clock (test/helpers/virtual-line.ts), the operator
 * kept present on it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApi, type ApiServer } from '../../src/api/index.js';
import { loadSitePublicKey, queryAudit } from '../../src/audit/index.js';
import { every, systemClock } from '../../src/clock.js';
import { verifySignature, type Signature } from '../../src/engine/run/approval.js';
import { verifyTrailReview } from '../../src/audit/review.js';
import { closeOpenExceptionsOverApi } from '../helpers/exceptions.js';
import { call, rearmLostPlcs, signIn, SseReader, startApiNode, until, type ApiNode, type SseEvent } from '../helpers/api.js';
import { TEST_PACE } from '../helpers/virtual-line.js';
import { disturbPress } from '../helpers/disturb.js';
import { addUser } from '../helpers/users.js';

const A = '/v1/tenants/acme-pharma';
const B = '/v1/tenants/borealis-bio';
const REQUEST = 'run batch B-1042 on line-3, keep weight and hardness on target, capping risk under 1.5%, weight RSD under 1.4%';
let node: ApiNode;
let url: string;
const tokens = new Map<string, string>();
const tok = (u: string): string => tokens.get(u)!;
let runId: string;
let presence: (() => void) | undefined;
let paced: (() => Promise<void>) | undefined;

/** The log lines of the events, parsed; `end` and other events left out. */
const lines = (events: readonly SseEvent[]) => events.filter((e) => e.event !== 'end').map((e) => ({ sseId: Number(e.id), event: e.event, ...(JSON.parse(e.data) as { id: number; kind: string; tool: string; summary?: string }) }));

beforeAll(async () => {
  node = await startApiNode({ timeScale: 300, tablets: 30_000, pollMs: 100, virtual: true });
  url = node.url;
  for (const u of ['o.operator', 'p.bianchi', 'm.rossi', 'l.conti', 'g.ferri', 'a.ricci']) tokens.set(u, await signIn(url, u, node.passwords.get(u)!));
  paced = node.line!.pace(TEST_PACE);
});
afterAll(async () => {
  presence?.();
  await paced?.();
  await node?.close();
});

describe('a run through the REST API', { timeout: 180_000 }, () => {
  let first: SseReader;
  let second: SseReader;
  let cut: number;

  it('POST /runs starts it: 201, its location, the plan of 10 steps and 1 approval gate', async () => {
    // a PLC whose watchdog lapsed while a loaded machine started the daemon is re-armed by a person first: no run
    // starts on a line with a LOST PLC (409 LK_LINE_NOT_READY)
    await rearmLostPlcs(node, 'acme-pharma', tok('p.bianchi'));
    const r = await call(url, 'POST', `${A}/runs`, { token: tok('o.operator'), body: { request: REQUEST } });
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    runId = r.body.id;
    expect(runId).toMatch(/^run_[0-9a-f]{20}$/);
    expect(r.headers.get('location')).toBe(`${A}/runs/${runId}`);
    expect(r.body).toMatchObject({ tenant: 'acme-pharma', batch: 'B-1042', line: 'line-3', startedBy: 'o.operator', plan: { steps: 10, gates: 1 }, approvalGate: { reviewer: 'm.rossi' } });
    expect(r.body.steps.map((s: { seq: string }) => s.seq)).toEqual(['01', '02', '03', '04', '05', '06', '07', '08', '09', '10']);
    // the operator stays attended while the run goes on (R5), as the console would keep them
    presence = every(node.line!.clock, 5000, () => void call(url, 'POST', `${A}/attendance`, { token: tok('o.operator') }).catch(() => undefined));
    // the L3 agents keep the demo batch in specification; for an excursion, someone at the press's HMI sets the main
    // force to 15 kN once compression has started (test/helpers/disturb.ts)
    void disturbPress(node, 'acme-pharma', () => runId);
    const second = await call(url, 'POST', `${A}/runs`, { token: tok('p.bianchi'), body: { request: REQUEST } });
    expect(second.status).toBe(409);
    expect(second.body.code).toBe('LK_LINE_BUSY');
  });

  it('[R10] streams the tool calls as server-sent events; a reconnection with Last-Event-ID gets exactly what was missed', async () => {
    first = new SseReader(`${url}${A}/runs/${runId}/stream`, tok('p.bianchi'));
    await first.next(12);
    expect(first.status).toBe(200);
    first.abort();
    await first.done;
    cut = Number(first.events.at(-1)!.id);
    expect(cut).toBeGreaterThanOrEqual(12);
    // the run goes on while nobody listens; the reconnection names the last event it had
    second = new SseReader(`${url}${A}/runs/${runId}/stream`, tok('p.bianchi'), { 'last-event-id': String(cut) });
    await second.next(1);
    expect(Number(second.events[0]!.id)).toBe(cut + 1);
    expect(first.events.map((e) => Number(e.id))).toEqual(Array.from({ length: cut }, (_, i) => i + 1));
  });

  it('another tenant\'s people get 404 for this run, its stream, genealogy and approvals, never its data [R1]', async () => {
    for (const path of [`${A}/runs/${runId}`, `${B}/runs/${runId}`, `${B}/runs/${runId}/stream`, `${B}/runs/${runId}/genealogy`]) {
      const r = await call(url, 'GET', path, { token: tok('l.conti') });
      expect(r.status, path).toBe(404);
      expect(r.body.code).toBe('LK_NOT_FOUND');
      expect(JSON.stringify(r.body)).not.toContain('B-1042');
    }
    expect((await call(url, 'GET', `${B}/runs`, { token: tok('l.conti') })).body.items).toEqual([]);
    const listed = await call(url, 'GET', `${A}/runs`, { token: tok('a.ricci') });
    expect(listed.body.items.map((r: { id: string }) => r.id)).toEqual([runId]);
  });

  it('caps the event streams one person holds open (429), and frees a place when one closes', async () => {
    const open = Array.from({ length: 4 }, () => new SseReader(`${url}${A}/runs/${runId}/stream`, tok('a.ricci')));
    await Promise.all(open.map((s) => s.next(1)));
    const over = await call(url, 'GET', `${A}/runs/${runId}/stream`, { token: tok('a.ricci') });
    expect(over.status).toBe(429);
    expect(over.type).toMatch(/^application\/problem\+json/);
    expect(over.body.code).toBe('LK_TOO_MANY_STREAMS');
    const before = node.daemon.api!.streams.size;
    for (const s of open) s.abort();
    await Promise.all(open.map((s) => s.done));
    await until(async () => (node.daemon.api!.streams.size <= before - 4 ? true : undefined), 50);
  });

  it('[R3] [ERR-RELEASE-HELD] reaches the approval gate; the batch release waits for its named QA reviewer', async () => {
    await until(async () => {
      const r = await call(url, 'GET', `${A}/runs/${runId}`, { token: tok('m.rossi') });
      expect(['RUNNING', 'APPROVAL', 'PENDING'], JSON.stringify(r.body.reason)).toContain(r.body.status);
      return r.body.status === 'APPROVAL' ? true : undefined;
    }, 500);
    const list = await call(url, 'GET', `${A}/approvals`, { token: tok('m.rossi') });
    const gate = list.body.items.find((i: { kind: string }) => i.kind === 'batch_release');
    expect(gate).toMatchObject({ run: runId, batch: 'B-1042', reviewer: 'm.rossi', needs: 'qa' });
    expect(list.body.items.every((i: { batch: string | null }) => i.batch === 'B-1042')).toBe(true);
    // the other tenant's QA reviewer sees none of it, and cannot reach it by id
    expect((await call(url, 'GET', `${B}/approvals`, { token: tok('g.ferri') })).body.items).toEqual([]);
    const foreign = await call(url, 'POST', `${B}/approvals/${gate.id}`, { token: tok('g.ferri'), body: { decision: 'approve', meaning: 'QA release of batch B-1042', password: node.passwords.get('g.ferri') } });
    expect(foreign.status).toBe(404);
  });

  it('[P11.200] signs nothing on a wrong password (401), for the operator who started it, or for a QA reviewer the batch does not name', async () => {
    const gate = (await call(url, 'GET', `${A}/runs/${runId}`, { token: tok('m.rossi') })).body.approvalGate;
    const sign = (token: string, password: string, extra: Record<string, unknown> = {}) =>
      call(url, 'POST', `${A}/approvals/${gate.id}`, { token, body: { decision: 'approve', meaning: 'QA release of batch B-1042', password, ...extra } });

    const wrong = await sign(tok('m.rossi'), 'not her password');
    expect(wrong.status).toBe(401);
    expect(wrong.body.code).toBe('LK_REAUTH_FAILED');
    const starter = await sign(tok('o.operator'), node.passwords.get('o.operator')!);
    expect(starter.status).toBe(403);
    expect(starter.body.code).toBe('LK_FORBIDDEN');
    await addUser(node.daemon.identity!, { id: 'q.bruni', name: 'Quinto Bruni', role: 'qa_reviewer', tenants: ['acme-pharma'], password: 'another qa reviewer' }, 'd.marino', 'test account');
    const other = await sign(await signIn(url, 'q.bruni', 'another qa reviewer'), 'another qa reviewer');
    expect(other.status).toBe(403);
    expect(other.body.code).toBe('LK_APPROVAL_FORBIDDEN');
    // the signer is the signed-in identity, never a field of the body
    const named = await sign(tok('m.rossi'), node.passwords.get('m.rossi')!, { user: 'someone.else' });
    expect(named.status).toBe(400);
    expect(named.body.issues).toEqual([{ path: 'body.user', message: 'unknown field "user"' }]);

    const run = await call(url, 'GET', `${A}/runs/${runId}`, { token: tok('m.rossi') });
    expect(run.body.status).toBe('APPROVAL');
    expect(run.body.approvalGate.status).toBe('pending');
    const audit = queryAudit(node.daemon.store.db, 'site', { kind: 'identity' }, { limit: 1000 }).entries;
    expect(audit.find((e) => e.action === 'auth.failed' && (e.args as { approval?: string }).approval === gate.id)?.args).toMatchObject({ user: 'm.rossi', purpose: 'signature', why: 'bad_password' });
    expect(queryAudit(node.daemon.store.db, 'acme-pharma', { reviewer: 'q.bruni' }, { limit: 10 }).entries.map((e) => e.action)).toEqual(['approval.refused']);
  });

  it('while the run waits, its stream stays open with keep-alive comments (a second API on the same daemon, short keep-alive)', async () => {
    let extra: ApiServer | undefined;
    try {
      extra = await createApi({ daemon: node.daemon, clock: systemClock, users: node.daemon.identity!, streams: { keepAliveMs: 50 } });
      const at = await extra.listen('127.0.0.1', 0);
      const waiting = new SseReader(`${at}${A}/runs/${runId}/stream?after=1000000`, tok('p.bianchi'));
      await until(async () => (waiting.comments >= 2 ? true : undefined), 50);
      expect(waiting.events).toEqual([]);
      // stopping an API ends its open streams (the client reconnects with its Last-Event-ID) instead of hanging
      await extra.close();
      await waiting.done;
      expect(waiting.ended).toBe(true);
    } finally {
      await extra?.close();
    }
  });

  it('[A11.13] review by exception over REST: the run lists its exceptions and its specification table; the hardness excursion FAILs it, so the release is 409 LK_SPEC_FAILED before and after QA closes every exception, signed', async () => {
    const gate = (await call(url, 'GET', `${A}/runs/${runId}`, { token: tok('m.rossi') })).body.approvalGate;
    const list = await call(url, 'GET', `${A}/runs/${runId}/exceptions`, { token: tok('a.ricci') });
    expect(list.status, JSON.stringify(list.body)).toBe(200);
    expect(list.body.specTable.results).toHaveLength(11);
    const hardness = list.body.specTable.results.find((r: { id: string }) => r.id === 'hardness');
    expect(hardness.verdict, hardness.reason).toBe('FAIL');
    expect(hardness.reason).toMatch(/^\d+ of \d+ outside 80–150 N; worst \d+(\.\d+)? N$/);
    expect(list.body.specTable.verdict).toBe('FAIL');
    expect(list.body.items).toContainEqual(expect.objectContaining({ kind: 'SPEC_FAIL', severity: 'critical', status: 'open' }));
    expect(list.body.counts.blocking).toBeGreaterThan(0);
    expect((await call(url, 'GET', `${B}/runs/${runId}/exceptions`, { token: tok('g.ferri') })).status).toBe(404);
    const body = { decision: 'approve', meaning: 'QA release of batch B-1042', password: node.passwords.get('m.rossi') };
    const refused = await call(url, 'POST', `${A}/approvals/${gate.id}`, { token: tok('m.rossi'), body });
    expect([refused.status, refused.body.code]).toEqual([409, 'LK_SPEC_FAILED']);
    expect(refused.type).toMatch(/^application\/problem\+json/);
    expect(refused.body.detail).toContain('Hardness');
    expect(refused.body.detail).toMatch(/the decision left is a rejection$/);
    const first = list.body.items.find((e: { blocking: boolean }) => e.blocking) as { id: string };
    const close = (who: string, extra: Record<string, unknown> = {}) => call(url, 'POST', `${A}/exceptions/${first.id}/close`, { token: tok(who), body: { comment: 'investigated; the excursion tablets were segregated', deviation: 'DEV-2026-0142', password: node.passwords.get(who), ...extra } });
    // a wrong password closes nothing; a process engineer closes no major or critical exception; a field of another shape is a 400
    expect((await close('m.rossi', { password: 'not her password' })).body.code).toBe('LK_REAUTH_FAILED');
    expect((await close('p.bianchi')).body.code).toBe('LK_APPROVAL_FORBIDDEN');
    expect((await close('m.rossi', { deviation: 'DEV 42; drop table' })).body.code).toBe('LK_VALIDATION');
    expect((await call(url, 'GET', `${A}/runs/${runId}/exceptions`, { token: tok('m.rossi') })).body.items.find((e: { id: string }) => e.id === first.id).status).toBe('open');
    const ok = await close('m.rossi');
    expect(ok.status, JSON.stringify(ok.body)).toBe(200);
    expect(ok.body.exception).toMatchObject({ id: first.id, status: 'closed', closure: { user: 'm.rossi', deviation: 'DEV-2026-0142', signed: true } });
    expect((await close('m.rossi')).body.code).toBe('LK_EXCEPTION_CLOSED');
    expect(await closeOpenExceptionsOverApi(url, tok('m.rossi'), 'acme-pharma', runId, node.passwords.get('m.rossi')!)).toBe(list.body.counts.open - 1);
    expect((await call(url, 'GET', `${A}/runs/${runId}`, { token: tok('m.rossi') })).body.exceptions).toMatchObject({ open: 0, blocking: 0 });
    // closing an exception records its investigation; it does not make the data pass
    const still = await call(url, 'POST', `${A}/approvals/${gate.id}`, { token: tok('m.rossi'), body });
    expect([still.status, still.body.code]).toEqual([409, 'LK_SPEC_FAILED']);
    const run = await call(url, 'GET', `${A}/runs/${runId}`, { token: tok('m.rossi') });
    expect(run.body).toMatchObject({ status: 'APPROVAL', approvalGate: { status: 'pending', signature: null } });
  });

  it('[A11.9] the QA reviewer reviews the run\'s audit trail before deciding: GMP-relevant changes first, routine traffic counted; the review is a signature by a QA role only, over exactly the entries shown', async () => {
    const view = await call(url, 'GET', `${A}/audit/review?run=${runId}`, { token: tok('m.rossi') });
    expect(view.status, JSON.stringify(view.body)).toBe(200);
    expect(view.body).toMatchObject({ tenant: 'acme-pharma', scope: { run: runId }, batch: 'B-1042', truncated: false, reviews: [] });
    const cats: string[] = view.body.shown.map((s: { category: string }) => s.category);
    // the batch wrote setpoints and closed exceptions with signatures: those come first, the run's own state after
    expect(cats).toContain('signature');
    expect(cats).toContain('setpoint');
    expect(cats.indexOf('run')).toBeGreaterThan(cats.lastIndexOf('signature'));
    expect(view.body.shown.some((s: { entry: { action: string } }) => s.entry.action === 'press.read_force_curve')).toBe(false);
    expect(view.body.routine['press.read_force_curve']).toBeGreaterThan(0);
    const total = Object.values(view.body.counts as Record<string, number>).reduce((a, b) => a + b, 0);
    expect(total).toBe(view.body.entries);
    // not another tenant's run; not both a run and a period; an auditor reads it but signs no review
    expect((await call(url, 'GET', `${B}/audit/review?run=${runId}`, { token: tok('g.ferri') })).status).toBe(404);
    expect((await call(url, 'GET', `${A}/audit/review?run=${runId}&from=2026-01-01T00:00:00Z`, { token: tok('m.rossi') })).body.code).toBe('LK_VALIDATION');
    expect((await call(url, 'GET', `${A}/audit/review?run=${runId}`, { token: tok('a.ricci') })).status).toBe(200);
    const sign = (who: string, extra: Record<string, unknown> = {}) => call(url, 'POST', `${A}/audit/reviews`, { token: tok(who), body: { run: runId, comment: 'trail reviewed with the batch record; the hardness excursion is covered by DEV-2026-0142', password: node.passwords.get(who), ...extra } });
    expect((await sign('a.ricci')).body.code).toBe('LK_APPROVAL_FORBIDDEN');
    expect((await sign('p.bianchi')).body.code).toBe('LK_APPROVAL_FORBIDDEN');
    expect((await sign('m.rossi', { password: 'not her password' })).body.code).toBe('LK_REAUTH_FAILED');
    expect((await sign('m.rossi', { comment: '' })).body.code).toBe('LK_VALIDATION');
    expect((await call(url, 'GET', `${A}/audit/reviews?run=${runId}`, { token: tok('m.rossi') })).body.items).toEqual([]);
    // the refusals above named the run, so the trail in scope grew since it was read: signing what was read
    // (through its last entry, with its digest) binds exactly that; a digest of something else is refused
    expect((await sign('m.rossi', { through: view.body.last, digest: '0'.repeat(64) })).body.code).toBe('LK_CONFLICT');
    const r = await sign('m.rossi', { through: view.body.last, digest: view.body.digest });
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    expect(r.body.record).toMatchObject({
      kind: 'audit_trail_review', scope: { run: runId }, batch: 'B-1042', user: 'm.rossi', name: 'Maria Rossi', role: 'qa_reviewer',
      meaning: `Audit trail of batch B-1042, run ${runId} reviewed (EU GMP Annex 11 §9)`, digest: view.body.digest, entries: view.body.entries, last: view.body.last,
    });
    expect(verifyTrailReview(loadSitePublicKey(node.daemon.loaded.dataDir), r.body)).toBe(true);
    // recorded as a signed entry naming the run and the reviewer; refusals are on the trail too
    const recorded = queryAudit(node.daemon.store.db, 'acme-pharma', { run: runId, kind: 'audit_review' }, { limit: 10 }).entries;
    expect(recorded.map((e) => [e.seq, e.actor, e.signature?.value])).toEqual([[r.body.seq, 'm.rossi', r.body.signature]]);
    expect(queryAudit(node.daemon.store.db, 'acme-pharma', { reviewer: 'p.bianchi', kind: 'approval' }, { limit: 50 }).entries.map((e) => e.action)).toContain('audit.review_refused');
    const listed = await call(url, 'GET', `${A}/audit/reviews?run=${runId}`, { token: tok('a.ricci') });
    expect(listed.body.items.map((i: { seq: number }) => i.seq)).toEqual([r.body.seq]);
  });

  it('[P11.50] [A11.14] the named QA reviewer rejects it with the password: identity, meaning, time, a signature that verifies; once', async () => {
    const gate = (await call(url, 'GET', `${A}/runs/${runId}`, { token: tok('m.rossi') })).body.approvalGate;
    const body = { decision: 'reject', meaning: 'QA rejection of batch B-1042', comment: 'hardness out of specification', password: node.passwords.get('m.rossi') };
    const r = await call(url, 'POST', `${A}/approvals/${gate.id}`, { token: tok('m.rossi'), body });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body).toMatchObject({ approval: gate.id, run: runId, batch: 'B-1042', user: 'm.rossi', name: 'Maria Rossi', role: 'qa_reviewer', decision: 'reject', meaning: body.meaning, meaningId: 'qa-rejection', comment: body.comment });
    expect(verifySignature(loadSitePublicKey(node.daemon.loaded.dataDir), r.body as Signature)).toBe(true);
    const again = await call(url, 'POST', `${A}/approvals/${gate.id}`, { token: tok('m.rossi'), body });
    expect(again.status).toBe(409);
    expect(again.body.code).toBe('LK_APPROVAL_DECIDED');
  });

  it('[R10] the run completes REJECTED; the stream ends with `end`; the two streams together are the whole log, in order, without gap or duplicate', async () => {
    await second.done;
    expect(second.events.at(-1)).toMatchObject({ event: 'end' });
    expect(JSON.parse(second.events.at(-1)!.data)).toEqual({ run: runId, status: 'REJECTED' });
    const seen = [...lines(first.events), ...lines(second.events)];
    const stored = node.daemon.engine.toolCalls('acme-pharma', runId);
    expect(seen.map((l) => l.sseId)).toEqual(stored.map((s) => s.id));
    expect(seen.map((l) => l.id)).toEqual(stored.map((s) => s.id));
    // call and its result alternate, each event named by its kind
    for (let i = 0; i < seen.length; i++) {
      const l = seen[i]!;
      expect(l.event).toBe(l.kind);
      if (i % 2 === 0) expect(l.kind, `line ${l.id}`).toBe('call');
      else {
        expect(['ok', 'error'], `line ${l.id}`).toContain(l.kind);
        expect(l.tool).toBe(seen[i - 1]!.tool);
      }
    }
    expect(seen.map((l) => l.tool)).toContain('twin.simulate');
    const release = seen.filter((l) => l.tool === 'approval.request');
    expect(release.map((l) => l.kind)).toEqual(['call', 'ok']);
    expect(release[1]!.summary).toMatch(/rejected by Maria Rossi \(m\.rossi\)/);

    const run = await call(url, 'GET', `${A}/runs/${runId}`, { token: tok('o.operator') });
    expect(run.body.status).toBe('REJECTED');
    expect(run.body.steps.map((s: { status: string }) => s.status)).toEqual([...Array(8).fill('SUCCEEDED'), 'REJECTED', 'SKIPPED']);
    expect(run.body.approvalGate).toMatchObject({ status: 'rejected', signature: { user: 'm.rossi', decision: 'reject' } });
  });

  it('a finished run replays from ?after= (or Last-Event-ID, which wins) and ends at once', async () => {
    const total = node.daemon.engine.toolCalls('acme-pharma', runId).length;
    const after = new SseReader(`${url}${A}/runs/${runId}/stream?after=5`, tok('a.ricci'));
    await after.done;
    expect(lines(after.events).map((l) => l.id)).toEqual(Array.from({ length: total - 5 }, (_, i) => i + 6));
    expect(after.events.at(-1)!.event).toBe('end');
    const header = new SseReader(`${url}${A}/runs/${runId}/stream?after=1`, tok('a.ricci'), { 'last-event-id': String(total - 2) });
    await header.done;
    expect(lines(header.events).map((l) => l.id)).toEqual([total - 1, total]);
  });

  it('GET /runs/{id}/genealogy returns the time-aligned events with the signature and the release package', async () => {
    const g = await call(url, 'GET', `${A}/runs/${runId}/genealogy`, { token: tok('a.ricci') });
    expect(g.status).toBe(200);
    expect(g.body).toMatchObject({ run: runId, batch: 'B-1042', status: 'REJECTED' });
    expect(g.body.events.length).toBeGreaterThan(10);
    const ats = g.body.events.map((e: { at: string }) => Date.parse(e.at));
    expect(ats).toEqual([...ats].sort((x, y) => x - y));
    expect(g.body.events.some((e: { kind: string; summary: string }) => e.kind === 'approval' && e.summary.includes('m.rossi'))).toBe(true);
    expect(g.body.release).toMatchObject({ json: `${A}/runs/${runId}/release?file=json`, pdf: `${A}/runs/${runId}/release?file=pdf` });
    const audit = await call(url, 'GET', `${A}/audit?run=${runId}&reviewer=m.rossi`, { token: tok('a.ricci') });
    expect(audit.body.items.map((e: { action: string }) => e.action)).toContain('approval.decide');
  });

  it('[A11.9] the package states that the run\'s trail was reviewed, by whom, and which entries the review covered', async () => {
    const rel = await call(url, 'GET', `${A}/runs/${runId}/release?file=json`, { token: tok('a.ricci') });
    expect(rel.status).toBe(200);
    const review = (await call(url, 'GET', `${A}/audit/reviews?run=${runId}`, { token: tok('a.ricci') })).body.items[0];
    const tr = rel.body.input.trailReview;
    expect(tr).toMatchObject({ reviewed: true, reviews: [{ seq: review.seq, user: 'm.rossi', name: 'Maria Rossi', digest: review.record.digest, signature: review.signature }] });
    expect(tr.statement).toContain(`reviewed by Maria Rossi (m.rossi, qa_reviewer)`);
    expect(tr.statement).toContain(`Entries after #${review.record.last}`);
  });
});
