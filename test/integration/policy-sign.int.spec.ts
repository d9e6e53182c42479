/**
 * The design space changes only under a signature, tried as a site would: a real daemon on the embedded default
 * (its first bundle signed at set-up by the demo QA reviewer), real bundle files, SIGHUP reloads, restarts, the
 * `policy apply` path (re-authentication against the site's users, the bundle in force deciding who may sign,
 * Ed25519 with the site key) and `config check`.
 */
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadSitePublicKey, verifyBytes } from '../../src/audit/keys.js';
import type { AuditEntry } from '../../src/audit/entry.js';
import { iterateAudit } from '../../src/audit/index.js';
import { defaultConfigFile, loadConfig } from '../../src/config/load.js';
import { readPolicyBundle } from '../../src/config/policy-bundle.js';
import { startDaemon } from '../../src/daemon.js';
import { silentLogger } from '../../src/log.js';
import { runDoctor } from '../../src/ops/doctor.js';
import { applyPolicyChange, signPolicyBundle } from '../../src/ops/policy-change.js';
import { evaluate, type PolicyBundle } from '../../src/policy/index.js';
import { signatureBytes, type PolicySignaturePayload } from '../../src/policy/signature.js';
import { startApiNode, type ApiNode } from '../helpers/api.js';
import { runCli, spawnCli } from '../helpers/cli.js';
import { rejectionCode } from '../helpers/codes.js';

let node: ApiNode;
beforeAll(async () => {
  node = await startApiNode({ memory: true });
});
afterAll(async () => {
  await node?.close();
});

const site = (): AuditEntry[] => [...iterateAudit(node.daemon.store.db, 'site', {})];
const last = (action: string): AuditEntry | undefined => site().filter((e) => e.action === action).at(-1);
const inForce = (): string => join(node.dir, 'policy');
const mainForceMax = (b: PolicyBundle | null): number | undefined => b?.designSpace.approved('ir-family-a', 'round-10mm-ff').setpoints['press.MainForce']?.max;

/** A move of press.MainForce to `kN` under the bundle in force (what the guarded writer asks at call time). */
function decide(kN: number) {
  return evaluate(
    { agent: 'agent.compress_fill', setpoint: 'press.MainForce', value: kN, product: 'ir-family-a', tooling: 'round-10mm-ff' },
    node.daemon.policy.bundle,
    { now: Date.now(), batchState: 'running', current: kN - 0.5 },
  );
}

/** Raise press.MainForce's max in the design-space text. */
const raise = (text: string, max: number): string => {
  const next = text.replace('press.MainForce:          { min: 8,    max: 18,', `press.MainForce:          { min: 8,    max: ${max},`);
  if (next === text) throw new Error('design-space.yaml no longer says press.MainForce max 18; update the test');
  return next;
};
const change = (ref: string, approver: string, role = 'qa_reviewer'): string => `change_ref: ${ref}\napprover: { name: ${approver}, role: ${role} }\nreason: raise the main force ceiling\ndate: "2026-12-01"\n`;

/** A new bundle in its own folder: the one in force with MainForce max `max`, CHANGE.yaml naming `ref` and `approver`. */
function newBundle(max: number, ref: string, approver: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'lk-policy-next-'));
  cpSync(inForce(), dir, { recursive: true });
  writeFileSync(join(dir, 'design-space.yaml'), raise(readFileSync(join(inForce(), 'design-space.yaml'), 'utf8'), max));
  writeFileSync(join(dir, 'CHANGE.yaml'), change(ref, approver));
  return dir;
}

/** Edit the folder in force, run `fn`, put the files back. */
async function withEdited(files: Record<string, (s: string) => string>, fn: () => Promise<void>): Promise<void> {
  const saved = Object.fromEntries(Object.keys(files).map((f) => [f, readFileSync(join(inForce(), f), 'utf8')]));
  try {
    for (const [f, edit] of Object.entries(files)) writeFileSync(join(inForce(), f), edit(saved[f]!));
    await fn();
  } finally {
    for (const [f, text] of Object.entries(saved)) writeFileSync(join(inForce(), f), text);
  }
}

