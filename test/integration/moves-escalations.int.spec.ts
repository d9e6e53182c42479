/**
 * Moves and escalations reach a person, against a real daemon with its simulator and the real CLI (a child
 * process per person, the password on stdin).
 *
 * First, on a run persisted as the engine starts one (no execution behind it, so the test decides when what
 * happens): an L2 move of agent.coat_dry waits for the batch's reviewer, `linekeeper moves list` shows it and
 * `moves approve` signs it like the console does — the simulator reads the new value back; a move superseded by
 * a newer proposal is withdrawn and cannot be signed (409 LK_MOVE_WITHDRAWN, from the CLI too), and so is one
 * still waiting when its run ends; a deadlock of two agents of equal rank (the owner of a setpoint against
 * another quality agent) is pending in GET /arbitration/escalations, holds its setpoint (no agent moves it),
 * becomes ESCALATION_UNRESOLVED when its step ends and stays pending, and is decided by a named person with
 * `linekeeper escalations decide`.
 *
 * Last, a whole run of B-1043 (B-1042 is closed by the seeded run: a batch runs once) to its approval gate, operator attended: compress_fill's L2 moves wait for
 * p.bianchi, `runs watch` prints each (whom, what, since), each is withdrawn by the time its step has ended and
 * cannot be signed afterwards (409 LK_MOVE_WITHDRAWN, nothing signed), the one left at the end of step 05 is a
 * MOVE_UNREVIEWED exception, the genealogy never says "contested: ;", and a deadlock the run left is listed with
 * it and decided by a person.
 *
 * The daemon runs on virtual time paced at TEST_PACE (50) times the wall clock (test/helpers/virtual-line.ts), from the wall clock's
 * present (the CLI compares a session's expiry with its own clock); the operator is kept present on the
 * virtual clock throughout (the bundle's 120 s window is under a second of wall clock here).
 */
import { mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { queryAudit } from '../../src/audit/index.js';
import { closeStepWaits } from '../../src/engine/run/step-waits.js';
import type { RunRecord } from '../../src/store/run-store.js';
import { every } from '../../src/clock.js';
import { call, rearmLostPlcs, signIn, startApiNode, type ApiNode } from '../helpers/api.js';
import { TEST_PACE } from '../helpers/virtual-line.js';
import { setAutonomy } from '../../src/store/autonomy-store.js';
import type { PendingWrite } from '../../src/engine/guarded-writer.js';
import { seedRun, setStatus } from '../helpers/api-seed.js';
import { LinekeeperClient } from '../../src/sdk/index.js';
import { spawnCli, type SpawnedCli } from '../helpers/cli.js';

const T = 'acme-pharma';
const A = `/v1/tenants/${T}`;
const REQUEST = 'run batch B-1043 on line-3, keep weight and hardness on target, capping risk under 1.5%';

let node: ApiNode;
const homes: string[] = [];
const tokens = new Map<string, string>();
let engineer: string;
let operator: string;

const home = (): string => {
  const h = mkdtempSync(join(tmpdir(), 'lk-moves-home-'));
  homes.push(h);
  return h;
};
const password = (user: string): string => `${node.passwords.get(user)!}\n`;
const cli = (h: string, args: string[], o: { input?: string; until?: RegExp } = {}): Promise<SpawnedCli> => spawnCli(args, { ...o, env: { XDG_CONFIG_HOME: h, LINEKEEPER_URL: node.url } });
const plant = (sp: string): number => {
  const [eq, tag] = sp.split('.') as [string, string];
  return node.line!.plant.setpoints(eq)[tag]!;
};
const audit = (filter: Record<string, string>) => queryAudit(node.daemon.store.db, T, filter, { limit: 1000 }).entries;
const sign = (who: string, id: string, recordHash?: string) =>
  call(node.url, 'POST', `${A}/approvals/${id}`, { token: tokens.get(who)!, body: { decision: 'approve', meaning: 'move-approval', password: node.passwords.get(who), ...(recordHash ? { recordHash } : {}) } });
let proposals = 0;
/** The operator sets `from` at the HMI, then the agent proposes `to` (compress_fill from the tenant's twin, as step 05 does): an L2 move waits. */
async function queueWrite(_d: unknown, o: { run: RunRecord; agent: string; setpoint: string; from: number; to: number; unit: string }): Promise<PendingWrite> {
  const [equipment, tag] = o.setpoint.split('.') as [string, string];
  node.line!.plant.writeSetpoint(equipment, tag, o.from);
  const ref = node.daemon.engine.options.models.twin(T).ref;
  const model = o.agent === 'agent.compress_fill' ? { model: { id: ref.id, version: String(ref.version) } } : {};
  const out = await node.daemon.writer.propose({
    id: `${o.run.id}:05:1:${++proposals}`, tenant: T, batch: o.run.batch, run: o.run.id, agent: o.agent, product: o.run.product, tooling: o.run.tooling,
    moves: [{ setpoint: o.setpoint, value: `${o.to} ${o.unit}` }], attribute: 'content_uniformity', justification: 'on target', ...model,
  });
  const w = out.pending ? node.daemon.writer.pending().find((p) => p.id === out.pending!.id) : undefined;
  if (!w) throw new Error(`the writer did not queue ${o.setpoint} → ${o.to}: ${out.status} ${JSON.stringify(out.decisions.map((x) => x.reasons))}`);
  return w;
}
const present = () => call(node.url, 'POST', `${A}/attendance`, { token: tokens.get('o.operator')!, body: {} });

let presence: (() => void) | undefined;
let paced: (() => Promise<void>) | undefined;

beforeAll(async () => {
  node = await startApiNode({ timeScale: 600, tablets: 30_000, pollMs: 100, virtual: true, t0: Date.now() });
  for (const u of ['o.operator', 'p.bianchi', 'm.rossi', 'a.ricci']) tokens.set(u, await signIn(node.url, u, node.passwords.get(u)!));
  // the operator stays attended (R5), so L2 moves wait for the reviewer instead of dropping to recommendations
  presence = every(node.line!.clock, 5000, () => void present().catch(() => undefined));
  // the bundle graduated compress_fill and coat_dry to L3 (CC-2026-0219); this site reviews their moves (L2): lowering
  // needs no role, as a site would do it for a campaign
  for (const agent of ['agent.compress_fill', 'agent.coat_dry']) {
    setAutonomy(node.daemon.store, node.daemon.policy.bundle!, { tenant: T, agent, to: 'L2', by: { person: 'p.bianchi', role: 'process_engineer' }, reason: 'moves reviewed for this campaign' });
  }
  engineer = home();
  operator = home();
  expect((await cli(engineer, ['login', '--user', 'p.bianchi'], { input: password('p.bianchi') })).code).toBe(0);
  expect((await cli(operator, ['login', '--user', 'o.operator'], { input: password('o.operator') })).code).toBe(0);
  paced = node.line!.pace(TEST_PACE);
}, 120_000);
afterAll(async () => {
  presence?.();
  await paced?.();
  await node?.close();
  for (const h of homes) rmSync(h, { recursive: true, force: true });
});

describe('moves and escalations on a run the test drives', { timeout: 120_000 }, () => {
  let run: RunRecord;

  beforeAll(async () => {
    run = seedRun(node.daemon, { tenant: T, batch: 'B-1042', by: 'o.operator' });
    expect((await present()).status).toBe(200);
  });
  afterAll(async () => {
    // the seeded run ends; what it left waiting is withdrawn as when any run ends, and the line is free
    if (node.daemon.engine.runs.runById(run.id)!.status !== 'FAILED') setStatus(node.daemon, run.id, 'FAILED', 'test: done with the seeded run');
    await closeStepWaits({ writer: node.daemon.writer, raise: (x, e) => node.daemon.engine.raiseException(x, e), reviewer: () => 'p.bianchi' }, node.daemon.engine.runs.runById(run.id)!, null, 0, 'FAILED');
  });

  it('an L2 move waits for p.bianchi; `moves list` shows whom, what and since when; `moves approve` signs it and the simulator reads it back', async () => {
    const w = await queueWrite(node.daemon, { run, agent: 'agent.coat_dry', setpoint: 'coater.PanSpeed', from: 9, to: 9.5, unit: '{rev}/min' });
    expect(w.needs).toBe('reviewer');
    const list = await cli(engineer, ['moves', 'list', '--run', run.id]);
    expect(list.code, list.err).toBe(0);
    expect(list.out).toContain(`${w.id}  waits for p.bianchi since ${new Date(w.since).toISOString()}  agent.coat_dry: coater.PanSpeed → 9.5 {rev}/min`);
    expect(plant('coater.PanSpeed')).toBe(9);

    const approved = await cli(engineer, ['moves', 'approve', w.id, '--meaning', 'move-approval', '--comment', 'force down for hardness'], { input: password('p.bianchi') });
    expect(approved.code, approved.err).toBe(0);
    expect(approved.err).toContain('signing as Paolo Bianchi (p.bianchi, process_engineer): approve');
    expect(approved.out).toContain(`  meaning:   Approval of setpoint change for batch ${run.batch} (move-approval)`);
    expect(approved.out).toContain('  comment:   force down for hardness');
    expect(approved.out).toContain(`move ${w.id}: written`);
    expect(plant('coater.PanSpeed')).toBe(9.5);
    // the trail reads signature → approval → write, by p.bianchi
    const trail = audit({ setpoint: 'coater.PanSpeed' }).map((e) => e.action);
    expect(trail.indexOf('setpoint.sign')).toBeLessThan(trail.lastIndexOf('setpoint.write'));
    expect(node.daemon.writer.pending().some((x) => x.id === w.id)).toBe(false);
  });

  it('a move superseded by a newer proposal is withdrawn: 409 LK_MOVE_WITHDRAWN before any password, from the CLI too; nothing is signed', async () => {
    const older = await queueWrite(node.daemon, { run, agent: 'agent.compress_fill', setpoint: 'press.PreForce', from: 3, to: 2.8, unit: 'kN' });
    const newer = await queueWrite(node.daemon, { run, agent: 'agent.compress_fill', setpoint: 'press.PreForce', from: 3, to: 2.7, unit: 'kN' });
    expect(node.daemon.writer.pending().map((x) => x.id)).toContain(newer.id);
    const r = await sign('p.bianchi', older.id, older.vectorHash);
    expect([r.status, r.body.code]).toEqual([409, 'LK_MOVE_WITHDRAWN']);
    expect(r.body.detail).toContain('superseded by proposal');
    // the typed SDK says the same
    const sdk = new LinekeeperClient({ url: node.url, user: 'p.bianchi', password: node.passwords.get('p.bianchi')! });
    expect((await sdk.moves()).map((m) => m.id)).toContain(newer.id);
    await expect(sdk.decideMove(older.id, { decision: 'approve', meaning: 'too late', password: node.passwords.get('p.bianchi')!, recordHash: older.vectorHash })).rejects.toMatchObject({ code: 'LK_MOVE_WITHDRAWN', status: 409 });
    const viaCli = await cli(engineer, ['moves', 'approve', older.id, '--meaning', 'too late'], { input: password('p.bianchi') });
    expect(viaCli.code).toBe(1);
    expect(viaCli.err).toContain('[LK_MOVE_WITHDRAWN]');
    expect(audit({ reviewer: 'p.bianchi' }).filter((e) => e.action === 'setpoint.sign' && (e.args as { approval?: string }).approval === older.id)).toEqual([]);
    expect(plant('press.PreForce')).toBe(3);
    // the run ends: what still waits is withdrawn with that reason (as the engine does when a run ends)
    setStatus(node.daemon, run.id, 'HELD', 'test: held');
    await closeStepWaits({ writer: node.daemon.writer, raise: (x, e) => node.daemon.engine.raiseException(x, e), reviewer: () => 'p.bianchi' }, node.daemon.engine.runs.runById(run.id)!, null, 0, 'HELD');
    const after = await sign('p.bianchi', newer.id, newer.vectorHash);
    expect([after.status, after.body.code]).toEqual([409, 'LK_MOVE_WITHDRAWN']);
    expect(after.body.detail).toContain(`run ${run.id} ended (HELD)`);
    expect(audit({ run: run.id }).filter((e) => e.action === 'setpoint.withdrawn').map((e) => (e.args as { pendingId: string }).pendingId)).toEqual([newer.id]);
    setStatus(node.daemon, run.id, 'RUNNING', 'test: resumed');
  });

  it('[ERR-DEADLOCK] a deadlock of equal rank is pending in GET /arbitration/escalations, holds its setpoint, is an exception when its step ends, and a person decides it', async () => {
    // compress_fill's waiting move owns the turret speed; quality_conf (same rank) asks another target: a deadlock
    const owner = await queueWrite(node.daemon, { run, agent: 'agent.compress_fill', setpoint: 'press.TurretSpeed', from: 40, to: 42, unit: '{rev}/min' });
    const base = { tenant: T, batch: run.batch, run: run.id, product: run.product, tooling: run.tooling };
    const asked = await node.daemon.writer.propose({ ...base, id: `${run.id}:05:1:90`, agent: 'agent.quality_conf', moves: [{ setpoint: 'press.TurretSpeed', value: '40 {rev}/min' }], attribute: 'content_uniformity', justification: 'hold the speed: weight RSD near its limit' });
    expect(asked.status).toBe('escalated');
    expect(asked.declined ?? []).toEqual([]);

    const list = await call(node.url, 'GET', `${A}/arbitration/escalations`, { token: tokens.get('o.operator')! });
    expect(list.status).toBe(200);
    expect(list.body.items).toHaveLength(1);
    const [esc] = list.body.items;
    expect(esc).toMatchObject({ setpoint: 'press.TurretSpeed', reason: 'DEADLOCK_EQUAL_RANK', rank: 'quality', holds: true, runs: [run.id] });
    expect(esc.sides.map((s: { agent: string }) => s.agent).sort()).toEqual(['agent.compress_fill', 'agent.quality_conf']);

    // it holds: no agent moves the setpoint — a throughput request and the owner's new target alike
    const takt = await node.daemon.writer.propose({ ...base, id: `${run.id}:05:1:91`, agent: 'agent.yield_takt', moves: [{ setpoint: 'press.TurretSpeed', value: '46 {rev}/min' }], attribute: 'takt', justification: 'behind takt' });
    const again = await node.daemon.writer.propose({ ...base, id: `${run.id}:05:1:92`, agent: 'agent.compress_fill', moves: [{ setpoint: 'press.TurretSpeed', value: '43 {rev}/min' }], attribute: 'content_uniformity', justification: 'toward the rehearsed candidate' });
    expect([takt.status, again.status]).toEqual(['escalated', 'escalated']);
    expect(plant('press.TurretSpeed')).toBe(40);
    const held = (await call(node.url, 'GET', `${A}/arbitration/escalations`, { token: tokens.get('p.bianchi')! })).body.items[0];
    expect(held.outranked.map((s: { agent: string }) => s.agent)).toEqual(['agent.yield_takt']);
    expect(held.sides).toHaveLength(2); // one side per agent: compress_fill's newer request replaced its older one

    // the step ends with the deadlock open: an exception, and the deadlock still waits for a person
    await closeStepWaits({ writer: node.daemon.writer, raise: (x, e) => node.daemon.engine.raiseException(x, e), reviewer: () => 'p.bianchi' }, node.daemon.engine.runs.runById(run.id)!, { seq: '05', name: 'compress.press' }, 1, 'SUCCEEDED');
    const exc = (await call(node.url, 'GET', `${A}/runs/${run.id}/exceptions`, { token: tokens.get('m.rossi')! })).body.items.filter((e: { kind: string }) => e.kind === 'ESCALATION_UNRESOLVED');
    expect(exc).toHaveLength(1);
    expect(exc[0]).toMatchObject({ severity: 'major', status: 'open', blocking: true, step: '05 compress.press' });
    expect(exc[0].title).toContain('ESCALATION_UNRESOLVED press.TurretSpeed');
    expect(node.daemon.writer.escalations().map((e) => e.escalation.setpoint)).toEqual(['press.TurretSpeed']);

    const viaSdk = await new LinekeeperClient({ url: node.url, user: 'o.operator', password: node.passwords.get('o.operator')! }).escalations();
    expect(viaSdk.items.map((e) => [e.setpoint, e.holds, e.runs])).toEqual([['press.TurretSpeed', true, [run.id]]]);
    const shown = await cli(engineer, ['escalations', 'list']);
    expect(shown.code, shown.err).toBe(0);
    expect(shown.out).toContain('! deadlock on press.TurretSpeed waits for a person since');
    const side = held.sides.find((s: { agent: string }) => s.agent === 'agent.compress_fill').requestId as string;
    const decided = await cli(engineer, ['escalations', 'decide', 'press.TurretSpeed', '--choose', side, '--reason', 'the rehearsed candidate keeps the weight RSD inside its limit']);
    expect(decided.code, decided.err).toBe(0);
    expect(decided.out).toContain('decided press.TurretSpeed by p.bianchi (process_engineer): agent.compress_fill wins with 43 {rev}/min');
    expect(decided.out).toContain('declined: agent.yield_takt 46 {rev}/min (OUTRANKED)');
    expect((await call(node.url, 'GET', `${A}/arbitration/escalations`, { token: tokens.get('o.operator')! })).body.items).toEqual([]);
    expect(audit({ reviewer: 'p.bianchi' }).filter((e) => e.action === 'arbitration.resolve').map((e) => e.reason)).toEqual(['the rehearsed candidate keeps the weight RSD inside its limit']);
    expect(owner.id).toMatch(/^pw_/);
  });
});

describe('a whole run to its gate: its L2 moves reach p.bianchi and are withdrawn when their step ends', { timeout: 300_000 }, () => {
  it('the moves are in the transcript, withdrawn by the end of their step, cannot be signed afterwards; the unreviewed one is an exception', async () => {
    // the next batch from the MES (a copy of the sample under its own id, written as an exporter does), on a line a
    // process engineer has re-armed if an earlier run's end left a PLC LOST
    const inbox = join(node.dir, 'data', 'mes', 'inbox', T);
    const next = { ...(JSON.parse(readFileSync(join(node.dir, 'batches', T, 'B-1042.json'), 'utf8')) as Record<string, unknown>), batch: 'B-1043', mes_ref: 'MES-2026-11-1043' };
    writeFileSync(join(inbox, '.B-1043.json.tmp'), JSON.stringify(next));
    renameSync(join(inbox, '.B-1043.json.tmp'), join(inbox, 'B-1043.json'));
    await rearmLostPlcs(node, T, tokens.get('p.bianchi')!);
    const started = await call(node.url, 'POST', `${A}/runs`, { token: tokens.get('o.operator')!, body: { request: REQUEST } });
    expect(started.status, JSON.stringify(started.body)).toBe(201);
    const runId = started.body.id as string;
    await node.line!.until('the run at its approval gate', () => node.daemon.engine.runs.runById(runId)?.status === 'APPROVAL');
    // every move the run queued for a person, from the trail
    const queued = [...new Set(audit({ run: runId }).filter((e) => e.action === 'setpoint.pending').map((e) => (e.args as { pendingId: string }).pendingId))];
    const ofPress = audit({ run: runId, agent: 'agent.compress_fill' }).filter((e) => e.action === 'setpoint.pending');
    expect(ofPress.length, `compress_fill queued L2 moves for the reviewer: ${JSON.stringify(node.daemon.engine.toolCalls(T, runId).filter((r) => r.kind === 'ok' && r.tool.endsWith('write_setpoint')).map((r) => `${r.agent} ${r.summary}`))}`).toBeGreaterThan(0);
    // none waits any more: each was superseded or withdrawn when its step ended
    const approvals = (await call(node.url, 'GET', `${A}/approvals`, { token: tokens.get('p.bianchi')! })).body.items as { id: string; run: string | null }[];
    expect(approvals.filter((a) => a.run === runId && a.id.startsWith('pw_'))).toEqual([]);
    const gone = new Map(audit({ run: runId }).filter((e) => e.action === 'setpoint.withdrawn' || e.action === 'setpoint.superseded').map((e) => [(e.args as { pendingId: string }).pendingId, e]));
    for (const id of queued) expect(gone.has(id), `${id} left the queue with a withdrawal`).toBe(true);
    const atStepEnd = [...gone.values()].filter((e) => e.action === 'setpoint.withdrawn' && /^step 05 compress\.press ended \(SUCCEEDED\)/.test(e.reason ?? ''));
    expect(atStepEnd.length, 'the move left at the end of step 05 was withdrawn then').toBeGreaterThan(0);
    // signing afterwards is refused before any password, and nothing is signed
    for (const e of atStepEnd) {
      const id = (e.args as { pendingId: string }).pendingId;
      const r = await sign('p.bianchi', id, (e.args as { vectorHash: string }).vectorHash);
      expect([r.status, r.body.code]).toEqual([409, 'LK_MOVE_WITHDRAWN']);
    }
    expect(audit({ run: runId }).filter((e) => e.action === 'setpoint.sign')).toEqual([]);
    // the unreviewed move at the end of its step is an exception for the reviewer
    const exc = (await call(node.url, 'GET', `${A}/runs/${runId}/exceptions`, { token: tokens.get('m.rossi')! })).body.items as { kind: string; step: string; evidence: { pendingId: string; waitedFor: string } }[];
    const unreviewed = exc.filter((x) => x.kind === 'MOVE_UNREVIEWED' && x.step === '05 compress.press');
    expect(unreviewed.map((x) => x.evidence.pendingId).sort()).toEqual(atStepEnd.filter((e) => e.subject.agent === 'agent.compress_fill').map((e) => (e.args as { pendingId: string }).pendingId).sort());
    expect(unreviewed.every((x) => x.evidence.waitedFor === 'p.bianchi')).toBe(true);

    // the transcript (re-attached from the run's first line) said whom each waited for, what, since when, before step 05 ended
    const watch = await cli(operator, ['runs', 'watch', runId], { until: /^approval required: .*$/m });
    expect(watch.code, watch.err).toBe(0);
    const lines = watch.out.split('\n');
    const waiting = lines.findIndex((l) => /^ {2}waiting for p\.bianchi: press\.[A-Za-z]+ [\d.]+ → [\d.]+ [^ ]+.* \(move pw_[0-9a-z]+_[0-9a-f]{8} of agent\.compress_fill, since \d{4}-\d\d-\d\dT[\d:.]+Z\)$/.test(l));
    expect(waiting, watch.out).toBeGreaterThan(0);
    expect(lines[waiting + 1]).toMatch(/^ {4}decide with: linekeeper moves approve pw_/);
    const step05 = lines.findIndex((l) => /^ {2}05 compress\.press +ok/.test(l));
    expect(waiting).toBeLessThan(step05);
    expect(lines.some((l) => /^! MOVE_UNREVIEWED agent\.compress_fill: .* waited for p\.bianchi from .*; withdrawn when step 05 compress\.press ended/.test(l)), watch.out).toBe(true);

    // one contest, one outcome, and never an empty "contested: ;"
    const g = (await call(node.url, 'GET', `${A}/runs/${runId}/genealogy`, { token: tokens.get('a.ricci')! })).body as { events: { kind: string; summary: string }[] };
    const contests = g.events.filter((e) => e.kind === 'arbitration');
    for (const e of contests) {
      expect(e.summary).not.toMatch(/contested: ;|: ;/);
      expect(/ wins| keeps it/.test(e.summary) && /deadlock/.test(e.summary)).toBe(false);
    }

    // a deadlock the run left (when quality_conf asked to hold the turret speed against compress_fill's waiting
    // move) is listed with the run, was an exception when its step ended, and waits for a person: p.bianchi decides
    const left = (await call(node.url, 'GET', `${A}/arbitration/escalations`, { token: tokens.get('p.bianchi')! })).body.items as { setpoint: string; runs: string[]; sides: { requestId: string }[] }[];
    for (const e of left) {
      expect(e.runs).toContain(runId);
      expect(exc.some((x) => x.kind === 'ESCALATION_UNRESOLVED'), 'an open deadlock at the end of its step is an exception').toBe(true);
      const r = await call(node.url, 'POST', `${A}/arbitration/escalations/${e.setpoint}`, { token: tokens.get('p.bianchi')!, body: { choose: e.sides[0]!.requestId, reason: 'decided after the step' } });
      expect(r.status).toBe(200);
    }
  });
});
