/**
 * The release package as clients see it (the API's run view and genealogy, the CLI's offline view): the download
 * URL of each file and its SHA-256 — never a path of the server's file system. The run keeps the files relative to
 * the data directory (older runs: absolute); `RunEngine.releaseFile` resolves them for the download route.
 */
import type { RunRecord } from '../../store/run-store.js';
import type { RunView } from './types.js';

/** Download URLs and digests of `run`'s release package, or null when step 10 has not written it. */
export function releaseView(run: Pick<RunRecord, 'tenant' | 'id' | 'data'>): RunView['release'] {
  const kept = run.data['release'] as { sha256?: Record<string, string> } | undefined;
  if (!kept) return null;
  const url = (file: string): string => `/v1/tenants/${run.tenant}/runs/${run.id}/release?file=${file}`;
  return { json: url('json'), pdf: url('pdf'), bundle: url('bundle'), sha256: { ...(kept.sha256 ?? {}) } };
}
