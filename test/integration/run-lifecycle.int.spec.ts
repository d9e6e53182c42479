/**
 * Every state a run can stop in has a way out a named person takes, over the REST API of a real daemon on the
 * embedded simulator: a record naming an auditor as QA is refused at intake; a run held by a model loss raises
 * RUN_HELD and is resumed by a process engineer (the step runs again, the run reaches its gate); its QA reviewer
 * is reassigned (refused when the target is an auditor); the run at its gate is aborted (the gate withdrawn and
 * no longer signable); a run aborted mid-compression ends ABORTED with every PLC on its last known-good recipe
 * as the simulator reads it back, a "not a release" package, and its line free for the next run, whose QA
 * reviewer an administrator reassigns before its gate (the gate then waits for the new reviewer).
 *
 * The daemon runs on virtual time paced at TEST_PACE (50) times the wall clock (test/helpers/virtual-line.ts); the test waits
 * and keeps the operator present on the virtual clock.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadSitePublicKey } from '../../src/audit/index.js';
import { verifySignature, type ActSignature } from '../../src/engine/run/approval.js';
import { every } from '../../src/clock.js';
import { artefactFile } from '../../src/models/registry.js';
import { LinekeeperClient, LinekeeperError } from '../../src/sdk/index.js';
import { call, signIn, startApiNode, type ApiNode } from '../helpers/api.js';
import { TEST_PACE } from '../helpers/virtual-line.js';
import { flat, pdfPages } from '../helpers/pdf-text.js';
import { auditOfRun, toolLogOf } from '../helpers/run-site.js';
import { addUser } from '../helpers/users.js';

const T = 'acme-pharma';
const A = `/v1/tenants/${T}`;
const PLCS = ['blender', 'fluidbed', 'press', 'coater', 'nir', 'vision', 'plc'];
const request = (batch: string): string => `run batch ${batch} on line-3, keep weight and hardness on target`;
let node: ApiNode;
let url: string;
const tokens = new Map<string, string>();
const tok = (u: string): string => tokens.get(u)!;
const pw = (u: string): string => u === 'q.russo' ? 'q.russo-Passw0rd-for-tests' : node.passwords.get(u)!;
let presence: (() => void) | undefined;
let paced: (() => Promise<void>) | undefined;

/**
 * Poll an async probe every `everyMs` of virtual time until it is truthy; the deadline (four virtual hours) only
 * turns a hang into a readable failure (no timing is asserted).
 */
async function waitFor<T>(what: string, fn: () => Promise<T | null | undefined | false>, everyMs = 200): Promise<T> {
  const line = node.line!;
  const deadline = line.clock.now() + 4 * 3_600_000;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (line.clock.now() > deadline) throw new Error(`${what}: not reached in four virtual hours`);
    await line.advance(everyMs);
  }
}
/**
 * Re-arm every PLC as a person at the HMI would. The simulated watchdog accepts it only with a heartbeat inside its
 * time-out on the scaled clock, which a loaded machine can miss at one instant: asked again until it holds.
 */
async function rearmAll(): Promise<void> {
  const plant = node.line!.plant;
  for (const eq of PLCS) {
    await waitFor(`${eq} to re-arm`, async () => {
      try {
        plant.setSupervisorState(eq, 'ATTENDED');
      } catch (err) {
        if ((err as { code?: string }).code !== 'LK_PLC_NO_HEARTBEAT') throw err;
      }
      return plant.supervisor(eq).state === 'ATTENDED';
    }, 20);
  }
  // the daemon reads the PLCs' states from its subscriptions: wait until it sees every PLC supervised again (a held
  // run may still keep the line busy: that one a person resumes or aborts)
  await waitFor('the daemon to see every PLC supervised', async () => {
    const r = (await call(url, 'GET', `${A}/line/readiness`, { token: tok('p.bianchi') })).body as { reasons: { code: string }[] };
    return r.reasons.every((x) => x.code === 'LINE_BUSY');
  }, 100);
}
const auditOf = (run: string) => [...auditOfRun(node.daemon.store, T, run).values()];

