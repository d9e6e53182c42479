/**
 * A batch runs once, on a ready line — with the real daemon, its REST API, the CLI and the plant simulator.
 * B-1042 (8,000 tablets) runs and is released by its QA reviewer; its MES record left the inbox for the archive
 * with its hash; a second start is 409 LK_BATCH_CLOSED and writes nothing; a changed record for the closed batch
 * (hardness limit raised after release) is refused and audited with both hashes, never ingested. Then the
 * blender's PLC goes LOST on the simulator (its own revert, as its watchdog does): a run of another batch is
 * 409 LK_LINE_NOT_READY naming the blender, until a process engineer re-arms it with a reason (an operator may
 * not); then it starts. Order is asserted through the audit chain, never speed.
 *
 * The daemon runs on virtual time paced at TEST_PACE (50) times the wall clock (test/helpers/virtual-line.ts), from the wall
 * clock's present; the operator is kept present on the virtual clock.
 */
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { iterateAudit } from '../../src/audit/index.js';
import type { AuditEntry } from '../../src/audit/entry.js';
import { saveSession } from '../../src/cli/session.js';
import { call, rearmLostPlcs, signIn, startApiNode, until, type ApiNode } from '../helpers/api.js';
import { TEST_PACE } from '../helpers/virtual-line.js';
import { runCli } from '../helpers/cli.js';
import { every } from '../../src/clock.js';
import { heartbeating } from '../helpers/run-site.js';

const T = 'acme-pharma';
const A = `/v1/tenants/${T}`;
const QA = { user: 'm.rossi', name: 'Maria Rossi', role: 'qa_reviewer' };
const sha = (b: Buffer): string => createHash('sha256').update(b).digest('hex');

let node: ApiNode;
let home: string;
let presence: (() => void) | undefined;
let paced: (() => Promise<void>) | undefined;
const tokens = new Map<string, string>();
const tok = (u: string): string => tokens.get(u)!;
let released: { id: string; bytes: Buffer };
const savedXdg = process.env['XDG_CONFIG_HOME'];
/** What the simulated PLCs did (reverts and re-arms, with their cause), for the messages of failed assertions. */
const plantEvents: unknown[] = [];

const mes = (...p: string[]): string => join(node.dir, 'data', 'mes', ...p);
const entries = (action: string): AuditEntry[] => [...iterateAudit(node.daemon.store.db, T, {})].filter((e) => e.action === action);
const runCount = (): number => node.daemon.store.db.prepare('SELECT COUNT(*) FROM run').pluck().get() as number;
const start = (batch: string, user = 'o.operator') => call(node.url, 'POST', `${A}/runs`, { token: tok(user), body: { request: `run batch ${batch} on line-3, keep weight and hardness on target` } });

/** Put a record in the inbox the way an exporter does: a hidden temporary, then rename. */
function put(batch: string, record: unknown): void {
  const dir = mes('inbox', T);
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, `.${batch}.json.tmp`), JSON.stringify(record, null, 2));
  renameSync(join(dir, `.${batch}.json.tmp`), join(dir, `${batch}.json`));
}

/** As the named person, in the CLI's own session file (a temp XDG_CONFIG_HOME). */
function signInCli(user: string, name: string, role: string): void {
  saveSession({ format: 1, url: node.url, user, name, role, tenant: T, tenants: [T], token: tok(user), expiresAt: new Date(Date.now() + 3_600_000).toISOString() });
}

beforeAll(async () => {
  node = await startApiNode({ timeScale: 600, tablets: 8_000, pollMs: 100, virtual: true, t0: Date.now() });
  node.line!.plant.on((e) => void plantEvents.push(e));
  for (const u of ['o.operator', 'p.bianchi', 'm.rossi', 'l.conti']) tokens.set(u, await signIn(node.url, u, node.passwords.get(u)!));
  presence = every(node.line!.clock, 5_000, () => void call(node.url, 'POST', `${A}/attendance`, { token: tok('o.operator') }).catch(() => undefined));
  paced = node.line!.pace(TEST_PACE);
  home = mkdtempSync(join(tmpdir(), 'lk-readiness-cli-'));
  process.env['XDG_CONFIG_HOME'] = home;
}, 180_000);

