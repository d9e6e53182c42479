/**
 * The test side of test/fault/run-daemon.ts: an external plant simulator, a site configuration that points
 * the daemon at it (directly or through TCP proxies), the daemon child with its JSON lines, and the person at
 * the HMI who starts phases and re-arms PLCs. Used by the fault integration test, the kill loop and the
 * watchdog benchmark.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse, stringify } from 'yaml';
import { startSimulator, type RevertEvent, type Simulator, type SimulatorOptions } from '../../connectors/sim/index.js';
import { defaultConfigFile } from '../../src/config/load.js';
import { LkError } from '../../src/errors.js';
import { childScript } from '../helpers/bin.js';

const repo = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

export interface SiteOptions {
  /** `opc.tcp://…` of the simulator (or of a proxy in front of it). */
  readonly opcua: string;
  /** `host:port` of the simulator's Modbus server (or of a proxy). */
  readonly modbus: string;
  readonly timeScale?: number;
  readonly watchdogTimeoutMs?: number;
  /** Heartbeat period of every equipment (default 1000 ms). */
  readonly heartbeatMs?: number;
  readonly logLevel?: string;
}

/** Where nothing listens (the discard port): a daemon on these endpoints starts, and its connectors keep retrying. */
export const UNREACHABLE = { opcua: 'opc.tcp://127.0.0.1:9/unreachable', modbus: '127.0.0.1:9' } as const;

/** A temp directory with a site configuration whose equipment is unreachable ({@link UNREACHABLE}). */
export function unreachableSite(prefix: string): { dir: string; config: string } {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  return { dir, config: writeSiteConfig(dir, UNREACHABLE) };
}

/**
 * The shipped site configuration with the simulator outside the daemon: `embedded: false`, both connections
 * on the given endpoints, the repository's policy bundle. Returns the file written (`<dir>/site.yaml`).
 */
export function writeSiteConfig(dir: string, o: SiteOptions): string {
  const cfg = parse(readFileSync(defaultConfigFile(), 'utf8')) as ShippedSite;
  cfg.simulator = { ...cfg.simulator, embedded: false, ...(o.timeScale ? { time_scale: o.timeScale } : {}), ...(o.watchdogTimeoutMs ? { watchdog_timeout_ms: o.watchdogTimeoutMs } : {}) };
  cfg.log = { level: o.logLevel ?? 'warn' };
  cfg.policy = { bundle: join(dirname(defaultConfigFile()), 'policy') };
  for (const c of cfg.connections) c.endpoint = c.protocol === 'opcua' ? o.opcua : o.modbus;
  for (const e of cfg.equipment) e.heartbeat = { period_ms: o.heartbeatMs ?? 1000 };
  const file = join(dir, 'site.yaml');
  writeFileSync(file, stringify(cfg));
  return file;
}

/** The parts of config/site.yaml this file changes (the rest is kept as it is). */
interface ShippedSite {
  simulator: Record<string, unknown>;
  log: { level: string };
  policy: { bundle: string };
  connections: { protocol: string; endpoint: string }[];
  equipment: { heartbeat?: { period_ms: number } }[];
}

/** The plant simulator of the shipped site, in this process, on free loopback ports. */
export function startPlant(o: Pick<SimulatorOptions, 'timeScale' | 'watchdogTimeoutMs' | 'scanMs' | 'dataDir'> = {}): Promise<Simulator> {
  return startSimulator({ configFile: defaultConfigFile(), ...o });
}

export interface ChildLine {
  readonly t: string;
  readonly [k: string]: unknown;
}

/** A daemon child: its JSON lines as they come, its commands, its death. */
export class DaemonChild {
  readonly lines: ChildLine[] = [];
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  private stderr = '';
  private readonly waiters = new Set<() => void>();

