/**
 * The core simulator: the guarded writer, policy, arbitration, the store and its audit trail (a real SQLite file),
 * the simulated plant behind in-memory connectors, and scripted people — agents proposing moves (in and out of the
 * design space, in other units, malformed), reviewers and QA approving, rejecting, approving stale vectors and
 * racing each other — all on one virtual clock, with faults injected between and inside operations: a crash at a
 * random await and a restart from the store, a connection lost, a write reply lost, a read-back that differs, a PLC
 * whose watchdog took it to its last known-good recipe, a commanded revert, a re-arm, a policy bundle changed or
 * missing, a batch put on hold, the operator gone.
 *
 * After every step it checks the invariants the safety case rests on (see {@link INVARIANTS}); a failing seed
 * reports the step, the invariant and the trace of actions, and replays identically (`npm run sim -- --seed S`).
 * Everything is a function of the seed: the plant, the people, the faults, the clock.
 */
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createMemoryConnectors, type MemoryConnector } from '../../connectors/memory/connector.js';
import { Plant } from '../../connectors/sim/plant.js';
import type { Connector, WriteCapability } from '../../connectors/types.js';
import { AuditTrail as Trail } from '../../src/audit/trail.js';
import { loadSitePublicKey, type PublicSiteKey } from '../../src/audit/keys.js';
import { verifyStore } from '../../src/audit/verify.js';
import { createRng, every, ManualClock, settleMicrotasks, settleTurn, type Rng } from '../../src/clock.js';
import { loadConfig } from '../../src/config/load.js';
import { loadPolicyBundle } from '../../src/config/policy-bundle.js';
import type { SiteConfig } from '../../src/config/schema.js';
import { clearanceProblem } from './trail.js';
import { GuardedWriter, type BatchContext, type PendingWrite, type WriteProposal } from '../../src/engine/guarded-writer.js';
import type { Attendance } from '../../src/domain/policy.js';
import { LkError } from '../../src/errors.js';
import { changeAutonomy, initialAutonomy, type AutonomyState, type PolicyBundle } from '../../src/policy/index.js';
import { openStore, type Store } from '../../src/store/store.js';
import { plantTwin, view, viewsOf } from '../helpers/models.js';

export const INVARIANTS = {
  'write-without-intent': 'every equipment write has a committed, open audit intent for that setpoint and value',
  'write-without-allow': "every setpoint.write intent names a policy decision that allowed it, or an approval of its exact vector",
  'outside-design-space-without-qa': 'a move outside the design space is written only with a QA approval of its vector',
  'approval-hash': 'every approval binds the vector hash of the pending write it approved',
  'open-intent': 'no intent is left open once the writer is idle (after recovery too)',
  'pending-store': "the writer's pending queue equals the store's",
  'audit-chain': 'the audit chain verifies',
  'unexpected-error': 'the writer refuses with a LkError, never with another exception',
} as const;
export type Invariant = keyof typeof INVARIANTS;

/** A defect planted to show the simulator finds it (the mutation tests). */
export type PlantedBug = 'skip-intent' | 'approve-any-hash';

export interface SimOptions {
  /** Steps per seed (default 60). */
  readonly steps?: number;
  /** Folder for the seed's data directory (default: /dev/shm when present, else the temp dir). */
  readonly dir?: string;
  readonly bug?: PlantedBug;
}

export interface SimFailure {
  readonly seed: number;
  readonly step: number;
  readonly invariant: Invariant;
  readonly message: string;
  readonly trace: readonly string[];
}

export interface SimResult {
  readonly seed: number;
  readonly steps: number;
  /** Actions and faults taken, by name. */
  readonly actions: Readonly<Record<string, number>>;
  readonly faults: number;
  readonly checks: number;
  readonly writes: number;
  readonly failure?: SimFailure;
}

const T = 'acme-pharma';
const BATCH = 'B-SIM-0001';
const PRODUCT = 'ir-family-a';
const TOOLING = 'round-10mm-ff';
const QA = { person: 'q.russo', role: 'qa_reviewer' } as const;
const PE = { person: 'a.bianchi', role: 'process_engineer' } as const;
const WATCHDOG_MS = 10_000;

