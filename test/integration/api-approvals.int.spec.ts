/**
 * Deciding pending setpoint writes through POST /approvals/{id}, over real HTTP against a real daemon: the
 * guarded writer itself queues each write from a proposal run through the real policy (a move beyond the
 * design space waits for QA, an L2 move for the batch's reviewer) on a run persisted as the engine starts one,
 * and the signed-in person approves or rejects it with their password. `needs_qa` only by a QA reviewer, an L2
 * review by the batch's assigned reviewer or QA, never by whoever started the run — each refusal before the
 * password is even checked, and audited; the signature binds to the exact vector hash and verifies with the
 * site key; the write then reaches the simulator through the writer, or nothing moves. Batch releases keep
 * their rules on the same route.
 */
import { mkdirSync, readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { limsResultsDir } from '../../connectors/lims/index.js';
import { setAutonomy } from '../../src/store/autonomy-store.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadSitePublicKey, queryAudit } from '../../src/audit/index.js';
import { verifySignature, type Signature } from '../../src/engine/run/approval.js';
import type { PendingWrite } from '../../src/engine/guarded-writer.js';
import type { RunRecord } from '../../src/store/run-store.js';
import { closeOpenExceptions } from '../helpers/exceptions.js';
import { call, signIn, startApiNode, type ApiNode, type Reply } from '../helpers/api.js';
import { queueWrite, seedGate, seedRun, setStatus } from '../helpers/api-seed.js';
import { addUser } from '../helpers/users.js';

const A = '/v1/tenants/acme-pharma';
const B = '/v1/tenants/borealis-bio';
let node: ApiNode;
const tokens = new Map<string, string>();
const passwords = new Map<string, string>();
const tok = (u: string): string => tokens.get(u)!;
let runA: RunRecord;

const plant = (sp: string): number => {
  const [eq, tag] = sp.split('.') as [string, string];
  return node.plant.setpoints(eq)[tag]!;
};
/** The built-in meaning of the act and decision (signature meanings: src/domain/signature-meanings.ts), unless the test names one. */
const builtIn = (id: string, decision: unknown): string => (id.startsWith('apr_') ? (decision === 'reject' ? 'qa-rejection' : 'qa-release') : decision === 'reject' ? 'move-rejection' : 'move-approval');
const decide = (who: string, id: string, body: Record<string, unknown>, base = A): Promise<Reply> =>
  call(node.url, 'POST', `${base}/approvals/${id}`, { token: tok(who), body: { decision: 'approve', meaning: builtIn(id, body['decision']), password: passwords.get(who), ...body } });
const audit = (filter: Record<string, string>) => queryAudit(node.daemon.store.db, 'acme-pharma', filter, { limit: 1000 }).entries;
const site = () => queryAudit(node.daemon.store.db, 'site', { kind: 'identity' }, { limit: 1000 }).entries;
/** Re-authentications (good or bad) about this approval on the site chain. */
const reauths = (id: string) => site().filter((e) => (e.args as { approval?: string }).approval === id).map((e) => `${e.action} ${(e.args as { user: string }).user}`);
const stillPending = (id: string): boolean => node.daemon.writer.pending().some((w) => w.id === id);
/** An operator present at the line, so an L2 move can be queued and executed (R5). */
const present = () => call(node.url, 'POST', `${A}/attendance`, { token: tok('o.operator') });

beforeAll(async () => {
  node = await startApiNode({ memory: true });
  for (const [id, pw] of node.passwords) passwords.set(id, pw);
  const identity = node.daemon.identity!;
  await addUser(identity, { id: 'r.verdi', name: 'Rita Verdi', role: 'process_engineer', tenants: ['acme-pharma'], password: 'process engineer two' }, 'd.marino', 'test account');
  passwords.set('r.verdi', 'process engineer two');
  for (const u of ['o.operator', 'p.bianchi', 'm.rossi', 'g.ferri', 'a.ricci', 'r.verdi']) tokens.set(u, await signIn(node.url, u, passwords.get(u)!));
  // started by the batch's own reviewer, p.bianchi (a process engineer may start runs)
  runA = seedRun(node.daemon, { tenant: 'acme-pharma', batch: 'B-1042', by: 'p.bianchi' });
}, 120_000);
afterAll(async () => {
  await node?.close();
});

describe('a write beyond the design space waits for QA', () => {
  let w: PendingWrite;

  it('[R4] [ERR-OUTSIDE-DESIGN-SPACE] is listed with its vector hash; refused to a process engineer and to another tenant before any password is checked', async () => {
    w = await queueWrite(node.daemon, { run: runA, agent: 'agent.coat_dry', setpoint: 'coater.PanSpeed', from: 14, to: 14.5, unit: '{rev}/min' });
    expect(w).toMatchObject({ needs: 'qa' });
    expect(w.id).toMatch(/^pw_/);
    const list = await call(node.url, 'GET', `${A}/approvals`, { token: tok('m.rossi') });
    expect(list.body.items).toContainEqual(expect.objectContaining({ id: w.id, kind: 'setpoint_write', run: runA.id, batch: 'B-1042', needs: 'qa', recordHash: w.vectorHash }));

    const pe = await decide('p.bianchi', w.id, { recordHash: w.vectorHash });
    expect(pe.status).toBe(403);
    expect(pe.body.code).toBe('LK_APPROVAL_FORBIDDEN');
    expect(audit({ reviewer: 'p.bianchi' }).map((e) => e.action)).toEqual(['approval.refused']);
    for (const [who, base] of [['g.ferri', A], ['g.ferri', B]] as const) {
      const other = await decide(who, w.id, { recordHash: w.vectorHash }, base);
      expect(other.status).toBe(404);
      expect(JSON.stringify(other.body)).not.toContain('B-1042');
    }
    expect(reauths(w.id)).toEqual([]);
    expect(stillPending(w.id)).toBe(true);
    expect(plant('coater.PanSpeed')).toBe(14);
  });

  it('[R4] [P11.200] a QA reviewer must name the vector they saw, and give their own password; nothing moves until then', async () => {
    const none = await decide('m.rossi', w.id, {});
    expect(none.status).toBe(400);
    expect(none.body.issues).toEqual([{ path: 'body.recordHash', message: 'required for a setpoint write' }]);
    const stale = await decide('m.rossi', w.id, { recordHash: '0'.repeat(64) });
    expect(stale.status).toBe(409);
    expect(stale.body.code).toBe('LK_APPROVAL_STALE');
    const wrong = await decide('m.rossi', w.id, { recordHash: w.vectorHash, password: 'not her password' });
    expect(wrong.status).toBe(401);
    expect(wrong.body.code).toBe('LK_REAUTH_FAILED');
    expect(reauths(w.id)).toEqual(['auth.failed m.rossi']);
    expect(stillPending(w.id)).toBe(true);
    expect(plant('coater.PanSpeed')).toBe(14);
  });

  it('[R4] [ERR-OUTSIDE-DESIGN-SPACE] [P11.70] the QA reviewer approves: a signature bound to the vector that verifies, audited before the write, and the writer writes it', async () => {
    await present();
    const r = await decide('m.rossi', w.id, { recordHash: w.vectorHash });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body).toMatchObject({ kind: 'setpoint_write', outcome: { status: 'written', vectorHash: w.vectorHash } });
    expect(r.body.outcome.reasons).toContain('QA_APPROVED');
    const sig = r.body.signature as Signature;
    expect(sig).toMatchObject({ approval: w.id, run: runA.id, tenant: 'acme-pharma', batch: 'B-1042', recordHash: w.vectorHash, user: 'm.rossi', role: 'qa_reviewer', decision: 'approve' });
    expect(verifySignature(loadSitePublicKey(node.daemon.loaded.dataDir), sig)).toBe(true);
    expect(verifySignature(loadSitePublicKey(node.daemon.loaded.dataDir), { ...sig, recordHash: '0'.repeat(64) })).toBe(false);
    expect(plant('coater.PanSpeed')).toBe(14.5);
    expect(stillPending(w.id)).toBe(false);

    const trail = audit({ run: runA.id });
    const signed = trail.find((e) => e.action === 'setpoint.sign' && (e.args as { approval: string }).approval === w.id)!;
    expect(signed).toMatchObject({ actor: 'm.rossi', subject: { setpoint: 'coater.PanSpeed' }, signature: { user: 'm.rossi', meaning: 'approve: Approval of setpoint change for batch B-1042', value: sig.signature }, args: { meaningId: 'move-approval' } });
    expect(sig).toMatchObject({ meaning: 'Approval of setpoint change for batch B-1042', meaningId: 'move-approval' });
    const approved = trail.find((e) => e.action === 'setpoint.approve' && (e.args as { pendingId: string }).pendingId === w.id)!;
    const written = trail.find((e) => e.action === 'setpoint.write' && e.kind === 'intent' && e.subject.setpoint === 'coater.PanSpeed')!;
    expect(approved.actor).toBe('m.rossi');
    expect(signed.seq).toBeLessThan(approved.seq);
    expect(approved.seq).toBeLessThan(written.seq);
    expect(reauths(w.id)).toEqual(['auth.failed m.rossi', 'auth.reauthenticated m.rossi']);
    // decided: nothing of that id waits any more
    expect((await decide('m.rossi', w.id, { recordHash: w.vectorHash })).status).toBe(404);
  });

  it('the QA reviewer rejects another: signed and audited with its meaning, nothing written', async () => {
    const w2 = await queueWrite(node.daemon, { run: runA, agent: 'agent.coat_dry', setpoint: 'coater.SprayRate', from: 220, to: 225, unit: 'g/min' });
    const r = await decide('m.rossi', w2.id, { decision: 'reject', meaning: 'move-rejection', comment: 'spray rate stays inside the approved space', recordHash: w2.vectorHash });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body).toMatchObject({ outcome: { status: 'rejected' }, signature: { decision: 'reject', recordHash: w2.vectorHash } });
    expect(plant('coater.SprayRate')).toBe(220);
    expect(stillPending(w2.id)).toBe(false);
    const about = (e: { args?: unknown }): string | undefined => (e.args as { approval?: string; pendingId?: string }).approval ?? (e.args as { pendingId?: string }).pendingId;
    const rejected = audit({ run: runA.id }).filter((e) => ['setpoint.reject', 'setpoint.sign'].includes(e.action) && about(e) === w2.id);
    expect(rejected.map((e) => [e.action, e.actor])).toEqual([['setpoint.sign', 'm.rossi'], ['setpoint.reject', 'm.rossi']]);
    expect(rejected[1]!.reason).toBe('Rejection of setpoint change for batch B-1042: spray rate stays inside the approved space');
    expect(rejected[0]!.args).toMatchObject({ meaningId: 'move-rejection', comment: 'spray rate stays inside the approved space' });
    expect(audit({ setpoint: 'coater.SprayRate' }).some((e) => e.action === 'setpoint.write')).toBe(false);
  });
});

