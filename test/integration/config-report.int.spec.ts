/**
 * `linekeeper config report` on a real site: the shipped configuration with MQTT and OIDC added (an MQTT password
 * file and a password in the broker URL), the shipped policy bundle signed through the real signing path, local users
 * in the SQLite store, the command run as it is installed (a child process, the password on stdin). The signed JSON
 * verifies with the site key and lists the equipment, tags, users and policy; no secret is in it; the PDF is there;
 * the trail records it; a wrong password makes nothing; `--diff` lists exactly what changed, and refuses a report
 * that does not verify with this site's key.
 */
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Identity } from '../../src/api/identity.js';
import { iterateAudit } from '../../src/audit/index.js';
import { ensureSiteKey, loadSitePublicKey } from '../../src/audit/keys.js';
import { loadConfig } from '../../src/config/load.js';
import { openStore } from '../../src/store/store.js';
import { configReportContent, redacted } from '../../src/validation/config-report.js';
import { diffData } from '../../src/validation/data-diff.js';
import { signReport, verifyReport, type SignedReport } from '../../src/validation/report.js';
import { spawnCli } from '../helpers/cli.js';
import { flat, pdfText } from '../helpers/pdf-text.js';
import { registeredTwin } from '../helpers/models.js';
import { signTestBundle } from '../helpers/policy-sign.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const LEAD_PW = 'validation lead 2026 / blue heron';
const MQTT_SECRET = 'mqtt-broker-secret-7f3a9c';
const URL_SECRET = 'url-secret-b81d22';

let dir: string;
let site: string;
let dataDir: string;
let out: string;
let configFile: string;
let leadHash: string;
let first: { file: string; signed: SignedReport };

/**
 * The shipped site.yaml with MQTT (password file, a password in the URL) and OIDC added, and an instrument range on
 * press.TabletWeight of 0…`weightMax` mg. (A measurement: a setpoint's range is compiled into the policy bundle, so
 * changing one changes the bundle's version too, which then needs a signature of its own.)
 */
function siteYaml(weightMax: number): string {
  const shipped = readFileSync(join(ROOT, 'config/site.yaml'), 'utf8');
  const tag = '{ name: TabletWeight, kind: measurement, unit: "mg", node_id: "s=press.Measurements.TabletWeight", data_type: Double';
  if (!shipped.includes(`${tag} }`)) throw new Error('config/site.yaml no longer has press.TabletWeight without a range; update the test');
  const text = shipped.replace(`${tag} }`, `${tag}, range: { min: 0, max: ${weightMax} } }`);
  return `${text}
mqtt:
  url: "mqtt://lk-edge:${URL_SECRET}@broker.invalid:1883"
  group_id: ravenna
  edge_node_id: line-3
  username: lk-edge
  password_file: ./mqtt-password
api:
  oidc:
    issuer: https://idp.invalid/realms/site
    audience: linekeeper
    jwks_file: ./jwks.json
    role_map: { gmp-qa: qa_reviewer, gmp-eng: process_engineer }
    tenants: [acme-pharma]
`;
}

/** `linekeeper config report …` as installed, the password on stdin. */
const report = (args: readonly string[], password = LEAD_PW) => spawnCli(['config', 'report', '--data', dataDir, ...args], { input: `${password}\n` });

function siteTrail() {
  const store = openStore({ dataDir, readonly: true });
  try {
    return [...iterateAudit(store.db, 'site', {})];
  } finally {
    store.close();
  }
}

