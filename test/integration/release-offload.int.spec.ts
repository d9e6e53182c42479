/**
 * The heartbeat never starves while a batch is released or a large rehearsal runs (docs/fail-safe.md): one
 * daemon in process with the embedded plant (OPC UA + Modbus TCP on loopback, its PLC watchdogs on the wall
 * clock), real SQLite and the REST API. A batch runs to the approval gate, QA signs, and the release package is
 * written; then a process engineer rehearses 10,000 candidates through `POST twin/simulate`; last, the engine is
 * stopped while the package of an aborted run is being written.
 *
 * What is asserted is order and outcome, never a duration:
 * - the event loop turned while the package was being written (a callback queued when the tool call was
 *   audited ran before its result was audited): the chain verification, the bundle, the PDF and the fsyncs
 *   are not on the loop that writes the heartbeats. Written on the loop, the result comes first;
 * - no PLC reverted: no revert event from the plant, every supervisor ATTENDED, every revert counter unchanged;
 * - the package is whole: the bundle verifies offline with the site key, release.json's and release.pdf's
 *   digests are those audited, and the PDF is byte for byte the one rendered from release.json here;
 * - the event-loop delay is reported by /readyz and /metrics, and read by doctor's check;
 * - the rehearsal: the loop turned while its worker ran (before its audit entry), and no PLC reverted;
 * - a stop waits for a package being written: it is written whole and audited before the stop returns.
 */
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AuditEntry } from '../../src/audit/entry.js';
import { keyFiles } from '../../src/audit/keys.js';
import { startDaemon, type Daemon } from '../../src/daemon.js';
import { rearmPlc } from '../../src/engine/rearm.js';
import { rehearsalWorkerStats } from '../../src/engine/rehearsal.js';
import { renderReleasePdf } from '../../src/engine/release-pdf.js';
import type { ReleaseRecord } from '../../src/engine/release-types.js';
import type { DemoUser } from '../../src/api/index.js';
import { silentLogger } from '../../src/log.js';
import { eventLoopCheck } from '../../src/ops/doctor.js';
import { closeOpenExceptions } from '../helpers/exceptions.js';
import { firstStart } from '../helpers/first-start.js';
import { heartbeating, makeRunSite, rearmLostPlcs, resumeMarginalBlend, waitFor, type RunSite } from '../helpers/run-site.js';

const T = 'acme-pharma';
const OPERATOR = 'o.operator';
const QA = { user: 'm.rossi', name: 'Maria Rossi', role: 'qa_reviewer' } as const;
const VERIFIER = fileURLToPath(new URL('../../tools/verify-audit-bundle.mjs', import.meta.url));
const TOOL = 'audit.write_release_package';
const sha = (b: Buffer | string): string => createHash('sha256').update(b).digest('hex');
/**
 * The standalone verifier on a bundle, in a child process waited for without blocking: this process is the
 * daemon's, and a spawnSync here would stop its heartbeats for as long as the verifier runs.
 */
function verifyOffline(bundle: string): Promise<{ status: number | null; out: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [VERIFIER, bundle, '--key', keyFiles(site.data).publicFile], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (b: Buffer) => (out += b.toString('utf8')));
    child.stderr.on('data', (b: Buffer) => (out += b.toString('utf8')));
    child.once('error', reject);
    child.once('exit', (status) => resolve({ status, out }));
  });
}

/** An engineer's HTTP client: POST a rehearsal, print "<status> <ranked + discarded>". */
const REHEARSAL_CLIENT = `const r = await fetch(process.env.LK_URL, { method: 'POST', headers: { authorization: 'Bearer ' + process.env.LK_TOKEN, 'content-type': 'application/json' }, body: process.env.LK_BODY });
const t = await r.text();
let n = 0;
try { const b = JSON.parse(t); n = b.ranked.length + b.discarded.length; } catch {}
process.stdout.write(r.status + ' ' + n + (r.status === 200 ? '' : ' ' + t.slice(0, 300)) + '\\n');`;

let site: RunSite;
let d: Daemon;
let demoUsers: readonly DemoUser[];
let presence: NodeJS.Timeout | undefined;

beforeAll(async () => {
  site = makeRunSite({ timeScale: 600, batches: { 'B-1042': 8_000, 'B-1043': 2_000 } });
  const copied = await firstStart(site.config, site.data);
  d = await startDaemon({ configFile: site.config, dataDir: site.data, logger: silentLogger, pollMs: 100, api: { host: '127.0.0.1', port: 0 }, loopDelay: { windowMs: 1000 } });
  demoUsers = copied ?? d.demoUsers;
  presence = setInterval(() => d.engine.presence(OPERATOR), 5_000);
  d.engine.presence(OPERATOR);
}, 120_000);