describe('an L2 move waits for the batch\'s reviewer', () => {
  it('[P11.10(g)] never the person who started the run, even as the assigned reviewer; nor another process engineer; QA may', async () => {
    await present();
    const w = await queueWrite(node.daemon, { run: runA, agent: 'agent.coat_dry', setpoint: 'coater.InletAirTemp', from: 60, to: 61, unit: 'Cel' });
    expect(w.needs).toBe('reviewer');
    const starter = await decide('p.bianchi', w.id, { recordHash: w.vectorHash, meaning: 'reviewed the inlet move' });
    expect(starter.status).toBe(403);
    expect(starter.body.code).toBe('LK_APPROVAL_FORBIDDEN');
    expect(starter.body.detail).toMatch(/started run/);
    const notAssigned = await decide('r.verdi', w.id, { recordHash: w.vectorHash, meaning: 'reviewed the inlet move' });
    expect(notAssigned.status).toBe(403);
    expect(notAssigned.body.detail).toMatch(/names p\.bianchi/);
    expect(reauths(w.id)).toEqual([]);
    expect(plant('coater.InletAirTemp')).toBe(60);
    const qa = await decide('m.rossi', w.id, { recordHash: w.vectorHash });
    expect(qa.body).toMatchObject({ outcome: { status: 'written' }, signature: { user: 'm.rossi' } });
    expect(plant('coater.InletAirTemp')).toBe(61);
  });

  it('the assigned reviewer approves a run someone else started', async () => {
    setStatus(node.daemon, runA.id, 'FAILED', 'test: the next run');
    const runB = seedRun(node.daemon, { tenant: 'acme-pharma', batch: 'B-1042', by: 'o.operator' });
    await present();
    // the bundle has coat_dry at L3 (CC-2026-0219); the site puts it back to L2 (lowering needs no role), so its
    // airflow move, low-risk and inside the design space, waits for the batch's reviewer
    setAutonomy(node.daemon.store, node.daemon.policy.bundle!, { tenant: 'acme-pharma', agent: 'agent.coat_dry', to: 'L2', by: { person: 'p.bianchi', role: 'process_engineer' }, reason: 'coating moves reviewed for this campaign' });
    const w = await queueWrite(node.daemon, { run: runB, agent: 'agent.coat_dry', setpoint: 'coater.Airflow', from: 1500, to: 1600, unit: 'm3/h' });
    expect(w.needs).toBe('reviewer');
    const r = await decide('p.bianchi', w.id, { recordHash: w.vectorHash, comment: 'reviewed the airflow move' });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body).toMatchObject({ outcome: { status: 'written' }, signature: { user: 'p.bianchi', role: 'process_engineer', run: runB.id } });
    expect(r.body.outcome.reasons).toContain('REVIEWER_APPROVED');
    expect(plant('coater.Airflow')).toBe(1600);
  });
});

