/**
 * Archiving and retention on a real data directory: a SQLite store whose tenant chain holds runs (two that ended
 * fifteen years ago, one three weeks ago, one still running), each ended run with a real release package
 * (writeReleasePackage: PDF/A report, release.json, sealed bundle). The commands run as a person runs them
 * (`linekeeper archive …`, in-process, and as the built command where a password is typed); the archive is
 * verified by the standalone verifier alone, as a child process in a folder holding nothing but the archive.
 * A second data directory is broken on purpose (a failing checkpoint, a package changed under a prune, a prune
 * interrupted, a package whose digests the chain never recorded): what the trail says must be what happened.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { createHash, generateKeyPairSync } from 'node:crypto';
import { chmodSync, cpSync, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { Identity, identitySettings } from '../../src/api/identity.js';
import { iterateAudit } from '../../src/audit/query.js';
import { categoryOf } from '../../src/audit/review.js';
import { ManualClock } from '../../src/clock.js';
import { defaultConfigFile, loadConfig } from '../../src/config/load.js';
import { runDocuments } from '../../src/cli/archive-documents.js';
import { composePlan } from '../../src/domain/run.js';
import { siteIso } from '../../src/domain/site-time.js';
import { writeReleasePackage } from '../../src/engine/release-package.js';
import type { ReleaseInput } from '../../src/engine/release-types.js';
import { LkError } from '../../src/errors.js';
import { verifyArchive } from '../../src/ops/archive-manifest.js';
import { writeArchive } from '../../src/ops/archive.js';
import { planPrune, prunePackages } from '../../src/ops/retention.js';
import { ExceptionStore } from '../../src/store/exception-store.js';
import { RunStore } from '../../src/store/run-store.js';
import { openStore, type Store } from '../../src/store/store.js';
// @ts-expect-error plain JavaScript on purpose (no types, no project imports)
import { verifyArchiveDir } from '../../tools/verify-audit-bundle.mjs';
import { runCli, spawnCli } from '../helpers/cli.js';
import { SPEC_PLAN } from '../helpers/spec-plan.js';
import { addUser } from '../helpers/users.js';
import { newStore, tempDir } from '../unit/audit-helpers.js';

const T = 'acme-pharma';
const CFG = defaultConfigFile();
const PW = 'Quartz-Lantern-Orbit-7319!';
const H = (c: string): string => c.repeat(64);
const sha = (b: Buffer | string): string => createHash('sha256').update(b).digest('hex');
const iso = (ms: number): string => new Date(ms).toISOString();
const DAY = 86_400_000;

const year = new Date().getUTCFullYear();
/** Two runs that ended fifteen years ago (their 10 years of retention are over), one three weeks ago, one running. */
const OLD1 = { id: 'run_old1', batch: 'B-2011', start: Date.UTC(year - 15, 2, 2, 6) };
const OLD2 = { id: 'run_old2', batch: 'B-2012', start: Date.UTC(year - 15, 3, 1, 6) };
const RECENT = { id: 'run_new1', batch: 'B-3001', start: Date.now() - 21 * DAY };
const OPEN = { id: 'run_open', batch: 'B-3002', start: Date.now() - 2 * DAY };
const HOURS4 = 4 * 3_600_000;

let t: { dir: string; cleanup: () => void };
let data: string;
let keyPem: string;
const work = (name: string): string => join(t.dir, name);
const cli = (...args: string[]): ReturnType<typeof runCli> => runCli(...args, '-c', CFG, '--data', data);

function releaseInput(r: typeof OLD1): ReleaseInput {
  const end = r.start + HOURS4;
  return {
    tenant: T, site: 'site-ravenna',
    run: { id: r.id, batch: r.batch, line: 'line-3', product: 'ir-family-a', tooling: 'round-10mm-ff', goal: 'weight and hardness on target', startedAt: r.start, endedAt: end, status: 'SUCCEEDED' },
    batchRecord: { format: 1, batch: r.batch, tenant: T, product: 'ir-family-a', mes_ref: `MES-${r.batch}`, specifications: { potency: { min_pct: 95, max_pct: 105 } }, reviewer: 'p.bianchi', qa_reviewer: 'm.rossi' },
    batchRecordSha256: H('a'),
    steps: SPEC_PLAN.map(([seq, name, agent, tool]) => ({ seq, name, agent, tool, status: 'SUCCEEDED', duration: '2m 10s', detail: `${name} done` })),
    evidence: {
      nir: [{ spectrumId: 4101, potencyPct: 99.6, spectrumSha256: H('1'), model: { id: 'potency-pls-v1', version: 1 } }],
      potency: { n: 30, meanPct: 99.84, sdPct: 1.12, ciLowPct: 99.42, ciHighPct: 100.26, pass: true },
      contentUniformity: { av: 3.2, pass: true },
      inspection: { inspected: 300000, rejected: 912, defectRatePct: 0.304, pass: true },
      qc: [{ test: 'dissolution Q30', result: 91.5, unit: '%', status: 'pass', lims_ref: 'LIMS-88-1' }],
    },
    signatures: [{ approvalId: `apr_${r.id}`, user: 'm.rossi', name: 'Dr. Maria Rossi', role: 'qa_reviewer', meaning: 'approved for release', decision: 'approve', at: iso(end - 60_000), recordHash: H('b'), signature: 'c2lnbmF0dXJl', keyId: 'k-m.rossi' }],
    genealogy: [{ at: r.start, kind: 'step', step: '01', agent: 'agent.orchestrator', summary: 'batch record ingested' }],
    losingRequests: [],
  };
}

