/**
 * `linekeeper validate oq`: the operational qualification runs its cases against a real daemon on a scratch data
 * directory (embedded simulator over OPC UA and Modbus, REST over loopback, SQLite on disk), and its report is
 * signed by a re-authenticated person of the production site, recorded on that site's audit chain and verifiable
 * offline — a failing case fails it visibly.
 */
import { spawnSync } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import { cpSync, existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { queryAudit } from '../../src/audit/index.js';
import { Identity, identitySettings } from '../../src/api/identity.js';
import { parsePublicKey } from '../../src/audit/keys.js';
import { defaultConfigFile, loadConfig, type LoadedConfig } from '../../src/config/load.js';
import { openStore } from '../../src/store/store.js';
import { assertReportPlace, countSummary, makeReport } from '../../src/validation/make.js';
import { assertSimulatorOnly, casesOf, OQ_CASES, runOq, type OqResult } from '../../src/validation/oq.js';
import { installRoot, resultOf, verifyReport, writeReport, type SignedReport } from '../../src/validation/report.js';
import { traceData, traceSections, type TraceRow } from '../../src/validation/trace.js';

const PASSWORD = 'qualify-this-node-7Q!';
let oq: OqResult;
let dir: string;
let loaded: LoadedConfig;

beforeAll(async () => {
  // the production site: its own data directory, with a QA reviewer who signs the report
  dir = mkdtempSync(join(tmpdir(), 'lk-validate-oq-'));
  loaded = loadConfig(undefined, { dataDir: join(dir, 'data') });
  const store = openStore({ dataDir: loaded.dataDir });
  const identity = new Identity({ store, clock: store.clock, ...identitySettings(loaded.config.api) });
  await identity.create({ id: 'v.lead', name: 'Vera Lead', role: 'qa_reviewer', tenants: ['acme-pharma'], password: PASSWORD }, 'system', 'validation lead', { ownChoice: true });
  await identity.create({ id: 'i.admin', name: 'Ian Admin', role: 'admin', tenants: ['acme-pharma'], password: PASSWORD }, 'system', 'administrator', { ownChoice: true });
  store.close();
  oq = await runOq({
    extraCases: [{ id: 'OQ-TEST-FAILING', title: 'a case that finds what it must not', requirements: ['R2'], run: async () => { throw new Error('found an unaudited change'); } }],
  });
}, 240_000);
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('validate oq: the operational cases on a scratch daemon', () => {
  it('[A11.4] [P11.10(a)] runs every shipped case against the real daemon and each passes on an intact installation', () => {
    const shipped = oq.checks.filter((c) => c.id !== 'OQ-TEST-FAILING');
    expect(shipped.map((c) => c.id)).toEqual(OQ_CASES.map((k) => k.id));
    for (const c of shipped) expect({ id: c.id, status: c.status, detail: c.detail }).toEqual({ id: c.id, status: 'pass', detail: expect.any(String) });
    // each case is tied to requirements, and its detail states what was measured
    for (const c of shipped) expect(c.requirements.length).toBeGreaterThan(0);
    expect(oq.checks.find((c) => c.id === 'OQ-LKG-REVERT')!.detail).toMatch(/ActiveRecipe = LkgRecipeId/);
    expect(oq.checks.find((c) => c.id === 'OQ-AUDIT-TAMPER')!.detail).toMatch(/verification fails, edited at #\d+/);
  });

  it('never touches the production data directory and leaves no scratch directory behind', () => {
    expect(existsSync(oq.scratch)).toBe(false);
    const store = openStore({ dataDir: loaded.dataDir, readonly: true });
    try {
      // the production site chain holds only its own two account creations: nothing of the scratch daemon
      expect(queryAudit(store.db, 'site', {}, { limit: 100 }).entries.map((e) => e.action)).toEqual(['user.create', 'user.create']);
    } finally {
      store.close();
    }
  });

  it('[A11.4] a failing case fails the OQ visibly: FAIL with what it found, on the first line of the signed report, and the others still run', async () => {
    const failing = oq.checks.find((c) => c.id === 'OQ-TEST-FAILING')!;
    expect(failing).toMatchObject({ status: 'fail', detail: 'the case stopped: found an unaudited change' });
    const out = join(dir, 'reports');
    const made = await makeReport({ kind: 'oq', title: 'Operational qualification — test', summary: countSummary, checks: oq.checks, data: traceData(installRoot(), oq.checks), sections: traceSections, startedAt: Date.now() - 1000 },
      { loaded, root: installRoot(), user: 'v.lead', password: PASSWORD, comment: 'protocol OQ-001', outDir: out });
    expect(made.signed.record.result).toBe('fail');
    expect(made.signed.record.summary).toBe(`${oq.checks.length} checks: ${oq.checks.length - 1} pass, 1 fail`);
    const pdf = readFileSync(made.files.pdf);
    expect(pdf.subarray(0, 5).toString()).toBe('%PDF-');
    expect(pdf.toString('latin1')).toContain('pdfaid:part>2<');
  });
});

describe('what is refused before anything runs or is signed', () => {
  it('[A11.4] an unknown case or none at all; a report that checked nothing is never a pass', () => {
    expect(() => casesOf({ only: ['OQ-ACCESS', 'OQ-NOPE'] })).toThrow(/no OQ case OQ-NOPE/);
    expect(() => casesOf({ only: [] })).toThrow(/no OQ case to run/);
    expect(casesOf({ only: ['OQ-AUDIT-VERIFY', 'OQ-ACCESS'] }).map((k) => k.id)).toEqual(['OQ-ACCESS', 'OQ-AUDIT-VERIFY']);
    expect(resultOf([])).toBe('fail');
  });

  it('a configuration template that names real equipment: the OQ does not start', () => {
    // beside a copy of the shipped policy bundle, which the configuration names relative to itself
    cpSync(join(defaultConfigFile(), '..', 'policy'), join(dir, 'real', 'policy'), { recursive: true });
    const f = join(dir, 'real', 'site.yaml');
    const real = readFileSync(defaultConfigFile(), 'utf8').replace('endpoint: sim', 'endpoint: opc.tcp://192.0.2.10:4840');
    expect(real).not.toBe(readFileSync(defaultConfigFile(), 'utf8'));
    writeFileSync(f, real);
    expect(() => assertSimulatorOnly(f)).toThrow(/runs only on the embedded simulator, and this configuration names equipment: \S+ \(opc\.tcp:\/\/192\.0\.2\.10:4840\)/);
    expect(() => assertSimulatorOnly()).not.toThrow();
  });

  it('a data directory without the site\'s store, or an output folder that is a file', () => {
    const empty = loadConfig(undefined, { dataDir: join(dir, 'no-store') });
    expect(() => assertReportPlace(empty, join(dir, 'out'))).toThrow(expect.objectContaining({ code: 'LK_NOT_FOUND' }));
    const file = join(dir, 'a-file');
    writeFileSync(file, 'x');
    expect(() => assertReportPlace(loaded, file)).toThrow(expect.objectContaining({ code: 'LK_OUTPUT_INVALID' }));
    expect(() => assertReportPlace(loaded, join(dir, 'out'))).not.toThrow();
  });
});

describe('the signed OQ report', () => {
  let signed: SignedReport;
  let files: { json: string; pdf: string };
  const out = (): string => join(dir, 'signed');

  beforeAll(async () => {
    const passing = oq.checks.filter((c) => c.id !== 'OQ-TEST-FAILING');
    const made = await makeReport({ kind: 'oq', title: 'Operational qualification — test', summary: countSummary, checks: passing, data: traceData(installRoot(), passing), sections: traceSections, startedAt: Date.now() - 1000 },
      { loaded, root: installRoot(), user: 'v.lead', password: PASSWORD, outDir: out() });
    signed = made.signed;
    files = made.files;
  });

  it('[P11.50] [P11.200] names who signed, with what meaning and when, re-authenticated, and goes on the site chain with its hash', () => {
    expect(signed.record.result).toBe('pass');
    expect(signed.record.signer).toMatchObject({ user: 'v.lead', name: 'Vera Lead', role: 'qa_reviewer', meaningId: 'oq-executed', meaning: expect.stringMatching(/^Operational qualification of linekeeper \S+ executed/) });
    expect(signed.record.product.version).toBe(JSON.parse(readFileSync(join(installRoot(), 'package.json'), 'utf8')).version);
    const store = openStore({ dataDir: loaded.dataDir, readonly: true });
    try {
      const entries = queryAudit(store.db, 'site', { kind: 'validation' }, { limit: 10 }).entries;
      const mine = entries.find((e) => (e.result as { recordHash?: string }).recordHash === signed.recordHash)!;
      expect(mine).toMatchObject({ actor: 'v.lead', action: 'validation.oq', signature: { user: 'v.lead', name: 'Vera Lead' } });
      expect(queryAudit(store.db, 'site', { kind: 'identity' }, { limit: 50 }).entries.some((e) => e.action === 'auth.reauthenticated' && (e.args as { user?: string }).user === 'v.lead')).toBe(true);
    } finally {
      store.close();
    }
  });

  it('[P11.10(a)] lists every requirement with its evidence: the cases executed here, the supplier tests, or the site procedure', () => {
    const trace = signed.record.data['trace'] as unknown as TraceRow[];
    const matrix = JSON.parse(readFileSync(join(installRoot(), 'validation/traceability.json'), 'utf8')) as { requirements: { id: string }[] };
    expect(trace.map((t) => t.id)).toEqual(matrix.requirements.map((q) => q.id));
    expect(trace.find((t) => t.id === 'INV-LKG-REVERT')).toMatchObject({ executed: [{ case: 'OQ-LKG-REVERT', result: 'pass' }], evidence: 'executed: pass' });
    expect(trace.filter((t) => t.evidence === 'none')).toEqual([]);
  });

  it('[P11.10(e)] verifies offline, and not once a byte of the record or the signature changed or another key is pinned', () => {
    const doc = JSON.parse(readFileSync(files.json, 'utf8')) as SignedReport;
    expect(verifyReport(doc)).toMatchObject({ ok: true, problems: [] });
    const edited = { ...doc, record: { ...doc.record, result: 'pass', checks: doc.record.checks.slice(1) } };
    expect(verifyReport(edited).problems.join('\n')).toMatch(/recordHash does not match/);
    const resigned = { ...doc, signature: Buffer.alloc(64).toString('base64') };
    expect(verifyReport(resigned).problems.join('\n')).toMatch(/signature does not verify/);
    // a report re-signed with another key verifies only against that key: pinning the site's key refuses it
    const other = parsePublicKey(generateKeyPairSync('ed25519').publicKey.export({ type: 'spki', format: 'pem' }).toString());
    expect(verifyReport(doc, other).problems.join('\n')).toMatch(/not by the pinned key/);
    expect(verifyReport(doc, parsePublicKey(doc.publicKey)).ok).toBe(true);
  });

  it('[P11.10(b)] the standalone verifier (Node alone, nothing of linekeeper) agrees: intact, and NOT VERIFIED after a change', () => {
    const tool = join(installRoot(), 'tools/verify-audit-bundle.mjs');
    const pub = join(loaded.dataDir, 'keys/site-ed25519.pub.pem');
    const ok = spawnSync(process.execPath, [tool, files.json, '--key', pub], { encoding: 'utf8' });
    expect({ status: ok.status, out: ok.stdout }).toEqual({ status: 0, out: expect.stringMatching(/^ok: oq report, result pass, signed by Vera Lead \(v\.lead\) .* \(pinned\)\n$/) });
    const bad = join(dir, 'tampered.json');
    const doc = JSON.parse(readFileSync(files.json, 'utf8')) as SignedReport;
    writeFileSync(bad, JSON.stringify({ ...doc, record: { ...doc.record, signer: { ...doc.record.signer, name: 'Someone Else' } } }));
    const no = spawnSync(process.execPath, [tool, bad, '--key', pub], { encoding: 'utf8' });
    expect(no.status).toBe(65);
    expect(no.stdout).toMatch(/NOT VERIFIED: recordHash does not match/);
  });

  it('is never written over, and files are read-only', async () => {
    expect(readdirSync(out()).sort()).toEqual([files.json, files.pdf].map((f) => f.slice(out().length + 1)).sort());
    for (const f of [files.json, files.pdf]) expect(statSync(f).mode & 0o222).toBe(0);
    expect(() => writeReport(out(), signed, Buffer.from('%PDF-'), () => 0)).toThrow(/never overwritten/);
    // a report whose entry could not go on the trail leaves no file behind
    const other = join(dir, 'unrecorded');
    expect(() => writeReport(other, signed, Buffer.from('%PDF-'), () => { throw new Error('the trail refused the entry'); })).toThrow(/the trail refused/);
    expect(readdirSync(other)).toEqual([]);
    expect(verifyReport(JSON.parse(readFileSync(files.json, 'utf8'))).ok).toBe(true);
  });

  it('[P11.200] [A11.14] a wrong password or an administrator signs nothing and writes no file', async () => {
    const out2 = join(dir, 'refused');
    const content = { kind: 'oq' as const, title: 't', summary: countSummary, checks: [], data: {}, startedAt: Date.now() };
    await expect(makeReport(content, { loaded, root: installRoot(), user: 'v.lead', password: 'wrong-password-1!', outDir: out2 })).rejects.toMatchObject({ code: 'LK_REAUTH_FAILED' });
    await expect(makeReport(content, { loaded, root: installRoot(), user: 'i.admin', password: PASSWORD, outDir: out2 })).rejects.toMatchObject({ code: 'LK_FORBIDDEN' });
    // a meaning not on the site's controlled list (here: the IQ's words for an OQ) is refused before the password
    await expect(makeReport(content, { loaded, root: installRoot(), user: 'v.lead', password: PASSWORD, meaning: 'iq-executed', outDir: out2 })).rejects.toMatchObject({ code: 'LK_MEANING_NOT_ALLOWED', detail: { meanings: [{ id: 'oq-executed' }] } });
    expect(existsSync(out2)).toBe(false);
  });
});
