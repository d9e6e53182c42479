/**
 * The signed reports of a validation (GAMP 5, 21 CFR 11.10(a), EU GMP Annex 11 §4): `validate iq`, `validate oq`
 * and `config report` each write one record — what was checked, against which requirement ids, with what result,
 * on which installed version and machine, signed by whom — as canonical JSON signed with the site's Ed25519 key
 * (the key that signs audit checkpoints and releases), beside a PDF/A rendering of the same record for people.
 *
 * The signature is a Part 11 manifestation (11.50): the person is re-authenticated with their password when the
 * report is made (11.200), their printed name, user id, role, meaning and the time are inside the signed record,
 * and the record's hash goes on the site chain of the audit trail, so a report cannot be made, replaced or
 * back-dated without the trail saying so. A report verifies offline with `linekeeper validate verify` or with the
 * standalone tools/verify-audit-bundle.mjs, which needs nothing of linekeeper.
 */
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { arch, hostname, platform, release } from 'node:os';
import { basename, join } from 'node:path';
import { PdfReport, RED, finishPdf, openPdfA, type Cell } from '../audit/pdfa.js';
import { canonicalJson, SITE_TENANT, type Json } from '../audit/entry.js';
import { parsePublicKey, signBytes, verifyBytes, type PublicSiteKey, type SiteKey } from '../audit/keys.js';
import { printedTime } from '../domain/site-time.js';
import { LkError } from '../errors.js';
import { fsyncPath, writeNewFile } from '../files.js';
import type { Store } from '../store/store.js';
import { INSTALL_ROOT } from '../version.js';

/** What every signed report says it is (the standalone verifier recognises a report by it). */
export const REPORT_FORMAT = 'linekeeper.signed-report';
export type ReportKind = 'iq' | 'oq' | 'config';
export type CheckStatus = 'pass' | 'fail' | 'warn' | 'not_applicable';

/** One check of a report, tied to the requirements (validation/requirements.yaml) it is evidence for. */
export interface ReportCheck {
  id: string;
  title: string;
  requirements: string[];
  status: CheckStatus;
  /** What was found, in words. */
  detail: string;
  /** Figures and identifiers a reviewer may want to compare with the next report. */
  evidence?: { [key: string]: Json };
}

/** The person who made the report, re-authenticated when it was made (21 CFR 11.50, 11.200). */
export interface ReportSigner {
  user: string;
  name: string;
  role: string;
  meaning: string;
  /** The id of the entry of the site's controlled list of meanings (purpose `validation_report`). */
  meaningId: string;
  comment?: string;
  /** ISO 8601 UTC with milliseconds. */
  timestamp: string;
}

/** The installed product the report is about: its version and, for an installed package, its manifest's hash. */
export interface ProductInfo {
  name: string;
  version: string;
  /** BUILDINFO of an installed package (null in a source checkout). */
  build: { [key: string]: Json } | null;
  /** SHA-256 of the package's MANIFEST.json (null in a source checkout): names the exact installed files. */
  manifestSha256: string | null;
  /** Where the product is installed (the folder holding its package.json). */
  root: string;
}

export interface MachineInfo {
  hostname: string;
  platform: string;
  osRelease: string;
  arch: string;
  node: string;
  abi: string;
}

export interface ReportRecord {
  format: typeof REPORT_FORMAT;
  version: 1;
  kind: ReportKind;
  title: string;
  site: string;
  /** The site's IANA time zone, for the people reading the PDF; every time in the record is UTC. */
  timezone: string;
  product: ProductInfo;
  machine: MachineInfo;
  startedAt: string;
  endedAt: string;
  /** fail when any check failed; pass otherwise (warnings are shown, not hidden). */
  result: 'pass' | 'fail';
  summary: string;
  checks: ReportCheck[];
  /** The kind's own content (the configuration of a config report, the requirement trace of an OQ). */
  data: { [key: string]: Json };
  signer: ReportSigner;
}

export interface SignedReport {
  record: ReportRecord;
  /** SHA-256 (hex) of the record's canonical JSON (RFC 8785). */
  recordHash: string;
  /** Base64 Ed25519 signature of the record's canonical JSON by the site key. */
  signature: string;
  keyId: string;
  /** The site's public key (PEM), so the report verifies alone; pin it with `--key` to trust it. */
  publicKey: string;
}

/** Hex SHA-256 of text or bytes. */
export const sha256Hex = (b: string | Buffer): string => createHash('sha256').update(b).digest('hex');

/** The product installed at `root` (the folder of its package.json): version, BUILDINFO and MANIFEST.json hash. */
export function productAt(root: string): ProductInfo {
  const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { name: string; version: string };
  let build: ProductInfo['build'] = null;
  let manifestSha256: string | null = null;
  try {
    build = JSON.parse(readFileSync(join(root, 'BUILDINFO'), 'utf8')) as { [key: string]: Json };
  } catch {
    // a source checkout has no BUILDINFO
  }
  try {
    manifestSha256 = sha256Hex(readFileSync(join(root, 'MANIFEST.json')));
  } catch {
    // nor a MANIFEST.json
  }
  return { name: pkg.name, version: pkg.version, build, manifestSha256, root };
}