const SPEC_TABLE = {
  verdict: 'PASS', counts: { PASS: 2, FAIL: 0, NOT_EVALUATED: 0 }, sha256: H('d'),
  results: [
    { id: 'potency', title: 'Potency (NIR)', source: 'in-line NIR', limits: '95–105 %', limit: { min: 95, max: 105, unit: '%' }, data: { n: 30, mean: 99.84, min: 97.2, max: 102.1, unit: '%' }, verdict: 'PASS', reason: 'mean and every value within 95–105 %' },
    { id: 'dissolution', title: 'Dissolution Q30', source: 'LIMS LIMS-88-1', limits: '≥ 80 %', limit: { min: 80, unit: '%' }, data: { n: 1, mean: 91.5, unit: '%' }, verdict: 'PASS', reason: '=91.5 % ≥ 80 %' },
  ],
};

/**
 * A run on the tenant's chain (start, a setpoint write, the end), its genealogy, and a release package unless it runs
 * still, whose digests the chain records as the run's last step does (the `audit.write_release_package` result):
 * `recorded` 'none' records none, an object records those digests instead.
 */
function makeRun(store: ReturnType<typeof newStore>['store'], clock: ManualClock, r: typeof OLD1, ended: boolean, o: { dir?: string; recorded?: 'none' | { json: string; pdf: string; bundle: string } } = {}): void {
  const runs = new RunStore(store.db);
  clock.set(r.start);
  store.tx((tx) => {
    runs.insertRun(tx, {
      id: r.id, tenant: T, batch: r.batch, line: 'line-3', product: 'ir-family-a', tooling: 'round-10mm-ff', goal: 'weight and hardness on target', request: {}, limits: {},
      autonomy: 'L1', record: { batch: r.batch, qa_reviewer: 'm.rossi' }, recordSha: H('a'), seed: 7, startedBy: 'p.bianchi', createdAt: r.start,
    }, composePlan());
    runs.setStatus(tx, r.id, 'RUNNING', null, r.start, false);
    runs.appendEvent(tx, { run: r.id, at: r.start, kind: 'step', step: 'ingest.batch_record', agent: 'agent.orchestrator', tag: null, summary: `batch record ${r.batch} ingested`, data: null });
    tx.audit.append({ tenant: T, actor: 'p.bianchi', kind: 'state_change', action: 'run.start', subject: { run: r.id, batch: r.batch } });
  });
  clock.set(r.start + 3_600_000);
  store.audit.append({ tenant: T, actor: 'agent.compress_fill', kind: 'tool_call', action: 'press.write_setpoint', subject: { run: r.id, batch: r.batch, setpoint: 'press.MainForce' }, args: { value: 11.5, unit: 'kN' } });
  store.audit.append({ tenant: 'borealis-bio', actor: 'agent.compress_fill', kind: 'tool_call', action: 'press.write_setpoint', subject: { run: 'run_other', batch: 'X-1' } });
  if (!ended) return;
  clock.set(r.start + HOURS4 - 60_000);
  store.audit.append({ tenant: T, actor: 'm.rossi', kind: 'approval', action: 'batch.release', subject: { run: r.id, batch: r.batch, reviewer: 'm.rossi' }, signature: { user: 'm.rossi', name: 'Dr. Maria Rossi', meaning: 'approved for release', time: iso(r.start + HOURS4 - 60_000), value: 'c2lnbmF0dXJl' } });
  clock.set(r.start + HOURS4);
  const pkg = writeReleasePackage(store, join(o.dir ?? data, 'releases', T, r.id), releaseInput(r), { pdf: { compress: false } });
  if (o.recorded !== 'none') {
    const tool = 'audit.write_release_package';
    store.audit.append({
      tenant: T, actor: 'agent.orchestrator', kind: 'tool_result', action: tool, subject: { run: r.id, batch: r.batch, agent: 'agent.orchestrator', tool },
      result: { ok: true, summary: 'release package', detail: { dir: `releases/${T}/${r.id}`, sha256: o.recorded ?? pkg.sha256, auditHead: pkg.auditHead, checkpoint: { seq: pkg.checkpoint.seq, keyId: pkg.checkpoint.key_id } } },
    });
  }
  store.tx((tx) => {
    runs.setData(tx, r.id, { quality: { specTable: SPEC_TABLE }, release: { json: `releases/${T}/${r.id}/release.json`, pdf: `releases/${T}/${r.id}/release.pdf`, bundle: `releases/${T}/${r.id}/audit-bundle.jsonl`, sha256: pkg.sha256 } }, r.start + HOURS4);
    runs.setStatus(tx, r.id, 'SUCCEEDED', null, r.start + HOURS4, true);
    tx.audit.append({ tenant: T, actor: 'system', kind: 'state_change', action: 'run.succeeded', subject: { run: r.id, batch: r.batch } });
  });
}

/** Every file under the releases folder with its SHA-256, and every chain's head: what "nothing changed" compares. */
function snapshot(): { files: Record<string, string>; heads: Record<string, number> } {
  const files: Record<string, string> = {};
  const walk = (d: string, rel: string): void => {
    for (const n of readdirSync(d)) {
      const p = join(d, n);
      if (statSync(p).isDirectory()) walk(p, `${rel}${n}/`);
      else files[`${rel}${n}`] = sha(readFileSync(p));
    }
  };
  walk(join(data, 'releases'), '');
  const s = openStore({ dataDir: data, readonly: true });
  try {
    return { files, heads: Object.fromEntries(s.audit.chains().map((c) => [c, s.audit.head(c).seq])) };
  } finally {
    s.close();
  }
}

function auditOf(action: string, dir = data): { seq: number; actor: string; args: unknown; result: unknown; subject: unknown; reason: string | undefined }[] {
  const s = openStore({ dataDir: dir, readonly: true });
  try {
    return [...iterateAudit(s.db, T, { action })].map((e) => ({ seq: e.seq, actor: e.actor, args: e.args, result: e.result, subject: e.subject, reason: e.reason }));
  } finally {
    s.close();
  }
}

