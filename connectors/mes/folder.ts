/**
 * The embedded default MES: an inbox folder, `<dataDir>/mes/inbox/<tenant>/<batch>.json`,
 * one batch record per file, written there by a person or a site export.
 * An invalid record is listed as invalid and left where it is, unchanged.
 * Write a record atomically (a hidden temporary name in the same folder, then
 * rename): hidden files are not read. Once a run has ingested a record it
 * leaves the inbox for `<dataDir>/mes/archive/` with its hash (archive.ts);
 * `read` still serves it from there, so the run's own steps read what it
 * started with.
 */
import { mkdirSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { BATCH_ID_RE, type BatchRecord, batchRecordSiteIssues, parseBatchRecord } from '../../src/domain/batch-record.js';
import type { SiteConfig } from '../../src/config/schema.js';
import { LkError } from '../../src/errors.js';
import { assertTenantId, documentNames, isRealDir, parseJson, readDocument, tenantField } from '../inbox/files.js';
import { folderLifecycle } from '../inbox/source.js';
import { folderIntake, type MesIntake } from './archive.js';
import type { MesChange, MesListing, MesSource } from './source.js';

export interface FolderMesOptions {
  /** Interval of the poll that always runs beside fs.watch, ms (default 2000). */
  readonly pollMs?: number;
  /** Use fs.watch to notice changes before the next poll (default true). */
  readonly fsWatch?: boolean;
  /** When given, a record must also fit this site (`checkBatchRecordAgainstSite`) to be valid. */
  readonly site?: SiteConfig;
  /** Errors of a watch (a failed scan, a throwing listener); default: a process warning. */
  readonly onError?: (err: unknown) => void;
}

/** One record with the digest of the exact bytes it was parsed from (for the audit entry of its ingestion). */
export interface MesEntry {
  readonly record: BatchRecord;
  readonly file: string;
  readonly sha256: string;
}

export interface FolderMes extends MesSource {
  /** Absolute path of the inbox (`<dataDir>/mes/inbox`). */
  readonly inboxDir: string;
  /** {@link MesSource.read} with the file and the SHA-256 of the bytes read; throws the same errors. */
  readEntry(tenant: string, batch: string): MesEntry;
  /** The archive of ingested records and the folder of refused ones (archive.ts). */
  readonly intake: MesIntake;
}

/** The inbox folder of a data directory. */
export function mesInboxDir(dataDir: string): string {
  return join(dataDir, 'mes', 'inbox');
}

type Loaded = { readonly ok: true; readonly entry: MesEntry } | { readonly ok: false; readonly error: LkError; readonly sha256: string | null };

function assertBatchId(batch: unknown): asserts batch is string {
  if (typeof batch !== 'string' || !BATCH_ID_RE.test(batch)) {
    throw new LkError('LK_VALIDATION', `${JSON.stringify(String(batch)).slice(0, 80)} is not a batch id`, { field: 'batch' });
  }
}

/** Read and validate one record file; every failure as a value, so `list` can report it and `read` throw it. */
function load(root: string, tenant: string, batch: string, site: SiteConfig | undefined, archived?: string): Loaded {
  const file = archived ?? `${tenant}/${batch}.json`;
  const fail = (code: 'LK_NOT_FOUND' | 'LK_BATCH_RECORD_INVALID', message: string, sha256: string | null = null, detail?: Record<string, unknown>): Loaded => ({
    ok: false,
    error: new LkError(code, code === 'LK_NOT_FOUND' ? message : `${file}: ${message}`, { tenant, batch, file, ...detail }),
    sha256,
  });
  if (!archived && !isRealDir(join(root, tenant))) return fail('LK_NOT_FOUND', `no batch record ${batch} for tenant ${tenant}`);
  const r = readDocument(archived ? join(dirname(root), archived) : join(root, tenant, `${batch}.json`));
  if (!r.ok) return r.reason === 'missing' ? fail('LK_NOT_FOUND', `no batch record ${batch} for tenant ${tenant}`) : fail('LK_BATCH_RECORD_INVALID', r.message);
  const json = parseJson(r.bytes);
  if (!json.ok) return fail('LK_BATCH_RECORD_INVALID', json.message, r.sha256);
  // R1 first: a document that names another tenant is refused before anything of its content is reported
  if (tenantField(json.value) !== tenant) {
    return fail('LK_BATCH_RECORD_INVALID', `tenant: the record does not name the tenant of its folder (${tenant})`, r.sha256, { issues: [{ path: 'tenant', message: 'not the tenant of the folder' }] });
  }
  let record: BatchRecord;
  try {
    record = parseBatchRecord(json.value, file);
  } catch (e) {
    if (LkError.is(e)) return { ok: false, error: e, sha256: r.sha256 };
    throw e;
  }
  if (record.batch !== batch) {
    return fail('LK_BATCH_RECORD_INVALID', `batch: the record is batch ${record.batch}, its file name says ${batch}`, r.sha256, { issues: [{ path: 'batch', message: 'not the batch of the file name' }] });
  }
  if (site) {
    const issues = batchRecordSiteIssues(record, site);
    if (issues.length > 0) {
      const more = issues.length > 1 ? ` (and ${issues.length - 1} more)` : '';
      return fail('LK_BATCH_RECORD_INVALID', `${issues[0]!.path}: ${issues[0]!.message}${more}`, r.sha256, { issues });
    }
  }
  return { ok: true, entry: { record, file, sha256: r.sha256 } };
}

/**
 * Open the inbox of a data directory (created when missing).
 * @throws Error from the file system when the inbox cannot be created.
 */
export function openFolderMes(dataDir: string, opts: FolderMesOptions = {}): FolderMes {
  const root = mesInboxDir(dataDir);
  mkdirSync(root, { recursive: true });
  const life = folderLifecycle(root, 'MES inbox', opts);
  const intake = folderIntake(dirname(root));
  const open = life.assertOpen;

  const readEntry = (tenant: string, batch: string): MesEntry => {
    open();
    assertTenantId(tenant);
    assertBatchId(batch);
    const l = load(root, tenant, batch, opts.site);
    if (l.ok) return l.entry;
    // an ingested record left the inbox for the archive: its run (and a resume of it) reads it there
    if (l.error.code === 'LK_NOT_FOUND') {
      const newest = intake.archived(tenant, batch).map((k) => ({ k, at: statSync(join(dirname(root), k.file)).mtimeMs })).sort((a, b) => a.at - b.at).at(-1);
      if (newest) {
        const a = load(root, tenant, batch, opts.site, newest.k.file);
        if (!a.ok) throw a.error;
        return a.entry;
      }
    }
    throw l.error;
  };

  return {
    inboxDir: root,
    intake,
    list(tenant: string): MesListing[] {
      open();
      assertTenantId(tenant);
      return documentNames(root, tenant).map((name): MesListing => {
        const batch = name.slice(0, -'.json'.length);
        const file = `${tenant}/${name}`;
        if (!BATCH_ID_RE.test(batch)) {
          const r = readDocument(join(root, tenant, name));
          return { batch, tenant, file, sha256: r.ok ? r.sha256 : null, valid: false, error: `${file}: the file name is not <batch id>.json` };
        }
        const l = load(root, tenant, batch, opts.site);
        return l.ok ? { batch, tenant, file, sha256: l.entry.sha256, valid: true } : { batch, tenant, file, sha256: l.sha256, valid: false, error: l.error.message };
      });
    },
    read: (tenant, batch) => readEntry(tenant, batch).record,
    readEntry,
    watch(onChange: (e: MesChange) => void): () => void {
      return life.watch((c) => onChange({ tenant: c.tenant, batch: c.name.slice(0, -'.json'.length), kind: c.kind }));
    },
    close: life.close,
  };
}
