/**
 * QC results from the LIMS, arriving asynchronously as files:
 * `<dataDir>/lims/results/<tenant>/<anything>.json`, one result per file.
 * A result is joined to its batch by its `batch` field, never by file name.
 * A file that cannot be used (not JSON, invalid, naming another tenant than
 * its folder) is never thrown at the caller asking for a batch's results: it
 * is reported by `problems()` and left where it is, unchanged. A result a
 * tenant's folder holds for another tenant is not served to either (R1).
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { BATCH_ID_RE } from '../../src/domain/batch-record.js';
import { type QcResult, compareQcResults, parseQcResult } from '../../src/domain/qc-result.js';
import { LkError } from '../../src/errors.js';
import { assertTenantId, documentNames, parseJson, readDocument, tenantDirs, tenantField } from '../inbox/files.js';
import { folderLifecycle } from '../inbox/source.js';

/** A results file that could not be used, and why. */
export interface LimsProblem {
  readonly tenant: string;
  /** Relative to the results folder, e.g. `acme-pharma/assay-0042.json`. */
  readonly file: string;
  /** SHA-256 (hex) of the file's bytes; null when they could not be read. */
  readonly sha256: string | null;
  readonly error: string;
}

export interface LimsChange {
  readonly tenant: string;
  /** Relative to the results folder. */
  readonly file: string;
  readonly kind: 'added' | 'changed' | 'removed';
  /** The batch the result is for, when the file held a valid result of this tenant (for `removed`: the last one seen). */
  readonly batch?: string;
}

export interface LimsSource {
  /**
   * The valid results of one batch of the tenant (frozen), sorted by `reported_at`, then `lims_ref`.
   * @throws LkError(LK_VALIDATION) when `tenant` or `batch` is not an id. Never for a bad file.
   */
  results(tenant: string, batch: string): QcResult[];
  /**
   * Files that could not be used: of one tenant, or of every tenant (the site's view) when omitted.
   * @throws LkError(LK_VALIDATION) when `tenant` is given and not a tenant id.
   */
  problems(tenant?: string): LimsProblem[];
  /** Calls `onChange` for every results file added, changed or removed after the call; returns the function that stops it. */
  watch(onChange: (e: LimsChange) => void): () => void;
  /** Stops every watch; the source refuses further use. */
  close(): void;
}

export interface FolderLimsOptions {
  /** Interval of the poll that always runs beside fs.watch, ms (default 2000). */
  readonly pollMs?: number;
  /** Use fs.watch to notice changes before the next poll (default true). */
  readonly fsWatch?: boolean;
  /** Errors of a watch (a failed scan, a throwing listener); default: a process warning. */
  readonly onError?: (err: unknown) => void;
}

/** The LIMS results folder of a data directory. */
export function limsResultsDir(dataDir: string): string {
  return join(dataDir, 'lims', 'results');
}

type Loaded = { readonly ok: true; readonly result: QcResult } | { readonly ok: false; readonly problem: LimsProblem };

function load(root: string, tenant: string, name: string): Loaded {
  const file = `${tenant}/${name}`;
  const problem = (error: string, sha256: string | null = null): Loaded => ({ ok: false, problem: { tenant, file, sha256, error: `${file}: ${error}` } });
  const r = readDocument(join(root, tenant, name));
  if (!r.ok) return problem(r.message);
  const json = parseJson(r.bytes);
  if (!json.ok) return problem(json.message, r.sha256);
  if (tenantField(json.value) !== tenant) return problem(`tenant: the result does not name the tenant of its folder (${tenant})`, r.sha256);
  try {
    return { ok: true, result: parseQcResult(json.value, file) };
  } catch (e) {
    if (LkError.is(e)) return { ok: false, problem: { tenant, file, sha256: r.sha256, error: e.message } };
    throw e;
  }
}

/**
 * Open the results folder of a data directory (created when missing).
 * @throws Error from the file system when the folder cannot be created.
 */
export function openFolderLims(dataDir: string, opts: FolderLimsOptions = {}): LimsSource {
  const root = limsResultsDir(dataDir);
  mkdirSync(root, { recursive: true });
  const life = folderLifecycle(root, 'LIMS results', opts);
  const open = life.assertOpen;
  const loadAll = (tenant: string): Loaded[] => documentNames(root, tenant).map((n) => load(root, tenant, n));

  return {
    results(tenant: string, batch: string): QcResult[] {
      open();
      assertTenantId(tenant);
      if (typeof batch !== 'string' || !BATCH_ID_RE.test(batch)) throw new LkError('LK_VALIDATION', `${JSON.stringify(String(batch)).slice(0, 80)} is not a batch id`, { field: 'batch' });
      const out = loadAll(tenant).flatMap((l) => (l.ok && l.result.batch === batch ? [l.result] : []));
      return out.sort(compareQcResults);
    },
    problems(tenant?: string): LimsProblem[] {
      open();
      if (tenant !== undefined) assertTenantId(tenant);
      const tenants = tenant === undefined ? tenantDirs(root) : [tenant];
      return tenants.flatMap((t) => loadAll(t).flatMap((l) => (l.ok ? [] : [l.problem])));
    },
    watch(onChange: (e: LimsChange) => void): () => void {
      open();
      // what each file held when watching began, so its removal can name its batch
      const batchOf = new Map<string, string>();
      for (const t of tenantDirs(root)) {
        for (const n of documentNames(root, t)) {
          const l = load(root, t, n);
          if (l.ok) batchOf.set(`${t}/${n}`, l.result.batch);
        }
      }
      return life.watch((c) => {
        const file = `${c.tenant}/${c.name}`;
        let batch: string | undefined;
        if (c.kind === 'removed') {
          batch = batchOf.get(file);
          batchOf.delete(file);
        } else {
          const l = load(root, c.tenant, c.name);
          batch = l.ok ? l.result.batch : undefined;
          if (batch === undefined) batchOf.delete(file);
          else batchOf.set(file, batch);
        }
        onChange({ tenant: c.tenant, file, kind: c.kind, ...(batch === undefined ? {} : { batch }) });
      });
    },
    close: life.close,
  };
}