/** The standalone verifier as an auditor runs it: `node verify-audit-bundle.mjs …` inside the archive folder. */
function standalone(dir: string, ...args: string[]): { code: number | null; out: string } {
  const r = spawnSync(process.execPath, ['verify-audit-bundle.mjs', ...args], { cwd: dir, encoding: 'utf8', env: { PATH: process.env['PATH'] ?? '/usr/bin:/bin' }, timeout: 150_000 });
  return { code: r.status, out: r.stdout + r.stderr };
}

/** A verdict without the wording of the damage (each verifier words a bundle's damage its own way): what both must agree on. */
function brief(r: { ok: boolean; archive: unknown; files: number; keyId: string; problems: readonly { file: string; kind: string }[] }): unknown {
  return { ok: r.ok, archive: JSON.parse(JSON.stringify(r.archive)) as unknown, files: r.files, keyId: r.keyId, problems: r.problems.map((p) => `${p.file}: ${p.kind}`) };
}

/** A copy of an archive in a folder of its own, its files writable (to damage one). */
function carry(from: string, name: string): string {
  const to = work(name);
  cpSync(from, to, { recursive: true });
  const open = (d: string): void => {
    for (const n of readdirSync(d)) {
      const p = join(d, n);
      if (statSync(p).isDirectory()) open(p);
      else chmodSync(p, 0o644);
    }
  };
  open(to);
  return to;
}

beforeAll(async () => {
  t = tempDir('lk-archive-');
  data = work('data');
  const clock = new ManualClock(OLD1.start - DAY);
  const { store } = newStore(data, { clock });
  try {
    makeRun(store, clock, OLD1, true);
    makeRun(store, clock, OLD2, true);
    makeRun(store, clock, RECENT, true);
    makeRun(store, clock, OPEN, false);
    // the people: a QA reviewer who may prune, a process engineer who may not
    clock.set(Date.now() - 60_000);
    const identity = new Identity({ store, clock, ...identitySettings(loadConfig(CFG).config.api) });
    await addUser(identity, { id: 'm.rossi', name: 'Dr. Maria Rossi', role: 'qa_reviewer', tenants: [T], password: PW }, 'system', 'test site');
    await addUser(identity, { id: 'p.bianchi', name: 'Paolo Bianchi', role: 'process_engineer', tenants: [T], password: PW }, 'system', 'test site');
    keyPem = work('site-public-key.pem');
    writeFileSync(keyPem, store.audit.siteKey().publicPem);
  } finally {
    store.close();
  }
}, 180_000);
afterAll(() => t.cleanup());

