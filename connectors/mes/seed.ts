/**
 * Seed an empty MES inbox with the sample batch records shipped in
 * `config/batches/<tenant>/<batch>.json`, so the embedded default site has
 * something to run on first start.
 */
import { linkSync, mkdirSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { BATCH_ID_RE, parseBatchRecord } from '../../src/domain/batch-record.js';
import { LkError } from '../../src/errors.js';
import { documentNames, isRealDir, parseJson, readDocument, tenantDirs } from '../inbox/files.js';
import { mesInboxDir } from './folder.js';

export interface SeededRecord {
  readonly tenant: string;
  readonly batch: string;
  /** Relative to the inbox, e.g. `acme-pharma/B-1042.json`. */
  readonly file: string;
}

/**
 * Copy the sample records into the inbox of `dataDir` when neither the inbox
 * nor the archive of ingested records holds a record at all (any tenant);
 * otherwise copy nothing, so a record a person removed, or a run ingested,
 * does not come back at the next start. Every sample is
 * validated before anything is copied, and each copy appears atomically and
 * never replaces a file (hard link of a hidden temporary: fails on an
 * existing name, which is then left alone). Returns what it copied.
 * @throws LkError(LK_NOT_FOUND) when `samplesDir` is not a folder;
 *   LK_BATCH_RECORD_INVALID when a sample is invalid or its tenant/batch disagree with its path.
 */
export function seedInbox(dataDir: string, samplesDir: string): SeededRecord[] {
  if (!isRealDir(samplesDir)) throw new LkError('LK_NOT_FOUND', 'sample batch record folder not found', { samplesDir });
  const inbox = mesInboxDir(dataDir);
  mkdirSync(inbox, { recursive: true });
  if (tenantDirs(inbox).some((t) => documentNames(inbox, t).length > 0)) return [];
  const archive = join(inbox, '..', 'archive');
  if (isRealDir(archive) && tenantDirs(archive).some((t) => documentNames(archive, t).length > 0)) return [];

  const samples: { tenant: string; batch: string; file: string; bytes: Buffer }[] = [];
  for (const tenant of tenantDirs(samplesDir)) {
    for (const name of documentNames(samplesDir, tenant)) {
      const batch = name.slice(0, -'.json'.length);
      const file = `${tenant}/${name}`;
      const bad = (message: string): LkError => new LkError('LK_BATCH_RECORD_INVALID', `${file}: ${message}`, { file });
      if (!BATCH_ID_RE.test(batch)) throw bad('the file name is not <batch id>.json');
      const r = readDocument(join(samplesDir, tenant, name));
      if (!r.ok) throw bad(r.message);
      const json = parseJson(r.bytes);
      if (!json.ok) throw bad(json.message);
      const record = parseBatchRecord(json.value, file);
      if (record.tenant !== tenant) throw bad(`tenant: the record does not name the tenant of its folder (${tenant})`);
      if (record.batch !== batch) throw bad(`batch: the record is batch ${record.batch}, its file name says ${batch}`);
      samples.push({ tenant, batch, file, bytes: r.bytes });
    }
  }

  const copied: SeededRecord[] = [];
  for (const s of samples) {
    const dir = join(inbox, s.tenant);
    mkdirSync(dir, { recursive: true });
    const target = join(dir, `${s.batch}.json`);
    const tmp = join(dir, `.${s.batch}.json.seed-${process.pid}`);
    writeFileSync(tmp, s.bytes, { flag: 'w' });
    try {
      if (createOnly(tmp, target, s.bytes)) copied.push({ tenant: s.tenant, batch: s.batch, file: s.file });
    } finally {
      unlinkSync(tmp);
    }
  }
  return copied;
}

/** Create `target` with the bytes of `tmp` unless it exists; false when it existed. */
function createOnly(tmp: string, target: string, bytes: Buffer): boolean {
  try {
    linkSync(tmp, target);
    return true;
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'EEXIST') return false;
    if (code !== 'EPERM' && code !== 'ENOTSUP' && code !== 'EOPNOTSUPP') throw e;
  }
  // a file system without hard links: exclusive create still never replaces a file
  try {
    writeFileSync(target, bytes, { flag: 'wx' });
    return true;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw e;
  }
}