let shared: { site: SiteConfig; bundle: PolicyBundle; alt: PolicyBundle } | undefined;
function world(): NonNullable<typeof shared> {
  if (!shared) {
    const loaded = loadConfig();
    const bundle = loadPolicyBundle(loaded.policyDir, { site: loaded.config }).bundle;
    // a second bundle in force after a change: same content, another version (approvals queued under the first are
    // re-evaluated under it)
    shared = { site: loaded.config, bundle, alt: { ...bundle, version: `${bundle.version.slice(0, 56)}5e1f0a1d` } };
  }
  return shared;
}

class Violation extends Error {
  constructor(readonly invariant: Invariant, message: string) {
    super(message);
  }
}

/** The agents the simulator plays, the setpoints each may move, and the model a press move comes from. */
const AGENTS = [
  { agent: 'agent.compress_fill', setpoints: ['press.MainForce', 'press.PreForce', 'press.FillDepth', 'press.TurretSpeed'], model: { id: 'process-twin-v1', version: '1' } },
  { agent: 'agent.coat_dry', setpoints: ['coater.SprayRate', 'coater.Airflow', 'coater.PanSpeed', 'coater.InletAirTemp'] },
  { agent: 'agent.blend_dispense', setpoints: ['blender.Speed', 'blender.TargetRevolutions'] },
  { agent: 'agent.granulate_dry', setpoints: ['fluidbed.InletAirTemp', 'fluidbed.Airflow'] },
] as const;

/** Units a value may be proposed in besides the design space's own (the policy converts; UCUM). */
const OTHER_UNITS: Readonly<Record<string, { unit: string; factor: number }>> = { kN: { unit: 'N', factor: 1000 }, mm: { unit: 'um', factor: 1000 }, 'g/min': { unit: 'kg/h', factor: 0.06 } };