afterAll(async () => {
  presence?.();
  await paced?.();
  if (savedXdg === undefined) delete process.env['XDG_CONFIG_HOME'];
  else process.env['XDG_CONFIG_HOME'] = savedXdg;
  await node?.close();
  if (home) rmSync(home, { recursive: true, force: true });
});

describe('a batch runs once', () => {
  it('the line is ready at start; a run ingests B-1042 and its record leaves the inbox for the archive, with its hash, audited with run.start', async () => {
    const ready = await call(node.url, 'GET', `${A}/line/readiness`, { token: tok('o.operator') });
    expect([ready.status, ready.body]).toEqual([200, { line: 'line-3', ready: true, reasons: [] }]);
    const inboxFile = mes('inbox', T, 'B-1042.json');
    const bytes = readFileSync(inboxFile);
    const r = await start('B-1042');
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    released = { id: r.body.id, bytes };
    expect(existsSync(inboxFile)).toBe(false);
    const name = `B-1042.${sha(bytes).slice(0, 12)}.json`;
    expect(readdirSync(mes('archive', T))).toEqual([name]);
    expect(readFileSync(mes('archive', T, name))).toEqual(bytes);
    const [archived] = entries('mes.record.archived');
    expect(archived).toMatchObject({ actor: 'o.operator', subject: { run: r.body.id, batch: 'B-1042' }, new: { file: `archive/${T}/${name}`, sha256: sha(bytes) } });
    // the same transaction as the run's start: right after it on the chain
    const started = entries('run.start').find((e) => e.subject?.run === r.body.id)!;
    expect(archived!.seq).toBe(started.seq + 1);
  });

  it('the run reads its record from the archive and is released by the named QA reviewer', async () => {
    const d = node.daemon;
    await node.line!.until('B-1042 at its approval gate', () => {
      const v = d.engine.get(T, released.id);
      expect(['PENDING', 'RUNNING', 'APPROVAL'], `${v.status}: ${v.reason ?? ''}`).toContain(v.status);
      return v.status === 'APPROVAL' && v;
    });
    // step 01 read the archived record (the inbox no longer holds it) and found it unchanged
    expect(d.engine.get(T, released.id).steps[0]!.status).toBe('SUCCEEDED');
    for (const e of d.engine.exceptionsOf(T, released.id).filter((x) => x.status === 'open')) {
      d.engine.closeException(T, e.id, { signer: QA, comment: `${e.kind} reviewed for the readiness test`, deviation: 'DEV-2026-0901' });
    }
    const approval = d.engine.get(T, released.id).approvalGate.id!;
    d.engine.decide(T, approval, { signer: QA, decision: 'approve', meaning: 'QA release of batch B-1042' });
    const done = await node.line!.until('B-1042 released', () => {
      const v = d.engine.get(T, released.id);
      return (v.status === 'SUCCEEDED' || v.status === 'FAILED') && v;
    });
    expect(done.status).toBe('SUCCEEDED');
  });

  it('[INV-BATCH-ONCE] a second run of the released batch is 409 LK_BATCH_CLOSED naming the batch, the run and its final status; nothing is written', async () => {
    const runs = runCount();
    const starts = entries('run.start').length;
    const head = node.daemon.store.audit.head(T).seq;
    const r = await start('B-1042');
    expect([r.status, r.body.code]).toEqual([409, 'LK_BATCH_CLOSED']);
    expect(r.body.closed).toEqual({ batch: 'B-1042', run: released.id, status: 'SUCCEEDED' });
    expect(r.body.detail).toContain(released.id);
    expect([runCount(), entries('run.start').length, node.daemon.store.audit.head(T).seq]).toEqual([runs, starts, head]);
    // the other tenant's batch ids are its own: borealis-bio's B-2001 is not closed by anything acme did
    expect(node.daemon.engine.runs.runsOfBatch('borealis-bio', 'B-1042')).toEqual([]);
  });

  it('[INV-BATCH-ONCE] a changed record for the closed batch is refused and audited with both hashes, never ingested; the batch stays closed', async () => {
    const edited = { ...JSON.parse(released.bytes.toString('utf8')) as Record<string, unknown> };
    const specs = edited['specifications'] as Record<string, Record<string, unknown>>;
    // the edit of the issue: the hardness limit raised after release
    edited['specifications'] = { ...specs, hardness: { ...specs['hardness'], max: 400 } };
    put('B-1042', edited);
    const changed = readFileSync(mes('inbox', T, 'B-1042.json'));
    // the MES watch screens it (or the next start does): either way it is refused once
    const refused = await node.line!.until('the refusal of the changed record', () => entries('mes.record.refused')[0]);
    expect(refused).toMatchObject({ actor: 'system', subject: { run: released.id, batch: 'B-1042' } });
    expect(refused.result).toMatchObject({ refusedSha256: sha(changed), archivedSha256: [sha(released.bytes)], closedBy: released.id, status: 'SUCCEEDED' });
    expect(existsSync(mes('inbox', T, 'B-1042.json'))).toBe(false);
    expect(readFileSync(mes('refused', T, `B-1042.${sha(changed).slice(0, 12)}.json`))).toEqual(changed);
    // the archive is unchanged, and the run's record is still the one it was released with
    expect(readdirSync(mes('archive', T))).toEqual([`B-1042.${sha(released.bytes).slice(0, 12)}.json`]);
    const again = await start('B-1042');
    expect([again.status, again.body.code]).toEqual([409, 'LK_BATCH_CLOSED']);
    expect(entries('mes.record.refused')).toHaveLength(1);
  });
});

