/**
 * Operations on one real daemon (embedded default, API on loopback): /metrics, online backup and restore with
 * verification, the WAL checkpoint, and change-controlled configuration with the SIGHUP reload.
 */
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Fastify from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { installProblems } from '../../src/api/problem.js';
import { registerMetricsRoute } from '../../src/api/routes-metrics.js';
import type { Api } from '../../src/api/context.js';
import { keyFiles } from '../../src/audit/keys.js';
import { loadConfig } from '../../src/config/load.js';
import { LkError } from '../../src/errors.js';
import { MANIFEST, restoreBackup, verifyFolder, walCheckpoint } from '../../src/ops/backup.js';
import { applyConfigChange } from '../../src/ops/config-change.js';
import { Metrics } from '../../src/ops/metrics.js';
import { DB_FILE } from '../../src/store/store.js';
import { startApiNode, type ApiNode } from '../helpers/api.js';
import { runCli } from '../helpers/cli.js';
import { rawDb } from '../unit/audit-helpers.js';

let node: ApiNode;
beforeAll(async () => {
  node = await startApiNode();
}, 240_000);
afterAll(async () => {
  await node?.close();
});

async function codeOfAsync(p: Promise<unknown>): Promise<string> {
  try {
    await p;
  } catch (err) {
    if (LkError.is(err)) return err.code;
    throw err;
  }
  throw new Error('expected an LkError');
}

describe('/metrics', () => {
  it('serves the daemon\'s own registry to a loopback peer', async () => {
    // an identity entry this daemon appends: a failed sign-in, audited
    const failed = await fetch(`${node.url}/v1/auth/token`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ user: 'o.operator', password: 'not the password' }) });
    expect(failed.status).toBe(401);
    const r = await fetch(`${node.url}/metrics`);
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toContain('text/plain');
    const text = await r.text();
    expect(text).toMatch(/linekeeper_connector_state\{connector="opcua-line",state="connected"\} 1/);
    expect(text).toMatch(/linekeeper_audit_appends_total\{kind="identity"\} \d+/);
    expect(text).toContain('linekeeper_sse_clients 0');
    expect(text).toMatch(/linekeeper_writer_queue \d+/);
    expect(text).toContain('linekeeper_data_age_seconds{connector=');
    expect(text).toContain('# TYPE linekeeper_connector_read_seconds histogram');
  });

  it('refuses a peer that is not on loopback (403 problem), unless it brings the metrics token', async () => {
    const far = await node.daemon.api!.app.inject({ method: 'GET', url: '/metrics', remoteAddress: '10.20.30.40' });
    expect(far.statusCode).toBe(403);
    expect(far.json()).toMatchObject({ code: 'LK_FORBIDDEN' });

    const dir = mkdtempSync(join(tmpdir(), 'lk-mtok-'));
    writeFileSync(join(dir, 'token'), 'a-long-enough-metrics-token\n', { mode: 0o600 });
    const app = Fastify() as unknown as Api;
    installProblems(app);
    const m = new Metrics();
    registerMetricsRoute(app, m, { tokenFile: join(dir, 'token') });
    await app.ready();
    const no = await app.inject({ method: 'GET', url: '/metrics', remoteAddress: '10.0.0.9', headers: { authorization: 'Bearer wrong-token-of-some-size' } });
    expect(no.statusCode).toBe(403);
    const yes = await app.inject({ method: 'GET', url: '/metrics', remoteAddress: '10.0.0.9', headers: { authorization: 'Bearer a-long-enough-metrics-token' } });
    expect(yes.statusCode).toBe(200);
    await app.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('counts policy decisions by outcome and reason and watchdog events from committed audit entries; registries are per daemon', async () => {
    const a = new Metrics();
    const b = new Metrics();
    a.onEntry({ kind: 'policy_decision', action: 'policy.evaluate', result: { outcome: 'deny', reasons: ['OUT_OF_DESIGN_SPACE', 'RATE_LIMIT'] } });
    a.onEntry({ kind: 'policy_decision', action: 'policy.evaluate', result: { outcome: 'allow', reasons: [] } });
    a.onEntry({ kind: 'watchdog', action: 'watchdog.lkg_revert' });
    const text = await a.text();
    expect(text).toContain('linekeeper_policy_decisions_total{outcome="deny",reason="OUT_OF_DESIGN_SPACE"} 1');
    expect(text).toContain('linekeeper_policy_decisions_total{outcome="allow",reason="none"} 1');
    expect(text).toContain('linekeeper_watchdog_events_total{event="lkg_revert"} 1');
    expect(text).toContain('linekeeper_audit_appends_total{kind="policy_decision"} 2');
    expect(await b.text()).not.toContain('OUT_OF_DESIGN_SPACE');
  });
});