const view = async (id: string): Promise<{ status: string; steps: { seq: string; name: string; status: string; attempt: number; detail: string }[]; approvalGate: { id: string | null; status: string; reviewer: string | null }; reason: string | null; release: { json: string; pdf: string } | null }> =>
  (await call(url, 'GET', `${A}/runs/${id}`, { token: tok('a.ricci') })).body;
const step = (v: Awaited<ReturnType<typeof view>>, name: string) => v.steps.find((s) => s.name === name)!;

beforeAll(async () => {
  node = await startApiNode({
    timeScale: 600, tablets: 30_000, pollMs: 100, virtual: true,
    site: (yaml, dir) => {
      const f = join(dir, 'batches', T, 'B-1042.json');
      const rec = JSON.parse(readFileSync(f, 'utf8')) as Record<string, unknown>;
      const copy = (batch: string, extra: Record<string, unknown> = {}): void =>
        writeFileSync(join(dir, 'batches', T, `${batch}.json`), JSON.stringify({ ...rec, batch, mes_ref: `MES-2026-11-${batch.slice(2)}`, ...extra }));
      copy('B-3001', { qa_reviewer: 'a.ricci' });
      // B-3002 is aborted mid-compression: a batch of 600,000 tablets compresses for virtual hours, so the abort (two
      // signed requests, seconds of wall clock on a loaded machine, minutes of the paced line's) finds it pressing
      copy('B-3002', { batch_size: { ...(rec['batch_size'] as Record<string, unknown>), tablets: 600_000 } });
      copy('B-3003');
      return yaml;
    },
  });
  url = node.url;
  await addUser(node.daemon.identity!, { id: 'q.russo', name: 'Quinto Russo', role: 'qa_reviewer', tenants: [T], password: pw('q.russo') }, 'd.marino', 'a second QA reviewer of the tenant');
  for (const u of ['o.operator', 'p.bianchi', 'm.rossi', 'a.ricci', 'q.russo', 'd.marino']) tokens.set(u, await signIn(url, u, pw(u)));
  presence = every(node.line!.clock, 5000, () => void call(url, 'POST', `${A}/attendance`, { token: tok('o.operator') }).catch(() => undefined));
  paced = node.line!.pace(TEST_PACE);
}, 120_000);

afterAll(async () => {
  presence?.();
  await paced?.();
  await node?.close();
});