describe('a batch release on the same route', () => {
  it('[R3] is the named QA reviewer\'s: a process engineer is refused before the password, a record hash given must be the record\'s', async () => {
    const runs = node.daemon.engine.list('acme-pharma', 1);
    const gate = seedGate(node.daemon, runs[0]!.id);
    const pe = await decide('p.bianchi', gate.id, { meaning: 'release of B-1042' });
    expect(pe.status).toBe(403);
    expect(pe.body.code).toBe('LK_APPROVAL_FORBIDDEN');
    expect(reauths(gate.id)).toEqual([]);
    const stale = await decide('m.rossi', gate.id, { meaning: 'QA release of batch B-1042', recordHash: 'f'.repeat(64) });
    expect(stale.body.code).toBe('LK_APPROVAL_STALE');
    // the run's exceptions (its press samples left their limits) block the release until QA closes them
    if (node.daemon.engine.exceptions.blocking(runs[0]!.id).length > 0) {
      expect((await decide('m.rossi', gate.id, { meaning: 'QA release of batch B-1042', recordHash: gate.recordHash })).body.code).toBe('LK_EXCEPTIONS_OPEN');
    }
    closeOpenExceptions(node.daemon.engine, 'acme-pharma', runs[0]!.id);
    const r = await decide('m.rossi', gate.id, { meaning: 'QA release of batch B-1042', recordHash: gate.recordHash });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body).toMatchObject({ approval: gate.id, user: 'm.rossi', decision: 'approve', recordHash: gate.recordHash });
    expect(verifySignature(loadSitePublicKey(node.daemon.loaded.dataDir), r.body as Signature)).toBe(true);
  });
});

