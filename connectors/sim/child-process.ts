/**
 * The daemon's side of the embedded plant simulator run as a child process (child-main.ts): started by
 * `linekeeper serve` on the embedded default, stopped with it, and — when it dies — lost like any equipment:
 * its PLCs stop answering, the connectors report them lost and retry (fail safe). Nothing here imports the
 * simulator or node-opcua's server: the daemon's heap holds none of it.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { ERRORS, LkError, type ErrorCode } from '../../src/errors.js';
import type { Logger } from '../../src/log.js';

export interface SimulatorProcessOptions {
  /** The site configuration file the daemon runs on (the child reads the same file). */
  readonly configFile: string;
  /** The daemon's data directory: the simulator's PKI lives under it, as in-process. */
  readonly dataDir: string;
  /** Log level of the child (its JSON lines go to the daemon's stderr, `component: sim`). */
  readonly logLevel: string;
  readonly log: Logger;
  /** How long to wait for the servers to listen (default 120 s: node-opcua's start on a loaded edge box). */
  readonly readyTimeoutMs?: number;
}

export interface SimulatorProcess {
  readonly pid: number;
  readonly opcuaUrl: string;
  readonly modbusHost: string;
  readonly modbusPort: number;
  /** The plant's process time scale (process time runs this many times faster than the wall clock). */
  readonly timeScale: number;
  /** Tell the simulated HMI operator to start a phase (lost, and logged, when the child is gone). */
  startPhase(phase: string): void;
  /** Resolves when the child exits, for whatever reason. */
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Stop the simulator: asked over the channel, killed if it does not exit within `graceMs` (default 10 s). */
  close(graceMs?: number): Promise<void>;
}

type ChildMessage = { type: 'ready'; opcuaUrl: string; modbusHost: string; modbusPort: number; timeScale: number } | { type: 'failed'; code: string; message: string };

/** The child's entry: child-main.js next to this file when built, child-main.ts under tsx. */
function entry(): { file: string; execArgv: string[] } {
  const js = fileURLToPath(new URL('./child-main.js', import.meta.url));
  if (existsSync(js)) return { file: js, execArgv: process.execArgv };
  const ts = fileURLToPath(new URL('./child-main.ts', import.meta.url));
  // from source (development, tests): the child needs the same TypeScript loader
  const hasTsx = process.execArgv.some((a, i, all) => a.includes('tsx') && (a.startsWith('--import') || all[i - 1] === '--import' || all[i - 1] === '--loader'));
  return { file: ts, execArgv: hasTsx ? process.execArgv : [...process.execArgv, '--import', 'tsx'] };
}

/**
 * Start the embedded simulator in a child process and wait until its servers listen.
 *
 * @throws LkError the child's own failure (LK_CONFIG_*, LK_CONN_UNAVAILABLE), or LK_CONN_UNAVAILABLE when it
 *   exits or does not answer in time.
 */
export function startSimulatorProcess(o: SimulatorProcessOptions): Promise<SimulatorProcess> {
  const { file, execArgv } = entry();
  // stdout to the daemon's stderr: the daemon's stdout carries only its ready line
  const child: ChildProcess = fork(file, [JSON.stringify({ configFile: o.configFile, dataDir: o.dataDir, logLevel: o.logLevel })], {
    execArgv,
    stdio: ['ignore', 2, 2, 'ipc'],
    serialization: 'json',
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.once('exit', (code, signal) => resolve({ code, signal }));
  });
  let stopping = false;
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new LkError('LK_CONN_UNAVAILABLE', `the embedded simulator did not start within ${o.readyTimeoutMs ?? 120_000} ms`));
    }, o.readyTimeoutMs ?? 120_000);
    const early = (code: number | null, signal: NodeJS.Signals | null): void => {
      clearTimeout(timer);
      reject(new LkError('LK_CONN_UNAVAILABLE', `the embedded simulator exited before it was ready (${signal ?? `exit ${code}`})`));
    };
    child.once('exit', early);
    child.once('error', (err) => {
      clearTimeout(timer);
      reject(new LkError('LK_CONN_UNAVAILABLE', `the embedded simulator could not be started: ${err.message}`));
    });
    child.on('message', (m: ChildMessage) => {
      if (m.type === 'failed') {
        clearTimeout(timer);
        child.off('exit', early);
        reject(new LkError((m.code in ERRORS ? m.code : 'LK_INTERNAL') as ErrorCode, m.message));
        return;
      }
      if (m.type !== 'ready') return;
      clearTimeout(timer);
      child.off('exit', early);
      void exited.then(({ code, signal }) => {
        // equipment that vanished: the connectors see their PLCs lost and keep retrying (audited as connector events)
        if (!stopping) o.log.error({ pid: child.pid, code, signal }, 'the embedded plant simulator exited: its PLCs are lost; restart linekeeper to start it again');
      });
      resolve({
        pid: child.pid!,
        opcuaUrl: m.opcuaUrl,
        modbusHost: m.modbusHost,
        modbusPort: m.modbusPort,
        timeScale: m.timeScale,
        exited,
        startPhase(phase) {
          if (!child.connected) {
            o.log.error({ phase }, 'the embedded simulator is gone: the simulated operator cannot start the phase');
            return;
          }
          child.send({ type: 'startPhase', phase }, (err) => {
            if (err) o.log.error({ err, phase }, 'could not tell the simulated operator to start the phase');
          });
        },
        async close(graceMs = 10_000) {
          stopping = true;
          if (child.exitCode !== null || child.signalCode !== null) return;
          if (child.connected) child.send({ type: 'stop' }, () => undefined);
          else child.kill('SIGKILL');
          const t = setTimeout(() => child.kill('SIGKILL'), graceMs);
          await exited;
          clearTimeout(t);
        },
      });
    });
  });
}
