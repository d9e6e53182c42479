/**
 * The kill loop of rule R8, shared by `npm run fault:watchdog` and the watchdog benchmark: one external
 * plant simulator (this process), one data directory, and a daemon child that is SIGKILLed mid-batch again and
 * again. Each round: a daemon starts (the first starts the run, later ones find it INTERRUPTED), the person at
 * the HMI re-arms the PLCs once its heartbeats arrive, the operator resumes the run, and while step 03 runs
 * the daemon is killed at a random moment of its heartbeat period. The revert latency of each PLC is the
 * plant's own revert time (its `revert` event, wall clock) minus the moment of the SIGKILL; the audit trail
 * must verify after every kill.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Simulator } from '../../connectors/sim/index.js';
import { verifyStore } from '../../src/audit/index.js';
import { createRng } from '../../src/clock.js';
import { openStore } from '../../src/store/store.js';
import { DaemonChild, rearmAll, recordReverts, startPlant, writeSiteConfig } from './daemon-child.js';

export interface KillLoopOptions {
  readonly kills: number;
  readonly heartbeatMs?: number;
  readonly watchdogTimeoutMs?: number;
  readonly seed?: number;
  /** One line per kill (default: none). */
  readonly log?: (line: string) => void;
}

export interface KillRound {
  readonly kill: number;
  /** Step 03's attempt that was killed. */
  readonly attempt: number;
  /** Wall ms from SIGKILL to the revert, per equipment. */
  readonly latencyMs: Readonly<Record<string, number>>;
  /** The last PLC's revert: when the whole line runs its LKG recipes. */
  readonly lineMs: number;
  readonly auditOk: boolean;
}

export interface KillLoopResult {
  readonly rounds: readonly KillRound[];
  readonly heartbeatMs: number;
  readonly watchdogTimeoutMs: number;
  /** The simulator's PLC scan (ms): the configured bound of a revert is timeout + one scan. */
  readonly scanMs: number;
  readonly failures: readonly string[];
}

const SCAN_MS = 50;
const DEADLINE_MS = 60_000;

/** Run the loop; never throws for a failed round (it is listed in `failures`), only for a broken set-up. */
export async function runKillLoop(o: KillLoopOptions): Promise<KillLoopResult> {
  const heartbeatMs = o.heartbeatMs ?? 1000;
  const watchdogTimeoutMs = o.watchdogTimeoutMs ?? 3000;
  const rng = createRng(o.seed ?? 1);
  const log = o.log ?? (() => undefined);
  const root = mkdtempSync(join(tmpdir(), 'lk-kill-loop-'));
  const sim: Simulator = await startPlant({ timeScale: 60, watchdogTimeoutMs, scanMs: SCAN_MS });
  const rounds: KillRound[] = [];
  const failures: string[] = [];
  let child: DaemonChild | undefined;
  try {
    const config = writeSiteConfig(root, { opcua: sim.opcuaUrl, modbus: sim.modbusEndpoint, heartbeatMs, watchdogTimeoutMs });
    const data = join(root, 'data');
    for (let k = 1; k <= o.kills; k++) {
      try {
        child = DaemonChild.spawn(config, data, k === 1 ? [] : ['--no-start']);
        await child.line((l) => l.t === 'ready', DEADLINE_MS, 'ready');
        await rearmAll(sim, DEADLINE_MS);
        const mark = child.lines.length;
        if (k === 1) {
          await child.state('03', 'RUNNING', DEADLINE_MS);
          sim.plant.startPhase('BLEND');
        } else {
          child.send({ cmd: 'resume' });
        }
        const running = await child.line((l) => l.t === 'state' && l['step'] === '03' && l['status'] === 'RUNNING', DEADLINE_MS, 'step 03 running', k === 1 ? 0 : mark);
        // every PLC re-armed and beaten since: its watchdog runs
        const beat = new Map(sim.plant.equipmentIds.map((eq) => [eq, sim.plant.supervisor(eq).heartbeat]));
        await until(() => sim.plant.equipmentIds.every((eq) => sim.plant.supervisor(eq).state === 'ATTENDED' && sim.plant.supervisor(eq).heartbeat !== beat.get(eq)), DEADLINE_MS, 'heartbeats after the re-arm');
        // a random moment of the heartbeat period (the revert latency depends on it)
        await sleep(rng.next() * heartbeatMs);
        const reverts = recordReverts(sim);
        const killedAt = child.kill();
        await child.exited;
        await until(() => sim.plant.equipmentIds.every((eq) => reverts.events.some((e) => e.equipment === eq)), DEADLINE_MS, 'every PLC reverted');
        reverts.stop();
        const latencyMs: Record<string, number> = {};
        for (const e of reverts.events) latencyMs[e.equipment] ??= e.at - killedAt;
        const store = openStore({ dataDir: data, readonly: true });
        let auditOk: boolean;
        try {
          auditOk = verifyStore(store).ok;
        } finally {
          store.close();
        }
        const round: KillRound = { kill: k, attempt: Number(running['attempt']), latencyMs, lineMs: Math.max(...Object.values(latencyMs)), auditOk };
        rounds.push(round);
        const wrong = reverts.events.filter((e) => e.reason !== 'watchdog' || e.at < killedAt || sim.plant.supervisor(e.equipment).activeRecipe !== e.recipe);
        if (!auditOk) failures.push(`kill ${k}: the audit trail does not verify`);
        if (wrong.length > 0) failures.push(`kill ${k}: unexpected reverts ${JSON.stringify(wrong)}`);
        log(`kill ${k}/${o.kills}: step 03 attempt ${round.attempt}, line on LKG ${round.lineMs} ms after SIGKILL (${Object.entries(latencyMs).map(([eq, ms]) => `${eq} ${ms}`).join(', ')}), audit ${auditOk ? 'verifies' : 'BROKEN'}`);
      } catch (err) {
        failures.push(`kill ${k}: ${err instanceof Error ? err.message : String(err)}`);
        log(`kill ${k}/${o.kills}: FAILED ${err instanceof Error ? err.message : String(err)}`);
        if (child?.alive) child.kill();
        await child?.exited;
      }
    }
  } finally {
    if (child?.alive) child.kill();
    await child?.exited;
    await sim.close();
    rmSync(root, { recursive: true, force: true });
  }
  return { rounds, heartbeatMs, watchdogTimeoutMs, scanMs: SCAN_MS, failures };
}

async function until(probe: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!probe()) {
    if (Date.now() > end) throw new Error(`no ${what} within ${timeoutMs} ms`);
    await sleep(20);
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
