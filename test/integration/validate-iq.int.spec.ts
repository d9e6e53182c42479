/**
 * The installation qualification (src/validation/iq.ts) on a real installation folder in a temp dir: its
 * MANIFEST.json written by the function tools/package.mjs uses (tools/manifest.mjs), the unit as the package ships it
 * in a folder standing for /etc/systemd/system, a real configuration copy, and a real data directory — a SQLite store
 * whose policy bundle was signed through the real signing path. Then each thing an IQ must catch is broken on a copy:
 * a byte of a file, a file, a mode, the unit's hardening, the data directory's mode and the key's, the policy
 * signature, an audit row, the clock. What a test cannot arrange (systemd running, the service user's uid,
 * timedatectl) is stood in for through the IQ's probes.
 */
import { appendFileSync, chmodSync, cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SITE_TENANT } from '../../src/audit/entry.js';
import { keyFiles } from '../../src/audit/keys.js';
import { loadConfig, type LoadedConfig } from '../../src/config/load.js';
import { readPolicyBundle } from '../../src/config/policy-bundle.js';
import { findPolicySignature } from '../../src/engine/policy-gate.js';
import { openStore } from '../../src/store/store.js';
import { IQ_CHECKS, runIq, type IqOptions } from '../../src/validation/iq.js';
import { satisfiesRange } from '../../src/validation/node-range.js';
import type { ReportCheck } from '../../src/validation/report.js';
import { loadRequirements } from '../../tools/requirements.js';
import { writeManifest } from '../../tools/manifest.mjs';
import { signTestBundle } from '../helpers/policy-sign.js';
import { rawDb } from '../unit/audit-helpers.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const work = mkdtempSync(join(tmpdir(), 'lk-iq-'));
const app = join(work, 'app');
const etc = join(work, 'etc');
const cfg = join(etc, 'site.yaml');
const data = join(work, 'data');
/** Stands for /etc/systemd/system. */
const units = join(work, 'systemd-system');
const uid = process.getuid!();
let loaded: LoadedConfig;
let copies = 0;

const synced = async (): Promise<string> => 'Timezone=Europe/Berlin\nNTP=yes\nNTPSynchronized=yes\n';
/** The probes of a systemd machine on which the service user `linekeeper` is the user running the test. */
const probes = { timedatectl: synced, systemd: () => true, uid: (name: string) => (name === 'linekeeper' ? uid : null) };

/** install.sh's part: take write from group and others on the whole tree (the manifest records modes before that). */
function goW(dir: string): void {
  for (const n of readdirSync(dir)) {
    const p = join(dir, n);
    const st = statSync(p);
    chmodSync(p, st.mode & 0o7755);
    if (st.isDirectory()) goW(p);
  }
}

/** The shipped unit, pointed at this installation, configuration, data directory and node. */
function unitText(): string {
  return readFileSync(join(ROOT, 'systemd/linekeeper.service'), 'utf8')
    .replaceAll('/opt/linekeeper', app).replaceAll('/etc/linekeeper/site.yaml', cfg).replaceAll('/var/lib/linekeeper', data).replaceAll('/usr/bin/node', process.execPath);
}

/** A copy of the installation folder (to break without touching the intact one). */
function copyApp(): string {
  const to = join(work, `app-${++copies}`);
  cpSync(app, to, { recursive: true });
  return to;
}

/** A copy of the data directory (0700, as install.sh leaves it) and the configuration pointed at it. */
function copyData(): LoadedConfig {
  const to = join(work, `data-${++copies}`);
  cpSync(data, to, { recursive: true });
  chmodSync(to, 0o700);
  return loadConfig(cfg, { dataDir: to });
}

const iq = (o: Partial<IqOptions> = {}): Promise<{ checks: ReportCheck[] }> => runIq({ loaded, root: app, unitDirs: [units], probes, ...o });
const byId = (checks: readonly ReportCheck[], id: string): ReportCheck => checks.find((c) => c.id === id)!;

