/**
 * systemd readiness and watchdog (sd_notify) for `Type=notify` with `WatchdogSec=`.
 *
 * Node's dgram module has no AF_UNIX datagram sockets, so linekeeper cannot write to $NOTIFY_SOCKET itself.
 * It runs `systemd-notify` (part of systemd on every target) with NotifyAccess=all in the unit, because the
 * sender is a child process, not the main PID. Chosen over a native addon (sd-notify and the like) because an
 * addon is one more binary to compile per architecture for an offline install, and is unmaintained more often
 * than not; a fork every WatchdogSec/2 is nothing. systemd-notify waits by default until the manager has
 * processed the message (no `--no-block`), which is what lets the manager attribute it to our cgroup.
 *
 * Everything is a no-op when NOTIFY_SOCKET is not set (a terminal, a test, a container without systemd).
 */
import { execFile } from 'node:child_process';

export type NotifyRunner = (args: readonly string[], env: NodeJS.ProcessEnv) => Promise<void>;

export interface Notifier {
  /** True under systemd (NOTIFY_SOCKET set). */
  readonly enabled: boolean;
  /** Half of WatchdogSec when the manager asked for a watchdog for this process, else undefined. */
  readonly watchdogIntervalMs: number | undefined;
  ready(status?: string): Promise<void>;
  watchdog(): Promise<void>;
  reloading(): Promise<void>;
  stopping(): Promise<void>;
  status(text: string): Promise<void>;
}

const runSystemdNotify: NotifyRunner = (args, env) =>
  new Promise((resolve, reject) => {
    execFile('systemd-notify', [...args], { env, timeout: 10_000 }, (err) => (err ? reject(err) : resolve()));
  });

/**
 * The notifier of this process. `run` and `env` are injectable for tests.
 * @param onError called with a failed notification (logged by the caller); never thrown.
 */
export function systemdNotifier(o: { env?: NodeJS.ProcessEnv; pid?: number; run?: NotifyRunner; onError?: (err: unknown, what: string) => void } = {}): Notifier {
  const env = o.env ?? process.env;
  const pid = o.pid ?? process.pid;
  const run = o.run ?? runSystemdNotify;
  const enabled = typeof env['NOTIFY_SOCKET'] === 'string' && env['NOTIFY_SOCKET'] !== '';
  const usec = Number(env['WATCHDOG_USEC']);
  const forUs = env['WATCHDOG_PID'] === undefined || Number(env['WATCHDOG_PID']) === pid;
  const watchdogIntervalMs = enabled && Number.isFinite(usec) && usec > 0 && forUs ? Math.max(1, Math.floor(usec / 2000)) : undefined;
  let pinging = false;
  const send = async (what: string, args: readonly string[]): Promise<void> => {
    if (!enabled) return;
    try {
      await run(args, env);
    } catch (err) {
      o.onError?.(err, what);
    }
  };
  return {
    enabled,
    watchdogIntervalMs,
    ready: (status) => send('ready', ['--ready', ...(status ? [`STATUS=${status}`] : [])]),
    watchdog: async () => {
      // one ping in flight at a time: a slow fork must not pile up children
      if (pinging) return;
      pinging = true;
      try {
        await send('watchdog', ['WATCHDOG=1']);
      } finally {
        pinging = false;
      }
    },
    reloading: () => send('reloading', ['RELOADING=1']),
    stopping: () => send('stopping', ['STOPPING=1']),
    status: (text) => send('status', [`STATUS=${text}`]),
  };
}