describe('the embedded default signs its first bundle at set-up, honestly', () => {
  it('the demo QA reviewer exists before the signature names them, and the entry says no person signed', () => {
    const entries = site();
    const created = entries.find((e) => e.action === 'user.create' && (e.args as { user: string }).user === 'm.rossi');
    const signed = entries.find((e) => e.action === 'policy.signed')!;
    const accepted = entries.find((e) => e.action === 'policy.accepted')!;
    expect(created!.seq).toBeLessThan(signed.seq);
    expect(signed.seq).toBeLessThan(accepted.seq);
    const p = (signed.args as unknown as { payload: PolicySignaturePayload }).payload;
    expect([p.method, p.change_ref, p.signer.id, p.previous_version]).toEqual(['demo_setup', 'DEMO-SETUP', 'm.rossi', null]);
    expect(signed.reason).toMatch(/automatically .* no person/);
    expect((accepted.args as { change_ref: string }).change_ref).toBe('DEMO-SETUP');
    expect(mainForceMax(node.daemon.policy.bundle)).toBe(18);
  });
});

describe('an unsigned change never takes effect', () => {
  it('[INV-POLICY-SIGNED] [A11.10] the forged approver: design-space.yaml edited, CHANGE.yaml typed with m.rossi, SIGHUP → refused, audited, 18 kN still the max', async () => {
    const before = node.daemon.policy.bundle!.version;
    await withEdited({ 'design-space.yaml': (s) => raise(s, 25), 'CHANGE.yaml': () => change('CC-2026-0666', 'm.rossi') }, async () => {
      await node.daemon.reload();
      expect(node.daemon.policy.bundle!.version).toBe(before);
      const refused = last('policy.refused')!;
      expect((refused.args as { code: string }).code).toBe('LK_POLICY_UNSIGNED');
      expect((refused.args as { in_force: string }).in_force).toBe(before);
      expect(last('policy.accepted')!.new).not.toBe(readPolicyBundle(inForce(), node.daemon.loaded.config).version);
      // a write between the old and the forged max is still out of the design space (waits for QA, never allowed)
      const d = decide(20);
      expect(d.reasons).toContain('OUTSIDE_DESIGN_SPACE');
      expect(d.outcome).not.toBe('allow');
    });
  });

  it('[INV-POLICY-SIGNED] ghost.user (no such user) as the approver is refused the same way', async () => {
    const before = node.daemon.policy.bundle!.version;
    const n = site().filter((e) => e.action === 'policy.refused').length;
    await withEdited({ 'design-space.yaml': (s) => raise(s, 25), 'CHANGE.yaml': () => change('CC-2026-0667', 'ghost.user') }, async () => {
      await node.daemon.reload();
      expect(node.daemon.policy.bundle!.version).toBe(before);
      expect(site().filter((e) => e.action === 'policy.refused')).toHaveLength(n + 1);
      expect(mainForceMax(node.daemon.policy.bundle)).toBe(18);
    });
  });

  it('[INV-POLICY-SIGNED] a signature made with the site key for a user the site does not have is refused (LK_POLICY_SIGNER)', async () => {
    const before = node.daemon.policy.bundle!.version;
    await withEdited({ 'design-space.yaml': (s) => raise(s, 24), 'CHANGE.yaml': () => change('CC-2026-0668', 'ghost.user') }, async () => {
      const bundle = readPolicyBundle(inForce(), node.daemon.loaded.config);
      signPolicyBundle(node.daemon.store, {
        bundle, previous: before, changeRef: 'CC-2026-0668', signer: { id: 'ghost.user', name: 'Ghost', role: 'qa_reviewer' }, allowedRoles: ['qa_reviewer'],
        method: 'password', changes: [], reason: 'forged with the key file', from: inForce(),
      });
      await node.daemon.reload();
      expect(node.daemon.policy.bundle!.version).toBe(before);
      expect((last('policy.refused')!.args as { code: string }).code).toBe('LK_POLICY_SIGNER');
    });
  });
});