const readReport = (file: string): SignedReport => JSON.parse(readFileSync(file, 'utf8')) as SignedReport;
const jsonFiles = (d: string): string[] => (existsSync(d) ? readdirSync(d).filter((f) => f.endsWith('.json')).sort() : []);

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'lk-config-report-'));
  site = join(dir, 'site');
  dataDir = join(dir, 'data');
  out = join(dir, 'reports');
  mkdirSync(site);
  cpSync(join(ROOT, 'config/policy'), join(site, 'policy'), { recursive: true });
  writeFileSync(join(site, 'mqtt-password'), `${MQTT_SECRET}\n`, { mode: 0o600 });
  writeFileSync(join(site, 'jwks.json'), '{"keys":[]}\n');
  configFile = join(site, 'site.yaml');
  writeFileSync(configFile, siteYaml(1000));
  writeFileSync(join(site, 'site-2.yaml'), siteYaml(1200));

  const loaded = loadConfig(configFile, { dataDir });
  const store = openStore({ dataDir });
  try {
    const identity = new Identity({ store, clock: store.clock, scryptLog2N: 10 });
    const tenants = loaded.config.tenants.map((t) => t.id);
    await identity.create({ id: 'v.lead', name: 'Vera Lead', role: 'qa_reviewer', tenants, password: LEAD_PW }, 'system', 'validation lead', { ownChoice: true });
    await identity.create({ id: 'o.line', name: 'Otto Line', role: 'operator', tenants: ['acme-pharma'], password: 'operator on line three 2026' }, 'system', 'operator', { ownChoice: true });
    await identity.create({ id: 'a.admin', name: 'Ada Admin', role: 'admin', tenants, password: 'administrator of the node 2026' }, 'system', 'administrator', { ownChoice: true });
    await signTestBundle(store, loaded);
    registeredTwin(store, dataDir, 'acme-pharma', 'validated');
    leadHash = identity.users.get('v.lead')!.password;
  } finally {
    store.close();
  }
}, 120_000);
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('[A11.4] [A11.10] linekeeper config report', () => {
  it('[P11.50] [INV-POLICY-SIGNED] writes a signed JSON that verifies with the site key, with the equipment, tags, users, policy and settings; a PDF; an entry on the site chain', async () => {
    const r = await report(['-c', configFile, '-o', out, '--as', 'v.lead', '--comment', 'approved for PQ']);
    expect(r.code, r.err).toBe(0);
    const files = jsonFiles(out);
    expect(files).toHaveLength(1);
    const file = join(out, files[0]!);
    const signed = readReport(file);
    first = { file, signed };
    expect(verifyReport(signed, loadSitePublicKey(dataDir))).toEqual({ ok: true, problems: [], keyId: signed.keyId });
    expect(r.out).toContain(`record sha256 ${signed.recordHash}`);
    expect(r.out).toContain(file);
    expect(r.out).toMatch(/^configuration report: PASS — /m);

    const rec = signed.record;
    expect([rec.kind, rec.result, rec.signer.user, rec.signer.role, rec.signer.comment]).toEqual(['config', 'pass', 'v.lead', 'qa_reviewer', 'approved for PQ']);
    expect(rec.title).toBe('Configuration specification — site site-ravenna, line line-3');
    const status = Object.fromEntries(rec.checks.map((c) => [c.id, c.status]));
    expect(status).toMatchObject({ 'CFG-VALID': 'pass', 'CFG-POLICY-COMPILES': 'pass', 'CFG-POLICY-SIGNED': 'pass', 'CFG-SUPERVISION': 'pass', 'CFG-RELEASE-SIGNERS': 'pass', 'CFG-MODELS': 'pass', 'CFG-NO-SECRETS': 'pass' });
    // never started with it, no bundle accepted yet: said, not hidden, and not a failure
    expect([status['CFG-IN-FORCE'], status['CFG-POLICY-IN-FORCE']]).toEqual(['warn', 'warn']);
    for (const c of rec.checks) expect(c.requirements.length, c.id).toBeGreaterThan(0);

    const d = rec.data as unknown as {
      source: { configSha256: string };
      configuration: { site: { id: string; timezone: string }; equipment: { id: string; tags: { name: string; kind: string; node_id?: string; table?: string; address?: number; range?: { min: number; max: number } }[] }[]; mqtt: Record<string, unknown>; api: { oidc: Record<string, unknown> }; retention?: unknown };
      users: Record<string, unknown>[];
      policy: { version: string; signature: { status: string; signer: { id: string } }; content: { designSpaces: Record<string, { setpoints: Record<string, { max: number; unit: string }> }>; agents: Record<string, { allow: string[] }> } };
      roles: Record<string, string>;
      models: Record<string, { id: string; status: string; sites: string[]; sha256: string; card: { intendedUse: string; trainingData: { ids: unknown }; metrics: Record<string, number> } }[]>;
    };
    expect(d.source.configSha256).toBe(loadConfig(configFile, { dataDir }).hash);
    const press = d.configuration.equipment.find((e) => e.id === 'press')!;
    expect(press.tags.find((t) => t.name === 'MainForce')).toMatchObject({ kind: 'setpoint', node_id: 's=press.Setpoints.MainForce', unit: 'kN', range: { min: 0, max: 40 } });
    expect(press.tags.find((t) => t.name === 'TabletWeight')).toMatchObject({ kind: 'measurement', unit: 'mg', range: { min: 0, max: 1000 } });
    const blender = d.configuration.equipment.find((e) => e.id === 'blender')!;
    expect(blender.tags.find((t) => t.name === 'Speed')).toMatchObject({ kind: 'setpoint', table: 'holding', address: 100, type: 'float32', unit: '{rev}/min', range: { min: 5, max: 35 } });
    expect(d.configuration.equipment.reduce((n, e) => n + e.tags.length, 0)).toBe(loadConfig(configFile, { dataDir }).config.equipment.reduce((n, e) => n + e.tags.length, 0));
    expect(d.roles['press.MainForce']).toBe('press.MainForce');
    expect(d.policy.signature).toMatchObject({ status: 'verified', signer: { id: 'm.rossi' } });
    expect(d.policy.content.designSpaces['ir-family-a|round-10mm-ff']!.setpoints['press.MainForce']).toMatchObject({ max: 18, unit: 'kN' });
    expect(d.policy.content.agents['agent.compress_fill']!.allow).toContain('press.MainForce');
    // whatever the configuration holds is there, keys this code does not name included (defaults filled in)
    expect(Object.keys(d.configuration)).toEqual(expect.arrayContaining(Object.keys(loadConfig(configFile, { dataDir }).config)));
    expect(d.configuration.api.oidc).toMatchObject({ issuer: 'https://idp.invalid/realms/site', role_map: { 'gmp-qa': 'qa_reviewer' } });
    expect(d.configuration.mqtt).toMatchObject({ username: 'lk-edge', password_file: '(set)', url: 'mqtt://lk-edge:(set)@broker.invalid:1883' });

    const twin = d.models['acme-pharma']!.find((m) => m.id === 'process-twin-v1')!;
    expect(twin).toMatchObject({ status: 'validated', sites: ['site-ravenna'], sha256: expect.stringMatching(/^[0-9a-f]{64}$/) });
    expect(twin.card.intendedUse.length).toBeGreaterThan(10);
    expect(typeof twin.card.trainingData.ids).toBe('number');
    expect(Object.keys(twin.card.metrics)).toContain('rmse.cappingPct');
    expect(d.models['borealis-bio']).toBeUndefined();

    const users = Object.fromEntries(d.users.map((u) => [u['id'], u]));
    expect(users['v.lead']).toEqual({ id: 'v.lead', name: 'Vera Lead', role: 'qa_reviewer', tenants: ['acme-pharma', 'borealis-bio'], disabled: false, createdAt: expect.any(String), createdBy: 'system' });
    expect(users['o.line']).toMatchObject({ role: 'operator', tenants: ['acme-pharma'] });
    expect(users['a.admin']).toMatchObject({ role: 'admin' });

    const text = readFileSync(file, 'utf8');
    expect(leadHash).toMatch(/^scrypt\$/);
    for (const secret of [leadHash, 'scrypt$', MQTT_SECRET, URL_SECRET, LEAD_PW]) expect(text, 'a secret in the report').not.toContain(secret);

    const pdf = readFileSync(file.replace(/\.json$/, '.pdf'));
    expect(pdf.subarray(0, 5).toString('latin1')).toBe('%PDF-');
    const shown = flat(pdfText(pdf));
    for (const s of ['Equipment press — Rotary tablet press', 's=press.Setpoints.MainForce', 'Design space ir-family-a × round-10mm-ff', 'Vera Lead', 'process-twin-v1 (twin)', 'MQTT (Sparkplug B)', 'api.oidc.issuer', 'maintenance.backup_keep', signed.recordHash]) expect(shown, s).toContain(s);
    for (const secret of [MQTT_SECRET, URL_SECRET]) expect(shown).not.toContain(secret);

    const entry = siteTrail().filter((e) => e.action === 'validation.config');
    expect(entry).toHaveLength(1);
    expect(entry[0]).toMatchObject({ actor: 'v.lead', reason: 'approved for PQ', result: { result: 'pass', recordHash: signed.recordHash, keyId: signed.keyId } });
  });

  it('[P11.200] a wrong password signs nothing: refused, no file written, no report on the trail', async () => {
    const before = siteTrail().filter((e) => e.action === 'validation.config').length;
    const r = await report(['-c', configFile, '-o', out, '--as', 'v.lead'], 'not the password of the lead');
    expect([r.code, r.err]).toEqual([1, expect.stringContaining('[LK_REAUTH_FAILED]')]);
    expect(readdirSync(out)).toHaveLength(2);
    expect(siteTrail().filter((e) => e.action === 'validation.config')).toHaveLength(before);
    // an administrator never signs a validation report, whatever their password
    const admin = await report(['-c', configFile, '-o', out, '--as', 'a.admin'], 'administrator of the node 2026');
    expect([admin.code, admin.err]).toEqual([1, expect.stringContaining('[LK_FORBIDDEN]')]);
    expect(readdirSync(out)).toHaveLength(2);
  });

  it('--diff against the first report after a tag\'s range changed lists exactly that change, on stdout, in the signed data and in the PDF', async () => {
    const out2 = join(dir, 'reports-2');
    const r = await report(['-c', join(site, 'site-2.yaml'), '-o', out2, '--as', 'v.lead', '--diff', first.file]);
    expect(r.code, r.err).toBe(0);
    expect(r.out).toContain('~ configuration.equipment[press].tags[TabletWeight].range.max: 1000 → 1200');
    const file = join(out2, jsonFiles(out2)[0]!);
    const signed = readReport(file);
    expect(verifyReport(signed, loadSitePublicKey(dataDir)).ok).toBe(true);
    const diff = signed.record.data['diffAgainst'] as { recordHash: string; signedAt: string; changes: unknown[] };
    expect(diff).toMatchObject({ recordHash: first.signed.recordHash, signedAt: first.signed.record.signer.timestamp });
    expect(diff.changes).toEqual([{ op: 'changed', path: 'configuration.equipment[press].tags[TabletWeight].range.max', from: 1000, to: 1200 }]);
    expect(signed.record.summary).toMatch(/; 1 change since the previous report$/);
    const shown = flat(pdfText(readFileSync(file.replace(/\.json$/, '.pdf'))));
    expect(shown).toContain('Changes since the previous report (1)');
    expect(shown).toContain('~ configuration.equipment[press].tags[TabletWeight].range.max: 1000 → 1200');
  });

  it('[P11.70] --diff refuses a report changed after signing, and one re-signed with another key; nothing is written', async () => {
    const out3 = join(dir, 'reports-3');
    const tampered = structuredClone(first.signed);
    const press = (tampered.record.data['configuration'] as { equipment: { id: string; tags: { name: string; range?: { max: number } }[] }[] }).equipment.find((e) => e.id === 'press')!;
    press.tags.find((t) => t.name === 'TabletWeight')!.range!.max = 1200;
    const edited = join(dir, 'edited.json');
    writeFileSync(edited, JSON.stringify(tampered, null, 2));
    const r = await report(['-c', configFile, '-o', out3, '--as', 'v.lead', '--diff', edited]);
    expect([r.code, r.err]).toEqual([65, expect.stringContaining('[LK_REPORT_INVALID]')]);
    expect(r.err).toContain('recordHash does not match the record');

    // whoever edits a report can sign it again with a key of their own: it verifies alone, not with this site's key
    const forged = signReport(ensureSiteKey(join(dir, 'other-node')), tampered.record);
    expect(verifyReport(forged).ok).toBe(true);
    const resigned = join(dir, 'resigned.json');
    writeFileSync(resigned, JSON.stringify(forged, null, 2));
    const r2 = await report(['-c', configFile, '-o', out3, '--as', 'v.lead', '--diff', resigned]);
    expect([r2.code, r2.err]).toEqual([65, expect.stringContaining('[LK_REPORT_INVALID]')]);
    expect(r2.err).toContain('not by the pinned key');
    expect(existsSync(out3)).toBe(false);
  });

  it('[INV-POLICY-SIGNED] [R3] the checks are real: an unsigned bundle fails the report, so does a tenant without a QA reviewer; the command exits 1 and keeps the report', async () => {
    const bare = join(dir, 'bare-data');
    const store = openStore({ dataDir: bare });
    try {
      const identity = new Identity({ store, clock: store.clock, scryptLog2N: 10 });
      await identity.create({ id: 'p.eng', name: 'Pia Eng', role: 'process_engineer', tenants: ['acme-pharma'], password: LEAD_PW }, 'system', 'engineer', { ownChoice: true });
      const content = configReportContent({ loaded: loadConfig(configFile, { dataDir: bare }), store, startedAt: Date.now() });
      const by = Object.fromEntries(content.checks.map((c) => [c.id, c]));
      expect(by['CFG-POLICY-SIGNED']).toMatchObject({ status: 'fail', detail: expect.stringContaining('[LK_POLICY_UNSIGNED]') });
      expect(by['CFG-RELEASE-SIGNERS']).toMatchObject({ status: 'warn', evidence: { withoutSigner: ['acme-pharma', 'borealis-bio'] } });
      expect((content.data['policy'] as { signature: { status: string } }).signature.status).toBe('refused');
      // the shipped configuration has no identity provider: nobody at all may sign a release of either tenant
      const shipped = configReportContent({ loaded: loadConfig(join(ROOT, 'config/site.yaml'), { dataDir: bare }), store, startedAt: Date.now() });
      expect(shipped.checks.find((c) => c.id === 'CFG-RELEASE-SIGNERS')).toMatchObject({ status: 'fail', evidence: { withoutSigner: ['acme-pharma', 'borealis-bio'] } });
    } finally {
      store.close();
    }
    const outBare = join(dir, 'reports-bare');
    const r = await spawnCli(['config', 'report', '--data', bare, '-c', configFile, '-o', outBare, '--as', 'p.eng'], { input: `${LEAD_PW}\n` });
    expect([r.code, r.err]).toEqual([1, expect.stringContaining('CFG-POLICY-SIGNED')]);
    expect(r.out).toMatch(/^configuration report: FAIL — /m);
    const kept = readReport(join(outBare, jsonFiles(outBare)[0]!));
    expect(kept.record.result).toBe('fail');
  });
});