describe('[A11.17] linekeeper archive: a self-contained archive, verifiable without linekeeper', () => {
  it('archive run writes the release package byte for byte, the audit bundle, the key, the spec table, the verifier, a README and a manifest, read-only', async () => {
    const out = work('A-run_old1');
    const r = await cli('archive', 'run', OLD1.id, '--tenant', T, '-o', out);
    expect(r.err).toBe('');
    expect(r.code).toBe(0);
    expect(r.out).toContain(`archive of run ${OLD1.id}, tenant ${T}`);
    const files: string[] = [];
    const walk = (d: string, rel: string): void => {
      for (const n of readdirSync(d).sort()) statSync(join(d, n)).isDirectory() ? walk(join(d, n), `${rel}${n}/`) : files.push(`${rel}${n}`);
    };
    walk(out, '');
    const run = `runs/${OLD1.id}`;
    expect(files.sort()).toEqual([
      'MANIFEST.sha256', 'MANIFEST.sig', 'README.txt', 'archive.json', 'audit-bundle.jsonl',
      `${run}/genealogy.txt`, `${run}/release/audit-bundle.jsonl`, `${run}/release/release.json`, `${run}/release/release.pdf`,
      `${run}/run.json`, `${run}/spec-table.csv`, `${run}/spec-table.json`, `${run}/spec-table.txt`,
      'site-public-key.pem', 'verify-audit-bundle.mjs',
    ].sort());
    for (const f of ['release.json', 'release.pdf', 'audit-bundle.jsonl']) expect(sha(readFileSync(join(out, run, 'release', f))), f).toBe(sha(readFileSync(join(data, 'releases', T, OLD1.id, f))));
    expect(readFileSync(join(out, 'verify-audit-bundle.mjs'), 'utf8')).toBe(readFileSync(new URL('../../tools/verify-audit-bundle.mjs', import.meta.url), 'utf8'));
    expect(readFileSync(join(out, 'site-public-key.pem'), 'utf8')).toBe(readFileSync(keyPem, 'utf8'));
    for (const f of files) expect(statSync(join(out, f)).mode & 0o222, f).toBe(0);
    // the manifest lists every file but itself and its signature, in sha256sum's format
    const manifest = readFileSync(join(out, 'MANIFEST.sha256'), 'utf8').trimEnd().split('\n');
    expect(manifest.map((l) => l.slice(66)).sort()).toEqual(files.filter((f) => !f.startsWith('MANIFEST.')).sort());
    for (const l of manifest) expect(sha(readFileSync(join(out, l.slice(66)))), l).toBe(l.slice(0, 64));
    // the spec table as JSON, CSV (a formula-like cell as text) and text; the tenant's bundle holds no other tenant
    const spec = JSON.parse(readFileSync(join(out, run, 'spec-table.json'), 'utf8')) as { specTable: typeof SPEC_TABLE; counts: { total: number } };
    expect(spec.specTable.results.map((x) => x.verdict)).toEqual(['PASS', 'PASS']);
    expect(readFileSync(join(out, run, 'spec-table.csv'), 'utf8')).toContain(`dissolution,Dissolution Q30,PASS,≥ 80 %,1,91.5,,,%,LIMS LIMS-88-1,'=91.5 % ≥ 80 %\r\n`);
    expect(readFileSync(join(out, run, 'spec-table.txt'), 'utf8')).toMatch(/specifications of batch B-2011: PASS/);
    expect(readFileSync(join(out, run, 'genealogy.txt'), 'utf8')).toContain('batch record B-2011 ingested');
    expect(readFileSync(join(out, 'audit-bundle.jsonl'), 'utf8')).not.toContain('borealis');
    const meta = JSON.parse(readFileSync(join(out, 'archive.json'), 'utf8')) as { tenant: string; runs: { run: string; release: unknown; retain_until: string }[]; retention: { years: number } };
    expect(meta.tenant).toBe(T);
    expect(meta.retention.years).toBe(10);
    expect(meta.runs).toEqual([expect.objectContaining({ run: OLD1.id, retain_until: iso(Date.UTC(year - 5, 2, 2, 10)) })]);
    const readme = readFileSync(join(out, 'README.txt'), 'utf8');
    expect(readme).toContain('node verify-audit-bundle.mjs --archive . --key SITE-PUBLIC-KEY.pem');
    expect(readme).toContain('sha256sum -c MANIFEST.sha256');
    expect(readme).not.toContain(t.dir);
    // nothing half-written beside it
    expect(readdirSync(t.dir).filter((n) => n.includes('staging'))).toEqual([]);
  });

  it('the standalone verifier alone, run with node in a folder that holds nothing but the archive, verifies it (and its bundles), as archive verify does', async () => {
    const alone = carry(work('A-run_old1'), 'carried');
    const pinned = standalone(alone, '--archive', '.', '--key', keyPem);
    expect(pinned.code, pinned.out).toBe(0);
    expect(pinned.out).toMatch(new RegExp(`^ok: archive of run ${OLD1.id} \\(tenant ${T}\\), 13 files, key [0-9a-f]{64} \\(pinned\\)\\n$`));
    // without --key the archive vouched for itself: said so, as validate verify says it of a report
    const carried = standalone(alone, '--archive', '.');
    expect(carried.code).toBe(0);
    expect(carried.out).toMatch(/key [0-9a-f]{64} \(carried by the archive: pin it with --key\)\n$/);
    const unpinned = await runCli('archive', 'verify', work('A-run_old1'));
    expect(unpinned.code).toBe(0);
    expect(unpinned.out).toMatch(/13 files, key [0-9a-f]{64} \(carried by the archive: pin it with --key\)\n$/);
    expect(standalone(alone, 'audit-bundle.jsonl', '--key', 'site-public-key.pem').code).toBe(0);
    expect(standalone(alone, `runs/${OLD1.id}/release/audit-bundle.jsonl`, '--key', 'site-public-key.pem').code).toBe(0);
    const v = await runCli('archive', 'verify', work('A-run_old1'), '--key', keyPem);
    expect(v.code).toBe(0);
    expect(v.out).toContain(`ok: archive of run ${OLD1.id} (tenant ${T}), 13 files`);
    expect(v.out).toMatch(/ \(pinned\)\n$/);
    // the two implementations reach the same report
    expect(brief(verifyArchiveDir(alone, readFileSync(keyPem, 'utf8')))).toEqual(brief(verifyArchive(alone)));
  });

  it('a modified, added or re-listed file is detected by the standalone verifier (exit 65) and by archive verify, naming the file', async () => {
    const run = `runs/${OLD1.id}`;
    const cases: [string, (d: string) => void, string, string][] = [
      ['pdf-byte', (d) => {
        const f = join(d, run, 'release', 'release.pdf');
        const b = readFileSync(f);
        const i = Math.floor(b.length / 2);
        b[i] = b[i]! ^ 0x01;
        writeFileSync(f, b);
      }, `${run}/release/release.pdf`, 'modified'],
      ['bundle-edit', (d) => {
        const f = join(d, 'audit-bundle.jsonl');
        writeFileSync(f, readFileSync(f, 'utf8').replace('"value":11.5', '"value":12.5'));
      }, 'audit-bundle.jsonl', 'bundle_damaged'],
      ['extra-file', (d) => writeFileSync(join(d, run, 'note.txt'), 'added later\n'), `${run}/note.txt`, 'unlisted'],
      ['relisted', (d) => {
        // the file changed and its manifest line recomputed: only the signature can tell
        const f = join(d, run, 'spec-table.csv');
        writeFileSync(f, readFileSync(f, 'utf8').replace('PASS', 'FAIL'));
        const m = join(d, 'MANIFEST.sha256');
        writeFileSync(m, readFileSync(m, 'utf8').replace(/^[0-9a-f]{64}(?= {2}runs\/run_old1\/spec-table\.csv$)/m, sha(readFileSync(f))));
      }, 'MANIFEST.sha256', 'signature_invalid'],
    ];
    for (const [name, damage, file, kind] of cases) {
      const d = carry(work('A-run_old1'), `damaged-${name}`);
      damage(d);
      const s = standalone(d, '--archive', '.', '--key', keyPem);
      expect(s.code, `${name}: ${s.out}`).toBe(65);
      expect(s.out, name).toContain(`DAMAGED: ${file}: ${kind}:`);
      const v = await runCli('archive', 'verify', d, '--key', keyPem);
      expect(v.code, name).toBe(65);
      expect(v.out, name).toContain(`DAMAGED: ${file}: ${kind}:`);
      expect(v.err, name).toMatch(/\[LK_AUDIT_BROKEN\]/);
      expect(brief(verifyArchiveDir(d, readFileSync(keyPem, 'utf8'))), name).toEqual(brief(verifyArchive(d)));
    }
    // pinned to another site's key: a key problem (exit 1), not a verdict on the files
    const other = work('other-key.pem');
    writeFileSync(other, generateKeyPairSync('ed25519').publicKey.export({ type: 'spki', format: 'pem' }));
    expect(standalone(work('A-run_old1'), '--archive', '.', '--key', other).code).toBe(1);
    expect((await runCli('archive', 'verify', work('A-run_old1'), '--key', other)).err).toMatch(/not the pinned key .*\[LK_AUDIT_KEY\]/);
  });

  it('the archive is recorded on the tenant\'s chain (who, the manifest\'s SHA-256, the release digests), and an archive is never written over anything', async () => {
    const out = work('A-run_old1');
    const recorded = auditOf('audit.archive');
    expect(recorded).toHaveLength(1);
    const e = recorded[0]!;
    expect(e.actor).toBe('system');
    expect(e.subject).toEqual({ run: OLD1.id, batch: OLD1.batch });
    expect(e.args).toMatchObject({ scope: { run: OLD1.id }, os_user: expect.any(String) });
    const result = e.result as { archive: string; manifest_sha256: string; runs: { run: string; release: { pdf: string } }[] };
    expect(result.archive).toBe('A-run_old1');
    expect(result.manifest_sha256).toBe(sha(readFileSync(join(out, 'MANIFEST.sha256'))));
    expect(result.runs[0]!.release.pdf).toBe(sha(readFileSync(join(data, 'releases', T, OLD1.id, 'release.pdf'))));
    expect((await runCli('audit', 'verify', '--data', data)).code).toBe(0);

    const before = sha(readFileSync(join(out, 'MANIFEST.sha256')));
    const again = await cli('archive', 'run', OLD1.id, '--tenant', T, '-o', out);
    expect(again.code).toBe(1);
    expect(again.err).toMatch(/\[LK_CONFLICT\]/);
    expect(sha(readFileSync(join(out, 'MANIFEST.sha256')))).toBe(before);
    expect(auditOf('audit.archive')).toHaveLength(1);
  });

  it('refuses a run that has not ended, and a release package changed since its run wrote it; writes nothing', async () => {
    const r = await cli('archive', 'run', OPEN.id, '--tenant', T, '-o', work('A-open'));
    expect(r.code).toBe(1);
    expect(r.err).toMatch(/run_open is RUNNING.*\[LK_RUN_STATE\]/);
    expect(existsSync(work('A-open'))).toBe(false);
    // one byte of the recent run's release.pdf changed on the node: not what the run recorded, so not archived
    const pdf = join(data, 'releases', T, RECENT.id, 'release.pdf');
    const good = readFileSync(pdf);
    chmodSync(pdf, 0o644);
    writeFileSync(pdf, Buffer.concat([good, Buffer.from('\n')]));
    try {
      const changed = await cli('archive', 'run', RECENT.id, '--tenant', T, '-o', work('A-changed'));
      expect(changed.code).toBe(65);
      expect(changed.err).toMatch(/run_new1\/release\.pdf differs from the SHA-256 the run recorded .*\[LK_AUDIT_BROKEN\]/);
      expect(existsSync(work('A-changed'))).toBe(false);
    } finally {
      writeFileSync(pdf, good);
      chmodSync(pdf, 0o444);
    }
    expect(readdirSync(t.dir).filter((n) => n.includes('staging'))).toEqual([]);
    expect(auditOf('audit.archive')).toHaveLength(1);
  });
});

