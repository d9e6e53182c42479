/**
 * Issue 11 on real files: dropped append-only triggers (re-created and recorded at a writable open, reported
 * by audit verify), a write-protected data directory (verified, queried and exported by an auditor; refused by
 * serve as not writable), a world-writable one (refused), a reused change reference (refused and audited), and
 * a flipped in_filter flag in an exported bundle (damage at that seq in both verifiers).
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, cpSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { parse, stringify } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { exportBundle, verifyBundle } from '../../src/audit/bundle.js';
import { parseFilter, queryAudit } from '../../src/audit/query.js';
import { verifyStore } from '../../src/audit/verify.js';
import { defaultConfigFile, loadConfig } from '../../src/config/load.js';
import { openPolicy } from '../../src/engine/policy-gate.js';
import { signTestBundle } from '../helpers/policy-sign.js';
import { silentLogger } from '../../src/log.js';
import { DB_FILE, openStore } from '../../src/store/store.js';
// @ts-expect-error plain JavaScript on purpose (no types, no project imports)
import { verifyBundleText } from '../../tools/verify-audit-bundle.mjs';
import { runCli } from '../helpers/cli.js';
import { entry, newStore, tempDir } from '../unit/audit-helpers.js';

const T = 'acme-pharma';
let t: { dir: string; cleanup: () => void };
beforeAll(() => {
  t = tempDir('lk-evidence-store-');
});
afterAll(() => t.cleanup());

/** A site configuration (embedded simulator off, unreachable endpoints) whose policy bundle is `bundle`. */
function siteConfig(name: string, bundle = join(defaultConfigFile(), '..', 'policy')): string {
  const cfg = parse(readFileSync(defaultConfigFile(), 'utf8')) as { simulator: Record<string, unknown>; policy: { bundle: string }; connections: { protocol: string; endpoint: string }[] };
  cfg.simulator = { ...cfg.simulator, embedded: false };
  cfg.policy = { bundle };
  for (const c of cfg.connections) c.endpoint = c.protocol === 'opcua' ? 'opc.tcp://127.0.0.1:9/unreachable' : '127.0.0.1:9';
  const file = join(t.dir, `${name}.yaml`);
  writeFileSync(file, stringify(cfg));
  return file;
}

/** `linekeeper serve` in this process, failing the test rather than hanging when it (wrongly) starts. */
async function serveMustRefuse(config: string, data: string): Promise<{ code: number; err: string }> {
  const timeout = new Promise<never>((_r, reject) => setTimeout(() => reject(new Error('serve started instead of refusing')), 60_000).unref());
  return Promise.race([runCli('serve', '--config', config, '--data', data, '--no-api'), timeout]);
}

function storeWithEntries(dir: string, n = 12): void {
  const { store, clock } = newStore(dir, { audit: { checkpointEvery: 5 } });
  for (let i = 1; i <= n; i++) {
    clock.advance(1000);
    store.audit.append(entry(i, T, { subject: { batch: i % 4 === 0 ? 'B-7' : 'B-1' } }));
  }
  store.close();
}

describe('dropped append-only triggers', () => {
  it('[P11.10(c)] audit verify reports them missing (exit 65); a writable open re-creates them and records that on the site chain', async () => {
    const dir = join(t.dir, 'triggers');
    storeWithEntries(dir);
    const raw = new Database(join(dir, DB_FILE));
    raw.exec('DROP TRIGGER audit_entry_no_update; DROP TRIGGER policy_acceptance_no_delete;');
    raw.close();

    const v = await runCli('audit', 'verify', '--data', dir);
    expect(v.code).toBe(65);
    expect(v.out).toContain('triggers_missing');
    expect(v.out).toContain('audit_entry_no_update');
    const ro = openStore({ dataDir: dir, readonly: true });
    expect(ro.missingTriggers).toEqual(['audit_entry_no_update', 'policy_acceptance_no_delete']);
    expect(verifyStore(ro).problems.map((p) => p.kind)).toEqual(['triggers_missing']);
    ro.close();

    const s = openStore({ dataDir: dir });
    try {
      const e = queryAudit(s.db, 'site', { kind: 'system' }, { limit: 100 }).entries.find((x) => x.action === 'audit.triggers_restored');
      expect(e?.args).toEqual({ triggers: ['audit_entry_no_update', 'policy_acceptance_no_delete'] });
      expect(() => s.db.prepare("UPDATE audit_entry SET body = json_set(body, '$.actor', ?) WHERE seq = 1").run('x')).toThrow(/LK_AUDIT_IMMUTABLE/);
      expect(verifyStore(s).ok).toBe(true);
    } finally {
      s.close();
    }
    expect((await runCli('audit', 'verify', '--data', dir)).code).toBe(0);
  });
});

