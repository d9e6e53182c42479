/**
 * The release package on a real store: the bundle inside it verifies with the
 * standalone verifier and the site public key (and fails when a byte changes),
 * release.json is canonical and anchored to the chain head by a checkpoint the
 * site key signed, release.pdf shows every signature's manifestation, and an
 * existing package is never overwritten. With a quality section, page 1 of
 * release.pdf is the verdict (spec table, exceptions, reconciliation,
 * signatures) before anything else; the PDF is PDF/A-2b with every font
 * embedded, shows "≤" and "–" as themselves, and is byte-for-byte the same for
 * the same record.
 */
import { spawnSync } from 'node:child_process';
import { createHash, createPublicKey, verify } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import canonicalize from 'canonicalize';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkpointLogFile, type SignedCheckpoint } from '../../src/audit/checkpoints.js';
import { keyFiles } from '../../src/audit/keys.js';
import type { ManualClock } from '../../src/clock.js';
import { writeReleasePackage } from '../../src/engine/release-package.js';
import { writeReleasePackageOffLoop } from '../../src/engine/release-offload.js';
import { renderReleasePdf } from '../../src/engine/release-pdf.js';
import { RELEASE_FILES, type ReleaseInput, type ReleasePackage, type ReleaseQuality, type ReleaseRecord } from '../../src/engine/release-types.js';
import { parseReleaseInput } from '../../src/engine/release-input.js';
import type { Store } from '../../src/store/store.js';
import { LkError } from '../../src/errors.js';
import { codeOf, entry, newStore, rawDb, tempDir } from '../unit/audit-helpers.js';
import { flat, pdfObjects, pdfPages, pdfText } from '../helpers/pdf-text.js';
import { SPEC_PLAN } from '../helpers/spec-plan.js';

const root = fileURLToPath(new URL('../..', import.meta.url));
const verifier = join(root, 'tools/verify-audit-bundle.mjs');
const T = 'acme-pharma';
const sha = (b: Buffer | string): string => createHash('sha256').update(b).digest('hex');
const H = (c: string): string => c.repeat(64);
const t0 = Date.UTC(2026, 10, 20, 8, 0, 0);

function releaseInput(over: Partial<ReleaseInput> = {}): ReleaseInput {
  const plan = SPEC_PLAN;
  return {
    tenant: T, site: 'site-ravenna',
    run: { id: 'run_7f3a', batch: 'B-1042', line: 'line-3', product: 'ir-family-a', tooling: 'round-10mm-ff', goal: 'weight and hardness on target, capping risk under 1.5 %', startedAt: t0, endedAt: t0 + 4 * 3600_000, status: 'SUCCEEDED' },
    batchRecord: { format: 1, batch: 'B-1042', tenant: T, product: 'ir-family-a', mes_ref: 'MES-2026-11-1042', specifications: { potency: { min_pct: 95, max_pct: 105 }, content_uniformity: { av_max: 15 }, defect_rate_max_pct: 1 }, reviewer: 'p.bianchi', qa_reviewer: 'm.rossi' },
    batchRecordSha256: H('a'),
    steps: plan.map(([seq, name, agent, tool]) => ({ seq, name, agent, tool, status: seq === '09' ? 'APPROVAL' : 'SUCCEEDED', duration: seq === '07' ? 'continuous' : '2m 10s', detail: `${name} done` })),
    evidence: {
      nir: [1, 2, 3].map((i) => ({ spectrumId: 4100 + i, potencyPct: 99 + i / 10, spectrumSha256: H(String(i)), model: { id: 'potency-pls-v1', version: 1 } })),
      potency: { n: 30, meanPct: 99.84, sdPct: 1.12, ciLowPct: 99.42, ciHighPct: 100.26, pass: true },
      contentUniformity: { av: 3.2, pass: true },
      inspection: { inspected: 300000, rejected: 912, defectRatePct: 0.304, pass: true },
      qc: [
        { test: 'dissolution Q30', result: 91.5, unit: '%', status: 'pass', lims_ref: 'LIMS-88-1' },
        { test: 'appearance', result: 'conforms', status: 'pass', lims_ref: 'LIMS-88-2' },
      ],
    },
    signatures: [
      { approvalId: 'apr_01', user: 'm.rossi', name: 'Dr. Maria Rossi', role: 'qa_reviewer', meaning: 'approved for release', decision: 'approve', at: '2026-11-20T11:58:03.120Z', recordHash: H('b'), signature: 'c2lnbmF0dXJlLW9uZQ==', keyId: 'k-m.rossi' },
      { approvalId: 'apr_02', user: 'p.bianchi', name: 'Paolo Bianchi', role: 'process_engineer', meaning: 'reviewed process deviations', decision: 'approve', at: '2026-11-20T11:40:00.000Z', recordHash: H('c'), signature: 'c2lnbmF0dXJlLXR3bw==', keyId: 'k-p.bianchi' },
    ],
    genealogy: [
      { at: t0, kind: 'step', step: '01', agent: 'agent.orchestrator', summary: 'batch record ingested' },
      { at: t0 + 3_600_000, kind: 'arbitration', step: '05', agent: 'agent.compress_fill', tag: 'press.TurretSpeed', summary: 'quality request wins' },
    ],
    losingRequests: [{ agent: 'agent.yield_takt', setpoint: 'press.TurretSpeed', score: 0.42, reason: 'content uniformity outranks takt', at: t0 + 3_600_000 }],
    ...over,
  };
}