describe('policy apply', () => {
  const apply = (dir: string, approver: string, ref: string, password = node.passwords.get(approver)!) =>
    applyPolicyChange({ store: node.daemon.store, identity: node.daemon.identity!, loaded: node.daemon.loaded, dir, changeRef: ref, approver, password });
  const files = (): string => ['design-space.yaml', 'CHANGE.yaml', 'agents.yaml', 'bundle.yaml', 'setpoints.yaml'].map((f) => readFileSync(join(inForce(), f), 'utf8')).join('\n');

  it('a wrong password is refused and changes nothing', async () => {
    const dir = newBundle(20, 'CC-2026-0700', 'm.rossi');
    try {
      const before = files();
      const signed = site().filter((e) => e.action === 'policy.signed').length;
      expect(await rejectionCode(apply(dir, 'm.rossi', 'CC-2026-0700', 'not-the-password-of-m.rossi'))).toBe('LK_REAUTH_FAILED');
      expect(files()).toBe(before);
      expect(site().filter((e) => e.action === 'policy.signed')).toHaveLength(signed);
      expect(mainForceMax(node.daemon.policy.bundle)).toBe(18);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('[P11.10(g)] a user of a role the bundle in force does not let approve (a process engineer) is refused, audited, nothing installed', async () => {
    const dir = newBundle(20, 'CC-2026-0701', 'p.bianchi');
    try {
      const before = files();
      expect(await rejectionCode(apply(dir, 'p.bianchi', 'CC-2026-0701'))).toBe('LK_FORBIDDEN');
      expect(last('policy.apply_refused')!.actor).toBe('p.bianchi');
      expect(files()).toBe(before);
      await node.daemon.reload();
      expect(mainForceMax(node.daemon.policy.bundle)).toBe(18);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('a CHANGE.yaml naming someone else than the signer is refused before any password', async () => {
    const dir = newBundle(20, 'CC-2026-0702', 'g.ferri');
    try {
      expect(await rejectionCode(apply(dir, 'm.rossi', 'CC-2026-0702'))).toBe('LK_VALIDATION');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('[A11.10] the CLI shows the content diff, signs as the QA reviewer, audits it with the diff and a signature that verifies; SIGHUP puts it in force', async () => {
    const dir = newBundle(20, 'CC-2026-0703', 'm.rossi');
    try {
      const dry = await runCli('policy', 'apply', dir, '--change', 'CC-2026-0703', '-c', node.daemon.loaded.file, '-d', node.daemon.loaded.dataDir, '--dry-run');
      expect(dry.code, dry.err).toBe(0);
      expect(dry.out).toContain('design space ir-family-a × round-10mm-ff: press.MainForce max 18 → 20 kN');
      expect(dry.out).toContain('may sign: qa_reviewer');
      const r = await spawnCli(['policy', 'apply', dir, '--change', 'CC-2026-0703', '--approver', 'm.rossi', '-c', node.daemon.loaded.file, '-d', node.daemon.loaded.dataDir], { input: `${node.passwords.get('m.rossi')}\n` });
      expect(r.code, r.err).toBe(0);
      expect(r.out).toContain('signed by m.rossi under CC-2026-0703');
      const signed = last('policy.signed')!;
      const p = (signed.args as unknown as { payload: PolicySignaturePayload }).payload;
      expect([signed.actor, p.signer.role, p.change_ref, p.method]).toEqual(['m.rossi', 'qa_reviewer', 'CC-2026-0703', 'password']);
      expect((signed.args as { changes: { text: string }[] }).changes.map((c) => c.text)).toEqual(['design space ir-family-a × round-10mm-ff: press.MainForce max 18 → 20 kN']);
      expect(signed.signature!.meaning).toMatch(/approved/);
      const key = loadSitePublicKey(node.daemon.loaded.dataDir);
      expect(verifyBytes(key, signatureBytes(p), signed.signature!.value)).toBe(true);
      expect(verifyBytes(key, signatureBytes({ ...p, bundle_version: '0'.repeat(64) }), signed.signature!.value)).toBe(false);
      // installed, not yet in force: the daemon takes it at SIGHUP
      expect(mainForceMax(node.daemon.policy.bundle)).toBe(18);
      const rl = await node.daemon.reload();
      expect(rl.policy).toBe(p.bundle_version);
      expect(mainForceMax(node.daemon.policy.bundle)).toBe(20);
      const accepted = last('policy.accepted')!;
      expect([accepted.actor, (accepted.args as { change_ref: string }).change_ref, (accepted.args as { signature: { seq: number } }).signature.seq]).toEqual(['m.rossi', 'CC-2026-0703', signed.seq]);
      expect(decide(19.5).reasons).not.toContain('OUTSIDE_DESIGN_SPACE');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('doctor reports the signature of the bundle in force', async () => {
    const r = await runDoctor({ configFile: node.daemon.loaded.file, dataDir: node.daemon.loaded.dataDir, connectTimeoutMs: 500, probes: { timedatectl: async () => 'NTPSynchronized=yes\n' } });
    const policy = r.checks.find((c) => c.id === 'policy')!;
    expect(policy.status, policy.message).toBe('ok');
    expect(policy.message).toMatch(/signed by m\.rossi \(qa_reviewer\) under CC-2026-0703/);
  });

  it('[INV-POLICY-SIGNED] the bundle tampered with after signing is refused at SIGHUP and at start', async () => {
    const signedVersion = node.daemon.policy.bundle!.version;
    const ds = join(inForce(), 'design-space.yaml');
    writeFileSync(ds, readFileSync(ds, 'utf8').replace('press.MainForce:          { min: 8,    max: 20,', 'press.MainForce:          { min: 8,    max: 30,'));
    await node.daemon.reload();
    expect(node.daemon.policy.bundle!.version).toBe(signedVersion);
    expect((last('policy.refused')!.args as { code: string }).code).toBe('LK_POLICY_UNSIGNED');
    await node.daemon.stop('restart with a tampered bundle');
    const again = await startDaemon({ configFile: node.daemon.loaded.file, dataDir: node.daemon.loaded.dataDir, logger: silentLogger });
    try {
      expect(again.ready.policy).toBeNull();
      expect(again.policy.error?.code).toBe('LK_POLICY_UNSIGNED');
      // the shipped default does not sign itself again: a bundle was accepted here before
      expect(mainForceMax(again.policy.bundle)).toBeUndefined();
    } finally {
      await again.stop('test done');
    }
  });
});

describe('config check checks the bundle against the configuration', () => {
  it('a bundle naming setpoints the equipment does not have fails, naming the file and the path', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'lk-policy-check-'));
    try {
      cpSync(join(defaultConfigFile(), '..', 'policy'), join(dir, 'policy'), { recursive: true });
      writeFileSync(join(dir, 'site.yaml'), readFileSync(defaultConfigFile(), 'utf8'));
      const ok = await runCli('config', 'check', join(dir, 'site.yaml'));
      expect(ok.code, ok.err).toBe(0);
      expect(ok.out).toMatch(/policy bundle [0-9a-f]{64}/);
      expect(ok.out).toContain('signature: not signed yet');
      const agents = join(dir, 'policy', 'agents.yaml');
      writeFileSync(agents, readFileSync(agents, 'utf8').replace('allow: [press.FillDepth, press.MainForce, press.PreForce, press.TurretSpeed]', 'allow: [press.FillDepth, press.MainForce, press.PreForce, press.TurretSpeed, press.Ghost1, press.Ghost2]'));
      const bad = await runCli('config', 'check', join(dir, 'site.yaml'));
      expect(bad.code).not.toBe(0);
      expect(bad.err).toContain('[LK_POLICY_BUNDLE]');
      expect(bad.err).toMatch(/policy\/agents\.yaml:\d+: agents\["agent\.compress_fill"\]\.allow\[4\]: "press\.Ghost1" is not a setpoint of the site configuration/);
      expect(bad.err).toContain('press.Ghost2');
      expect(loadConfig(join(dir, 'site.yaml')).policyDir).toBe(join(dir, 'policy'));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