/** Run one seed. Never throws for a violation: it is in the result. */
export async function simulateSeed(seed: number, opts: SimOptions = {}): Promise<SimResult> {
  const steps = opts.steps ?? 60;
  const { site, bundle, alt } = world();
  const rng = createRng(seed);
  /** The writer's id source: a stream of its own, so ids do not shift the people's and the faults' draws. */
  const ids = rng.fork();
  const clock = new ManualClock(Date.UTC(2026, 2, 3, 8) + rng.int(0, 86_400_000));
  const base = opts.dir ?? (process.platform === 'linux' ? '/dev/shm' : tmpdir());
  mkdirSync(base, { recursive: true });
  const dataDir = mkdtempSync(join(base, 'lk-sim-'));
  const trace: string[] = [];
  const actions: Record<string, number> = {};
  let faults = 0;
  let checks = 0;
  let writes = 0;
  const violations: Violation[] = [];
  const count = (name: string, fault = false): void => {
    actions[name] = (actions[name] ?? 0) + 1;
    if (fault) faults++;
  };

  const plant = new Plant({ equipment: site.equipment, clock, seed, watchdogTimeoutMs: WATCHDOG_MS, timeScale: 60, drift: false });
  const stopScan = every(clock, 2_000, () => plant.tick());
  let policy: PolicyBundle | null = bundle;
  const batch: { state: string; reviewer: string | null } = { state: 'running', reviewer: PE.person };
  let attendance: Attendance | null = { operator: 'l.verdi', lastPresenceAt: clock.now() };
  let autonomy: AutonomyState = initialAutonomy(bundle);
  for (const a of ['agent.blend_dispense', 'agent.granulate_dry']) {
    autonomy = changeAutonomy(autonomy, { target: { agent: a }, to: 'L2', by: QA, changeRef: 'CC-2026-0150', at: clock.now() }, bundle).state;
  }
  const twin = plantTwin(1);
  const models = viewsOf(view());

  let store!: Store;
  let connectors!: MemoryConnector[];
  let writer!: GuardedWriter;
  /** Operations started and not yet settled (a crash abandons them). */
  let inFlight: Promise<unknown>[] = [];

  const restoreTrail = opts.bug === 'skip-intent' ? plantSkipIntent() : undefined;

  /** The write capability as the writer gets it, observed: each write is checked against the committed trail first. */
  const observed = (c: MemoryConnector): Connector =>
    new Proxy(c, {
      get(target, prop, receiver) {
        if (prop !== 'claimWriter') return Reflect.get(target, prop, receiver) as unknown;
        return (): WriteCapability => {
          const cap = target.claimWriter();
          return {
            connectorId: cap.connectorId,
            write: (tag, value) => {
              checkWrite(tag, value);
              writes++;
              return cap.write(tag, value);
            },
            commandLkg: (eq) => cap.commandLkg(eq),
            commandRearm: (eq) => cap.commandRearm(eq),
          };
        };
      },
    });

  /** Invariants write-without-intent, write-without-allow, outside-design-space-without-qa, at the moment of the write. */
  function checkWrite(tag: string, value: number): void {
    const db = store.db;
    const open = db
      .prepare(`SELECT seq, action, args, new_value FROM audit_entry i WHERE tenant = ? AND kind = 'intent' AND setpoint = ?
        AND NOT EXISTS (SELECT 1 FROM audit_entry o WHERE o.tenant = i.tenant AND o.intent = i.seq) ORDER BY seq DESC`)
      .all(T, tag) as { seq: number; action: string; args: string | null; new_value: string | null }[];
    const intent = open.find((i) => i.new_value !== null && Number(JSON.parse(i.new_value)) === value);
    if (!intent) throw violate('write-without-intent', `write of ${tag} = ${value} with no open intent for it (open: ${open.map((i) => `#${i.seq} ${i.new_value}`).join(', ') || 'none'})`);
    if (intent.action !== 'setpoint.write') return; // a revert intent: the fail-safe puts back what was there
    const args = JSON.parse(intent.args ?? '{}') as { decision?: string; vectorHash?: string };
    const problem = clearanceProblem(db, T, args);
    if (problem) throw violate(problem.invariant, `intent #${intent.seq}: ${tag} = ${value} ${problem.message}`);
  }

  function violate(invariant: Invariant, message: string): Violation {
    const v = new Violation(invariant, message);
    violations.push(v);
    return v;
  }

  function boot(): void {
    store = openStore({ dataDir, clock });
    connectors = createMemoryConnectors(site, plant, clock);
    for (const c of connectors) {
      void c.connect();
      c.startHeartbeat();
    }
    writer = new GuardedWriter({
      store, site, connectors: connectors.map(observed), clock,
      policy: () => policy,
      autonomy: () => autonomy,
      attendance: () => (attendance ? { ...attendance, lastPresenceAt: clock.now() } : null),
      batches: (_t, b): BatchContext | null => (b === BATCH ? { state: batch.state, reviewer: batch.reviewer } : null),
      twin: () => twin,
      models,
      randomHex: (bytes) => Array.from({ length: bytes }, () => ids.int(0, 255).toString(16).padStart(2, '0')).join(''),
    });
    if (opts.bug === 'approve-any-hash') plantApproveAnyHash(writer);
  }

  /** Start an operation of the writer; a refusal with an LkError is an answer, anything else is a violation. */
  function op(name: string, f: () => Promise<unknown>): Promise<unknown> {
    const p = f().then(
      (r) => r,
      (err: unknown) => {
        if (err instanceof Violation) return err;
        if (LkError.is(err)) return err;
        violate('unexpected-error', `${name}: ${err instanceof Error ? `${err.name}: ${err.message}` : String(err)}`);
        return err;
      },
    );
    inFlight.push(p);
    return p;
  }

  /** Let the writer's operations settle (they await only the memory connectors: microtasks). */
  async function quiesce(): Promise<void> {
    for (let i = 0; i < 50 && inFlight.length > 0; i++) {
      await settleTurn();
      const settled = await Promise.all(inFlight.map((p) => Promise.race([p.then(() => true), settleTurn().then(() => false)])));
      inFlight = inFlight.filter((_, k) => !settled[k]);
    }
  }

  function proposal(): WriteProposal {
    const a = AGENTS[rng.int(0, AGENTS.length - 1)]!;
    const n = rng.next() < 0.8 ? 1 : 2;
    const chosen = [...new Set(Array.from({ length: n }, () => a.setpoints[rng.int(0, a.setpoints.length - 1)]!))];
    const space = bundle.designSpace.approved(PRODUCT, TOOLING);
    const moves = chosen.map((sp) => {
      const lim = space.setpoints[sp]!;
      const [eq, tag] = sp.split('.') as [string, string];
      const cur = plant.setpoints(eq)[tag] ?? (lim.min + lim.max) / 2;
      const roll = rng.next();
      let v: number;
      if (roll < 0.55) v = cur + rng.uniform(-1, 1) * lim.maxStep; // a small step
      else if (roll < 0.8) v = rng.uniform(lim.min, lim.max); // anywhere inside
      else v = rng.next() < 0.5 ? lim.min - rng.uniform(0.01, 0.3) * (lim.max - lim.min) : lim.max + rng.uniform(0.01, 0.3) * (lim.max - lim.min); // outside
      v = Number(v.toFixed(3));
      const r2 = rng.next();
      if (r2 < 0.03) return { setpoint: sp, value: 'NaN' };
      if (r2 < 0.06) return { setpoint: sp, value: { value: v, unit: 'kg' } };
      const other = OTHER_UNITS[lim.unit];
      if (other && r2 < 0.3) return { setpoint: sp, value: { value: Number((v * other.factor).toFixed(3)), unit: other.unit } };
      return { setpoint: sp, value: { value: v, unit: lim.unit } };
    });
    return {
      id: `p-${seed}-${++proposals}`, tenant: T, batch: BATCH, run: 'run_sim', agent: a.agent, product: PRODUCT, tooling: TOOLING,
      moves: moves as WriteProposal['moves'], attribute: 'content_uniformity', justification: 'simulated', ...('model' in a ? { model: a.model } : {}),
    };
  }
  let proposals = 0;

  const pick = <X>(xs: readonly X[]): X | undefined => (xs.length ? xs[rng.int(0, xs.length - 1)] : undefined);
  /** What each person signed: pending id and the vector hash they saw (an approval in the trail must be one of these). */
  const signedHashes = new Set<string>();
  const approvalBy = (w: PendingWrite, hash = w.vectorHash) => {
    signedHashes.add(`${w.id}:${hash}`);
    return w.needs === 'qa' || rng.next() < 0.3 ? { by: QA.person, role: QA.role, kind: 'qa' as const, vectorHash: hash } : { by: PE.person, role: PE.role, kind: 'reviewer' as const, vectorHash: hash };
  };

  /** The step's action, chosen by the seed. */
  async function act(step: number): Promise<void> {
    const r = rng.next();
    if (r < 0.34) {
      const p = proposal();
      trace.push(`${step} propose ${p.agent} ${p.moves.map((m) => `${m.setpoint}=${JSON.stringify(m.value)}`).join(' ')}`);
      count('propose');
      void op('propose', () => writer.propose(p));
    } else if (r < 0.5) {
      const w = pick(writer.pending());
      if (!w) return;
      const stale = rng.next() < 0.1;
      trace.push(`${step} approve ${w.id}${stale ? ' (stale hash)' : ''}`);
      count(stale ? 'approve-stale' : 'approve');
      void op('approve', () => writer.approve(w.id, approvalBy(w, stale ? 'f'.repeat(64) : w.vectorHash)));
    } else if (r < 0.55) {
      const w = pick(writer.pending());
      if (!w) return;
      trace.push(`${step} race two approvals of ${w.id}`);
      count('approve-race');
      void op('approve', () => writer.approve(w.id, approvalBy(w)));
      signedHashes.add(`${w.id}:${w.vectorHash}`);
      void op('approve', () => writer.approve(w.id, { by: QA.person, role: QA.role, kind: 'qa', vectorHash: w.vectorHash }));
    } else if (r < 0.6) {
      const w = pick(writer.pending());
      if (!w) return;
      trace.push(`${step} reject ${w.id}`);
      count('reject');
      void op('reject', () => writer.reject(w.id, QA, 'simulated rejection'));
    } else if (r < 0.63) {
      trace.push(`${step} withdraw all pending`);
      count('withdraw');
      void op('withdraw', () => writer.withdraw(() => true, 'step ended (simulated)'));
    } else if (r < 0.75) {
      const ms = rng.int(1_000, 90_000);
      trace.push(`${step} wait ${ms} ms`);
      count('wait');
      await quiesce();
      await clock.run(clock.now() + ms, settleMicrotasks);
    } else if (r < 0.79) {
      const c = pick(connectors)!;
      const up = c.health().state !== 'connected';
      trace.push(`${step} connection ${c.id} ${up ? 'back' : 'lost'}`);
      count(up ? 'connection-back' : 'connection-lost', !up);
      c.faults.setConnected(up);
    } else if (r < 0.81) {
      const c = pick(connectors)!;
      trace.push(`${step} next write reply lost on ${c.id}`);
      count('reply-lost', true);
      c.faults.loseWriteReplies(1);
    } else if (r < 0.83) {
      const a = pick(AGENTS)!;
      const sp = pick(a.setpoints)!;
      const c = connectors.find((x) => x.id === site.equipment.find((e) => e.id === sp.split('.')[0])!.connection)!;
      trace.push(`${step} read-back of ${sp} skewed`);
      count('readback-skew', true);
      c.faults.skewReadBack(sp, rng.next() < 0.5 ? 1 : 0);
    } else if (r < 0.85) {
      // the heartbeats of one connection stop past the PLCs' watchdog: they revert to LKG on their own
      const c = pick(connectors)!;
      trace.push(`${step} heartbeats of ${c.id} stop for ${WATCHDOG_MS * 1.5} ms`);
      count('watchdog-lapse', true);
      await quiesce();
      c.stopHeartbeat();
      await clock.run(clock.now() + WATCHDOG_MS * 1.5, settleMicrotasks);
      c.startHeartbeat();
    } else if (r < 0.87) {
      const eq = pick(['press', 'coater', 'blender', 'fluidbed'])!;
      trace.push(`${step} revert ${eq} to LKG (model lost)`);
      count('revert-lkg', true);
      void op('revert', () => writer.revertToLkg([eq], { tenant: T, reason: 'model lost (simulated)', batch: BATCH, actor: 'system' }));
    } else if (r < 0.9) {
      const eq = pick(['press', 'coater', 'blender', 'fluidbed'])!;
      trace.push(`${step} re-arm ${eq}`);
      count('rearm');
      void op('rearm', () => writer.rearm(eq, { tenant: T, reason: 'operator re-arms (simulated)', batch: BATCH, actor: PE.person }));
    } else if (r < 0.92) {
      const next = rng.next() < 0.2 ? null : policy === bundle ? alt : bundle;
      trace.push(`${step} policy bundle ${next ? next.version.slice(0, 8) : 'missing'}`);
      count('bundle-change', true);
      policy = next;
    } else if (r < 0.94) {
      batch.state = batch.state === 'running' ? 'hold' : 'running';
      trace.push(`${step} batch ${batch.state}`);
      count(`batch-${batch.state}`);
    } else if (r < 0.96) {
      attendance = attendance ? null : { operator: 'l.verdi', lastPresenceAt: clock.now() };
      trace.push(`${step} operator ${attendance ? 'present' : 'gone'}`);
      count(attendance ? 'operator-present' : 'operator-gone');
    } else {
      await crash(step);
    }
  }

  /**
   * The process dies at a random await of whatever is under way: the connectors freeze (nothing under way settles,
   * nothing more is sent), the writer is abandoned, and a new process opens the store, recovers and goes on.
   */
  async function crash(step: number): Promise<void> {
    const turns = rng.int(0, 6);
    let started = false;
    if (rng.next() < 0.7) {
      const p = proposal();
      started = true;
      void op('propose', () => writer.propose(p));
    }
    for (let i = 0; i < turns; i++) await Promise.resolve();
    trace.push(`${step} crash${started ? ` ${turns} microtask turns into a proposal` : ''}, restart`);
    count('crash', true);
    for (const c of connectors) c.faults.freeze();
    inFlight = [];
    store.close();
    boot();
    const report = await writer.recover();
    trace.push(`${step}   recovered: ${report.interrupted.length} intent(s) interrupted, ${report.approvalsInterrupted.length} approval(s) back to waiting`);
    const open = store.audit.openIntents(T);
    if (open.length > 0) throw violate('open-intent', `after recovery ${open.length} intent(s) are still open: ${open.map((e) => `#${e.seq}`).join(', ')}`);
  }

  /** The invariants that hold whenever the writer is idle. */
  function checkIdle(chain: boolean): void {
    checks++;
    const open = store.audit.openIntents(T);
    if (open.length > 0) throw violate('open-intent', `${open.length} intent(s) open with the writer idle: ${open.map((e) => `#${e.seq} ${e.subject.setpoint ?? ''}`).join(', ')}`);
    const rows = store.db.prepare('SELECT id, vector_hash FROM pending_write ORDER BY id').all() as { id: string; vector_hash: string }[];
    const mine = writer.pending().map((w) => ({ id: w.id, vector_hash: w.vectorHash })).sort((a, b) => (a.id < b.id ? -1 : 1));
    if (JSON.stringify(rows) !== JSON.stringify(mine)) throw violate('pending-store', `writer queue ${JSON.stringify(mine)} != store ${JSON.stringify(rows)}`);
    const approvals = store.db.prepare(`SELECT seq, args FROM audit_entry WHERE tenant = ? AND action = 'setpoint.approve' AND seq > ?`).all(T, approvedSeen) as { seq: number; args: string }[];
    for (const a of approvals) {
      approvedSeen = a.seq;
      const x = JSON.parse(a.args) as { pendingId: string; vectorHash: string };
      const queued = store.db
        .prepare(`SELECT args FROM audit_entry WHERE tenant = ? AND action = 'setpoint.pending' AND seq < ? AND json_extract(args, '$.pendingId') = ? ORDER BY seq DESC LIMIT 1`)
        .get(T, a.seq, x.pendingId) as { args: string } | undefined;
      if (!signedHashes.has(`${x.pendingId}:${x.vectorHash}`)) throw violate('approval-hash', `approval #${a.seq} of ${x.pendingId} binds ${x.vectorHash.slice(0, 12)}, which nobody signed for it`);
      const hash = queued ? (JSON.parse(queued.args) as { vectorHash: string }).vectorHash : undefined;
      if (hash !== x.vectorHash) throw violate('approval-hash', `approval #${a.seq} of ${x.pendingId} binds ${x.vectorHash.slice(0, 12)}, the pending write was queued with ${hash?.slice(0, 12) ?? 'nothing'}`);
    }
    if (chain) verifyChain();
  }

  /** The audit chain verifies from seq 1, with its checkpoints (every 10th step, after a crash, at the end: O(n) each). */
  function verifyChain(): void {
    if (store.audit.head(T).seq === 0) return;
    siteKey ??= loadSitePublicKey(dataDir);
    const report = verifyStore({ db: store.db, dataDir }, { tenant: T, publicKey: siteKey });
    if (!report.ok) throw violate('audit-chain', `audit chain does not verify: ${JSON.stringify(report.chains[0]?.damage ?? report.problems)}`);
  }
  let approvedSeen = 0;
  let siteKey: PublicSiteKey | undefined;

  let step = 0;
  let failure: SimFailure | undefined;
  try {
    boot();
    await writer.recover();
    for (step = 1; step <= steps; step++) {
      const crashes = actions['crash'] ?? 0;
      await act(step);
      await quiesce();
      if (violations.length > 0) throw violations[0];
      checkIdle(step % 10 === 0 || step === steps || (actions['crash'] ?? 0) > crashes);
    }
  } catch (err) {
    const v = violations[0] ?? (err instanceof Violation ? err : undefined);
    failure = v
      ? { seed, step, invariant: v.invariant, message: v.message, trace }
      : { seed, step, invariant: 'unexpected-error', message: err instanceof Error ? `${err.name}: ${err.message}\n${err.stack ?? ''}` : String(err), trace };
  } finally {
    stopScan();
    for (const c of connectors ?? []) {
      c.faults.freeze();
      await c.close();
    }
    try {
      store?.close();
    } catch {
      // already closed by a crash mid-restart
    }
    restoreTrail?.();
    rmSync(dataDir, { recursive: true, force: true });
  }
  return { seed, steps: Math.min(step, steps), actions, faults, checks, writes, ...(failure ? { failure } : {}) };
}

/** Planted defect: the audit trail drops `setpoint.write` intents (the writer goes on as if they were committed). */
function plantSkipIntent(): () => void {
  const original = Trail.prototype.append;
  Trail.prototype.append = function (this: Trail, input: Parameters<Trail['append']>[0]) {
    if (input.kind === 'intent' && input.action === 'setpoint.write') {
      const head = this.head(input.tenant);
      return { ...input, seq: head.seq + 1_000_000, hash: head.hash, prevHash: head.hash, ts: '' } as unknown as ReturnType<Trail['append']>;
    }
    return original.call(this, input);
  } as Trail['append'];
  return () => {
    Trail.prototype.append = original;
  };
}

/** Planted defect: the writer takes any approval as binding the pending write's vector. */
function plantApproveAnyHash(writer: GuardedWriter): void {
  const approve = writer.approve.bind(writer);
  writer.approve = (id, a) => {
    const w = writer.pending().find((x) => x.id === id);
    return approve(id, { ...a, vectorHash: w ? w.vectorHash : a.vectorHash });
  };
}