function runVerifier(bundle: string, key: string): { code: number | null; out: string } {
  const r = spawnSync(process.execPath, [verifier, bundle, '--key', key], { encoding: 'utf8', timeout: 150_000 }); // hang guard: a verify takes a second idle; child starts took tens of seconds on a loaded 2-core box
  return { code: r.status, out: r.stdout + r.stderr };
}

let t: { dir: string; cleanup: () => void };
let store: Store;
let clock: ManualClock;
let pkg: ReleasePackage;
let pubKey: string;

beforeAll(() => {
  t = tempDir('lk-release-');
  ({ store, clock } = newStore(join(t.dir, 'data')));
  for (let i = 1; i <= 7; i++) {
    clock.advance(10_000);
    store.audit.append(entry(i, T));
    if (i % 2 === 0) store.audit.append(entry(i, 'borealis-bio'));
  }
  store.audit.append({ tenant: T, actor: 'm.rossi', kind: 'approval', action: 'batch.release', subject: { run: 'run_7f3a', batch: 'B-1042', reviewer: 'm.rossi' }, signature: { user: 'm.rossi', name: 'Dr. Maria Rossi', meaning: 'approved for release', time: '2026-11-20T11:58:03.120Z', value: 'c2lnbmF0dXJlLW9uZQ==' } });
  clock.advance(1000);
  pkg = writeReleasePackage(store, join(t.dir, 'releases', 'run_7f3a'), releaseInput(), { pdf: { compress: false } });
  pubKey = keyFiles(join(t.dir, 'data')).publicFile;
});
afterAll(() => {
  store.close();
  t.cleanup();
});