// As root, chmod does not stop a write: the copy is made read-only by a read-only bind mount instead.
const isRoot = process.getuid?.() === 0;
function writeProtect(dir: string): () => void {
  if (isRoot) {
    const a = spawnSync('mount', ['--bind', dir, dir]);
    const b = a.status === 0 ? spawnSync('mount', ['-o', 'remount,bind,ro', dir]) : a;
    if (b.status !== 0) throw new Error(`cannot make ${dir} read-only: ${String(b.stderr)}`);
    return () => void spawnSync('umount', [dir]);
  }
  spawnSync('chmod', ['-R', 'a-w', dir]);
  return () => void spawnSync('chmod', ['-R', 'u+w', dir]);
}

describe('a write-protected data directory', () => {
  const dir = (): string => join(t.dir, 'readonly');
  let release: () => void = () => undefined;
  beforeAll(() => {
    storeWithEntries(dir(), 12);
    // one more entry, and the process dies before its close could checkpoint it: an unanchored tail
    const { store } = newStore(dir());
    store.audit.append(entry(13, T, { subject: { batch: 'B-1' } }));
    store.db.close();
    release = writeProtect(dir());
  });
  afterAll(() => release());

  it('an auditor verifies, queries and exports it (not LK_STORE_CORRUPT)', async () => {
    const v = await runCli('audit', 'verify', '--data', dir());
    expect(v.err).toBe('');
    expect(v.code).toBe(0);
    expect(v.out).toContain(`${T}: ok, 13 entries`);
    const q = await runCli('audit', 'query', '--data', dir(), '--tenant', T, '--batch', 'B-7');
    expect(q.code).toBe(0);
    expect(q.out.trim().split('\n')).toHaveLength(3);
    const csv = join(t.dir, 'ro.csv');
    expect((await runCli('audit', 'export', '--data', dir(), '--tenant', T, '--format', 'csv', '--out', csv)).code).toBe(0);
    expect(readFileSync(csv, 'utf8').trim().split('\n')).toHaveLength(14);
    const bundle = join(t.dir, 'ro.jsonl');
    const b = await runCli('audit', 'export', '--data', dir(), '--tenant', T, '--out', bundle);
    expect(b.code).toBe(0);
    expect(b.err).toContain('1 entry after the last checkpoint is not in the bundle');
    expect(verifyBundle(readFileSync(bundle, 'utf8'))).toMatchObject({ ok: true, entries: 12 });
  });

  it('serve refuses it as not writable: LK_DATA_NOT_WRITABLE, exit 73', async () => {
    const r = await serveMustRefuse(siteConfig('ro-site'), dir());
    expect(r.err).toContain('[LK_DATA_NOT_WRITABLE]');
    expect(r.code).toBe(73);
  });
});

describe('a data directory writable by others', () => {
  it('[A11.12] serve refuses it (LK_DATA_INSECURE, exit 78) before opening anything in it', async () => {
    const dir = join(t.dir, 'world');
    mkdirSync(dir);
    chmodSync(dir, 0o777);
    const r = await serveMustRefuse(siteConfig('world-site'), dir);
    expect(r.err).toContain('[LK_DATA_INSECURE]');
    expect(r.code).toBe(78);
    expect(spawnSync('ls', ['-A', dir], { encoding: 'utf8' }).stdout).toBe('');
  });
});