beforeAll(async () => {
  // the installation: what tools/package.mjs puts in the app folder, in small
  const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { name: string; version: string };
  for (const d of ['bin', 'dist/src/cli', 'node_modules/better-sqlite3', 'systemd', 'config']) mkdirSync(join(app, d), { recursive: true });
  cpSync(join(ROOT, 'package.json'), join(app, 'package.json'));
  cpSync(join(ROOT, 'node_modules/better-sqlite3/package.json'), join(app, 'node_modules/better-sqlite3/package.json'));
  cpSync(join(ROOT, 'tools/install.sh'), join(app, 'install.sh'));
  writeFileSync(join(app, 'bin/linekeeper.js'), "#!/usr/bin/env node\nimport '../dist/src/cli/main.js';\n", { mode: 0o755 });
  writeFileSync(join(app, 'dist/src/cli/main.js'), "console.log('linekeeper');\n");
  writeFileSync(join(app, 'config/site.yaml'), readFileSync(join(ROOT, 'config/site.yaml')));
  writeFileSync(join(app, 'BUILDINFO'), `${JSON.stringify({ name: pkg.name, version: pkg.version, arch: process.arch, node: process.versions.node, abi: process.versions.modules, built_at: new Date().toISOString() }, null, 2)}\n`);
  writeFileSync(join(app, 'systemd/linekeeper.service'), unitText());
  chmodSync(join(app, 'install.sh'), 0o755);
  writeManifest(app, { name: pkg.name, version: pkg.version });
  goW(app);
  mkdirSync(units);
  writeFileSync(join(units, 'linekeeper.service'), unitText());

  // the configuration and a real data directory with the bundle signed on its site chain
  mkdirSync(etc);
  cpSync(join(ROOT, 'config/policy'), join(etc, 'policy'), { recursive: true });
  writeFileSync(cfg, readFileSync(join(ROOT, 'config/site.yaml'), 'utf8').replace('data_dir: ./data', `data_dir: ${JSON.stringify(data)}`));
  loaded = loadConfig(cfg);
  mkdirSync(data, { mode: 0o700 });
  const store = openStore({ dataDir: data });
  try {
    await signTestBundle(store, loaded);
  } finally {
    store.close();
  }
});

afterAll(() => rmSync(work, { recursive: true, force: true }));