describe('[P11.10(c)] retention: archive prune drops release packages only after the retention period and an archive', () => {
  const prune = (before: string, ...more: string[]): ReturnType<typeof runCli> => cli('archive', 'prune', '--tenant', T, '--before', before, ...more);
  const REASON = ['--reason', 'retention of B-2011 and B-2012 ended; archives A-run_old1 and A-period hold them (QA-SOP-017)'];

  it('refuses a date inside the retention period and changes nothing (before any password)', async () => {
    const s = snapshot();
    const r = await prune(iso(Date.now() - 365 * DAY).slice(0, 10), '--as', 'm.rossi', ...REASON);
    expect(r.code).toBe(1);
    expect(r.err).toMatch(/inside the retention period of 10 years.*nothing was dropped \[LK_RETENTION_ACTIVE\]/);
    expect(r.err).not.toMatch(/password/);
    expect(snapshot()).toEqual(s);
    expect(s.files[`${T}/${RECENT.id}/release.pdf`]).toBeDefined();
  });

  it('refuses while a package before the date is in no archive, naming it, and changes nothing', async () => {
    const s = snapshot();
    const r = await prune(iso(OLD2.start + 30 * DAY).slice(0, 10), '--as', 'm.rossi', ...REASON);
    expect(r.code).toBe(1);
    expect(r.err).toMatch(/1 of 2 release packages .* are in no archive as they are now \(run_old2\).*\[LK_NOT_ARCHIVED\]/);
    expect(snapshot()).toEqual(s);
  });

  it('archive period (with --tar) holds the runs started in it; the tar file unpacks to the same verifiable folder', async () => {
    const out = work('A-period');
    const r = await cli('archive', 'period', '--tenant', T, '--from', iso(OLD1.start).slice(0, 10), '--to', iso(OLD2.start).slice(0, 10), '-o', out, '--tar');
    expect(r.code, r.err).toBe(0);
    const meta = JSON.parse(readFileSync(join(out, 'archive.json'), 'utf8')) as { runs: { run: string }[]; scope: { from: string; to: string } };
    expect(meta.runs.map((x) => x.run)).toEqual([OLD1.id, OLD2.id]);
    expect(meta.scope).toEqual({ from: iso(Date.UTC(year - 15, 2, 2)), to: iso(Date.UTC(year - 15, 3, 2)) });
    const unpacked = work('unpacked');
    mkdirSync(unpacked);
    execFileSync('tar', ['-xzf', `${out}.tar.gz`, '-C', unpacked]);
    expect(readdirSync(unpacked)).toEqual(['A-period']);
    const listed = readFileSync(join(out, 'MANIFEST.sha256'), 'utf8').trimEnd().split('\n').map((l) => l.slice(66));
    for (const f of [...listed, 'MANIFEST.sha256', 'MANIFEST.sig']) expect(readFileSync(join(unpacked, 'A-period', f)).equals(readFileSync(join(out, f))), f).toBe(true);
    expect(standalone(join(unpacked, 'A-period'), '--archive', '.', '--key', keyPem).code).toBe(0);
    const recorded = auditOf('audit.archive');
    expect(recorded).toHaveLength(2);
    expect((recorded[1]!.result as { tar_sha256: string }).tar_sha256).toBe(sha(readFileSync(`${out}.tar.gz`)));
  });

  it('drops the archived packages of runs whose retention ended, as a re-authenticated QA reviewer, recorded; the trail and the archives stay verifiable', async () => {
    const before = iso(OLD2.start + 30 * DAY).slice(0, 10);
    const dry = await prune(before, '--dry-run');
    expect(dry.code, `${dry.err}\n${dry.out}`).toBe(0);
    expect(dry.out).toMatch(/would drop 2 release packages/);
    expect(dry.out).toContain(OLD1.id);
    expect(existsSync(join(data, 'releases', T, OLD1.id))).toBe(true);
    // a process engineer may not: refused before the password, nothing dropped
    const engineer = await prune(before, '--as', 'p.bianchi', ...REASON);
    expect(engineer.err).toMatch(/\[LK_FORBIDDEN\]/);
    expect(existsSync(join(data, 'releases', T, OLD1.id))).toBe(true);
    // the reason is the person's own words: none (or a blank one) is refused before anything, nothing dropped
    for (const reason of [[], ['--reason', '  ']]) {
      const r = await prune(before, '--as', 'm.rossi', ...reason);
      expect(r.code).toBe(2);
      expect(r.err).toMatch(/--reason "…" is required.*\[LK_VALIDATION\]/);
      expect(r.err).not.toMatch(/password/);
    }
    expect(existsSync(join(data, 'releases', T, OLD1.id))).toBe(true);

    const r = await spawnCli(['archive', 'prune', '--tenant', T, '--before', before, '--as', 'm.rossi', ...REASON, '-c', CFG, '--data', data], { input: `${PW}\n` });
    expect(r.code, r.err).toBe(0);
    expect(r.out).toMatch(/dropped 2 release packages of acme-pharma by m\.rossi/);
    expect(readdirSync(join(data, 'releases', T)).sort()).toEqual([RECENT.id]);
    const pruned = auditOf('archive.prune');
    expect(pruned).toHaveLength(1);
    expect(pruned[0]!.actor).toBe('m.rossi');
    expect(pruned[0]!.reason).toBe(REASON[1]);
    expect(pruned[0]!.args).toMatchObject({ aside: expect.stringMatching(/^\.pruning-\d+-\d+$/) });
    expect(readdirSync(join(data, 'releases')).filter((n) => n.startsWith('.'))).toEqual([]);
    expect((pruned[0]!.result as { dropped: { run: string; archived_in: number }[] }).dropped.map((d) => d.run)).toEqual([OLD1.id, OLD2.id]);
    expect(categoryOf({ kind: 'retention', action: 'archive.prune', signature: undefined, result: undefined })).toBe('change');
    // the database was not pruned: the runs and their trail are all there, and verify
    const s = openStore({ dataDir: data, readonly: true });
    try {
      expect(new RunStore(s.db).run(T, OLD1.id)?.status).toBe('SUCCEEDED');
      expect([...iterateAudit(s.db, T, { run: OLD1.id })].length).toBeGreaterThanOrEqual(4);
    } finally {
      s.close();
    }
    expect((await runCli('audit', 'verify', '--data', data)).code).toBe(0);
    expect(standalone(work('A-run_old1'), '--archive', '.', '--key', keyPem).code).toBe(0);
    // once dropped, nothing more to drop
    expect((await prune(before, '--dry-run')).out).toMatch(/nothing to drop/);
  });
});