describe('[A11.10] the diff and the redaction, alone', () => {
  it('compares lists of objects by id or name, not by position, and any other list as one value', () => {
    const a = { equipment: [{ id: 'press', tags: [{ name: 'A', max: 1 }, { name: 'B', max: 2 }] }], allow: ['x'] };
    const b = { equipment: [{ id: 'blender', tags: [] }, { id: 'press', tags: [{ name: 'B', max: 3 }, { name: 'A', max: 1 }] }], allow: ['x', 'y'] };
    expect(diffData(a, b)).toEqual([
      { op: 'changed', path: 'allow', from: ['x'], to: ['x', 'y'] },
      { op: 'added', path: 'equipment[blender]', to: { id: 'blender', tags: [] } },
      { op: 'changed', path: 'equipment[press].tags[B].max', from: 2, to: 3 },
    ]);
    expect(diffData({ k: { 'press.MainForce': 1 } }, { k: {} })).toEqual([{ op: 'removed', path: 'k["press.MainForce"]', from: 1 }]);
    expect(diffData(a, structuredClone(a))).toEqual([]);
  });

  it('[P11.10(d)] redacts every text under a secret\'s name at any depth and a URL\'s password, keeps settings that only sound like one', () => {
    expect(redacted({ api: { token_ttl_s: 900, accept_id_tokens: false, oidc: { client_secret: 's3cr3t' }, tls: { cert: 'c.pem', key: 'k.pem' } }, mqtt: { url: 'mqtts://u:p@h:8883', password_file: 'f' }, x: { deeper: { api_key: ['a', 'b'] } } })).toEqual({
      api: { token_ttl_s: 900, accept_id_tokens: false, oidc: { client_secret: '(set)' }, tls: { cert: 'c.pem', key: '(set)' } },
      mqtt: { url: 'mqtts://u:(set)@h:8883', password_file: '(set)' },
      x: { deeper: { api_key: ['(set)', '(set)'] } },
    });
  });
});