describe('linekeeper validate iq', () => {
  it('[A11.4] [P11.10(a)] [A11.10] [A11.12] [P11.10(c)] [P11.10(d)] [INV-POLICY-SIGNED] [P11.10(e)] [A11.7] every check passes on an intact installation, each tied to requirements of validation/requirements.yaml', async () => {
    const r = await runIq({ loaded, root: app, unitDirs: [units], probes });
    expect(r.checks.map((c) => c.id)).toEqual(['IQ-FILES', 'IQ-NODE', 'IQ-NATIVE', 'IQ-UNIT', 'IQ-DATA-DIR', 'IQ-CONFIG', 'IQ-POLICY', 'IQ-AUDIT', 'IQ-CLOCK']);
    for (const c of r.checks) expect([c.id, c.status, c.detail]).toEqual([c.id, 'pass', c.detail]);
    const known = new Set(loadRequirements(ROOT).requirements.map((q) => q.id));
    for (const c of r.checks) {
      expect(c.requirements.length, c.id).toBeGreaterThan(0);
      for (const id of c.requirements) expect(known.has(id), `${c.id}: ${id}`).toBe(true);
    }
    const files = byId(r.checks, 'IQ-FILES');
    const manifest = JSON.parse(readFileSync(join(app, 'MANIFEST.json'), 'utf8')) as { format: string; files: Record<string, { sha256: string; mode: string }> };
    expect(manifest.format).toBe('linekeeper.package-manifest');
    expect(Object.keys(manifest.files)).toEqual([...Object.keys(manifest.files)].sort());
    expect(manifest.files['bin/linekeeper.js']!.mode).toBe('0755');
    expect(files.evidence).toMatchObject({ listed: Object.keys(manifest.files).length, intact: Object.keys(manifest.files).length, missing: 0, changed: 0 });
    expect(byId(r.checks, 'IQ-NODE').evidence).toMatchObject({ abi: process.versions.modules, arch: process.arch });
    expect(byId(r.checks, 'IQ-NATIVE').detail).toMatch(/SQLite \d+\.\d+/);
    // the hardening is read from the shipped unit, with its values
    const hardening = byId(r.checks, 'IQ-UNIT').evidence!['hardening'] as string[];
    for (const d of ['NoNewPrivileges=yes', 'ProtectSystem=strict', 'CapabilityBoundingSet=', 'SystemCallFilter=@system-service ~@privileged @mount @debug @cpu-emulation @obsolete @raw-io @reboot @swap @module @clock', 'User=linekeeper', 'UMask=0077']) expect(hardening).toContain(d);
    expect(hardening.some((d) => d.startsWith('ExecStart'))).toBe(false);
    expect(byId(r.checks, 'IQ-CONFIG').evidence).toMatchObject({ sha256: loaded.hash, file: cfg });
    expect(byId(r.checks, 'IQ-POLICY').evidence).toMatchObject({ version: readPolicyBundle(loaded.policyDir, loaded.config).version });
    const audit = byId(r.checks, 'IQ-AUDIT').evidence as { entries: number; chains: { tenant: string; headSeq: number; count: number }[] };
    const site = audit.chains.find((c) => c.tenant === SITE_TENANT)!;
    expect(site.count).toBeGreaterThan(0);
    expect(site.headSeq).toBe(site.count);
    expect(audit.entries).toBe(audit.chains.reduce((n, c) => n + c.count, 0));
  });

  it('[A11.4] [P11.10(a)] [A11.10] a changed byte in one file fails IQ-FILES naming that file', async () => {
    const root = copyApp();
    const f = join(root, 'dist/src/cli/main.js');
    writeFileSync(f, readFileSync(f, 'utf8').replace("'linekeeper'", "'linekeepeR'"));
    const c = byId((await iq({ root })).checks, 'IQ-FILES');
    expect(c.status).toBe('fail');
    expect(c.detail).toContain('changed (SHA-256 differs): dist/src/cli/main.js');
    expect(c.evidence).toMatchObject({ changed: 1, missing: 0 });
  });

  it('[A11.4] [P11.10(a)] a removed file fails IQ-FILES naming it', async () => {
    const root = copyApp();
    rmSync(join(root, 'node_modules/better-sqlite3/package.json'));
    const c = byId((await iq({ root })).checks, 'IQ-FILES');
    expect(c.status).toBe('fail');
    expect(c.detail).toContain('missing: node_modules/better-sqlite3/package.json');
    expect(c.evidence).toMatchObject({ missing: 1, changed: 0 });
  });

  it('[A11.4] [A11.10] a file the manifest does not list fails in a code folder and warns elsewhere; a widened mode fails', async () => {
    const extra = copyApp();
    writeFileSync(join(extra, 'node_modules/better-sqlite3/evil.js'), 'process.exit(0);\n');
    const code = byId((await iq({ root: extra })).checks, 'IQ-FILES');
    expect(code.status).toBe('fail');
    expect(code.detail).toContain('in code folders the daemon loads from: node_modules/better-sqlite3/evil.js');

    const other = copyApp();
    writeFileSync(join(other, 'config/notes.txt'), 'site notes\n');
    const warn = byId((await iq({ root: other })).checks, 'IQ-FILES');
    expect(warn.status).toBe('warn');
    expect(warn.detail).toContain('outside the code folders: config/notes.txt');

    const mode = copyApp();
    chmodSync(join(mode, 'bin/linekeeper.js'), 0o777);
    const m = byId((await iq({ root: mode })).checks, 'IQ-FILES');
    expect(m.status).toBe('fail');
    expect(m.detail).toContain('mode differs: bin/linekeeper.js (0777, shipped 0755: expected 0755)');
  });

  it('[A11.4] [P11.10(a)] a source checkout is not an installed package: IQ-FILES and IQ-NODE fail saying so', async () => {
    const r = await iq({ root: ROOT });
    for (const id of ['IQ-FILES', 'IQ-NODE']) {
      expect(byId(r.checks, id).status, id).toBe('fail');
      expect(byId(r.checks, id).detail, id).toMatch(/^not an installed package/);
    }
  });

  it('[A11.4] [P11.10(a)] IQ-NODE fails for a package built for another ABI or architecture, or a Node outside engines', async () => {
    const root = copyApp();
    const b = JSON.parse(readFileSync(join(root, 'BUILDINFO'), 'utf8')) as Record<string, string>;
    writeFileSync(join(root, 'BUILDINFO'), JSON.stringify({ ...b, abi: '1', arch: 'mips' }));
    const c = byId((await iq({ root })).checks, 'IQ-NODE');
    expect(c.status).toBe('fail');
    expect(c.detail).toContain('ABI 1');
    expect(c.detail).toContain('built for mips');

    const eng = copyApp();
    const pkg = JSON.parse(readFileSync(join(eng, 'package.json'), 'utf8')) as Record<string, unknown>;
    writeFileSync(join(eng, 'package.json'), JSON.stringify({ ...pkg, engines: { node: '>=999' } }));
    const e = byId((await iq({ root: eng })).checks, 'IQ-NODE');
    expect(e.status).toBe('fail');
    expect(e.detail).toContain('does not satisfy engines.node ">=999"');

    expect(satisfiesRange('20.19.1', '>=20.19')).toBe(true);
    expect(satisfiesRange('20.18.9', '>=20.19')).toBe(false);
    expect(satisfiesRange('22.1.0', '^20.19.0 || ^22')).toBe(true);
    expect(satisfiesRange('21.0.0', '^20.19.0 || ^22')).toBe(false);
    expect(satisfiesRange('20.5.3', '~20.5')).toBe(true);
    expect(satisfiesRange('20.6.0', '~20.5')).toBe(false);
    expect(satisfiesRange('20.1.0', '>=18 <20')).toBe(false);
    expect(satisfiesRange('20.1.0', 'lts/*')).toBeNull();
  });

  it('[A11.4] [A11.12] IQ-UNIT fails a unit whose hardening differs from the shipped one, or a drop-in that overrides it, naming the directive', async () => {
    const changed = join(work, 'units-changed');
    mkdirSync(changed);
    writeFileSync(join(changed, 'linekeeper.service'), unitText().replace('NoNewPrivileges=yes\n', '').replace('ProtectSystem=strict', 'ProtectSystem=full'));
    const c = byId((await iq({ unitDirs: [changed] })).checks, 'IQ-UNIT');
    expect(c.status).toBe('fail');
    expect(c.detail).toContain('NoNewPrivileges=yes missing');
    expect(c.detail).toContain('ProtectSystem=full (shipped ProtectSystem=strict)');

    const dropIn = join(work, 'units-drop-in');
    mkdirSync(join(dropIn, 'linekeeper.service.d'), { recursive: true });
    writeFileSync(join(dropIn, 'linekeeper.service'), unitText());
    writeFileSync(join(dropIn, 'linekeeper.service.d/override.conf'), '[Service]\nEnvironment=LK_SITE_NOTE=1\n');
    const note = byId((await iq({ unitDirs: [dropIn] })).checks, 'IQ-UNIT');
    expect(note.status).toBe('warn');
    expect(note.detail).toContain('sets Environment');
    appendFileSync(join(dropIn, 'linekeeper.service.d/override.conf'), 'CapabilityBoundingSet=CAP_SYS_ADMIN\n');
    const over = byId((await iq({ unitDirs: [dropIn] })).checks, 'IQ-UNIT');
    expect(over.status).toBe('fail');
    expect(over.detail).toContain('overrides the hardening: CapabilityBoundingSet=CAP_SYS_ADMIN');
  });

  it('[A11.4] [A11.12] IQ-UNIT fails a unit that runs another installation, and is not applicable where there is no systemd and no unit', async () => {
    const other = join(work, 'units-other');
    mkdirSync(other);
    writeFileSync(join(other, 'linekeeper.service'), unitText().replaceAll(app, '/opt/linekeeper'));
    const c = byId((await iq({ unitDirs: [other] })).checks, 'IQ-UNIT');
    expect(c.status).toBe('fail');
    expect(c.detail).toContain('the service starts /opt/linekeeper/bin/linekeeper.js, not this installation');

    const none = join(work, 'units-none');
    mkdirSync(none);
    const na = byId((await iq({ unitDirs: [none], probes: { ...probes, systemd: () => false } })).checks, 'IQ-UNIT');
    expect(na.status).toBe('not_applicable');
    expect(na.detail).toContain('no systemd on this machine');
    const missing = byId((await iq({ unitDirs: [none] })).checks, 'IQ-UNIT');
    expect(missing.status).toBe('fail');
    expect(missing.detail).toContain('is not installed');
  });

  it('[P11.10(c)] [P11.10(d)] [A11.12] IQ-DATA-DIR fails a group-writable data directory, a site key others can read, and another owner', async () => {
    const writable = copyData();
    chmodSync(writable.dataDir, 0o770);
    const w = byId((await iq({ loaded: writable })).checks, 'IQ-DATA-DIR');
    expect(w.status).toBe('fail');
    expect(w.detail).toContain('writable by group (mode 0770)');

    const key = copyData();
    chmodSync(keyFiles(key.dataDir).privateFile, 0o644);
    const k = byId((await iq({ loaded: key })).checks, 'IQ-DATA-DIR');
    expect(k.status).toBe('fail');
    expect(k.detail).toContain('private key is readable by others');
    expect(k.detail).toContain('[LK_AUDIT_KEY]');

    const owner = byId((await iq({ probes: { ...probes, uid: () => uid + 1 } })).checks, 'IQ-DATA-DIR');
    expect(owner.status).toBe('fail');
    expect(owner.detail).toContain(`owned by uid ${uid}, not by linekeeper (uid ${uid + 1}`);
    const nobody = byId((await iq({ probes: { ...probes, uid: () => null } })).checks, 'IQ-DATA-DIR');
    expect(nobody.status).toBe('fail');
    expect(nobody.detail).toContain('the service user linekeeper');
  });

  it('[INV-POLICY-SIGNED] [A11.10] IQ-POLICY fails a bundle whose signature does not verify (the trail itself intact) and a bundle changed after signing', async () => {
    const forged = copyData();
    const store = openStore({ dataDir: forged.dataDir });
    try {
      const version = readPolicyBundle(forged.policyDir, forged.config).version;
      const rec = findPolicySignature(store, version)!;
      const bad = `${rec.signature[0] === 'A' ? 'B' : 'A'}${rec.signature.slice(1)}`;
      store.audit.append({
        tenant: SITE_TENANT, actor: rec.payload.signer.id, kind: 'config_change', action: 'policy.signed', args: { payload: JSON.parse(JSON.stringify(rec.payload)) },
        new: version, signature: { user: rec.payload.signer.id, name: rec.payload.signer.id, meaning: 'forged', time: rec.payload.signed_at, value: bad },
      });
    } finally {
      store.close();
    }
    const r = (await iq({ loaded: forged })).checks;
    expect(byId(r, 'IQ-POLICY').status).toBe('fail');
    expect(byId(r, 'IQ-POLICY').detail).toContain('[LK_POLICY_SIGNATURE_INVALID]');
    expect(byId(r, 'IQ-AUDIT').status).toBe('pass');

    const edited = join(work, 'etc-edited');
    cpSync(etc, edited, { recursive: true });
    writeFileSync(join(edited, 'policy/CHANGE.yaml'), `${readFileSync(join(edited, 'policy/CHANGE.yaml'), 'utf8')}# edited after signing\n`);
    const bundle = join(edited, 'policy/bundle.yaml');
    writeFileSync(bundle, readFileSync(bundle, 'utf8').replace('change: [qa_reviewer]', 'change: [qa_reviewer, process_engineer]'));
    const e = byId((await iq({ loaded: loadConfig(join(edited, 'site.yaml')) })).checks, 'IQ-POLICY');
    expect(e.status).toBe('fail');
    expect(e.detail).toContain('[LK_POLICY_UNSIGNED]');
  });

  it('[A11.10] IQ-CONFIG fails when the node runs another configuration than the one qualified, and names the one in force', async () => {
    const other = copyData();
    const store = openStore({ dataDir: other.dataDir });
    try {
      // what a start records: the canonical hash of the configuration it started with
      store.audit.append({ tenant: SITE_TENANT, actor: 'system', kind: 'system', action: 'site.start', args: { config_hash: 'e'.repeat(64) } });
    } finally {
      store.close();
    }
    const c = byId((await iq({ loaded: other })).checks, 'IQ-CONFIG');
    expect(c.status).toBe('fail');
    expect(c.detail).toMatch(/the node runs another configuration \(sha256 eeeeeeeeeeee…, site audit #\d+\)/);
    expect(c.evidence).toMatchObject({ inForce: 'e'.repeat(64), sha256: other.hash });
    const same = copyData();
    const s2 = openStore({ dataDir: same.dataDir });
    try {
      s2.audit.append({ tenant: SITE_TENANT, actor: 'system', kind: 'system', action: 'site.start', args: { config_hash: same.hash } });
    } finally {
      s2.close();
    }
    expect(byId((await iq({ loaded: same })).checks, 'IQ-CONFIG')).toMatchObject({ status: 'pass', detail: expect.stringMatching(/the node started with it/) });
  });

  it('[P11.10(a)] [P11.10(e)] [A11.7] IQ-AUDIT fails once an audit row was edited behind the trail\'s back', async () => {
    const tampered = copyData();
    const db = rawDb(tampered.dataDir);
    db.prepare("UPDATE audit_entry SET body = json_set(body, '$.actor', 'mallory') WHERE tenant = ? AND seq = 1").run(SITE_TENANT);
    db.close();
    const c = byId((await iq({ loaded: tampered })).checks, 'IQ-AUDIT');
    expect(c.status).toBe('fail');
    expect(c.detail).toContain('audit trail does not verify');
  });

  it('[P11.10(e)] IQ-CLOCK passes a synchronised clock, fails one that is not, and warns when the state is unknown', async () => {
    const not = byId((await iq({ probes: { ...probes, timedatectl: async () => 'NTP=yes\nNTPSynchronized=no\n' } })).checks, 'IQ-CLOCK');
    expect(not.status).toBe('fail');
    expect(not.detail).toContain('NOT synchronised');
    const unknown = byId((await iq({ probes: { ...probes, timedatectl: async () => null } })).checks, 'IQ-CLOCK');
    expect(unknown.status).toBe('warn');
    const ok = byId((await iq()).checks, 'IQ-CLOCK');
    expect(ok).toMatchObject({ status: 'pass', evidence: { timedatectl: { NTPSynchronized: 'yes', Timezone: 'Europe/Berlin' } } });
    expect(IQ_CHECKS.clock.requirements).toEqual(['P11.10(e)']);
  });
});