  private constructor(readonly proc: ChildProcess) {
    let buf = '';
    proc.stdout!.setEncoding('utf8').on('data', (s: string) => {
      buf += s;
      for (let i = buf.indexOf('\n'); i >= 0; i = buf.indexOf('\n')) {
        const line = buf.slice(0, i).trim();
        buf = buf.slice(i + 1);
        if (!line) continue;
        try {
          this.lines.push(JSON.parse(line) as ChildLine);
        } catch {
          this.lines.push({ t: 'text', text: line });
        }
      }
      for (const w of this.waiters) w();
    });
    proc.stderr!.setEncoding('utf8').on('data', (s: string) => {
      this.stderr = (this.stderr + s).slice(-20_000);
    });
    this.exited = new Promise((r) => proc.once('exit', (code, signal) => {
      r({ code, signal });
      for (const w of this.waiters) w();
    }));
  }

  /** Start `run-daemon.ts` with these arguments (after --config and --data). */
  static spawn(config: string, data: string, args: readonly string[] = []): DaemonChild {
    const proc = spawn(process.execPath, [...childScript('test/fault/run-daemon.ts'), '--config', config, '--data', data, ...args], { cwd: repo, stdio: ['pipe', 'pipe', 'pipe'] });
    return new DaemonChild(proc);
  }

  get alive(): boolean {
    return this.proc.exitCode === null && this.proc.signalCode === null;
  }

  /** The first line from index `from` on that matches, waiting up to `timeoutMs`. @throws when none comes or the child dies first. */
  async line(match: (l: ChildLine) => boolean, timeoutMs: number, what: string, from = 0): Promise<ChildLine> {
    const end = Date.now() + timeoutMs;
    for (;;) {
      const hit = this.lines.slice(from).find(match);
      if (hit) return hit;
      if (!this.alive) throw new Error(`daemon child exited while waiting for ${what}; stderr: ${this.stderr.slice(-3000)}`);
      const left = end - Date.now();
      if (left <= 0) throw new Error(`no ${what} within ${timeoutMs} ms; last lines: ${JSON.stringify(this.lines.slice(-5))}; stderr: ${this.stderr.slice(-3000)}`);
      await new Promise<void>((r) => {
        const done = (): void => {
          clearTimeout(t);
          this.waiters.delete(done);
          r();
        };
        const t = setTimeout(done, Math.min(left, 250));
        this.waiters.add(done);
      });
    }
  }

  /** The state line of step `seq` (or of the run when seq is null) reaching `status`. */
  state(seq: string | null, status: string, timeoutMs: number, from = 0): Promise<ChildLine> {
    return this.line((l) => l.t === 'state' && l['step'] === seq && l['status'] === status, timeoutMs, `state ${seq ?? 'run'} ${status}`, from);
  }

  send(cmd: Record<string, unknown>): void {
    this.proc.stdin!.write(`${JSON.stringify(cmd)}\n`);
  }

  /** SIGKILL now; returns the wall time just before the signal. */
  kill(): number {
    const at = Date.now();
    this.proc.kill('SIGKILL');
    return at;
  }

  stderrTail(): string {
    return this.stderr.slice(-3000);
  }
}

/**
 * The person at the HMI re-arms every LOST PLC once the (new) daemon's heartbeats arrive there: the PLC
 * refuses a re-arm without them (LK_PLC_NO_HEARTBEAT), so this retries until `timeoutMs`.
 * @throws Error when a PLC is still LOST at the deadline.
 */
export async function rearmAll(sim: Simulator, timeoutMs: number): Promise<void> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    let lost = 0;
    for (const eq of sim.plant.equipmentIds) {
      if (sim.plant.supervisor(eq).state !== 'LOST') continue;
      try {
        sim.plant.setSupervisorState(eq, 'ATTENDED');
      } catch (err) {
        if (!LkError.is(err) || err.code !== 'LK_PLC_NO_HEARTBEAT') throw err;
        lost++;
      }
    }
    if (lost === 0) return;
    if (Date.now() > end) throw new Error(`${lost} PLC(s) still LOST after ${timeoutMs} ms: no heartbeat reaches them`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Every revert event of the plant from now on, until the returned function is called. */
export function recordReverts(sim: Simulator): { readonly events: RevertEvent[]; stop(): void } {
  const events: RevertEvent[] = [];
  const stop = sim.plant.on((e) => {
    if (e.type === 'revert') events.push(e);
  });
  return { events, stop };
}