describe('backup and restore', () => {
  let backup: string;
  it('[P11.10(c)] [A11.7] takes an online backup while the daemon writes, verified, with the checkpoint log and the public key only', async () => {
    node.daemon.store.audit.checkpointAll();
    const r = await node.daemon.backups!.now();
    backup = r.dir;
    expect(existsSync(join(backup, DB_FILE))).toBe(true);
    expect(existsSync(join(backup, 'audit-checkpoints.log'))).toBe(true);
    expect(existsSync(keyFiles(backup).publicFile)).toBe(true);
    expect(existsSync(keyFiles(backup).privateFile)).toBe(false);
    const manifest = JSON.parse(readFileSync(join(backup, MANIFEST), 'utf8')) as { chains: Record<string, { seq: number }> };
    expect(manifest.chains['site']!.seq).toBeGreaterThan(0);
    const text = await (await fetch(`${node.url}/metrics`)).text();
    expect(text).toContain('linekeeper_backups_total{result="ok"} 1');
    expect(text).toMatch(/linekeeper_audit_verify_seconds_count \d+/);
  });

  it('linekeeper backup (CLI) works beside the running daemon', async () => {
    const to = mkdtempSync(join(tmpdir(), 'lk-bk-'));
    const out = await runCli('backup', '-c', join(node.dir, 'site.yaml'), '-d', join(node.dir, 'data'), '--to', to, '--json');
    expect(out.code).toBe(0);
    expect(JSON.parse(out.out).manifest.format).toBe('linekeeper.backup');
    rmSync(to, { recursive: true, force: true });
  });

  it('[P11.10(c)] [A11.7] restore verifies the audit chain first: an edited backup is refused, even with a forged manifest', async () => {
    const bad = mkdtempSync(join(tmpdir(), 'lk-bad-'));
    for (const f of [DB_FILE, 'audit-checkpoints.log', MANIFEST]) copyFileSync(join(backup, f), join(bad, f));
    mkdirSync(join(bad, 'keys'));
    copyFileSync(keyFiles(backup).publicFile, keyFiles(bad).publicFile);
    const db = rawDb(bad);
    db.prepare("UPDATE audit_entry SET body = json_set(body, '$.actor', 'mallory') WHERE tenant = 'site' AND seq = 2").run();
    db.close();
    const target = mkdtempSync(join(tmpdir(), 'lk-rt-'));
    expect(() => restoreBackup(bad, target)).toThrow(expect.objectContaining({ code: 'LK_AUDIT_BROKEN' }));
    // a manifest rewritten to the edited file's hash does not help: the chain itself is verified
    const { createHash } = await import('node:crypto');
    const m = JSON.parse(readFileSync(join(bad, MANIFEST), 'utf8')) as { sha256: Record<string, string> };
    m.sha256[DB_FILE] = createHash('sha256').update(readFileSync(join(bad, DB_FILE))).digest('hex');
    writeFileSync(join(bad, MANIFEST), JSON.stringify(m));
    expect(() => restoreBackup(bad, target)).toThrow(expect.objectContaining({ code: 'LK_AUDIT_BROKEN' }));
    expect(existsSync(join(target, DB_FILE))).toBe(false);
    rmSync(bad, { recursive: true, force: true });
    rmSync(target, { recursive: true, force: true });
  });

  it('[A11.16] restores into an empty data directory, and over an existing one only with force (moved aside, audited)', () => {
    const fresh = mkdtempSync(join(tmpdir(), 'lk-rf-'));
    const r = restoreBackup(backup, fresh);
    expect(r.audited).toBe(false); // no private key there: it comes from escrow, never from a backup
    expect(verifyFolder(fresh).report.ok).toBe(true);

    const again = mkdtempSync(join(tmpdir(), 'lk-ra-'));
    mkdirSync(join(again, 'keys'));
    for (const f of ['privateFile', 'publicFile'] as const) copyFileSync(keyFiles(join(node.dir, 'data'))[f], keyFiles(again)[f]);
    restoreBackup(backup, again);
    expect(() => restoreBackup(backup, again)).toThrow(expect.objectContaining({ code: 'LK_CONFLICT' }));
    const forced = restoreBackup(backup, again, { force: true, osUser: 'it', reason: 'test' });
    expect(forced.replacedTo).not.toBeNull();
    expect(existsSync(join(forced.replacedTo!, DB_FILE))).toBe(true);
    expect(forced.audited).toBe(true);
    const v = verifyFolder(again);
    expect(v.report.ok).toBe(true);
    rmSync(fresh, { recursive: true, force: true });
    rmSync(again, { recursive: true, force: true });
  });

  it('checkpoints the WAL: PASSIVE under the size bound, TRUNCATE over it', () => {
    const s = node.daemon.store;
    expect(walCheckpoint(s.db, `${s.file}-wal`, 1 << 30).mode).toBe('PASSIVE');
    const t = walCheckpoint(s.db, `${s.file}-wal`, 0);
    expect(t.mode).toBe('TRUNCATE');
    expect(t.busy).toBe(0);
  });
});