describe('a LIMS result that arrives while a batch release waits', () => {
  it('is judged at the decision: a new passing result asks QA to review the changed table (LK_SPEC_CHANGED), a failing one refuses the release (LK_SPEC_FAILED, SPEC_FAIL raised); nothing is signed until the rejection', async () => {
    // the line is freed first: the run of the tests above ends (one active run per line)
    for (const r of node.daemon.engine.list('acme-pharma', 10)) if (!['SUCCEEDED', 'REJECTED', 'ABORTED', 'FAILED'].includes(r.status)) setStatus(node.daemon, r.id, 'REJECTED', 'test: the line is free for the next run');
    const run = seedRun(node.daemon, { tenant: 'acme-pharma', batch: 'B-1042', by: 'p.bianchi' });
    const gate = seedGate(node.daemon, run.id);
    const quality = () => node.daemon.engine.runs.runById(run.id)!.data['quality'] as { specTable: { verdict: string; sha256: string; results: { id: string; verdict: string }[] } };
    const dissolution = () => quality().specTable.results.find((r) => r.id === 'dissolution')!.verdict;
    expect([quality().specTable.verdict, dissolution()]).toEqual(['INCOMPLETE', 'NOT_EVALUATED']);
    const dir = join(limsResultsDir(node.daemon.loaded.dataDir), 'acme-pharma');
    mkdirSync(dir, { recursive: true });
    const lims = (name: string, result: number, ref: string) => {
      const body = { format: 1, batch: 'B-1042', tenant: 'acme-pharma', test: 'dissolution', result, unit: '%', specification: 'Q = 80 % at 30 min', status: 'pass', analyst: 'a.verdi', reviewed_by: 's.neri', reported_at: new Date().toISOString(), lims_ref: ref };
      writeFileSync(join(dir, `.${name}.tmp`), JSON.stringify(body));
      renameSync(join(dir, `.${name}.tmp`), join(dir, name));
    };
    const release = () => decide('m.rossi', gate.id, { meaning: 'QA release of batch B-1042', recordHash: gate.recordHash });
    const signed = () => audit({ reviewer: 'm.rossi' }).filter((e) => e.action === 'approval.decide' && (e.args as { approval: string }).approval === gate.id);

    lims('dissolution-1.json', 88, 'LIMS-D-7001');
    const changed = await release();
    expect([changed.status, changed.body.code], JSON.stringify(changed.body)).toEqual([409, 'LK_SPEC_CHANGED']);
    expect(dissolution()).toBe('PASS');
    expect(node.daemon.engine.runs.events(run.id).filter((e) => e.kind === 'qc').map((e) => e.summary)).toEqual([expect.stringMatching(/^specifications judged again at the release decision: INCOMPLETE .*was INCOMPLETE$/)]);

    lims('dissolution-2.json', 71, 'LIMS-D-7002');
    const failed = await release();
    expect([failed.status, failed.body.code]).toEqual([409, 'LK_SPEC_FAILED']);
    expect(failed.body.detail).toContain('LIMS-D-7002: 71 % < Q 80 %');
    expect([quality().specTable.verdict, dissolution()]).toEqual(['FAIL', 'FAIL']);
    const raised = node.daemon.engine.exceptions.ofRun(run.id).filter((e) => e.kind === 'SPEC_FAIL');
    expect(raised.map((e) => [e.key, e.severity, e.status, e.step])).toEqual([['SPEC_FAIL:dissolution', 'critical', 'open', '09 approval.batch_release']]);
    // the same again: refused, nothing raised twice
    expect((await release()).body.code).toBe('LK_SPEC_FAILED');
    expect(node.daemon.engine.exceptions.ofRun(run.id).filter((e) => e.kind === 'SPEC_FAIL')).toHaveLength(1);
    expect(signed()).toEqual([]);
    expect(node.daemon.engine.runs.approval('acme-pharma', gate.id)!.status).toBe('pending');

    const reject = await decide('m.rossi', gate.id, { decision: 'reject', meaning: 'QA rejection of batch B-1042', comment: 'dissolution LIMS-D-7002 below Q', recordHash: gate.recordHash });
    expect(reject.status, JSON.stringify(reject.body)).toBe(200);
    expect(signed()).toHaveLength(1);
    for (const f of readdirSync(dir)) rmSync(join(dir, f));
  });
});