describe('release package', () => {
  it('[P11.10(b)] holds exactly the bundle, release.json and release.pdf, read-only, with the digests it reports', () => {
    expect(readdirSync(pkg.dir).sort()).toEqual([RELEASE_FILES.bundle, RELEASE_FILES.json, RELEASE_FILES.pdf].sort());
    expect(sha(readFileSync(pkg.bundleFile))).toBe(pkg.sha256.bundle);
    expect(sha(readFileSync(pkg.jsonFile))).toBe(pkg.sha256.json);
    expect(sha(readFileSync(pkg.pdfFile))).toBe(pkg.sha256.pdf);
    for (const f of [pkg.bundleFile, pkg.jsonFile, pkg.pdfFile]) expect(statSync(f).mode & 0o222).toBe(0);
    // no staging folder is left beside the package
    expect(readdirSync(join(t.dir, 'releases'))).toEqual(['run_7f3a']);
  });

  it('(a) the bundle verifies with the standalone verifier and the site public key, up to the package head', () => {
    const r = runVerifier(pkg.bundleFile, pubKey);
    expect(r.code).toBe(0);
    expect(r.out).toContain(`tenant ${T}, 8 entries, head #8 ${store.audit.head(T).hash}`);
    // tenant-scoped: nothing of the other tenant travels in the package
    expect(readFileSync(pkg.bundleFile, 'utf8')).not.toContain('borealis');
  });

  it('(b) one changed byte in the bundle makes the standalone verifier fail', () => {
    const text = readFileSync(pkg.bundleFile, 'utf8');
    const lines = text.split('\n');
    const entryLine = lines.findIndex((l) => l.includes('"type":"entry"') && l.includes('"seq":3'));
    const cpLine = lines.findIndex((l) => l.includes('"type":"checkpoint"'));
    const at = (line: number, needle: string): number => lines.slice(0, line).reduce((n, l) => n + l.length + 1, 0) + lines[line]!.indexOf(needle) + needle.length;
    const positions = [at(entryLine, '"reason":"'), at(cpLine, '"sig":"'), at(0, '"tenant":"')];
    for (const p of positions) {
      const bytes = Buffer.from(text, 'utf8');
      bytes[p] = bytes[p] === 0x41 ? 0x42 : 0x41;
      const bad = join(t.dir, `tampered-${p}.jsonl`);
      writeFileSync(bad, bytes);
      const r = runVerifier(bad, pubKey);
      expect({ p, code: r.code }).toEqual({ p, code: 65 });
    }
    // the package's own copy is untouched
    expect(runVerifier(pkg.bundleFile, pubKey).code).toBe(0);
  });

  it('(c) release.json is canonical, holds the input, and its head is the chain head under a checkpoint the site key signed', () => {
    const bytes = readFileSync(pkg.jsonFile, 'utf8');
    const rec = JSON.parse(bytes) as ReleaseRecord;
    expect(canonicalize(rec)).toBe(bytes);
    expect(rec.format).toBe('linekeeper.release-package');
    expect(rec.input).toEqual(releaseInput());
    const head = store.audit.head(T);
    expect(rec.audit.head).toEqual({ seq: head.seq, hash: head.hash });
    expect(pkg.auditHead).toEqual(rec.audit.head);
    expect(rec.audit.bundle).toEqual({ file: RELEASE_FILES.bundle, sha256: pkg.sha256.bundle, entries: 8, key_id: rec.audit.checkpoint.key_id });

    // The checkpoint, checked by hand from docs/audit.md: Ed25519 over the canonical JSON of the fields without sig.
    const c: SignedCheckpoint = rec.audit.checkpoint;
    expect({ tenant: c.tenant, seq: c.seq, head_hash: c.head_hash }).toEqual({ tenant: T, seq: head.seq, head_hash: head.hash });
    const pem = readFileSync(pubKey, 'utf8');
    const key = createPublicKey(pem);
    expect(c.key_id).toBe(sha(key.export({ type: 'spki', format: 'der' })));
    const signed = canonicalize({ head_hash: c.head_hash, key_id: c.key_id, seq: c.seq, tenant: c.tenant, ts: c.ts, v: c.v })!;
    expect(verify(null, Buffer.from(signed), key, Buffer.from(c.sig, 'base64'))).toBe(true);
    expect(verify(null, Buffer.from(signed.replace(head.hash, '0'.repeat(64))), key, Buffer.from(c.sig, 'base64'))).toBe(false);
    // the same checkpoint is in the log file outside the database
    expect(readFileSync(checkpointLogFile(join(t.dir, 'data')), 'utf8')).toContain(c.sig);
  });

  it('[P11.50] (d) release.pdf shows each signature manifestation, the evidence chain and the anchors', () => {
    const pdf = readFileSync(pkg.pdfFile);
    expect(pdf.subarray(0, 5).toString('latin1')).toBe('%PDF-');
    const text = pdfText(pdf);
    for (const s of releaseInput().signatures) {
      expect(text).toContain(`Printed name: ${s.name}`);
      expect(text).toContain(`Meaning: ${s.meaning}`);
      expect(text).toContain(`User ID: ${s.user}`);
      expect(text).toContain(`Date and time of signing: ${s.at.replace('T', ' ').replace('Z', '')} UTC`);
    }
    expect(flat(text)).toContain('QA disposition: APPROVED FOR RELEASE by Dr. Maria Rossi (m.rossi), Paolo Bianchi (p.bianchi)');
    expect(text).toContain(H('2')); // a spectrum hash
    expect(text).toContain('potency-pls-v1 v1');
    expect(text).toContain('content uniformity outranks takt');
    expect(text).toContain(store.audit.head(T).hash);
    const rec = JSON.parse(readFileSync(pkg.jsonFile, 'utf8')) as ReleaseRecord;
    expect(text).toContain(rec.audit.checkpoint.sig);
    expect(text).toContain(pkg.sha256.json);
    expect(text).toContain(pkg.sha256.bundle);
  });

  it('the PDF bytes are a function of the record: rendering again gives the same bytes, compressed or not', () => {
    const json = readFileSync(pkg.jsonFile);
    const rec = JSON.parse(json.toString('utf8')) as ReleaseRecord;
    expect(renderReleasePdf(rec, sha(json), { compress: false }).equals(readFileSync(pkg.pdfFile))).toBe(true);
    const a = renderReleasePdf(rec, sha(json));
    expect(a.equals(renderReleasePdf(rec, sha(json)))).toBe(true);
    expect(a.equals(renderReleasePdf({ ...rec, input: { ...rec.input, run: { ...rec.input.run, endedAt: rec.input.run.endedAt + 1000 } } }, sha(json)))).toBe(false);
  });

  it('(e) a second write to the same folder is LK_CONFLICT and changes nothing', () => {
    const before = [pkg.bundleFile, pkg.jsonFile, pkg.pdfFile].map((f) => readFileSync(f));
    const logBefore = readFileSync(checkpointLogFile(join(t.dir, 'data')));
    const headBefore = store.audit.head(T);
    store.audit.append(entry(99, T)); // a new head would give a different package
    const head = store.audit.head(T);
    expect(codeOf(() => writeReleasePackage(store, pkg.dir, releaseInput()))).toBe('LK_CONFLICT');
    expect([pkg.bundleFile, pkg.jsonFile, pkg.pdfFile].map((f) => readFileSync(f))).toEqual(before);
    expect(readdirSync(pkg.dir)).toHaveLength(3);
    expect(readdirSync(join(t.dir, 'releases'))).toEqual(['run_7f3a']);
    // no checkpoint was signed for the refused write
    expect(readFileSync(checkpointLogFile(join(t.dir, 'data')))).toEqual(logBefore);
    expect(store.audit.head(T)).toEqual(head);
    expect(head.seq).toBe(headBefore.seq + 1);
  });

  it('an empty folder may receive a package; a folder with anything else in it may not', () => {
    const empty = join(t.dir, 'releases', 'empty');
    mkdirSync(empty);
    const p = writeReleasePackage(store, empty, releaseInput());
    expect(readdirSync(p.dir)).toHaveLength(3);
    expect(p.auditHead).toEqual({ seq: store.audit.head(T).seq, hash: store.audit.head(T).hash });
    const other = join(t.dir, 'releases', 'other');
    mkdirSync(other);
    writeFileSync(join(other, 'notes.txt'), 'keep me');
    expect(codeOf(() => writeReleasePackage(store, other, releaseInput()))).toBe('LK_CONFLICT');
    expect(readdirSync(other)).toEqual(['notes.txt']);
  });

  it('refuses bad input (LK_VALIDATION) and a tenant without a chain (LK_NOT_FOUND), writing nothing', () => {
    const dir = join(t.dir, 'releases', 'refused');
    const bad = releaseInput();
    bad.evidence.potency.meanPct = Number.NaN;
    expect(codeOf(() => writeReleasePackage(store, dir, bad))).toBe('LK_VALIDATION');
    const blank = releaseInput();
    blank.signatures[0]!.name = '  ';
    expect(codeOf(() => writeReleasePackage(store, dir, blank))).toBe('LK_VALIDATION');
    const foreign = releaseInput({ batchRecord: { ...releaseInput().batchRecord, tenant: 'borealis-bio' } });
    expect(codeOf(() => writeReleasePackage(store, dir, foreign))).toBe('LK_VALIDATION');
    expect(codeOf(() => writeReleasePackage(store, dir, releaseInput({ tenant: 'nobody-pharma', batchRecord: { batch: 'B-1042' } })))).toBe('LK_NOT_FOUND');
    expect(existsSync(dir)).toBe(false);
  });
});