describe('[A11.17] [P11.10(c)] under faults, what the trail says of an archive or a prune is what happened', () => {
  /** Two runs whose retention ended (F1, F2), and two whose release digests the chain did not record, or recorded otherwise. */
  const F1 = { id: 'run_f1', batch: 'F-2011', start: Date.UTC(year - 15, 2, 2, 6) };
  const F2 = { id: 'run_f2', batch: 'F-2012', start: Date.UTC(year - 15, 2, 3, 6) };
  const NOREC = { id: 'run_norec', batch: 'F-3001', start: Date.UTC(year - 14, 5, 1, 6) };
  const WRONG = { id: 'run_wrong', batch: 'F-3002', start: Date.UTC(year - 14, 5, 2, 6) };
  const before = iso(F2.start + 30 * DAY).slice(0, 10);
  let faults: string;
  const pkg = (run: string): string => join(faults, 'releases', T, run);
  const asideFolders = (): string[] => readdirSync(join(faults, 'releases')).filter((n) => n.startsWith('.pruning-'));
  /** The data directory's store with its checkpoints failing once `when` holds (as with a site key that cannot be read). */
  function failingCheckpoints(s: Store, when: () => boolean): () => void {
    const real = s.audit.checkpoint.bind(s.audit);
    const spy = vi.spyOn(s.audit, 'checkpoint').mockImplementation((tenant) => {
      if (when()) throw new LkError('LK_AUDIT_KEY', 'the site key cannot be read (test)');
      return real(tenant);
    });
    return () => spy.mockRestore();
  }
  const count = (s: Store, action: string): number => [...iterateAudit(s.db, T, { action })].length;

  beforeAll(() => {
    faults = work('data-faults');
    const clock = new ManualClock(F1.start - DAY);
    const { store } = newStore(faults, { clock });
    try {
      makeRun(store, clock, F1, true, { dir: faults });
      makeRun(store, clock, F2, true, { dir: faults });
      makeRun(store, clock, NOREC, true, { dir: faults, recorded: 'none' });
      makeRun(store, clock, WRONG, true, { dir: faults, recorded: { json: H('e'), pdf: H('e'), bundle: H('e') } });
    } finally {
      store.close();
    }
  }, 180_000);

  it('archive refuses a release package whose digests the tenant chain did not record, or recorded otherwise (the run\'s own data notwithstanding); writes nothing', async () => {
    const s = openStore({ dataDir: faults });
    try {
      for (const [run, why] of [[NOREC.id, /the tenant's chain recorded no SHA-256 of this release package/], [WRONG.id, /run_wrong\/release\.json differs from the SHA-256 the run recorded/]] as const) {
        const out = work(`F-${run}`);
        await expect(writeArchive(s, { tenant: T, scope: { run }, out, retentionYears: 10, osUser: 'test' })).rejects.toMatchObject({ code: 'LK_AUDIT_BROKEN', message: expect.stringMatching(why) });
        expect(existsSync(out)).toBe(false);
      }
      expect(count(s, 'audit.archive')).toBe(0);
    } finally {
      s.close();
    }
    expect(readdirSync(t.dir).filter((n) => n.includes('staging'))).toEqual([]);
  });

  it('an archive whose checkpoint fails once it is recorded stays, with a warning: a record never outlives its archive', async () => {
    const out = work('F-period');
    const s = openStore({ dataDir: faults });
    const restore = failingCheckpoints(s, () => count(s, 'audit.archive') > 0);
    try {
      const r = await writeArchive(s, { tenant: T, scope: { from: iso(F1.start).slice(0, 10), to: iso(F2.start).slice(0, 10) }, out, retentionYears: 10, osUser: 'test', tar: true });
      expect(r.warnings).toEqual([expect.stringMatching(new RegExp(`recorded on ${T} #${r.auditSeq} and stays, but no checkpoint could be signed now \\(the site key cannot be read`))]);
      expect(r.runs.map((x) => x.run)).toEqual([F1.id, F2.id]);
    } finally {
      restore();
      s.close();
    }
    expect(existsSync(`${out}.tar.gz`)).toBe(true);
    expect(verifyArchive(out).ok).toBe(true);
    const recorded = auditOf('audit.archive', faults);
    expect(recorded).toHaveLength(1);
    expect((recorded[0]!.result as { manifest_sha256: string }).manifest_sha256).toBe(sha(readFileSync(join(out, 'MANIFEST.sha256'))));
    // the digests recorded are those of the archived copies
    for (const x of (recorded[0]!.result as { runs: { run: string; release: Record<string, string> }[] }).runs) {
      expect(x.release['pdf']).toBe(sha(readFileSync(join(out, 'runs', x.run, 'release', 'release.pdf'))));
    }
    expect((await runCli('audit', 'verify', '--data', faults)).code).toBe(0);
  });

  it('a prune refuses a package changed after it was checked (while the password was typed): every package back, nothing recorded', () => {
    const s = openStore({ dataDir: faults });
    const pdf = join(pkg(F2.id), 'release.pdf');
    const good = readFileSync(pdf);
    try {
      const plan = planPrune(s, { tenant: T, before, years: 10, now: Date.now() });
      expect(plan.candidates.map((c) => c.run)).toEqual([F1.id, F2.id]);
      chmodSync(pdf, 0o644);
      writeFileSync(pdf, Buffer.concat([good, Buffer.from('\n')]));
      let err: unknown;
      try {
        prunePackages(s, plan, { actor: 'm.rossi', reason: 'test' });
      } catch (e) {
        err = e;
      }
      expect(err).toMatchObject({ code: 'LK_NOT_ARCHIVED', message: expect.stringMatching(/run_f2\): they are not as any archive holds them; every package was put back, nothing was dropped/) });
      expect(count(s, 'archive.prune')).toBe(0);
    } finally {
      s.close();
      writeFileSync(pdf, good);
      chmodSync(pdf, 0o444);
    }
    expect(readdirSync(join(faults, 'releases', T)).sort()).toEqual([F1.id, F2.id, NOREC.id, WRONG.id]);
    expect(asideFolders()).toEqual([]);
  });

  it('a prune whose checkpoint fails once it is recorded drops the packages all the same, with a warning: the trail never says dropped of a package still there', () => {
    const s = openStore({ dataDir: faults });
    const restore = failingCheckpoints(s, () => true);
    try {
      const plan = planPrune(s, { tenant: T, before, years: 10, now: Date.now() });
      const r = prunePackages(s, plan, { actor: 'm.rossi', reason: 'test' });
      expect(r.seq).toEqual(expect.any(Number));
      expect(r.warnings).toEqual([expect.stringMatching(new RegExp(`recorded on ${T} #${r.seq}, but no checkpoint could be signed now`))]);
    } finally {
      restore();
      s.close();
    }
    expect(readdirSync(join(faults, 'releases', T)).sort()).toEqual([NOREC.id, WRONG.id]);
    expect(asideFolders()).toEqual([]);
    const pruned = auditOf('archive.prune', faults);
    expect(pruned).toHaveLength(1);
    expect((pruned[0]!.result as { dropped: { run: string }[] }).dropped.map((d) => d.run)).toEqual([F1.id, F2.id]);
  });

  it('a prune interrupted before its record is undone, and one interrupted after it is finished, by the next archive command, which says so', async () => {
    // a process that has ended: its pid names the interrupted prunes; a live one's folder is left alone
    const dead = spawnSync(process.execPath, ['-e', '']).pid;
    const unrecorded = `.pruning-${Date.now()}-${dead}`;
    const recordedName = `.pruning-${Date.now() + 1}-${dead}`;
    const live = `.pruning-${Date.now() + 2}-${process.ppid}`;
    const aside = (name: string, run: string): string => join(faults, 'releases', name, T, run);
    const norecPdf = sha(readFileSync(join(pkg(NOREC.id), 'release.pdf')));
    mkdirSync(join(faults, 'releases', unrecorded, T), { recursive: true });
    renameSync(pkg(NOREC.id), aside(unrecorded, NOREC.id));
    mkdirSync(join(faults, 'releases', recordedName, T), { recursive: true });
    renameSync(pkg(WRONG.id), aside(recordedName, WRONG.id));
    mkdirSync(aside(live, 'run_busy'), { recursive: true });
    const s = openStore({ dataDir: faults });
    try {
      // as prunePackages records it, then the process died before the removal
      s.audit.append({ tenant: T, actor: 'm.rossi', kind: 'retention', action: 'archive.prune', args: { before, retention_years: 10, aside: recordedName }, result: { dropped: [{ run: WRONG.id }] }, reason: 'test' });
    } finally {
      s.close();
    }
    const run = (...args: string[]): ReturnType<typeof runCli> => runCli('archive', ...args, '-c', CFG, '--data', faults);

    // --dry-run says what the next command will do, and does nothing
    const dry = await run('prune', '--tenant', T, '--before', before, '--dry-run');
    expect(dry.code, `${dry.err}\n${dry.out}`).toBe(0);
    expect(dry.err).toContain(`an interrupted prune left releases/${T}/${NOREC.id} aside in releases/${unrecorded}: the next archive command (without --dry-run) puts it back`);
    expect(dry.err).toContain(`an interrupted prune left releases/${T}/${WRONG.id} aside in releases/${recordedName}: the next archive command (without --dry-run) removes it`);
    expect(existsSync(aside(unrecorded, NOREC.id))).toBe(true);
    expect(existsSync(aside(recordedName, WRONG.id))).toBe(true);

    // the next archive command puts back what no one dropped and removes what the trail says was dropped
    const a = await run('run', F1.id, '--tenant', T, '-o', work('F-run_f1'));
    expect(a.code, a.err).toBe(0);
    expect(a.err).toContain(`an interrupted prune left releases/${T}/${NOREC.id} aside in releases/${unrecorded}: put back (no prune of it is recorded)`);
    expect(a.err).toMatch(new RegExp(`an interrupted prune left releases/${T}/${WRONG.id} aside in releases/${recordedName.replace('.', '\\.')}: removed, finishing the prune \\(its prune is recorded on ${T} #\\d+\\)`));
    expect(a.err).toContain(`an interrupted prune left releases/${live} aside; left as it is: process ${process.ppid}, which is pruning, still runs`);
    expect(readdirSync(join(faults, 'releases', T)).sort()).toEqual([NOREC.id]);
    expect(asideFolders()).toEqual([live]);
    expect(sha(readFileSync(join(pkg(NOREC.id), 'release.pdf')))).toBe(norecPdf);

    // the prune command does the same, before its own checks (here: a date inside the retention period)
    mkdirSync(join(faults, 'releases', unrecorded, T), { recursive: true });
    renameSync(pkg(NOREC.id), aside(unrecorded, NOREC.id));
    const p = await run('prune', '--tenant', T, '--before', iso(Date.now()).slice(0, 10), '--as', 'm.rossi', '--reason', 'test');
    expect(p.err).toContain(`releases/${T}/${NOREC.id} aside in releases/${unrecorded}: put back`);
    expect(p.err).toMatch(/\[LK_RETENTION_ACTIVE\]/);
    expect(readdirSync(join(faults, 'releases', T))).toEqual([NOREC.id]);
    rmSync(join(faults, 'releases', live), { recursive: true });
  });

  it('the archived spec-table.txt prints its times on the site\'s clock, as genealogy.txt does', () => {
    const s = openStore({ dataDir: faults });
    try {
      const closedAt = F1.start + HOURS4 - 120_000;
      const ex = new ExceptionStore(s);
      s.tx((tx) => {
        ex.insert(tx, { id: 'exc_f1', tenant: T, run: F1.id, batch: F1.batch, key: 'OOT:press.Hardness:1', kind: 'OOT', severity: 'minor', step: '05 compress.press', title: 'OOT press.Hardness', evidence: {}, raisedAt: F1.start + 3_600_000, raisedBy: 'agent.compress_fill', auditSeq: 1 });
        ex.close(tx, 'exc_f1', { user: 'm.rossi', name: 'Dr. Maria Rossi', at: closedAt, comment: 'within the trend limits after the tooling change', deviation: null, signature: null });
      });
      const docs = runDocuments(s, 'Europe/Rome')(new RunStore(s.db).run(T, F1.id)!);
      const text = (p: string): string => String(docs.find((d) => d.path === p)!.bytes);
      expect(text('spec-table.txt')).toContain(`closed by Dr. Maria Rossi (m.rossi) ${siteIso(iso(closedAt), 'Europe/Rome')}`);
      expect(text('spec-table.txt')).not.toContain(iso(closedAt));
      expect(text('genealogy.txt')).toContain('Europe/Rome');
    } finally {
      s.close();
    }
  });
});