describe('change-controlled configuration and SIGHUP reload', () => {
  const siteFile = (): string => join(node.dir, 'site.yaml');
  const write = (name: string, edit: (s: string) => string): string => {
    const f = join(node.dir, name);
    writeFileSync(f, edit(readFileSync(siteFile(), 'utf8')));
    return f;
  };
  const apply = async (file: string, approver: string, changeRef = 'CC-2026-0301') => {
    const current = loadConfig(siteFile(), { dataDir: join(node.dir, 'data') });
    const next = loadConfig(file, { dataDir: join(node.dir, 'data') });
    return applyConfigChange({ store: node.daemon.store, identity: node.daemon.identity!, current, next, changeRef, approver, password: node.passwords.get(approver)! });
  };
  const actions = (): string[] => (node.daemon.store.db.prepare("SELECT action FROM audit_entry WHERE tenant = 'site' ORDER BY seq").pluck().all() as string[]);

  it('config apply --dry-run shows the diff and the sections', async () => {
    const f = write('dry.yaml', (s) => s.replace('level: info', 'level: debug'));
    const out = await runCli('config', 'apply', f, '--change', 'CC-1', '-c', siteFile(), '-d', join(node.dir, 'data'), '--dry-run');
    expect(out.code).toBe(0);
    expect(out.out).toContain('-  level: info');
    expect(out.out).toContain('+  level: debug');
    expect(out.out).toContain('sections changed: log');
  });

  it('[A11.10] an operator may not approve; a process engineer may, and the reload applies the live sections', async () => {
    const f = write('next.yaml', (s) => s.replace('level: info', 'level: debug').replace('policy:\n', 'maintenance: { backup_keep: 3 }\npolicy:\n'));
    expect(await codeOfAsync(apply(f, 'o.operator'))).toBe('LK_FORBIDDEN');
    expect(await codeOfAsync(apply(f, 'p.bianchi', ''))).toBe('LK_VALIDATION');
    const before = node.daemon.loaded.hash;
    const r = await apply(f, 'p.bianchi');
    expect(r.sections).toEqual(['log', 'maintenance']);
    expect(existsSync(`${siteFile()}.prev`)).toBe(true);
    const rl = await node.daemon.reload();
    expect(rl.outcome).toBe('applied');
    expect(node.daemon.loaded.hash).not.toBe(before);
    expect(node.daemon.loaded.config.maintenance.backup_keep).toBe(3);
    expect(actions()).toEqual(expect.arrayContaining(['config.apply_refused', 'config.apply', 'config.change']));
    // the equipment connections were not touched
    expect(node.daemon.connectors.every((c) => c.health().state === 'connected')).toBe(true);
  });

  it('[A11.10] keeps the configuration in force on an invalid file, an unapproved one, and one that needs a restart (each audited)', async () => {
    const inForce = node.daemon.loaded.hash;
    const good = readFileSync(siteFile(), 'utf8');
    writeFileSync(siteFile(), good.replace('version: 1', 'version: 1\nbogus: true'));
    expect((await node.daemon.reload()).outcome).toBe('refused');
    expect(actions().at(-1)).toBe('config.invalid');
    writeFileSync(siteFile(), good.replace('level: debug', 'level: warn'));
    expect((await node.daemon.reload()).outcome).toBe('refused');
    expect(actions().at(-1)).toBe('config.reload_refused');
    writeFileSync(siteFile(), good);
    const f = write('conn.yaml', (s) => s.replace('timeout_ms: 1000', 'timeout_ms: 1500'));
    await apply(f, 'd.marino', 'CC-2026-0302');
    const r = await node.daemon.reload();
    expect(r.outcome).toBe('refused');
    expect(r.reason).toContain('connections');
    expect(node.daemon.loaded.hash).toBe(inForce);
  });
});