/** A verdict with a FAIL row, a NOT_EVALUATED row and a closed critical exception with a comment. */
function quality(): ReleaseQuality {
  return {
    specTable: {
      verdict: 'FAIL', sha256: H('d'),
      results: [
        { id: 'press.hardness', title: 'Hardness', source: 'in-process samples', limits: '≤ 150 N', limit: { min: 80, max: 150, unit: 'N' }, data: { n: 20, unit: 'N', mean: 131.4, sd: 12.1, min: 102, max: 162, refs: ['IPC-5-01'] }, verdict: 'FAIL', reason: 'max 162 N > 150 N' },
        { id: 'fluidbed.lod', title: 'Loss on drying', source: 'in-process samples', limits: '1.0–2.5 %', limit: { min: 1, max: 2.5, unit: '%' }, data: { n: 0, unit: '%' }, verdict: 'NOT_EVALUATED', reason: 'no LOD sample recorded after drying' },
        { id: 'potency', title: 'Potency (NIR)', source: 'release evidence', limits: '95–105 %', limit: { min: 95, max: 105, unit: '%' }, data: { n: 30, unit: '%', mean: 99.84, sd: 1.12, rsdPct: 1.12, min: 97.9, max: 101.8 }, verdict: 'PASS', reason: 'mean and every result within limits' },
        { id: 'dissolution', title: 'Dissolution Q30', source: 'LIMS', limits: '≥ 80 %', limit: { min: 80, unit: '%' }, data: { n: 1, unit: '%', values: [91.5], refs: ['LIMS-88-1'] }, verdict: 'PASS', reason: 'LIMS-88-1' },
      ],
    },
    exceptions: [
      {
        id: 'exc_9f2c', kind: 'OOS', severity: 'critical', status: 'closed', step: '05 compress.press', title: 'OOS press.Hardness 162 N > 150 N', raisedAt: t0 + 7_200_000,
        closedBy: { user: 'm.rossi', name: 'Dr. Maria Rossi', at: '2026-11-20T11:50:00.000Z', comment: 'punch 7 worn; tablets of 10:02–10:09 segregated and destroyed', deviation: 'DEV-2026-0117' },
      },
      { id: 'exc_a01', kind: 'OOT', severity: 'minor', status: 'closed', title: 'weight trend ± 1.8 % over 15 min', raisedAt: t0 + 3_600_000, closedBy: { user: 'p.bianchi', name: 'Paolo Bianchi', at: '2026-11-20T10:00:00.000Z', comment: 'fill depth corrected' } },
    ],
    reconciliation: { ok: true, lines: [{ name: 'tablets (units)', expected: 300000, actual: 299088, diff: -912, ok: true }] },
  };
}

