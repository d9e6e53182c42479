/**
 * Issue 11 on real processes and a real full disk: one daemon per data directory (a second `linekeeper serve`
 * exits naming the holder's pid), a SIGKILLed daemon's crash recorded and its tail checkpointed at the next
 * start, and a data directory on a small tmpfs that fills up (held entries, fail closed, a stop that does not
 * throw, a start that says LK_STORE_FULL without a stack).
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, mkdtempSync, openSync, rmSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { queryAudit } from '../../src/audit/index.js';
import { watchdogEvent } from '../../src/audit/site-events.js';
import { verifyStore } from '../../src/audit/verify.js';
import { startDaemon, type Daemon } from '../../src/daemon.js';
import { silentLogger } from '../../src/log.js';
import { openStore } from '../../src/store/store.js';
import { unreachableSite } from '../fault/daemon-child.js';
import { spawnCli } from '../helpers/cli.js';
import { fillToFailClosed } from '../helpers/storage.js';
import { childScript } from '../helpers/bin.js';

const root = fileURLToPath(new URL('../..', import.meta.url));
let dir: string;
let config: string;

beforeAll(() => {
  ({ dir, config } = unreachableSite('lk-evidence-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The evidence daemon child and its first JSON line (ready or error). */
function child(data: string): Promise<{ proc: ChildProcess; first: { t: string; pid?: number; code?: string }; stderr: () => string }> {
  const proc = spawn(process.execPath, [...childScript('test/fault/evidence-daemon.ts'), config, data], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  proc.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  return new Promise((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`no first line in 150 s; stderr: ${err.slice(-2000)}`)), 150_000);
    // the first line of the harness's own (a JSON object); a library's console line before it is kept in the error
    proc.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      const line = out.split('\n').slice(0, -1).find((l) => l.startsWith('{'));
      if (line !== undefined) {
        clearTimeout(t);
        resolve({ proc, first: JSON.parse(line) as { t: string; pid?: number }, stderr: () => err });
      }
    });
    proc.on('exit', (code) => reject(new Error(`child exited ${code} before its first line; stderr: ${err.slice(-2000)}`)));
  });
}

function exited(proc: ChildProcess): Promise<void> {
  return new Promise((r) => (proc.exitCode !== null || proc.signalCode !== null ? r() : proc.once('exit', () => r())));
}

/**
 * Wait until the daemon in `data` has made its OPC UA client key and certificate and let go of node-opcua's PKI
 * file locks. A first start creates them in the background after the ready line; a SIGKILL in the middle leaves a
 * lock that goes stale only after 2 minutes, and the next daemon's connector (and so its stop) waits that long.
 * The tests kill a daemon that runs, not one still making its key.
 */