afterAll(async () => {
  if (presence) clearInterval(presence);
  await d?.stop('test done');
  site?.cleanup();
});

/**
 * Every PLC supervised before a case: one that its own watchdog reverted earlier (a loaded machine; not the
 * case's subject) is re-armed by a named person first, as a site does. Returns the revert counters.
 */
async function everyPlcSupervised(): Promise<[string, number][]> {
  const plant = d.simulator!.plant;
  const equipment = d.loaded.config.equipment.map((e) => e.id);
  const deps = { site: d.loaded.config, writer: d.writer, policy: () => d.policy.bundle, read: d.engine.options.read, activeTenant: () => T };
  for (const id of equipment.filter((e) => plant.supervisor(e).state === 'LOST')) {
    await waitFor(`heartbeats of ${id} to arrive`, () => heartbeating(plant.supervisor(id)), 60_000);
    await rearmPlc(deps, { tenant: T, equipment: id, person: 'p.bianchi', role: 'process_engineer', reason: `${id} reverted by its own watchdog earlier; checked, supervision may resume` });
  }
  expect(equipment.map((id) => [id, plant.supervisor(id).state])).toEqual(equipment.map((id) => [id, 'ATTENDED']));
  return equipment.map((id) => [id, plant.supervisor(id).revertCount]);
}

