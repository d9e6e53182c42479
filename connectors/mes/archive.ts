/**
 * The folder MES's archive: a batch record a run ingested leaves the inbox for
 * `<dataDir>/mes/archive/<tenant>/<batch>.<sha256-12>.json`, byte for byte,
 * named by the SHA-256 of its bytes; a record that arrives for a batch that
 * is closed already, with other bytes, goes to
 * `<dataDir>/mes/refused/<tenant>/<batch>.<sha256-12>.json` and is never read
 * as the batch's record. Both moves are copies that appear whole (a hidden
 * temporary, fsync, rename, fsync of the folder) before the inbox file is
 * removed, so a crash in between leaves the record in both places, never in
 * neither. The run engine decides when (batch-closure.ts) and audits each move
 * with the hashes; this module only moves files.
 */
import { closeSync, fsyncSync, mkdirSync, openSync, readdirSync, renameSync, unlinkSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { BATCH_ID_RE } from '../../src/domain/batch-record.js';
import { LkError } from '../../src/errors.js';
import { assertTenantId, readDocument } from '../inbox/files.js';
import { fsyncPath } from '../../src/files.js';

/** A record kept in the archive (or the refused folder). */
export interface KeptRecord {
  /** Relative to `<dataDir>/mes`, e.g. `archive/acme-pharma/B-1042.3f1c…9a.json`. */
  readonly file: string;
  /** SHA-256 (hex) of the record's bytes. */
  readonly sha256: string;
}

/** What the run engine needs of the MES beyond reading: keeping ingested records and refusing changed ones. */
export interface MesIntake {
  /** The archived records of a batch (normally one), oldest name first. */
  archived(tenant: string, batch: string): KeptRecord[];
  /**
   * Copy the inbox record of a batch into the archive (idempotent: the same bytes keep the same name).
   * @throws LkError LK_NOT_FOUND when the inbox has no such record; LK_BATCH_RECORD_INVALID when it cannot be read.
   */
  archive(tenant: string, batch: string): KeptRecord;
  /** Remove the inbox record of a batch when its bytes still hash to `sha256` (a newer file is left). True when removed. */
  removeFromInbox(tenant: string, batch: string, sha256: string): boolean;
  /** The inbox record's SHA-256, or null when there is none (or it cannot be read as a regular file). */
  inboxSha(tenant: string, batch: string): string | null;
  /** Move the inbox record of a batch into the refused folder (when its bytes still hash to `sha256`). */
  refuse(tenant: string, batch: string, sha256: string): KeptRecord | null;
}

const short = (sha: string): string => sha.slice(0, 12);

/** Write `bytes` as `dir/name`, appearing whole: hidden temporary, fsync, rename, fsync of the folder. */
function writeWhole(dir: string, name: string, bytes: Buffer): void {
  mkdirSync(dir, { recursive: true });
  const tmp = join(dir, `.${name}.tmp-${process.pid}`);
  const fd = openSync(tmp, 'w', 0o640);
  try {
    writeSync(fd, bytes);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  renameSync(tmp, join(dir, name));
  fsyncPath(dir);
}

function checkIds(tenant: string, batch: string): void {
  assertTenantId(tenant);
  if (!BATCH_ID_RE.test(batch)) throw new LkError('LK_VALIDATION', `${JSON.stringify(batch).slice(0, 80)} is not a batch id`, { field: 'batch' });
}

/** The intake of a folder MES rooted at `<dataDir>/mes` (inbox, archive, refused). */
export function folderIntake(mesRoot: string): MesIntake {
  const inboxFile = (tenant: string, batch: string): string => join(mesRoot, 'inbox', tenant, `${batch}.json`);
  const kept = (folder: 'archive' | 'refused', tenant: string, batch: string): KeptRecord[] => {
    const dir = join(mesRoot, folder, tenant);
    let names: string[];
    try {
      names = readdirSync(dir);
    } catch {
      return [];
    }
    const out: KeptRecord[] = [];
    for (const n of names.sort()) {
      if (!n.startsWith(`${batch}.`) || !n.endsWith('.json') || n.startsWith('.')) continue;
      const r = readDocument(join(dir, n));
      if (r.ok) out.push({ file: `${folder}/${tenant}/${n}`, sha256: r.sha256 });
    }
    return out;
  };
  const inboxBytes = (tenant: string, batch: string): { bytes: Buffer; sha256: string } | null => {
    const r = readDocument(inboxFile(tenant, batch));
    return r.ok ? { bytes: r.bytes, sha256: r.sha256 } : null;
  };
  const moveOut = (folder: 'archive' | 'refused', tenant: string, batch: string, sha256: string): KeptRecord | null => {
    checkIds(tenant, batch);
    const cur = inboxBytes(tenant, batch);
    if (!cur || cur.sha256 !== sha256) return null;
    const name = `${batch}.${short(sha256)}.json`;
    writeWhole(join(mesRoot, folder, tenant), name, cur.bytes);
    unlinkSync(inboxFile(tenant, batch));
    fsyncPath(join(mesRoot, 'inbox', tenant));
    return { file: `${folder}/${tenant}/${name}`, sha256 };
  };
  return {
    archived: (tenant, batch) => {
      checkIds(tenant, batch);
      return kept('archive', tenant, batch);
    },
    archive(tenant, batch) {
      checkIds(tenant, batch);
      const r = readDocument(inboxFile(tenant, batch));
      if (!r.ok) {
        if (r.reason === 'missing') throw new LkError('LK_NOT_FOUND', `no batch record ${batch} for tenant ${tenant} in the MES inbox`, { tenant, batch });
        throw new LkError('LK_BATCH_RECORD_INVALID', `${tenant}/${batch}.json: ${r.message}`, { tenant, batch });
      }
      const name = `${batch}.${short(r.sha256)}.json`;
      const have = kept('archive', tenant, batch).find((k) => k.sha256 === r.sha256);
      if (!have) writeWhole(join(mesRoot, 'archive', tenant), name, r.bytes);
      return have ?? { file: `archive/${tenant}/${name}`, sha256: r.sha256 };
    },
    removeFromInbox(tenant, batch, sha256) {
      checkIds(tenant, batch);
      const cur = inboxBytes(tenant, batch);
      if (!cur || cur.sha256 !== sha256) return false;
      unlinkSync(inboxFile(tenant, batch));
      fsyncPath(join(mesRoot, 'inbox', tenant));
      return true;
    },
    inboxSha(tenant, batch) {
      checkIds(tenant, batch);
      return inboxBytes(tenant, batch)?.sha256 ?? null;
    },
    refuse: (tenant, batch, sha256) => moveOut('refused', tenant, batch, sha256),
  };
}