describe('a LIMS result that arrives after the batch was released', () => {
  it('[INV-RELEASE-EXCEPTIONS] is judged against the released batch: a passing one only updates its table; a failing one is a critical SPEC_FAIL of the run, "after release", for QA; the signed release stays as it was', async () => {
    for (const r of node.daemon.engine.list('acme-pharma', 10)) if (!['SUCCEEDED', 'REJECTED', 'ABORTED', 'FAILED'].includes(r.status)) setStatus(node.daemon, r.id, 'REJECTED', 'test: the line is free for the next run');
    const run = seedRun(node.daemon, { tenant: 'acme-pharma', batch: 'B-1042', by: 'p.bianchi' });
    const gate = seedGate(node.daemon, run.id);
    const quality = () => node.daemon.engine.runs.runById(run.id)!.data['quality'] as { specTable: { verdict: string; results: { id: string; verdict: string }[] } };
    const dissolution = () => quality().specTable.results.find((r) => r.id === 'dissolution')!.verdict;
    // released with dissolution pending (an INCOMPLETE table, as the site's procedure may allow)
    const released = await decide('m.rossi', gate.id, { meaning: 'QA release of batch B-1042', comment: 'dissolution pending', recordHash: gate.recordHash });
    expect(released.status, JSON.stringify(released.body)).toBe(200);
    expect(node.daemon.engine.runs.approval('acme-pharma', gate.id)!.status).toBe('approved');
    expect(dissolution()).toBe('NOT_EVALUATED');
    const afterRelease = () => node.daemon.engine.runs.events(run.id).filter((e) => e.kind === 'qc' && /after the release/.test(e.summary));
    const specFails = () => node.daemon.engine.exceptions.ofRun(run.id).filter((e) => e.kind === 'SPEC_FAIL');

    const dir = join(limsResultsDir(node.daemon.loaded.dataDir), 'acme-pharma');
    mkdirSync(dir, { recursive: true });
    const lims = (name: string, result: number, status: 'pass' | 'fail', ref: string) => {
      const body = { format: 1, batch: 'B-1042', tenant: 'acme-pharma', test: 'dissolution', result, unit: '%', specification: 'Q = 80 % at 30 min', status, analyst: 'a.verdi', reviewed_by: 's.neri', reported_at: new Date().toISOString(), lims_ref: ref };
      writeFileSync(join(dir, `.${name}.tmp`), JSON.stringify(body));
      renameSync(join(dir, `.${name}.tmp`), join(dir, name));
    };
    // the daemon watches the results folder: a passing result is judged against the released batch, raises nothing
    lims('dissolution-after-1.json', 88, 'pass', 'LIMS-D-7101');
    await expect.poll(() => afterRelease().length, { timeout: 30_000 }).toBe(1);
    expect(dissolution()).toBe('PASS');
    expect(specFails()).toEqual([]);
    // a failing one: a critical exception of the released run, open, for QA; nothing about the release changes
    lims('dissolution-after-2.json', 71, 'fail', 'LIMS-D-7102');
    await expect.poll(() => specFails().length, { timeout: 30_000 }).toBe(1);
    expect(specFails().map((e) => [e.key, e.severity, e.status])).toEqual([['SPEC_FAIL:dissolution', 'critical', 'open']]);
    expect(specFails()[0]!.title).toMatch(/^after release: SPEC_FAIL Dissolution: LIMS-D-7102: .*71 %/);
    expect(afterRelease().at(-1)!.summary).toMatch(/: FAIL .*was INCOMPLETE when released$/);
    expect([quality().specTable.verdict, dissolution()]).toEqual(['FAIL', 'FAIL']);
    expect(node.daemon.engine.runs.approval('acme-pharma', gate.id)!.status).toBe('approved');
    expect(audit({ action: 'exception.raise', run: run.id }).length).toBeGreaterThanOrEqual(1);
    for (const f of readdirSync(dir)) rmSync(join(dir, f));
  });
});