describe('releasing a batch leaves every PLC supervised', () => {
  it('[INV-HEARTBEAT] the package is written off the event loop; no PLC reverts; the package verifies', async () => {
    const plant = d.simulator!.plant;
    const equipment = d.loaded.config.equipment.map((e) => e.id);
    const run = d.engine.start({ tenant: T, request: 'run batch B-1042 on line-3, keep weight and hardness on target', by: OPERATOR });
    const atGate = await waitFor(`run ${run.id} at its approval gate`, () => {
      if (resumeMarginalBlend(d, T, run.id)) return false;
      const v = d.engine.get(T, run.id);
      return !['PENDING', 'RUNNING'].includes(v.status) && v;
    }, 240_000);
    expect(atGate.status).toBe('APPROVAL');
    closeOpenExceptions(d.engine, T, run.id);
    const approval = d.engine.pendingApprovals(T)[0]!.id;

    // before the signature: every PLC supervised. One that its own watchdog reverted during the run (a loaded
    // machine; not this test's subject) is re-armed by a named person first, as a site does
    const deps = { site: d.loaded.config, writer: d.writer, policy: () => d.policy.bundle, read: d.engine.options.read, activeTenant: () => T };
    for (const id of equipment.filter((e) => plant.supervisor(e).state === 'LOST')) {
      await waitFor(`heartbeats of ${id} to arrive`, () => heartbeating(plant.supervisor(id)), 60_000);
      await rearmPlc(deps, { tenant: T, equipment: id, person: 'p.bianchi', role: 'process_engineer', reason: `${id} reverted by its own watchdog during the run; checked, supervision may resume` });
    }
    expect(equipment.map((id) => [id, plant.supervisor(id).state])).toEqual(equipment.map((id) => [id, 'ATTENDED']));
    const counts = equipment.map((id) => [id, plant.supervisor(id).revertCount]);
    const reverts: string[] = [];
    const offPlant = plant.on((e) => {
      if (e.type === 'revert') reverts.push(`${e.equipment}: ${e.reason}`);
    });
    const order: string[] = [];
    const offAudit = d.store.audit.onCommitted((e: AuditEntry) => {
      if (e.action !== TOOL) return;
      order.push(e.kind);
      // queued behind whatever holds the loop: it runs before the result only if the package is written elsewhere
      if (e.kind === 'tool_call') setImmediate(() => order.push('event loop turned'));
    });
    try {
      d.engine.decide(T, approval, { signer: QA, decision: 'approve', meaning: 'QA release of the batch' });
      const done = await waitFor(`run ${run.id} to end`, () => {
        const v = d.engine.get(T, run.id);
        return !['PENDING', 'RUNNING', 'APPROVAL'].includes(v.status) && v;
      }, 120_000);
      expect(done.status, done.reason ?? '').toBe('SUCCEEDED');
      await new Promise((r) => setImmediate(r));
    } finally {
      offPlant();
      offAudit();
    }
    expect(order).toEqual(['tool_call', 'event loop turned', 'tool_result']);
    expect(reverts).toEqual([]);
    expect(equipment.map((id) => [id, plant.supervisor(id).state])).toEqual(equipment.map((id) => [id, 'ATTENDED']));
    expect(equipment.map((id) => [id, plant.supervisor(id).revertCount])).toEqual(counts);

    // the package: whole, its digests those audited, its PDF the one rendered from release.json on this thread
    // the view gives download URLs; the files are on this node under the data directory
    const rel = { json: d.engine.releaseFile(T, run.id, 'json')!, pdf: d.engine.releaseFile(T, run.id, 'pdf')!, bundle: d.engine.releaseFile(T, run.id, 'bundle')! };
    const log = d.engine.runs.toolCalls(run.id).filter((r) => r.tool === TOOL && r.kind === 'ok');
    expect(log).toHaveLength(1);
    const digests = (log[0]!.result as { sha256: { json: string; pdf: string; bundle: string } }).sha256;
    const json = readFileSync(rel.json);
    const pdf = readFileSync(rel.pdf);
    expect({ json: sha(json), pdf: sha(pdf), bundle: sha(readFileSync(rel.bundle)) }).toEqual(digests);
    const record = JSON.parse(json.toString('utf8')) as ReleaseRecord;
    expect(record.input.run.status).toBe('RELEASED');
    expect(renderReleasePdf(record, sha(json)).equals(pdf)).toBe(true);
    const verify = await verifyOffline(rel.bundle);
    expect(verify.status, verify.out).toBe(0);
  }, 420_000);

  it('[INV-HEARTBEAT] a 10,000-candidate rehearsal through the REST API leaves every PLC supervised; the loop turns while it runs', async () => {
    const plant = d.simulator!.plant;
    const equipment = d.loaded.config.equipment.map((e) => e.id);
    const counts = await everyPlcSupervised();
    const reverts: string[] = [];
    const offPlant = plant.on((e) => {
      if (e.type === 'revert') reverts.push(`${e.equipment}: ${e.reason}`);
    });
    const order: string[] = [];
    const offAudit = d.store.audit.onCommitted((e: AuditEntry) => {
      if (e.action === 'twin.simulate') order.push('audited');
    });
    const engineer = demoUsers.find((u) => u.id === 'p.bianchi')!;
    // the demo's one-time password is changed by its owner first (until then the session may do nothing else)
    const own = 'rehearsal engineer: ten thousand candidate vectors';
    await d.identity!.changePassword(engineer.id, engineer.password, own);
    const { token } = await d.identity!.signIn(engineer.id, own);
    let answer: { status: number; entries: number; out: string };
    try {
      // the engineer's client is a process of its own, as a browser is: receiving and parsing 14 MB of answer is
      // its work, not the daemon's
      const sim = new Promise<{ status: number; entries: number; out: string }>((resolve, reject) => {
        const child = spawn(process.execPath, ['--input-type=module', '-e', REHEARSAL_CLIENT], {
          env: { ...process.env, LK_URL: `${d.ready.api!}/v1/tenants/${T}/twin/simulate`, LK_TOKEN: token, LK_BODY: JSON.stringify({ candidates: 10_000, horizon: 'full batch', seed: 5 }) },
          stdio: ['ignore', 'pipe', 'pipe'],
        });
        let out = '';
        child.stdout.on('data', (b: Buffer) => (out += b.toString('utf8')));
        child.stderr.on('data', (b: Buffer) => (out += b.toString('utf8')));
        child.once('error', reject);
        child.once('exit', () => {
          const [status, entries] = out.trim().split(' ').map(Number);
          resolve({ status: status ?? 0, entries: entries ?? 0, out });
        });
      });
      // bounded: on code that rehearses on the loop no worker ever runs it
      await waitFor('the rehearsal to reach its worker', () => rehearsalWorkerStats().running > 0, 60_000, 5);
      order.push('worker running');
      // queued behind whatever holds the loop: it runs before the audit entry only if the rehearsal is elsewhere
      setImmediate(() => order.push('event loop turned'));
      answer = await sim;
      await new Promise((r) => setImmediate(r));
    } finally {
      offPlant();
      offAudit();
    }
    expect(answer.status, answer.out.slice(0, 300)).toBe(200);
    expect(answer.entries).toBe(10_000);
    expect(order).toEqual(['worker running', 'event loop turned', 'audited']);
    expect(reverts).toEqual([]);
    expect(equipment.map((id) => [id, plant.supervisor(id).state])).toEqual(equipment.map((id) => [id, 'ATTENDED']));
    expect(equipment.map((id) => [id, plant.supervisor(id).revertCount])).toEqual(counts);
  }, 180_000);

  it('the event-loop delay is reported by /readyz and /metrics, and read by doctor', async () => {
    // a window closes (1 s windows)
    await new Promise<void>((resolve) => {
      const off = d.loopDelay.onWindow(() => {
        off();
        resolve();
      });
    });
    const ready = (await (await fetch(`${d.ready.api!}/readyz`)).json()) as { status: string; event_loop?: Record<string, unknown> };
    expect(ready.status).toBe('ready');
    expect(Object.keys(ready.event_loop ?? {}).sort()).toEqual(['bound_ms', 'max_ms', 'ok', 'over_bound', 'p99_ms', 'window_ms', 'worst_ms']);
    expect(ready.event_loop).toMatchObject({ bound_ms: 250, window_ms: 1000 });
    const check = eventLoopCheck(ready);
    expect(check.id).toBe('event_loop');
    expect(check.status).toBe(ready.event_loop!['ok'] ? 'ok' : 'warn');
    expect(check.message).toContain('bound 250 ms');
    const metrics = await (await fetch(`${d.ready.api!}/metrics`)).text();
    for (const m of ['linekeeper_event_loop_delay_p99_seconds', 'linekeeper_event_loop_delay_max_seconds', 'linekeeper_event_loop_over_bound_total']) {
      expect(metrics).toMatch(new RegExp(`^${m} [0-9.e+-]+$`, 'm'));
    }
    expect(eventLoopCheck(null).status).toBe('warn');
  }, 60_000);

  it('a stop waits for a package being written in its worker: it is written whole and audited before the stop returns', async () => {
    await rearmLostPlcs(d, T);
    const run = d.engine.start({ tenant: T, request: 'run batch B-1043 on line-3, keep weight and hardness on target', by: OPERATOR });
    const order: string[] = [];
    let stopping: Promise<void> | undefined;
    const offAudit = d.store.audit.onCommitted((e: AuditEntry) => {
      if (e.action !== TOOL || (e.subject as { run?: string }).run !== run.id) return;
      order.push(e.kind);
      // the stop comes as the package's tool call is recorded, before its worker has even started
      if (e.kind === 'tool_call') stopping = d.engine.stop('test: stopped while a package is written').then(() => void order.push('engine stopped'));
    });
    try {
      await d.engine.abort(T, run.id, { signer: { user: 'p.bianchi', name: 'Paolo Bianchi', role: 'process_engineer' }, reason: 'test: aborted to write its package during a stop' });
      await waitFor('the stop to be asked', () => stopping, 30_000);
      await stopping;
    } finally {
      offAudit();
    }
    // the stop returned only once the package was written and its result audited
    expect(order).toEqual(['tool_call', 'tool_result', 'engine stopped']);
    const v = d.engine.get(T, run.id);
    expect(v.status).toBe('ABORTED');
    const step10 = d.engine.runs.steps(run.id).find((s) => s.name === 'release.genealogy')!;
    expect(step10.status).toBe('SKIPPED');
    expect(step10.detail).toMatch(/^not a release: /);
    const ok = d.engine.runs.toolCalls(run.id).filter((r) => r.tool === TOOL && r.kind === 'ok');
    expect(ok).toHaveLength(1);
    // the signed abort is on the record before the package's tool call
    const seqOf = (action: string, kind?: string): number => (d.store.db.prepare(`SELECT seq FROM audit_entry WHERE tenant = ? AND action = ? ${kind ? 'AND kind = ?' : ''} AND run = ? ORDER BY seq LIMIT 1`).get(...[T, action, ...(kind ? [kind] : []), run.id]) as { seq: number }).seq;
    expect(seqOf('run.abort')).toBeLessThan(seqOf(TOOL, 'tool_call'));
    expect(v.release).not.toBeNull();
    const rel = { json: d.engine.releaseFile(T, run.id, 'json')!, pdf: d.engine.releaseFile(T, run.id, 'pdf')!, bundle: d.engine.releaseFile(T, run.id, 'bundle')! };
    const digests = (ok[0]!.result as { sha256: { json: string; pdf: string; bundle: string } }).sha256;
    expect({ json: sha(readFileSync(rel.json)), pdf: sha(readFileSync(rel.pdf)), bundle: sha(readFileSync(rel.bundle)) }).toEqual(digests);
    expect((JSON.parse(readFileSync(rel.json, 'utf8')) as ReleaseRecord).input.run.status).toBe('ABORTED');
    const verify = await verifyOffline(rel.bundle);
    expect(verify.status, verify.out).toBe(0);
  }, 180_000);
});