describe('release package: page 1 is the verdict', () => {
  let qpkg: ReleasePackage;
  const text1 = (pdf: Buffer): string => pdfPages(pdf)[0]!;
  beforeAll(() => {
    qpkg = writeReleasePackage(store, join(t.dir, 'with-quality', 'run_7f3a'), releaseInput({ quality: quality() }));
  });

  it('the schema accepts a quality section and release.json carries it as given', () => {
    const input = releaseInput({ quality: quality() });
    expect(parseReleaseInput(input).quality).toEqual(quality());
    const rec = JSON.parse(readFileSync(qpkg.jsonFile, 'utf8')) as ReleaseRecord;
    expect(rec.input.quality).toEqual(quality());
  });

  it('refuses a NaN, an unknown key or a table that reads as a pass it is not, naming the path (LK_VALIDATION)', () => {
    const refused = (q: unknown): LkError => {
      try {
        parseReleaseInput({ ...releaseInput(), quality: q });
      } catch (e) {
        expect(e).toBeInstanceOf(LkError);
        expect((e as LkError).code).toBe('LK_VALIDATION');
        return e as LkError;
      }
      throw new Error('accepted');
    };
    const nan = quality();
    nan.specTable.results[0]!.data.mean = Number.NaN;
    expect(refused(nan).message).toContain('quality.specTable.results.0.data.mean');
    const inf = quality();
    inf.reconciliation!.lines[0]!.diff = Number.POSITIVE_INFINITY;
    expect(refused(inf).message).toContain('quality.reconciliation.lines.0.diff');
    const extra = quality() as unknown as { exceptions: Record<string, unknown>[] };
    extra.exceptions[0]!['evidence'] = 'x';
    expect(refused(extra).message).toMatch(/quality\.exceptions\.0.*evidence/);
    const extraRow = quality() as unknown as { specTable: { results: { data: Record<string, unknown> }[] } };
    extraRow.specTable.results[1]!.data['median'] = 2;
    expect(refused(extraRow).message).toMatch(/quality\.specTable\.results\.1\.data.*median/);
    const falsePass = quality();
    falsePass.specTable.verdict = 'PASS';
    expect(refused(falsePass).message).toContain('quality.specTable.verdict');
    const emptyPass: ReleaseQuality = { ...quality(), specTable: { results: [], verdict: 'PASS', sha256: H('d') } };
    expect(refused(emptyPass).message).toContain('quality.specTable.verdict');
    const silentClose = quality();
    delete silentClose.exceptions[0]!.closedBy;
    expect(refused(silentClose).message).toContain('quality.exceptions.0.closedBy');
    const noComment = quality();
    noComment.exceptions[0]!.closedBy!.comment = ' ';
    expect(refused(noComment).message).toContain('quality.exceptions.0.closedBy.comment');
    const badRec = quality();
    badRec.reconciliation!.lines[0]!.ok = false;
    expect(refused(badRec).message).toContain('quality.reconciliation.ok');
    // and the package is refused as a whole, writing nothing
    const dir = join(t.dir, 'with-quality', 'refused');
    expect(codeOf(() => writeReleasePackage(store, dir, releaseInput({ quality: nan })))).toBe('LK_VALIDATION');
    expect(existsSync(dir)).toBe(false);
  });

  it('[A11.8] page 1 holds the decision, every specification, every exception, the reconciliation and the signatures; the rest comes after', () => {
    const pdf = readFileSync(qpkg.pdfFile); // compressed, as written for real
    const pages = pdfPages(pdf);
    const p1 = flat(pages[0]!);
    expect(p1).toContain('Batch release report: batch B-1042');
    expect(p1).toContain('Product ir-family-a Decision: RELEASED');
    expect(p1).toContain('Specification verdict: FAIL (4 specifications: 2 pass, 1 fail, 1 not evaluated)');
    // every row: title, limits, data summary, verdict, reason
    for (const row of ['Hardness (in-process samples)', '≤ 150 N', 'n 20, mean 131.4 N, 102–162 N', 'FAIL', 'max 162 N > 150 N',
      'Loss on drying', '1.0–2.5 %', 'no data', 'NOT EVALUATED', 'no LOD sample recorded after drying',
      'Potency (NIR)', 'n 30, mean 99.84 %, 97.9–101.8 %', 'Dissolution Q30', 'value 91.5 %']) expect(p1).toContain(row);
    // the exception with its kind, severity, step, status and who closed it, with comment and deviation
    for (const e of ['OOS', 'critical', '05 compress.press', 'OOS press.Hardness 162 N > 150 N', 'closed by Dr. Maria Rossi (m.rossi) 2026-11-20 11:50:00.000 UTC',
      'punch 7 worn; tablets of 10:02', '10:09 segregated and destroyed', 'deviation DEV-2026-0117', 'weight trend ± 1.8 % over 15 min']) expect(p1).toContain(e);
    expect(p1).toContain('Reconciliation: OK');
    expect(p1).toContain('tablets (units)');
    for (const s of releaseInput().signatures) {
      expect(p1).toContain(`Printed name: ${s.name}`);
      expect(p1).toContain(`User ID: ${s.user}`);
      expect(p1).toContain(`Role: ${s.role}`);
      expect(p1).toContain(`Meaning: ${s.meaning}`);
      expect(p1).toContain(`Date and time of signing: ${s.at.replace('T', ' ').replace('Z', '')} UTC`);
    }
    // the spec table comes first, the record behind it only after the verdict pages
    expect(p1.indexOf('Hardness')).toBeLessThan(p1.indexOf('Exceptions (2)'));
    expect(p1.indexOf('OOS press.Hardness')).toBeLessThan(p1.indexOf('Reconciliation: OK'));
    expect(p1.indexOf('Reconciliation: OK')).toBeLessThan(p1.indexOf('Printed name'));
    for (const later of ['Steps (10)', 'Evidence chain', 'Appendix: genealogy']) expect(p1).not.toContain(later);
    const all = flat(pages.join('\n'));
    expect(all.indexOf('max 162 N > 150 N')).toBeLessThan(all.indexOf('Steps (10)'));
    expect(all.indexOf('Steps (10)')).toBeLessThan(all.indexOf('Appendix: genealogy'));
  });

  it('a package without a quality section says so on page 1, never an implicit pass', () => {
    const p1 = flat(text1(readFileSync(pkg.pdfFile)));
    expect(p1).toContain('No specification evaluation in this package.');
    expect(p1).not.toContain('Specification verdict');
    expect(p1.indexOf('No specification evaluation')).toBeLessThan(p1.indexOf('Printed name'));
  });

  it('[A11.9] [A11.8] page 1 says whether the run\'s audit trail was reviewed before the package: who and which entries, or NOT reviewed; a "reviewed" without a review is refused; times in the site\'s zone beside UTC', () => {
    const review = {
      seq: 140, user: 'm.rossi', name: 'Dr. Maria Rossi', role: 'qa_reviewer', at: '2026-11-20T11:55:00.000Z', meaning: 'Audit trail of batch B-1042, run run_7f3a reviewed (EU GMP Annex 11 §9)',
      comment: 'no findings beyond DEV-2026-0117', entries: 120, first: 3, last: 139, digest: 'a'.repeat(64), recordHash: 'b'.repeat(64), signature: 'c2lnbmF0dXJl', keyId: 'k1',
    };
    const reviewed = writeReleasePackage(store, join(t.dir, 'trail', 'reviewed'), releaseInput({ timezone: 'Europe/Rome', trailReview: { reviewed: true, statement: 'The audit trail of run run_7f3a was reviewed by Dr. Maria Rossi (m.rossi, qa_reviewer)', reviews: [review] } }));
    const p1 = flat(text1(readFileSync(reviewed.pdfFile)));
    expect(p1).toContain('Audit-trail review (EU GMP Annex 11 §9)');
    // a site in Europe/Rome reads its own clock beside the recorded UTC time; release.json stays UTC
    expect(p1).toContain('at 2026-11-20 11:55:00.000 UTC (12:55:00.000 Europe/Rome, UTC+01:00)');
    for (const sg of releaseInput().signatures) expect(p1).toContain(`Date and time of signing: ${sg.at.replace('T', ' ').replace('Z', '')} UTC (`);
    expect(JSON.parse(readFileSync(reviewed.jsonFile, 'utf8')).input.trailReview.reviews[0].at).toBe('2026-11-20T11:55:00.000Z');
    expect(p1).toContain('was reviewed by Dr. Maria Rossi');
    expect(p1).toContain('entries #3–#139 (120)');
    const not = writeReleasePackage(store, join(t.dir, 'trail', 'not'), releaseInput({ trailReview: { reviewed: false, statement: 'The audit trail of run run_7f3a was NOT reviewed before this package was written', reviews: [] } }));
    expect(flat(text1(readFileSync(not.pdfFile)))).toContain('was NOT reviewed before this package was written');
    expect(JSON.parse(readFileSync(not.jsonFile, 'utf8')).input.trailReview).toEqual({ reviewed: false, statement: 'The audit trail of run run_7f3a was NOT reviewed before this package was written', reviews: [] });
    const dir = join(t.dir, 'trail', 'refused');
    expect(codeOf(() => writeReleasePackage(store, dir, releaseInput({ trailReview: { reviewed: true, statement: 'reviewed', reviews: [] } })))).toBe('LK_VALIDATION');
    expect(existsSync(dir)).toBe(false);
  });

  it('"≤" and "–" are text of page 1 (embedded TrueType, decoded through its ToUnicode CMap), not "?"', () => {
    const p1 = text1(readFileSync(qpkg.pdfFile));
    expect(p1).toContain('≤ 150 N');
    expect(p1).toContain('1.0–2.5 %');
    expect(p1).toContain('± 1.8 %');
    expect(p1).not.toContain('?');
    // the uncompressed rendering decodes the same
    const rec = JSON.parse(readFileSync(qpkg.jsonFile, 'utf8')) as ReleaseRecord;
    expect(text1(renderReleasePdf(rec, qpkg.sha256.json, { compress: false }))).toBe(p1);
  });

  it('pdftotext (poppler, an independent reader; .ci/run installs it) reads the same page 1', () => {
    const r = spawnSync('pdftotext', ['-f', '1', '-l', '1', '-enc', 'UTF-8', qpkg.pdfFile, '-'], { encoding: 'utf8' });
    expect(r.status).toBe(0);
    expect(r.stdout).toContain('≤ 150 N');
    expect(r.stdout).toContain('max 162 N > 150 N');
    expect(r.stdout).toContain('NOT');
  });

  it('is PDF/A-2b: the XMP declares part 2 conformance B with title and author, every font is embedded TrueType', () => {
    for (const file of [qpkg.pdfFile, pkg.pdfFile]) {
      const pdf = readFileSync(file);
      expect(pdf.subarray(0, 8).toString('latin1')).toBe('%PDF-1.7');
      const objs = [...pdfObjects(pdf).values()];
      const xmp = objs.find((o) => /\/Type \/Metadata/.test(o.dict))!.stream!.toString('utf8');
      expect(xmp).toMatch(/<pdfaid:part>2<\/pdfaid:part>/);
      expect(xmp).toMatch(/<pdfaid:conformance>B<\/pdfaid:conformance>/);
      expect(xmp).toContain('<rdf:li xml:lang="x-default">Batch release report B-1042</rdf:li>');
      expect(xmp).toContain('<rdf:li>linekeeper</rdf:li>');
      expect(xmp).toContain('<xmp:CreateDate>2026-11-20T12:00:00Z</xmp:CreateDate>');
      const catalog = objs.find((o) => /\/Type \/Catalog/.test(o.dict))!.dict;
      expect(catalog).toMatch(/\/Metadata \d+ 0 R/);
      expect(catalog).toMatch(/\/OutputIntents \[\d+ 0 R\]/);
      const fonts = objs.filter((o) => /\/Type \/Font\b/.test(o.dict)).map((o) => o.dict);
      const descriptors = objs.filter((o) => /\/Type \/FontDescriptor/.test(o.dict)).map((o) => o.dict);
      expect(fonts.filter((f) => /\/Subtype \/Type0/.test(f))).toHaveLength(3);
      for (const f of fonts) expect(f).toMatch(/\/Subtype \/(Type0|CIDFontType2)/); // no Type1 standard font (Helvetica, Courier)
      expect(descriptors).toHaveLength(3);
      for (const d of descriptors) {
        expect(d).toMatch(/\/FontName \/[A-Z]{6}\+DejaVuSans/);
        expect(d).toMatch(/\/FontFile2 \d+ 0 R/);
      }
      expect(pdf.toString('latin1')).not.toMatch(/\/BaseFont \/(Helvetica|Courier|Times)/);
    }
  });

  it('the same record gives the same bytes (the XMP and the document ID included)', () => {
    const json = readFileSync(qpkg.jsonFile);
    const rec = JSON.parse(json.toString('utf8')) as ReleaseRecord;
    const a = renderReleasePdf(rec, sha(json));
    expect(a.equals(readFileSync(qpkg.pdfFile))).toBe(true);
    expect(a.equals(renderReleasePdf(JSON.parse(json.toString('utf8')) as ReleaseRecord, sha(json)))).toBe(true);
    const other = quality();
    other.specTable.results[0]!.reason = 'max 163 N > 150 N';
    expect(a.equals(renderReleasePdf({ ...rec, input: { ...rec.input, quality: other } }, sha(json)))).toBe(false);
  });
});