/** The folder linekeeper runs from (src/version.ts). */
export function installRoot(): string {
  return INSTALL_ROOT;
}

export function machineNow(): MachineInfo {
  return { hostname: hostname(), platform: platform(), osRelease: release(), arch: arch(), node: process.versions.node, abi: process.versions.modules };
}

/** pass unless a check failed — and never for a report that checked nothing. */
export function resultOf(checks: readonly ReportCheck[]): 'pass' | 'fail' {
  return checks.length === 0 || checks.some((c) => c.status === 'fail') ? 'fail' : 'pass';
}

/** Sign `record` with the site key. */
export function signReport(key: SiteKey, record: ReportRecord): SignedReport {
  const text = canonicalJson(record);
  return { record, recordHash: sha256Hex(text), signature: signBytes(key, text), keyId: key.keyId, publicKey: key.publicPem };
}

export interface ReportVerdict {
  ok: boolean;
  problems: string[];
  keyId: string | null;
}

/**
 * Whether `doc` is a report signed over exactly its record, by the key it carries — and, when `pinned` is given, by
 * that key (the site's public key an auditor holds). Never throws on garbage: a problem is a line of the verdict.
 */
export function verifyReport(doc: unknown, pinned?: PublicSiteKey): ReportVerdict {
  const problems: string[] = [];
  const s = doc as Partial<SignedReport> | null;
  if (!s || typeof s !== 'object' || !s.record || typeof s.record !== 'object') return { ok: false, problems: ['not a signed report (no record)'], keyId: null };
  if (s.record.format !== REPORT_FORMAT) problems.push(`record.format is ${JSON.stringify(s.record.format)}, not ${REPORT_FORMAT}`);
  let key: PublicSiteKey | null = null;
  try {
    key = parsePublicKey(String(s.publicKey ?? ''), 'the report\'s publicKey');
  } catch (err) {
    problems.push((err as Error).message);
  }
  if (key && key.keyId !== s.keyId) problems.push(`keyId ${String(s.keyId)} is not the id of the key the report carries (${key.keyId})`);
  if (pinned && key && key.keyId !== pinned.keyId) problems.push(`signed by key ${key.keyId}, not by the pinned key ${pinned.keyId}`);
  let text: string | null = null;
  try {
    text = canonicalJson(s.record);
  } catch (err) {
    problems.push(`record is not canonicalisable JSON: ${(err as Error).message}`);
  }
  if (text !== null) {
    if (sha256Hex(text) !== s.recordHash) problems.push(`recordHash does not match the record (the record was changed after signing): ${sha256Hex(text)} ≠ ${String(s.recordHash)}`);
    if (key && !verifyBytes(key, text, s.signature)) problems.push('the Ed25519 signature does not verify over the record');
  }
  return { ok: problems.length === 0, problems, keyId: key?.keyId ?? null };
}

/**
 * Put the report on the site chain of the audit trail (its hash, kind, result and who signed), so a report can be
 * neither made nor replaced without the trail knowing. Returns the entry's seq.
 */
export function recordReport(store: Store, s: SignedReport, files: { json: string; pdf: string }): number {
  const r = s.record;
  const e = store.audit.append({
    tenant: SITE_TENANT, actor: r.signer.user, kind: 'validation', action: `validation.${r.kind}`,
    args: { kind: r.kind, meaningId: r.signer.meaningId, version: r.product.version, manifestSha256: r.product.manifestSha256, machine: r.machine.hostname, files: { json: basename(files.json), pdf: basename(files.pdf) } },
    result: { result: r.result, recordHash: s.recordHash, keyId: s.keyId, checks: r.checks.length, failed: r.checks.filter((c) => c.status === 'fail').length },
    signature: { user: r.signer.user, name: r.signer.name, meaning: r.signer.meaning, time: r.signer.timestamp, value: s.signature },
    ...(r.signer.comment ? { reason: r.signer.comment } : {}),
  });
  return e.seq;
}

/** The report's file names in `dir`: `linekeeper-<kind>-<version>-<UTC time to the millisecond>.json|.pdf`. */
export function reportFiles(dir: string, r: ReportRecord): { json: string; pdf: string } {
  const stamp = r.signer.timestamp.replace(/[-:]/g, '');
  const base = join(dir, `linekeeper-${r.kind}-${r.product.version}-${stamp}`);
  return { json: `${base}.json`, pdf: `${base}.pdf` };
}

/**
 * Write the signed JSON and its PDF into `dir` (created), never over an existing file, and keep them only if `record`
 * (the report's entry on the audit trail) succeeds: both are written under staging names first, `record` runs, then
 * they take their names. A report is never on disk without its entry on the trail; when `record` throws, neither
 * file stays. Returns the files and what `record` returned.
 */