describe('run lifecycle: resume, reassign, abort', { timeout: 600_000 }, () => {
  let held: string;

  it('intake refuses a record whose QA reviewer is an auditor, naming the field; nothing is started', async () => {
    const r = await call(url, 'POST', `${A}/runs`, { token: tok('o.operator'), body: { request: request('B-3001') } });
    expect(r.status, JSON.stringify(r.body)).toBe(422);
    expect(r.type).toMatch(/application\/problem\+json/);
    expect(r.body.code).toBe('LK_BATCH_RECORD_INVALID');
    expect(r.body.issues).toEqual([{ path: 'qa_reviewer', message: expect.stringContaining('a.ricci holds the role auditor, not a QA reviewer role') }]);
    expect((await call(url, 'GET', `${A}/runs`, { token: tok('a.ricci') })).body.items).toEqual([]);
  });

  it('a run held by a model loss raises RUN_HELD; a process engineer resumes it with a reason and it reaches its gate', async () => {
    const plant = node.line!.plant;
    const started = await call(url, 'POST', `${A}/runs`, { token: tok('o.operator'), body: { request: request('B-1042') } });
    expect(started.status, JSON.stringify(started.body)).toBe(201);
    held = started.body.id;
    await waitFor('the press step to run', async () => step(await view(held), 'compress.press').status === 'RUNNING');
    const twin = artefactFile(join(node.dir, 'data'), T, 'process-twin-v1');
    const original = readFileSync(twin);
    writeFileSync(twin, Buffer.concat([original, Buffer.from(' ')]));
    await waitFor('the run to be held', async () => (await view(held)).status === 'HELD');
    const exc = (await call(url, 'GET', `${A}/runs/${held}/exceptions`, { token: tok('a.ricci') })).body;
    const heldExc = exc.items.filter((e: { kind: string }) => e.kind === 'RUN_HELD');
    expect(heldExc).toHaveLength(1);
    expect(heldExc[0]).toMatchObject({ severity: 'minor', status: 'open', step: '05 compress.press' });
    expect(heldExc[0].title).toMatch(/LK_MODEL_CORRUPT/);

    // who may not resume, and what is refused, changes nothing
    expect((await call(url, 'POST', `${A}/runs/${held}/resume`, { token: tok('o.operator'), body: { reason: 'I want it to go on' } })).body.code).toBe('LK_FORBIDDEN');
    const noReason = await call(url, 'POST', `${A}/runs/${held}/resume`, { token: tok('p.bianchi'), body: { reason: '' } });
    expect([noReason.status, noReason.body.code]).toEqual([400, 'LK_VALIDATION']);
    expect((await view(held)).status).toBe('HELD');

    // the model is restored (a person put the validated artefact back), then the process engineer resumes
    writeFileSync(twin, original);
    await rearmAll();
    const r = await call(url, 'POST', `${A}/runs/${held}/resume`, { token: tok('p.bianchi'), body: { reason: 'twin artefact restored from the validated copy; PLCs re-armed at the HMI' } });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.status).toBe('RUNNING');
    expect(step(r.body, 'compress.press')).toMatchObject({ status: 'RUNNING', attempt: 2 });
    const again = await call(url, 'POST', `${A}/runs/${held}/resume`, { token: tok('p.bianchi'), body: { reason: 'twice' } });
    expect([again.status, again.body.code]).toEqual([409, 'LK_RUN_STATE']);

    const atGate = await waitFor('the resumed run to reach its gate', async () => {
      const v = await view(held);
      return (v.status === 'APPROVAL' || v.status === 'HELD' || v.status === 'FAILED') && v;
    }, 500);
    expect(atGate.status, atGate.reason ?? '').toBe('APPROVAL');
    expect(step(atGate, 'compress.press')).toMatchObject({ status: 'SUCCEEDED', attempt: 2 });
    const after = (await call(url, 'GET', `${A}/runs/${held}/exceptions`, { token: tok('a.ricci') })).body;
    const manual = after.items.filter((e: { kind: string }) => e.kind === 'MANUAL_ACTION');
    expect(manual).toHaveLength(1);
    expect(manual[0]).toMatchObject({ severity: 'minor', raisedBy: 'p.bianchi', step: '05 compress.press' });
    const audit = auditOf(held).filter((e) => e.action === 'run.resume');
    expect(audit.map((e) => [e.actor, e.reason])).toEqual([['p.bianchi', 'twin artefact restored from the validated copy; PLCs re-armed at the HMI']]);
    const events = (await call(url, 'GET', `${A}/runs/${held}/genealogy`, { token: tok('a.ricci') })).body.events as { summary: string }[];
    const iHeld = events.findIndex((e) => /model lost/.test(e.summary));
    const iResumed = events.findIndex((e) => /resumed by Paolo Bianchi/.test(e.summary));
    expect(iHeld).toBeGreaterThanOrEqual(0);
    expect(iResumed).toBeGreaterThan(iHeld);
  });

  it('the QA reviewer is reassigned (signed); an auditor is refused as the new reviewer; the gate waits for the new one', async () => {
    const gate = (await view(held)).approvalGate;
    expect(gate).toMatchObject({ status: 'pending', reviewer: 'm.rossi' });
    const auditor = await call(url, 'POST', `${A}/runs/${held}/reassign`, { token: tok('m.rossi'), body: { to: 'a.ricci', reason: 'on leave from tomorrow', password: pw('m.rossi') } });
    expect([auditor.status, auditor.body.code]).toEqual([422, 'LK_REVIEWER_INVALID']);
    expect(auditor.body.detail).toMatch(/a\.ricci holds the role auditor/);
    const byEngineer = await call(url, 'POST', `${A}/runs/${held}/reassign`, { token: tok('p.bianchi'), body: { to: 'q.russo', reason: 'on leave', password: pw('p.bianchi') } });
    expect([byEngineer.status, byEngineer.body.code]).toEqual([403, 'LK_FORBIDDEN']);
    const wrongPw = await call(url, 'POST', `${A}/runs/${held}/reassign`, { token: tok('m.rossi'), body: { to: 'q.russo', reason: 'on leave', password: 'not-it' } });
    expect([wrongPw.status, wrongPw.body.code]).toEqual([401, 'LK_REAUTH_FAILED']);
    expect((await view(held)).approvalGate.reviewer).toBe('m.rossi');

    const r = await call(url, 'POST', `${A}/runs/${held}/reassign`, { token: tok('m.rossi'), body: { to: 'q.russo', reason: 'on leave from tomorrow; Q. Russo reviews this batch', password: pw('m.rossi') } });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body).toMatchObject({ from: 'm.rossi', to: 'q.russo', approval: gate.id, signature: { decision: 'reassign', user: 'm.rossi', run: held } });
    expect(verifySignature(loadSitePublicKey(join(node.dir, 'data')), r.body.signature as ActSignature)).toBe(true);
    expect(r.body.run.approvalGate.reviewer).toBe('q.russo');
    const pending = (await call(url, 'GET', `${A}/approvals`, { token: tok('q.russo') })).body.items.find((i: { id: string }) => i.id === gate.id);
    expect(pending.reviewer).toBe('q.russo');
    const entry = auditOf(held).find((e) => e.action === 'run.reassign')!;
    expect([entry.actor, entry.old, entry.new, entry.signature?.user]).toEqual(['m.rossi', 'm.rossi', 'q.russo', 'm.rossi']);
    // the former reviewer may not sign any more
    const former = await call(url, 'POST', `${A}/approvals/${gate.id}`, { token: tok('m.rossi'), body: { decision: 'reject', meaning: 'qa-rejection', comment: 'not mine any more', password: pw('m.rossi') } });
    expect([former.status, former.body.code]).toEqual([403, 'LK_APPROVAL_FORBIDDEN']);
  });

  it('a run at its gate is aborted (signed): the gate is withdrawn and can no longer be signed', async () => {
    const gate = (await view(held)).approvalGate;
    const noPw = await call(url, 'POST', `${A}/runs/${held}/abort`, { token: tok('q.russo'), body: { reason: 'model loss during compression: batch not released' } });
    expect([noPw.status, noPw.body.code]).toEqual([428, 'LK_REAUTH_REQUIRED']);
    const r = await call(url, 'POST', `${A}/runs/${held}/abort`, { token: tok('q.russo'), body: { reason: 'model loss during compression: batch not released', password: pw('q.russo') } });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.run.status).toBe('ABORTED');
    expect(r.body.approvalWithdrawn).toBe(gate.id);
    expect(step(r.body.run, 'approval.batch_release').status).toBe('ABORTED');
    expect(r.body.run.approvalGate.status).toBe('withdrawn');
    const sign = await call(url, 'POST', `${A}/approvals/${gate.id}`, { token: tok('q.russo'), body: { decision: 'approve', meaning: 'qa-release', password: pw('q.russo') } });
    expect([sign.status, sign.body.code]).toEqual([409, 'LK_APPROVAL_DECIDED']);
    expect((await call(url, 'GET', `${A}/approvals`, { token: tok('q.russo') })).body.items.some((i: { id: string }) => i.id === gate.id)).toBe(false);
    // the gate's open approval.request call is closed in the log: every call has its answer
    const log = node.daemon.engine.toolCalls(T, held);
    const last = log.filter((l) => l.tool === 'approval.request').at(-1)!;
    expect([last.kind, last.summary]).toEqual(['error', expect.stringContaining('withdrawn: run aborted by Quinto Russo')]);
  });

  it('a run aborted mid-compression ends ABORTED with every PLC on LKG (read back), a "not a release" package and its line free', async () => {
    const plant = node.line!.plant;
    await rearmAll();
    const started = await call(url, 'POST', `${A}/runs`, { token: tok('o.operator'), body: { request: request('B-3002') } });
    expect(started.status, JSON.stringify(started.body)).toBe(201);
    const id = started.body.id as string;
    await waitFor('the press step to run', async () => step(await view(id), 'compress.press').status === 'RUNNING');
    for (const eq of PLCS) expect([eq, plant.supervisor(eq).state]).toEqual([eq, 'ATTENDED']);
    const revertsBefore = plant.supervisor('press').revertCount;

    const auditor = await call(url, 'POST', `${A}/runs/${id}/abort`, { token: tok('a.ricci'), body: { reason: 'stop it', password: pw('a.ricci') } });
    expect([auditor.status, auditor.body.code]).toEqual([403, 'LK_FORBIDDEN']);
    const r = await call(url, 'POST', `${A}/runs/${id}/abort`, { token: tok('p.bianchi'), body: { reason: 'granulate lot recalled by the supplier', password: pw('p.bianchi') } });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    const v = r.body.run;
    expect(v.status).toBe('ABORTED');
    expect(v.reason).toBe('aborted by p.bianchi: granulate lot recalled by the supplier');
    expect(step(v, 'compress.press').status).toBe('ABORTED');
    expect(v.steps.filter((s: { seq: string }) => s.seq > '05').map((s: { status: string }) => s.status)).toEqual(['SKIPPED', 'SKIPPED', 'SKIPPED', 'SKIPPED', 'SKIPPED']);
    expect(step(v, 'release.genealogy').detail).toMatch(/^not a release: /);

    // every PLC: the abort's read-back says LOST on LKG, and so does the simulator
    expect(r.body.reverted.map((p: { equipment: string; ok: boolean }) => [p.equipment, p.ok]).sort()).toEqual(PLCS.map((e) => [e, true]).sort());
    for (const eq of PLCS) {
      const s = plant.supervisor(eq);
      expect([eq, s.state, s.activeRecipe]).toEqual([eq, 'LOST', s.lkg.id]);
      expect(plant.setpoints(eq)).toEqual({ ...plant.setpoints(eq), ...s.lkg.setpoints });
    }
    expect(plant.supervisor('press').revertCount).toBe(revertsBefore + 1);
    expect(verifySignature(loadSitePublicKey(join(node.dir, 'data')), r.body.signature as ActSignature)).toBe(true);
    const entries = auditOf(id);
    // the abort's reverts, one per PLC, in the person's name (a fail-safe revert the engine made earlier on the
    // batch's own data — a model lost or out of fidelity, which holds the run, in the name of `system` — is not the
    // abort's; one fresh-clone run in several held B-3002 so before the abort)
    const revertIntents = entries.filter((e) => e.action === 'plc.revert_lkg' && e.kind === 'intent' && /^run aborted by /.test(String(e.reason)));
    expect(revertIntents.map((e) => e.actor)).toEqual(PLCS.map(() => 'p.bianchi'));
    expect(entries.filter((e) => e.action === 'plc.revert_lkg' && e.kind === 'intent' && e.actor === 'p.bianchi')).toHaveLength(PLCS.length);
    const abortEntry = entries.find((e) => e.action === 'run.abort')!;
    expect([abortEntry.actor, abortEntry.signature?.user, abortEntry.reason]).toEqual(['p.bianchi', 'p.bianchi', 'granulate lot recalled by the supplier']);
    // the reverts come before the abort's state change in the trail
    expect(Math.max(...revertIntents.map((e) => e.seq))).toBeLessThan(abortEntry.seq);
    toolLogOf(node.daemon, T, id);

    // the package: release.json opens with "aborted", page 1 of release.pdf says it is not a release
    expect(v.release).not.toBeNull();
    const text = readFileSync(node.daemon.engine.releaseFile(T, id, 'json')!, 'utf8');
    expect(text.startsWith('{"aborted":{"released":false,"statement":"ABORTED: batch B-3002')).toBe(true);
    const pkg = JSON.parse(text);
    expect(pkg.input.run.status).toBe('ABORTED');
    expect(pkg.input.abort).toMatchObject({ user: 'p.bianchi', from: 'RUNNING', step: '05 compress.press', reason: 'granulate lot recalled by the supplier' });
    expect(pkg.input.signatures).toEqual([]);
    const page1 = flat(pdfPages(readFileSync(node.daemon.engine.releaseFile(T, id, 'pdf')!))[0]!);
    expect(page1).toContain('ABORTED — NOT A RELEASE: this batch is not released');
    expect(page1).toContain('Decision: NOT A RELEASE');

    const twice = await call(url, 'POST', `${A}/runs/${id}/abort`, { token: tok('p.bianchi'), body: { reason: 'again', password: pw('p.bianchi') } });
    expect([twice.status, twice.body.code]).toEqual([409, 'LK_RUN_STATE']);
    // the line is free: the next batch starts
    await rearmAll();
    const next = await call(url, 'POST', `${A}/runs`, { token: tok('o.operator'), body: { request: request('B-3003') } });
    expect(next.status, JSON.stringify(next.body)).toBe(201);
    // its QA reviewer is reassigned before the gate: the gate, once reached, waits for the new one
    const early = await call(url, 'POST', `${A}/runs/${next.body.id}/reassign`, { token: tok('d.marino'), body: { to: 'q.russo', reason: 'm.rossi on leave this week', password: pw('d.marino') } });
    expect(early.status, JSON.stringify(early.body)).toBe(200);
    expect([early.body.from, early.body.to, early.body.approval]).toEqual(['m.rossi', 'q.russo', null]);
    const atGateOrHeld = (): Promise<Awaited<ReturnType<typeof view>>> => waitFor('B-3003 at its gate', async () => {
      const x = await view(next.body.id);
      return (x.status === 'APPROVAL' || x.status === 'HELD' || x.status === 'FAILED') && x;
    }, 500);
    let gated = await atGateOrHeld();
    // the batch's own data may lose the twin (a fidelity check after the first batch's abort and LKG revert, seen on
    // a loaded machine): that is a hold for a person, as in the first case — the process engineer resumes it (the
    // run's agents stay at L0) and the gate follows. Any other hold or failure fails the test.
    if (gated.status === 'HELD' && /model lost/.test(gated.reason ?? '')) {
      await rearmAll();
      const resumed = await call(url, 'POST', `${A}/runs/${next.body.id}/resume`, { token: tok('p.bianchi'), body: { reason: 'twin fidelity reviewed; the run goes on with its agents at L0' } });
      expect(resumed.status, JSON.stringify(resumed.body)).toBe(200);
      gated = await atGateOrHeld();
    }
    expect(gated.status, gated.reason ?? '').toBe('APPROVAL');
    expect(gated.approvalGate).toMatchObject({ status: 'pending', reviewer: 'q.russo' });
    const waits = (await call(url, 'GET', `${A}/approvals`, { token: tok('q.russo') })).body.items.find((i: { id: string }) => i.id === gated.approvalGate.id);
    expect(waits.reviewer).toBe('q.russo');
    // the typed SDK takes the same ways out
    const sdk = new LinekeeperClient({ url, user: 'p.bianchi', password: pw('p.bianchi') });
    const notHeld = await sdk.resumeRun(next.body.id, { reason: 'nothing holds it' }).then(() => null, (e: unknown) => e);
    expect(notHeld).toBeInstanceOf(LinekeeperError);
    expect((notHeld as LinekeeperError).code).toBe('LK_RUN_STATE');
    const stop = await sdk.abortRun(next.body.id, { reason: 'end of the test shift', password: pw('p.bianchi') });
    expect(stop.run.status).toBe('ABORTED');
    expect(stop.signature).toMatchObject({ decision: 'abort', user: 'p.bianchi' });
  });
});