async function pkiSettled(data: string): Promise<void> {
  const pki = join(data, 'pki');
  const settled = (): boolean =>
    existsSync(join(pki, 'own/private/private_key.pem')) && existsSync(join(pki, 'own/certs/client_certificate.pem')) &&
    !existsSync(join(pki, 'mutex.lock')) && !existsSync(join(pki, 'own/certs/client_certificate.pem.mutex.lock'));
  const end = Date.now() + 150_000;
  while (!settled()) {
    if (Date.now() > end) throw new Error(`the OPC UA client PKI in ${pki} was not made within 150 s`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

const siteActions = (d: Daemon): string[] => queryAudit(d.store.db, 'site', {}, { limit: 1000 }).entries.map((e) => e.action);

describe('one daemon per data directory', () => {
  it('a second linekeeper serve on the same data directory exits 75 with LK_DATA_LOCKED naming the holder pid; after the holder dies it starts', async () => {
    const data = join(dir, 'locked');
    const first = await child(data);
    try {
      expect(first.first).toMatchObject({ t: 'ready' });
      const second = await spawnCli(['serve', '--config', config, '--data', data, '--no-api']);
      expect(second.code).toBe(75);
      expect(second.err).toContain('[LK_DATA_LOCKED]');
      expect(second.err).toContain(`process ${first.first.pid}`);
      expect(second.err).not.toMatch(/\n\s+at /);
      await pkiSettled(data);
    } finally {
      first.proc.kill('SIGKILL');
      await exited(first.proc);
    }
    // the kernel dropped the lock with the process: no stale lock to clear by hand
    const again = await child(data);
    expect(again.first).toMatchObject({ t: 'ready' });
    again.proc.kill('SIGTERM');
    await exited(again.proc);
  }, 480_000);
});

describe('a crash is recorded at the next start', () => {
  it('after a SIGKILL the next start records site.unclean_stop naming the killed pid and checkpoints the tail at once', async () => {
    const data = join(dir, 'crash');
    const c = await child(data);
    expect(c.first.t).toBe('ready');
    await pkiSettled(data);
    c.proc.kill('SIGKILL');
    await exited(c.proc);
    const before = openStore({ dataDir: data, readonly: true });
    const tail = before.audit.head('site');
    before.close();

    const d = await startDaemon({ configFile: config, dataDir: data, logger: silentLogger, connectTimeoutMs: 300 });
    try {
      const site = queryAudit(d.store.db, 'site', {}, { limit: 1000 }).entries;
      const crash = site.find((e) => e.action === 'site.unclean_stop');
      expect(crash).toBeDefined();
      expect(crash!.args).toMatchObject({ previous_pid: c.first.pid, checkpointed: { site: tail.seq } });
      // the tail the crash left is signed: a checkpoint at exactly the head found at start
      const cp = d.store.db.prepare("SELECT seq, head_hash FROM audit_checkpoint WHERE tenant = 'site' AND seq = ?").get(tail.seq) as { head_hash: string } | undefined;
      expect(cp?.head_hash).toBe(tail.hash);
      // the crash entry comes before this run's start entry
      const order = site.map((e) => e.action).filter((a) => a === 'site.unclean_stop' || a === 'site.start');
      expect(order.slice(-2)).toEqual(['site.unclean_stop', 'site.start']);
    } finally {
      await d.stop('test done');
    }
    // a clean stop leaves nothing to report at the following start
    const d2 = await startDaemon({ configFile: config, dataDir: data, logger: silentLogger, connectTimeoutMs: 300 });
    try {
      expect(siteActions(d2).filter((a) => a === 'site.unclean_stop')).toHaveLength(1);
    } finally {
      await d2.stop('test done');
    }
  }, 300_000);
});

// A small file system that can be filled: tmpfs needs root (mount); where it cannot mount, skip and say why.
// store-full.int.spec.ts runs the same fail-closed case everywhere, on a store whose file may not grow.
const probe = mkdtempSync(join(tmpdir(), 'lk-tmpfs-probe-'));
const mountable = spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=1m', 'tmpfs', probe]).status === 0;
if (mountable) spawnSync('umount', [probe]);
rmSync(probe, { recursive: true, force: true });

/** Fill the file system of `mnt` to the last byte; returns the filler file to delete. */
function fill(mnt: string, name: string): string {
  const f = join(mnt, name);
  const fd = openSync(f, 'a');
  const chunk = Buffer.alloc(64 * 1024, 0x55);
  try {
    for (let size = chunk.length; size >= 1; size = Math.floor(size / 2)) {
      for (;;) {
        try {
          writeSync(fd, chunk, 0, size);
        } catch {
          break;
        }
      }
    }
  } finally {
    closeSync(fd);
  }
  return f;
}

describe.skipIf(!mountable)('a full disk (tmpfs; skipped where mount -t tmpfs is not permitted, i.e. not root)', () => {
  let mnt: string;
  beforeAll(() => {
    mnt = mkdtempSync(join(tmpdir(), 'lk-full-'));
    const r = spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=8m', 'tmpfs', mnt], { encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`mount failed: ${r.stderr}`);
  });
  afterAll(() => {
    spawnSync('umount', [mnt]);
    rmSync(mnt, { recursive: true, force: true });
  });

  it('start on a full disk: exit 74 with LK_STORE_FULL and no stack trace', async () => {
    const filler = fill(mnt, 'filler-start');
    try {
      const r = await spawnCli(['serve', '--config', config, '--data', join(mnt, 'fresh'), '--no-api']);
      expect(r.code).toBe(74);
      expect(r.err).toContain('[LK_STORE_FULL]');
      expect(r.err).not.toMatch(/\n\s+at /);
      expect(r.err).not.toContain('SqliteError');
    } finally {
      rmSync(filler, { force: true });
    }
  }, 180_000);

  it('[INV-FAIL-CLOSED-AUDIT] entries are held while the disk is full, the daemon fails closed past the bound, and everything held is written behind an outage entry when space returns; a stop on a full disk does not throw', async () => {
    const data = join(mnt, 'data');
    mkdirSync(data, { mode: 0o700 });
    // warn threshold above the whole file system: the start itself is "low on space"
    const d = await startDaemon({ configFile: config, dataDir: data, logger: silentLogger, connectTimeoutMs: 300, storage: { holdMax: 3, retryMs: 3_600_000, warnFreeBytes: 1e15 } });
    let stopped = false;
    try {
      expect(siteActions(d)).toContain('storage.low');
      const stops = d.connectors.map((c) => vi.spyOn(c, 'stopHeartbeat'));
      const starts = d.connectors.map((c) => vi.spyOn(c, 'startHeartbeat'));
      const filler = fill(mnt, 'filler-run');
      fillToFailClosed(d, stops);
      // any other write is refused with the code, nothing half-written (an equipment write's intent entry fails so)
      let code: string | undefined;
      try {
        d.store.audit.append({ tenant: 'acme-pharma', actor: 'agent.compress_fill', kind: 'intent', action: 'setpoint.write', subject: { setpoint: 'press.MainForce' }, new: 12 });
      } catch (err) {
        code = (err as { code?: string }).code;
      }
      expect(code).toBe('LK_STORE_FULL');

      rmSync(filler);
      expect(d.storage.retry()).toBe(true);
      expect(starts.every((s) => s.mock.calls.length === 1)).toBe(true);
      const site = queryAudit(d.store.db, 'site', {}, { limit: 1000, }).entries;
      const at = site.findIndex((e) => e.action === 'storage.outage');
      expect(at).toBeGreaterThan(0);
      expect(site[at]!.args).toMatchObject({ failed_closed: true, held: [{ action: 'watchdog.lkg_revert' }, { action: 'watchdog.lkg_revert' }, { action: 'watchdog.lkg_revert' }] });
      expect(site.slice(at + 1, at + 4).map((e) => (e.args as { equipment: string }).equipment)).toEqual(['press', 'coater', 'blender']);

      // full again, then a stop: no throw, no stack; the next start records the unclean stop
      const again = fill(mnt, 'filler-stop');
      for (let i = 0; i < 20_000 && d.storage.outage() === null; i++) watchdogEvent(d.storage, { event: 'lkg_revert', equipment: 'press', detail: { i } });
      expect(d.storage.outage()).not.toBeNull();
      await expect(d.stop('test: stop on a full disk')).resolves.toBeUndefined();
      stopped = true;
      rmSync(again);
    } finally {
      if (!stopped) await d.stop('test done');
    }
    const d2 = await startDaemon({ configFile: config, dataDir: data, logger: silentLogger, connectTimeoutMs: 300 });
    try {
      expect(siteActions(d2)).toContain('site.unclean_stop');
      expect(verifyStore(d2.store).ok).toBe(true);
    } finally {
      await d2.stop('test done');
    }
  }, 180_000);
});