describe('change control: a change reference belongs to exactly one bundle version', () => {
  it('[A11.10] a bundle that replays an older version\'s change reference is refused, audited as policy.refused, and no bundle is in force', async () => {
    const shipped = join(defaultConfigFile(), '..', 'policy');
    const v2 = join(t.dir, 'policy-v2');
    const v3 = join(t.dir, 'policy-v3');
    cpSync(shipped, v2, { recursive: true });
    cpSync(shipped, v3, { recursive: true });
    const firstRef = (parse(readFileSync(join(shipped, 'CHANGE.yaml'), 'utf8')) as { change_ref: string }).change_ref;
    const agents = readFileSync(join(shipped, 'agents.yaml'), 'utf8');
    writeFileSync(join(v2, 'agents.yaml'), agents.replace('allow: [press.TurretSpeed, plc.LineSpeedFactor]', 'allow: [plc.LineSpeedFactor]'));
    writeFileSync(join(v2, 'CHANGE.yaml'), 'change_ref: CC-2026-0900\napprover: { name: g.neri, role: qa_reviewer }\nreason: turret speed off\ndate: "2026-11-20"\n');
    writeFileSync(join(v3, 'agents.yaml'), agents.replace('allow: [press.TurretSpeed, plc.LineSpeedFactor]', 'allow: [press.TurretSpeed]'));
    writeFileSync(join(v3, 'CHANGE.yaml'), `change_ref: ${firstRef}\napprover: { name: g.neri, role: qa_reviewer }\nreason: replayed approval\ndate: "2026-11-21"\n`);

    const data = join(t.dir, 'policy-data');
    const store = openStore({ dataDir: data });
    try {
      // each version signed (the real signing path), so that change control is what decides
      const p1 = loadConfig(siteConfig('p1', shipped));
      await signTestBundle(store, p1);
      expect(openPolicy(store, p1, silentLogger).event?.kind).toBe('initial');
      const p2 = loadConfig(siteConfig('p2', v2));
      await signTestBundle(store, p2);
      expect(openPolicy(store, p2, silentLogger).event?.kind).toBe('changed');
      const p3 = loadConfig(siteConfig('p3', v3));
      await signTestBundle(store, p3);
      const r = openPolicy(store, p3, silentLogger);
      expect(r.bundle).toBeNull();
      expect(r.error?.code).toBe('LK_POLICY_CHANGE_REF_REUSED');
      const refused = queryAudit(store.db, 'site', {}, { limit: 100 }).entries.filter((e) => e.action === 'policy.refused');
      expect(refused).toHaveLength(1);
      expect(refused[0]!.args).toMatchObject({ code: 'LK_POLICY_CHANGE_REF_REUSED', detail: { changeRef: firstRef } });
      expect(store.db.prepare('SELECT COUNT(*) FROM policy_acceptance').pluck().get()).toBe(2);
    } finally {
      store.close();
    }
  });
});

describe('a bundle\'s in_filter flags are signed', () => {
  it('flipping one (hiding an entry from the filtered view, or slipping one in) is damage at that seq, in both verifiers and the CLI', async () => {
    const dir = join(t.dir, 'bundle');
    storeWithEntries(dir, 20);
    const file = join(t.dir, 'b7.jsonl');
    const s = openStore({ dataDir: dir });
    exportBundle(s, T, parseFilter({ batch: 'B-7' }), file);
    s.close();
    const text = readFileSync(file, 'utf8');
    expect(verifyBundle(text).ok).toBe(true);
    expect((verifyBundleText(text) as { ok: boolean }).ok).toBe(true);
    for (const [from, to] of [[true, false], [false, true]] as const) {
      const lines = text.trimEnd().split('\n');
      const i = lines.findIndex((l) => l.includes(`"in_filter":${from}`));
      const seq = (JSON.parse(lines[i]!) as { entry: { seq: number } }).entry.seq;
      lines[i] = lines[i]!.replace(`"in_filter":${from}`, `"in_filter":${to}`);
      const bad = `${lines.join('\n')}\n`;
      expect(verifyBundle(bad)).toMatchObject({ ok: false, damage: { kind: 'edited', seq } });
      expect(verifyBundleText(bad)).toMatchObject({ ok: false, damage: { kind: 'edited', seq } });
      const f = join(t.dir, `flipped-${String(from)}.jsonl`);
      writeFileSync(f, bad);
      const v = await runCli('audit', 'verify', '--bundle', f);
      expect(v.code).toBe(65);
      expect(spawnSync(process.execPath, ['tools/verify-audit-bundle.mjs', f]).status).toBe(65);
    }
  });
});
