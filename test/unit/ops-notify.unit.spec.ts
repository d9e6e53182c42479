import { describe, expect, it } from 'vitest';
import { systemdNotifier } from '../../src/ops/notify.js';

describe('systemd notifier', () => {
  it('does nothing without NOTIFY_SOCKET (a terminal, a test)', async () => {
    const calls: string[][] = [];
    const n = systemdNotifier({ env: {}, run: async (a) => void calls.push([...a]) });
    await n.ready();
    await n.watchdog();
    expect(n.enabled).toBe(false);
    expect(n.watchdogIntervalMs).toBeUndefined();
    expect(calls).toEqual([]);
  });

  it('under systemd: READY, WATCHDOG at half of WatchdogSec, STOPPING, through systemd-notify with NOTIFY_SOCKET passed on', async () => {
    const calls: { args: string[]; socket: string | undefined }[] = [];
    const env = { NOTIFY_SOCKET: '/run/systemd/notify', WATCHDOG_USEC: '30000000', WATCHDOG_PID: '4242' };
    const n = systemdNotifier({ env, pid: 4242, run: async (a, e) => void calls.push({ args: [...a], socket: e['NOTIFY_SOCKET'] }) });
    expect(n.watchdogIntervalMs).toBe(15_000);
    await n.ready('serving');
    await n.watchdog();
    await n.stopping();
    expect(calls.map((c) => c.args)).toEqual([['--ready', 'STATUS=serving'], ['WATCHDOG=1'], ['STOPPING=1']]);
    expect(calls.every((c) => c.socket === '/run/systemd/notify')).toBe(true);
  });

  it('ignores a watchdog meant for another pid, and reports a failed notification instead of throwing', async () => {
    expect(systemdNotifier({ env: { NOTIFY_SOCKET: '/x', WATCHDOG_USEC: '1000000', WATCHDOG_PID: '1' }, pid: 2 }).watchdogIntervalMs).toBeUndefined();
    const errors: string[] = [];
    const n = systemdNotifier({ env: { NOTIFY_SOCKET: '/x' }, run: async () => { throw new Error('ENOENT'); }, onError: (_e, what) => void errors.push(what) });
    await n.ready();
    expect(errors).toEqual(['ready']);
  });
});