export function writeReport<T>(dir: string, s: SignedReport, pdf: Buffer, record: (files: { json: string; pdf: string }) => T): { files: { json: string; pdf: string }; recorded: T } {
  mkdirSync(dir, { recursive: true });
  const files = reportFiles(dir, s.record);
  for (const f of [files.json, files.pdf]) if (existsSync(f)) throw new LkError('LK_CONFLICT', `${f} exists; a report is never overwritten`);
  const staged = { json: `${files.json}.staging`, pdf: `${files.pdf}.staging` };
  try {
    writeNewFile(staged.json, Buffer.from(`${JSON.stringify(s, null, 2)}\n`, 'utf8'), 0o444);
    writeNewFile(staged.pdf, pdf, 0o444);
    const recorded = record(files);
    renameSync(staged.json, files.json);
    renameSync(staged.pdf, files.pdf);
    fsyncPath(dir);
    return { files, recorded };
  } finally {
    rmSync(staged.json, { force: true });
    rmSync(staged.pdf, { force: true });
  }
}

/** A check's status in words, as reports and the CLI print it. */
export const STATUS_WORDS: Record<CheckStatus, string> = { pass: 'PASS', fail: 'FAIL', warn: 'WARN', not_applicable: 'N/A' };

/** Extra sections a report kind prints after its checks (the configuration, the requirement trace). */
export type ReportSections = (r: PdfReport, data: ReportRecord['data']) => void;

/**
 * The PDF/A rendering of a signed report: the verdict first (a failed check is in red and in words), the product and
 * machine, the signature's manifestation, every check with its requirements, then the kind's own sections and the
 * hashes that tie the paper to the signed JSON.
 */
export function renderReportPdf(s: SignedReport, o: { compress?: boolean; sections?: ReportSections } = {}): Buffer {
  const r0 = s.record;
  const doc = openPdfA({ title: r0.title, createdAt: new Date(r0.signer.timestamp), ...(o.compress !== undefined ? { compress: o.compress } : {}) });
  const r = new PdfReport(doc, r0.timezone);
  const failed = r0.checks.filter((c) => c.status === 'fail');
  r.line(r0.title, { bold: true, size: 16 });
  r.line(`Result: ${r0.result === 'pass' ? 'PASS' : 'FAIL'} — ${r0.summary}`, { bold: true, size: 12, ...(r0.result === 'fail' ? { color: RED } : {}) });
  if (failed.length > 0) r.line(`Failed: ${failed.map((c) => c.id).join(', ')}`, { bold: true, color: RED });
  r.line(`Site ${r0.site}   Product ${r0.product.name} ${r0.product.version}   Started ${printedTime(r0.startedAt, r0.timezone)}   Ended ${printedTime(r0.endedAt, r0.timezone)}`);
  r.line(`Machine ${r0.machine.hostname} (${r0.machine.platform} ${r0.machine.osRelease}, ${r0.machine.arch}), Node ${r0.machine.node} (ABI ${r0.machine.abi})`);
  r.exact('Package manifest (SHA-256 of MANIFEST.json)', r0.product.manifestSha256 ?? 'none: not an installed package (a source checkout)');

  r.heading('Electronic signature (21 CFR 11.50)');
  r.line(`Printed name: ${r0.signer.name}`);
  r.line(`User ID: ${r0.signer.user}`);
  r.line(`Role: ${r0.signer.role}`);
  r.line(`Meaning: ${r0.signer.meaning} (${r0.signer.meaningId})`);
  if (r0.signer.comment) r.line(`Comment: ${r0.signer.comment}`);
  r.line(`Date and time of signing: ${printedTime(r0.signer.timestamp, r0.timezone)}`);
  r.exact('Signed record (SHA-256 of its canonical JSON)', s.recordHash);
  r.exact(`Signature (Ed25519, key ${s.keyId})`, s.signature);

  r.heading(`Checks (${r0.checks.length})`);
  r.table(['Check', 'Requirements', 'Result', 'What was found'], [120, 90, 40, '*'], r0.checks.map((c): Cell[] => {
    const cells: Cell[] = [`${c.id}: ${c.title}`, c.requirements.join(', ') || '-', STATUS_WORDS[c.status], c.detail];
    return c.status === 'fail' ? cells.map((x) => ({ text: typeof x === 'string' ? x : x.text, color: RED, bold: true })) : cells;
  }));
  o.sections?.(r, r0.data);
  r.heading('How to verify this report');
  r.line('The signed record is the JSON file beside this PDF. Offline, without linekeeper: node verify-audit-bundle.mjs <report>.json --key <site public key>.pem');
  r.line('With linekeeper: linekeeper validate verify <report>.json --key <site public key>.pem');
  return finishPdf(doc, `${r0.kind} report`);
}