describe('a run starts only on a ready line', () => {
  it('with the blender LOST, a run is 409 LK_LINE_NOT_READY naming it, and nothing is written', async () => {
    put('B-1043', { ...JSON.parse(released.bytes.toString('utf8')) as Record<string, unknown>, batch: 'B-1043', mes_ref: 'MES-2026-11-1043' });
    // the PLC's own revert to its last known-good recipe, as its watchdog makes it
    node.line!.plant.setSupervisorState('blender', 'LOST');
    const lost = await until(async () => {
      const r = await call(node.url, 'GET', `${A}/line/readiness`, { token: tok('o.operator') });
      return r.body.reasons.some((x: { subject: string }) => x.subject === 'blender') ? r.body : undefined;
    }, 100, node.line);
    // on a loaded machine another PLC's own watchdog may have reverted it too (a heartbeat late past its timeout):
    // then it is listed as well, the very case readiness exists for; the blender is listed in any case
    expect(lost.reasons).toContainEqual({ code: 'PLC_LOST', subject: 'blender', message: expect.stringContaining('linekeeper line rearm blender') });
    expect(lost.reasons.every((x: { code: string }) => x.code === 'PLC_LOST'), JSON.stringify({ reasons: lost.reasons, plantEvents })).toBe(true);
    const runs = runCount();
    const r = await start('B-1043');
    expect([r.status, r.body.code]).toEqual([409, 'LK_LINE_NOT_READY']);
    expect(r.body.reasons).toContainEqual(expect.objectContaining({ code: 'PLC_LOST', subject: 'blender' }));
    expect(r.body.detail).toContain('blender');
    expect(runCount()).toBe(runs);
    // the record was not ingested: still in the inbox
    expect(existsSync(mes('inbox', T, 'B-1043.json'))).toBe(true);
    // the CLI says the same, and exits 1
    signInCli('o.operator', 'Olga Operator', 'operator');
    const cli = await runCli('line', 'readiness');
    expect(cli.code).toBe(1);
    expect(cli.out).toMatch(/^line line-3: not ready for a run \(\d+ reasons?\)\n/);
    expect(cli.out).toMatch(/^ {2}✗ PLC_LOST +blender +blender is LOST/m);
  });

  it('[INV-LKG-REVERT] an operator may not re-arm; a re-arm needs a reason; nothing re-arms by itself', async () => {
    const op = await call(node.url, 'POST', `${A}/line/equipment/blender/rearm`, { token: tok('o.operator'), body: { reason: 'looks fine to me' } });
    expect([op.status, op.body.code]).toEqual([403, 'LK_FORBIDDEN']);
    const noReason = await call(node.url, 'POST', `${A}/line/equipment/blender/rearm`, { token: tok('p.bianchi'), body: {} });
    expect([noReason.status, noReason.body.code]).toEqual([400, 'LK_VALIDATION']);
    const unknown = await call(node.url, 'POST', `${A}/line/equipment/nosuch/rearm`, { token: tok('p.bianchi'), body: { reason: 'no such unit' } });
    expect([unknown.status, unknown.body.code]).toEqual([404, 'LK_NOT_FOUND']);
    expect(entries('plc.rearm')).toEqual([]);
    expect(node.line!.plant.supervisor('blender').state).toBe('LOST');
    expect((await start('B-1043')).body.code).toBe('LK_LINE_NOT_READY');
  });

  it('a process engineer re-arms the blender from the CLI with a reason (audited), and then the run starts', async () => {
    signInCli('p.bianchi', 'Paolo Bianchi', 'process_engineer');
    // the PLC refuses a re-arm while no heartbeat arrives (its rule; on a loaded machine linekeeper's heartbeats can
    // be late for a while after a revert): the person re-arms once they reach it
    await node.line!.until('heartbeats to reach the blender', () => heartbeating(node.line!.plant.supervisor('blender'), node.line!.clock.now()));
    const cli = await runCli('line', 'rearm', 'blender', '--reason', 'blender inspected after the revert; LKG recipe confirmed, supervision may resume');
    expect(cli.code, `${cli.err} ${JSON.stringify({ plantEvents, sup: node.daemon.loaded.config.equipment.map((e) => [e.id, node.line!.plant.supervisor(e.id)]), now: node.line!.clock.now() })}`).toBe(0);
    expect(cli.out).toMatch(/^re-armed: blender ATTENDED \(verified by read-back\) by p\.bianchi \(process_engineer\)/);
    expect(node.line!.plant.supervisor('blender').state).toBe('ATTENDED');
    const rearm = entries('plc.rearm');
    // intent and outcome, both with the person; the intent with the reason
    expect(rearm.map((e) => [e.actor, e.subject?.setpoint])).toEqual([['p.bianchi', 'blender.SupervisorState'], ['p.bianchi', 'blender.SupervisorState']]);
    expect(rearm[0]).toMatchObject({ subject: { setpoint: 'blender.SupervisorState' }, reason: 'blender inspected after the revert; LKG recipe confirmed, supervision may resume', new: 'ATTENDED' });
    // any other PLC its own watchdog reverted meanwhile (a loaded machine) is re-armed the same way, by the same person
    const others = await rearmLostPlcs(node, T, tok('p.bianchi'));
    expect(others).not.toContain('blender');
    // re-arming a PLC that is ATTENDED is refused: nothing to re-arm
    const twice = await call(node.url, 'POST', `${A}/line/equipment/blender/rearm`, { token: tok('p.bianchi'), body: { reason: 'again' } });
    expect([twice.status, twice.body.code]).toEqual([409, 'LK_CONFLICT']);
    const r = await start('B-1043');
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    // order on the chain: the refusal changed nothing, the re-arm came before the run's start
    const started = entries('run.start').find((e) => e.subject?.run === r.body.id)!;
    expect(entries('plc.rearm').at(-1)!.seq).toBeLessThan(started.seq);
    // while acme's batch runs, another tenant's process engineer does not re-arm the line's equipment (R9)
    const foreign = await call(node.url, 'POST', '/v1/tenants/borealis-bio/line/equipment/blender/rearm', { token: tok('l.conti'), body: { reason: 'not my batch' } });
    expect([foreign.status, foreign.body.code]).toEqual([409, 'LK_LINE_BUSY']);
    expect(JSON.stringify(foreign.body)).not.toContain(r.body.id);
  });
});
