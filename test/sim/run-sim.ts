/**
 * The core simulator, whole-run mode: the daemon itself (`startDaemon`, embedded simulator in `memory` mode: the
 * plant in this process behind in-memory connectors) on a virtual clock, running a batch of the embedded default
 * (B-1042, a small batch) from its start to its release or rejection, while scripted people and faults act on it:
 * the operator present or gone, connections lost, heartbeats stopping past the PLC watchdog, the press's material
 * drifting away from what the twin knows (a batch that can fail its specification), defects injected at the
 * cameras, the daemon stopped and started again mid-batch (the plant runs on), a held run resumed, QA approving or
 * rejecting at the gate — and QA trying to release whatever the gate shows.
 *
 * Invariants, checked as it goes and at the end ({@link RUN_INVARIANTS}): the run is in one state and every state
 * change in its audit trail is one the run lifecycle allows; a released batch had a specification table with no
 * FAIL and no critical exception open when QA signed; every equipment write the plant received was a committed intent of a
 * `setpoint.write` an allow decision or an approval of its vector let through (or a revert); no intent is left
 * open at the end; the audit chains verify.
 */
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { MemoryConnector } from '../../connectors/memory/index.js';
import { Plant } from '../../connectors/sim/plant.js';
import { loadSitePublicKey } from '../../src/audit/keys.js';
import { verifyStore } from '../../src/audit/verify.js';
import { createRng, every, ManualClock, settleMicrotasks, settleTurn, type Rng } from '../../src/clock.js';
import { defaultConfigFile, loadConfig } from '../../src/config/load.js';
import { startDaemon, type Daemon } from '../../src/daemon.js';
import { checkRunTransition, TERMINAL_RUN, type RunStatus } from '../../src/domain/run.js';
import { rearmPlc } from '../../src/engine/rearm.js';
import { LkError } from '../../src/errors.js';
import { silentLogger } from '../../src/log.js';
import { openStore } from '../../src/store/store.js';
import { clearanceProblem } from './trail.js';

export const RUN_INVARIANTS = {
  'run-state': 'a run is in one state, and every state change of its trail is one the run lifecycle allows',
  'released-failing-batch': 'a released batch had a specification table with no FAIL and no critical exception open when QA signed',
  'write-without-intent': 'every write the plant received was a committed intent of the guarded writer',
  'write-without-allow': 'every setpoint.write intent follows an allow decision, or an approval of its exact vector',
  'open-intent': 'no intent is left open once the daemon stopped',
  'audit-chain': 'the audit chains verify',
  'unexpected-error': 'people are refused with an LkError, never another exception; the run ends',
} as const;
export type RunInvariant = keyof typeof RUN_INVARIANTS;

export interface RunSimResult {
  readonly seed: number;
  /** How the run ended: a terminal status, or where it was left when the seed's time ran out. */
  readonly status: string;
  readonly released: boolean;
  readonly verdict: string | null;
  readonly actions: Readonly<Record<string, number>>;
  readonly faults: number;
  readonly writes: number;
  readonly virtualMinutes: number;
  readonly failure?: { readonly seed: number; readonly invariant: RunInvariant; readonly message: string; readonly trace: readonly string[] };
}

const T = 'acme-pharma';
const OPERATOR = 'o.operator';
const QA = { user: 'm.rossi', name: 'Maria Rossi', role: 'qa_reviewer' } as const;
const PE = { user: 'p.bianchi', name: 'Paolo Bianchi', role: 'process_engineer' } as const;
const REQUEST = 'run batch B-1042 on line-3, keep weight and hardness on target, capping risk under 1.5%, weight RSD under 1.0%';
const T0 = Date.UTC(2026, 10, 2, 6);

class Violation extends Error {
  constructor(readonly invariant: RunInvariant, message: string) {
    super(message);
  }
}

