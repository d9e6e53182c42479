/**
 * What the run engine needs of a manufacturing execution system: the batch
 * records of a tenant, one record by batch id, and word when they change.
 *
 * The embedded default is a watched inbox folder ({@link openFolderMes} in
 * `./folder.ts`). A site MES plugs in behind the same interface: a B2MML /
 * ISA-95 import would map the MES's `MasterRecipe` / `ProductionSchedule`
 * documents (or an `OperationsSchedule` pulled over its API) to the contract's
 * JSON shape — product and tooling from the material and equipment
 * specifications, `master_recipe` from the `ParameterSpecification`s of the
 * segments mapped to `<equipment>.<Tag>` ids, `specifications` from the
 * quality parameters — and hand each mapped document to `parseBatchRecord`
 * (and `checkBatchRecordAgainstSite`), so a site MES gets exactly the
 * validation the folder gets. Its `list` reports documents that fail mapping
 * or validation as `valid: false` instead of dropping them, its `read` keeps
 * the tenant check (R1), and its `watch` turns MES notifications (or a poll)
 * into the same added/changed/removed events. Nothing else in linekeeper
 * changes.
 */
import type { BatchRecord } from '../../src/domain/batch-record.js';

/** One document in the MES for a tenant, valid or not. */
export interface MesListing {
  readonly batch: string;
  readonly tenant: string;
  /** Where the document is, relative to the MES's own root (folder MES: `acme-pharma/B-1042.json`). */
  readonly file: string;
  /** SHA-256 (hex) of the document's bytes; null when they could not be read (symbolic link, too large, unreadable). */
  readonly sha256: string | null;
  readonly valid: boolean;
  /** Why it is not valid (message naming the file and the first bad field). */
  readonly error?: string;
}

export interface MesChange {
  readonly tenant: string;
  /** The document's name without `.json`; a name that is not a batch id is still reported (`list` shows it as invalid). */
  readonly batch: string;
  readonly kind: 'added' | 'changed' | 'removed';
}

export interface MesSource {
  /**
   * Every document of the tenant, sorted by batch; invalid ones listed as invalid, never thrown.
   * @throws LkError(LK_VALIDATION) when `tenant` is not a tenant id.
   */
  list(tenant: string): MesListing[];
  /**
   * The validated, frozen batch record.
   * @throws LkError(LK_VALIDATION) for a malformed tenant or batch id; LK_NOT_FOUND when the tenant has no
   *   such batch; LK_BATCH_RECORD_INVALID when the document is invalid or names another tenant or batch.
   */
  read(tenant: string, batch: string): BatchRecord;
  /** Calls `onChange` for every document added, changed or removed after the call; returns the function that stops it. */
  watch(onChange: (e: MesChange) => void): () => void;
  /** Stops every watch; the source refuses further use. */
  close(): void;
}