describe('release package on a damaged trail', () => {
  it('is refused with LK_AUDIT_BROKEN and no folder appears', () => {
    const d = tempDir('lk-release-broken-');
    try {
      const { store: s } = newStore(join(d.dir, 'data'));
      for (let i = 1; i <= 4; i++) s.audit.append(entry(i, T));
      s.audit.checkpoint(T);
      const db = rawDb(join(d.dir, 'data'));
      db.prepare("UPDATE audit_entry SET body = json_set(body, '$.reason', 'nothing to see') WHERE tenant = ? AND seq = 2").run(T);
      db.close();
      const dir = join(d.dir, 'releases', 'run_7f3a');
      expect(codeOf(() => writeReleasePackage(s, dir, releaseInput()))).toBe('LK_AUDIT_BROKEN');
      expect(existsSync(join(d.dir, 'releases'))).toBe(false);
      s.close();
    } finally {
      d.cleanup();
    }
  });
});

describe('release package sealed in a worker thread (the daemon\'s path: release-offload.ts)', () => {
  it('is byte for byte the package written on the caller\'s thread, for the same head and clock', async () => {
    const d = tempDir('lk-release-offload-');
    try {
      const { store: s, clock: c } = newStore(join(d.dir, 'data'));
      for (let i = 1; i <= 6; i++) {
        c.advance(10_000);
        s.audit.append(entry(i, T));
      }
      const here = writeReleasePackage(s, join(d.dir, 'releases', 'here'), releaseInput({ quality: quality() }));
      const there = await writeReleasePackageOffLoop(s, join(d.dir, 'releases', 'there'), releaseInput({ quality: quality() }));
      expect(there.dir).toBe(join(d.dir, 'releases', 'there'));
      expect([there.sha256, there.auditHead, there.checkpoint]).toEqual([here.sha256, here.auditHead, here.checkpoint]);
      for (const f of [RELEASE_FILES.bundle, RELEASE_FILES.json, RELEASE_FILES.pdf]) {
        expect(readFileSync(join(there.dir, f)).equals(readFileSync(join(here.dir, f))), f).toBe(true);
      }
      // the same refusals, raised on the caller's thread before anything is signed or written
      await expect(writeReleasePackageOffLoop(s, there.dir, releaseInput())).rejects.toMatchObject({ code: 'LK_CONFLICT' });
      // and a damaged trail, found in the worker, comes back as the same code; no folder appears
      s.audit.append(entry(7, T));
      const db = rawDb(join(d.dir, 'data'));
      db.prepare("UPDATE audit_entry SET body = json_set(body, '$.reason', 'nothing to see') WHERE tenant = ? AND seq = 2").run(T);
      db.close();
      const broken = join(d.dir, 'releases', 'broken');
      await expect(writeReleasePackageOffLoop(s, broken, releaseInput())).rejects.toMatchObject({ code: 'LK_AUDIT_BROKEN' });
      expect(existsSync(broken)).toBe(false);
      expect(readdirSync(join(d.dir, 'releases')).sort()).toEqual(['here', 'there']);
      s.close();
    } finally {
      d.cleanup();
    }
  }, 60_000);
});