/** The site every seed runs on (a temp copy of the embedded default: B-1042 of `tablets`), and its data directory after a first start. */
let template: Promise<{ dir: string; config: string; data: string }> | undefined;
function siteTemplate(tablets: number): Promise<{ dir: string; config: string; data: string }> {
  template ??= (async () => {
    const dir = mkdtempSync(join(tmpdir(), 'lk-runsim-'));
    const shipped = join(defaultConfigFile(), '..');
    cpSync(join(shipped, 'policy'), join(dir, 'policy'), { recursive: true });
    // the plant's process runs 600 times faster than the engine's clock (a batch in minutes of virtual time), the
    // PLC watchdog as the tests' sites have it
    const yaml = readFileSync(defaultConfigFile(), 'utf8').replace(/^(\s*)watchdog_timeout_ms: 3000$/m, '$1watchdog_timeout_ms: 10000').replace(/^(\s*)time_scale: 60$/m, '$1time_scale: 600');
    writeFileSync(join(dir, 'site.yaml'), yaml);
    const sample = JSON.parse(readFileSync(join(shipped, 'batches', T, 'B-1042.json'), 'utf8')) as Record<string, unknown>;
    mkdirSync(join(dir, 'batches', T), { recursive: true });
    cpSync(join(shipped, 'batches', 'borealis-bio'), join(dir, 'batches', 'borealis-bio'), { recursive: true });
    writeFileSync(join(dir, 'batches', T, 'B-1042.json'), JSON.stringify({ ...sample, batch_size: { tablets } }, null, 2));
    // the first start: the embedded default signs its bundle, makes its demo people and fits its demo models (seconds)
    const clock = new ManualClock(T0);
    const d = await startDaemon({ configFile: join(dir, 'site.yaml'), dataDir: join(dir, 'data'), logger: silentLogger, clock, embeddedSimulator: 'memory', maintenance: false, connectTimeoutMs: 1 });
    await d.stop('template made');
    return { dir, config: join(dir, 'site.yaml'), data: join(dir, 'data') };
  })();
  return template;
}

export interface RunSimOptions {
  /** Tablets of the batch (default 4,000). */
  readonly tablets?: number;
  /** No faults: only the people act (the baseline a seed's faults are judged against). */
  readonly calm?: boolean;
  /** Virtual minutes the seed may run before it is left where it is (default 60). */
  readonly minutes?: number;
}

/** Run one seed: one batch, start to end. Never throws for a violation: it is in the result. */
export async function simulateRun(seed: number, opts: RunSimOptions = {}): Promise<RunSimResult> {
  const site = await siteTemplate(opts.tablets ?? 4_000);
  const rng = createRng(seed);
  const base = process.platform === 'linux' ? '/dev/shm' : tmpdir();
  const data = mkdtempSync(join(base, 'lk-runsim-data-'));
  cpSync(site.data, data, { recursive: true });
  rmSync(join(data, 'linekeeper.lock'), { force: true });
  const clock = new ManualClock(T0 + 86_400_000 + rng.int(0, 3_600_000));
  const loaded = loadConfig(site.config, { dataDir: data });
  // the plant: most seeds run the site's own (its demo twin was fitted to it), the others a plant of the seed's, whose
  // material the twin does not know (such a batch may well fail its specification: QA must not be able to release it)
  const plantSeed = rng.next() < 0.6 ? loaded.config.simulator.seed : seed;
  const plant = new Plant({
    equipment: loaded.config.equipment, clock, seed: plantSeed, timeScale: loaded.config.simulator.time_scale,
    watchdogTimeoutMs: loaded.config.simulator.watchdog_timeout_ms, punchDiameterMm: loaded.config.tooling[0]?.punch_diameter_mm, drift: true,
  });
  const stopScan = every(clock, 100, () => plant.tick());
  /** Every setpoint write the plant accepted, in order (what the equipment received). */
  const received: { tag: string; value: number; at: number }[] = [];
  const write = plant.writeSetpoints.bind(plant);
  plant.writeSetpoints = (eq, values) => {
    write(eq, values);
    for (const [k, v] of Object.entries(values)) received.push({ tag: `${eq}.${k}`, value: v, at: clock.now() });
  };
  const trace: string[] = [];
  const actions: Record<string, number> = {};
  let faults = 0;
  const count = (a: string, fault = false): void => {
    actions[a] = (actions[a] ?? 0) + 1;
    if (fault) faults++;
  };
  const boot = (): Promise<Daemon> =>
    startDaemon({ configFile: site.config, dataDir: data, logger: silentLogger, clock, embeddedSimulator: 'memory', memoryPlant: plant, maintenance: false, connectTimeoutMs: 1, pollMs: 500 });

  let d: Daemon | undefined;
  let runId = '';
  let released = false;
  let failure: RunSimResult['failure'];
  const fail = (invariant: RunInvariant, message: string): Violation => new Violation(invariant, message);
  const start = clock.now();
  const until = start + (opts.minutes ?? 60) * 60_000;
  let presence: (() => void) | undefined;
  let lastStatus: RunStatus | undefined;
  let lastVerdict: string | null = null;
  try {
    d = await boot();
    presence = every(clock, 10_000, () => d?.engine.presence(OPERATOR));
    d.engine.presence(OPERATOR);
    const run = d.engine.start({ tenant: T, request: REQUEST, by: OPERATOR });
    runId = run.id;
    trace.push(`start ${run.id}`);
    while (clock.now() < until) {
      await act(d, rng);
      const v = d.engine.get(T, runId);
      checkState(d, v.status);
      lastStatus = v.status;
      if (TERMINAL_RUN.has(v.status)) break;
    }
    if (process.env['LK_SIM_DEBUG']) {
      const v = d.engine.get(T, runId);
      process.stderr.write(`${v.status} ${v.reason ?? ''}\n${v.steps.map((x) => `  ${x.seq} ${x.name} ${x.status} ${x.detail}`).join('\n')}\n`);
    }
    // the end: the daemon stops; nothing may be left open, and the trail must verify
    await d.stop('seed done');
    d = undefined;
    finalChecks();
  } catch (err) {
    failure = err instanceof Violation
      ? { seed, invariant: err.invariant, message: err.message, trace }
      : { seed, invariant: 'unexpected-error', message: err instanceof Error ? `${err.name}: ${err.message}\n${err.stack ?? ''}` : String(err), trace };
  } finally {
    presence?.();
    if (d) await d.stop('seed failed').catch(() => undefined);
    stopScan();
    rmSync(data, { recursive: true, force: true });
  }
  return {
    seed, status: lastStatus ?? 'NOT_STARTED', released, verdict: lastVerdict, actions, faults, writes: received.length,
    virtualMinutes: Math.round((clock.now() - start) / 60_000), ...(failure ? { failure } : {}),
  };

  /** One step of the people and the faults, then virtual time. */
  async function act(dm: Daemon, r: Rng): Promise<void> {
    const v = dm.engine.get(T, runId);
    const roll = r.next();
    const mem = dm.memoryLine!.connectors as readonly MemoryConnector[];
    if (v.status === 'APPROVAL' && roll < 0.5) {
      const approval = v.approvalGate?.id;
      if (!approval) return;
      // QA tries to release what the gate shows; sometimes they close the open exceptions first, sometimes reject
      if (r.next() < 0.4) {
        for (const e of dm.engine.exceptionsOf(T, runId).filter((x) => x.status === 'open')) {
          trace.push(`QA closes ${e.kind} (${e.severity})`);
          count('close-exception');
          tryPeople(() => dm.engine.closeException(T, e.id, { signer: QA, comment: 'reviewed in the simulation', deviation: e.severity === 'critical' ? 'DEV-SIM-1' : null }));
        }
      }
      const decision = r.next() < 0.85 ? 'approve' : 'reject';
      trace.push(`QA ${decision}s ${approval}`);
      count(`qa-${decision}`);
      const sig = tryPeople(() => dm.engine.decide(T, approval, { signer: QA, decision, meaning: `QA ${decision === 'approve' ? 'release' : 'rejection'} of the batch` }));
      if (sig && decision === 'approve') checkRelease(dm);
    } else if (roll < 0.3 && plant.equipmentIds.some((id) => plant.supervisor(id).state === 'LOST')) {
      // a process engineer re-arms a PLC its watchdog (or a revert) took to LKG: a named person, a reason (R8)
      const id = plant.equipmentIds.find((x) => plant.supervisor(x).state === 'LOST')!;
      trace.push(`process engineer re-arms ${id}`);
      count('rearm');
      const deps = { site: dm.loaded.config, writer: dm.writer, policy: () => dm.policy.bundle, read: dm.engine.options.read, activeTenant: () => dm.engine.runs.activeOnLine(dm.loaded.config.line.id)?.tenant ?? null };
      try {
        await rearmPlc(deps, { tenant: T, equipment: id, person: PE.user, role: PE.role, reason: `${id} on LKG after a fault of the simulation; checked` });
      } catch (err) {
        if (!LkError.is(err)) throw fail('unexpected-error', `re-arm threw ${err instanceof Error ? err.message : String(err)}`);
        trace.push(`  refused: ${err.code}`);
      }
    } else if ((v.status === 'HELD' || v.status === 'INTERRUPTED') && roll < 0.3) {
      trace.push(`operator resumes the ${v.status.toLowerCase()} run`);
      count('resume');
      tryPeople(() => dm.engine.resume(T, runId, OPERATOR, 'resumed in the simulation'));
    } else if (roll < 0.51 || opts.calm) {
      // nothing happens this step but time (most steps)
    } else if (roll < 0.53 || (roll < 0.6 && mem.some((c) => c.health().state !== 'connected'))) {
      const c = mem.find((x) => x.health().state !== 'connected') ?? mem[r.int(0, mem.length - 1)]!;
      const up = c.health().state !== 'connected';
      trace.push(`connection ${c.id} ${up ? 'back' : 'lost'}`);
      count(up ? 'connection-back' : 'connection-lost', !up);
      c.faults.setConnected(up);
    } else if (roll < 0.61) {
      const c = mem[r.int(0, mem.length - 1)]!;
      trace.push(`heartbeats of ${c.id} stop past the watchdog`);
      count('watchdog-lapse', true);
      c.stopHeartbeat();
      await clock.run(clock.now() + loaded.config.simulator.watchdog_timeout_ms * 1.5, settleMicrotasks);
      c.startHeartbeat();
    } else if (roll < 0.62) {
      // the material drifts away from what the twin knows: tablets weaker or stronger at the same force, fill denser or lighter
      const f = { sigma0: r.uniform(0.6, 1.5), bulkDensity: r.uniform(0.85, 1.15) };
      trace.push(`press material skew ${JSON.stringify(f)}`);
      count('press-skew', true);
      plant.skewPress(f);
    } else if (roll < 0.625) {
      trace.push('defects injected at the cameras');
      count('defects', true);
      plant.injectDefects({ chipped: r.uniform(0.5, 3) });
    } else if (roll < 0.635) {
      trace.push('daemon stopped and started again');
      count('restart', true);
      await dm.stop('restart in the simulation');
      verifyChains(data);
      d = await boot();
      d.engine.presence(OPERATOR);
    } else if (roll < 0.64) {
      trace.push('operator gone');
      count('operator-gone');
      presence?.();
      presence = undefined;
    } else if (roll < 0.7 && !presence) {
      trace.push('operator back');
      count('operator-back');
      presence = every(clock, 10_000, () => d?.engine.presence(OPERATOR));
      d?.engine.presence(OPERATOR);
    }
    // time passes: a few seconds of the engine's polls, the plant's scans and the heartbeats, then real I/O settles
    await clock.run(clock.now() + r.int(1_000, 10_000), settleMicrotasks);
    await settleTurn();
  }

  /** A person's act: a refusal is an LkError (kept in the trace); anything else breaks the simulation. */
  function tryPeople<X>(f: () => X): X | undefined {
    try {
      return f();
    } catch (err) {
      if (!LkError.is(err)) throw fail('unexpected-error', `a person's act threw ${err instanceof Error ? `${err.name}: ${err.message}` : String(err)}`);
      trace.push(`  refused: ${err.code}`);
      return undefined;
    }
  }

  function checkState(dm: Daemon, status: string): void {
    const rows = dm.store.db.prepare(`SELECT status FROM run WHERE id = ?`).all(runId) as { status: string }[];
    if (rows.length !== 1) throw fail('run-state', `run ${runId} has ${rows.length} rows`);
    if (rows[0]!.status !== status) throw fail('run-state', `the view says ${status}, the store ${rows[0]!.status}`);
    const changes = dm.store.db.prepare(`SELECT seq, old_value, new_value FROM audit_entry WHERE tenant = ? AND run = ? AND action = 'run.status' ORDER BY seq`).all(T, runId) as { seq: number; old_value: string; new_value: string }[];
    let cur: string | undefined;
    for (const c of changes) {
      const from = JSON.parse(c.old_value) as RunStatus;
      const to = JSON.parse(c.new_value) as RunStatus;
      if (cur !== undefined && from !== cur) throw fail('run-state', `entry #${c.seq} moves the run from ${from}, but it was ${cur}`);
      try {
        checkRunTransition(from, to, runId);
      } catch {
        throw fail('run-state', `entry #${c.seq}: ${from} → ${to} is not a transition of the run lifecycle`);
      }
      cur = to;
    }
    if (cur !== undefined && cur !== status) throw fail('run-state', `the trail leaves the run ${cur}, the store says ${status}`);
  }
  /** At QA's release signature: the specification table PASSed, and no critical exception was open. */
  function checkRelease(dm: Daemon): void {
    released = true;
    const run = dm.engine.runs.runById(runId)!;
    const quality = (run.data as { quality?: { specTable?: { verdict?: string; counts?: Record<string, number> } } }).quality;
    lastVerdict = quality?.specTable?.verdict ?? null;
    // INCOMPLETE (a specification not evaluated, e.g. a LIMS result outstanding) is the reviewer's to judge by its
    // exception; a FAIL never is, nor a batch with no table at all
    if (!quality?.specTable || quality.specTable.verdict === 'FAIL' || (quality.specTable.counts?.['FAIL'] ?? 0) > 0) {
      throw fail('released-failing-batch', `QA's release was accepted with the specification table ${JSON.stringify(quality?.specTable?.verdict)} (${JSON.stringify(quality?.specTable?.counts)})`);
    }
    const open = dm.engine.exceptionsOf(T, runId).filter((e) => e.severity === 'critical' && e.status === 'open');
    if (open.length > 0) throw fail('released-failing-batch', `QA's release was accepted with critical exceptions open: ${open.map((e) => e.kind).join(', ')}`);
  }

  function finalChecks(): void {
    const store = openStore({ dataDir: data, readonly: true });
    try {
      const open = store.audit.openIntents(T);
      if (open.length > 0) throw fail('open-intent', `${open.length} intent(s) open after the stop: ${open.map((e) => `#${e.seq}`).join(', ')}`);
      const intents = store.db.prepare(`SELECT seq, action, setpoint, args, new_value FROM audit_entry WHERE tenant = ? AND kind = 'intent' ORDER BY seq`).all(T) as { seq: number; action: string; setpoint: string; args: string | null; new_value: string }[];
      // each write the plant received is one intent's (consumed in order: two writes of one value need two intents)
      const unused = [...intents];
      for (const w of received) {
        const i = unused.findIndex((x) => x.setpoint === w.tag && Number(JSON.parse(x.new_value)) === w.value);
        if (i < 0) throw fail('write-without-intent', `the plant received ${w.tag} = ${w.value} at ${new Date(w.at).toISOString()} with no intent for it`);
        unused.splice(i, 1);
      }
      for (const i of intents.filter((x) => x.action === 'setpoint.write')) {
        const args = JSON.parse(i.args ?? '{}') as { decision?: string; vectorHash?: string };
        const problem = clearanceProblem(store.db, T, args);
        if (problem) throw fail('write-without-allow', `intent #${i.seq} (${i.setpoint}) ${problem.message}`);
      }
    } finally {
      store.close();
    }
    verifyChains(data);
  }

  function verifyChains(dir: string): void {
    const store = openStore({ dataDir: dir, readonly: true });
    try {
      const r = verifyStore({ db: store.db, dataDir: dir }, { publicKey: loadSitePublicKey(dir) });
      if (!r.ok) throw fail('audit-chain', `audit chains do not verify: ${JSON.stringify(r.chains.filter((c) => !c.ok).map((c) => c.damage))} ${JSON.stringify(r.problems)}`);
    } finally {
      store.close();
    }
  }
}

