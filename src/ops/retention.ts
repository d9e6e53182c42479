/**
 * The retention period (21 CFR 11.10(c), EU GMP Annex 11 §17) and the one deletion of GMP records linekeeper
 * makes: `linekeeper archive prune --before <date>` drops the release packages (release.json, release.pdf, the
 * sealed audit bundle under `<data>/releases/<tenant>/<run>/`) of runs that ended before the date — the bulk of a
 * data directory, since each package carries the tenant's whole bundle up to it. It refuses, changing nothing:
 * - a date inside the retention period (`retention.years` of the configuration, from the end of a run):
 *   LK_RETENTION_ACTIVE;
 * - any package that no archive recorded on the tenant's chain holds byte for byte (`audit.archive` with the
 *   package's digests): LK_NOT_ARCHIVED;
 * - a tenant chain that does not verify (the archive records are read from it): LK_AUDIT_BROKEN.
 *
 * The database is never pruned: the hash-chained audit trail, the runs, their steps, tool calls and genealogy
 * stay, append-only (triggers refuse a DELETE), and a chain cannot lose its head without every later hash and
 * signed checkpoint saying so. Dropping them would need a new chain, which linekeeper does not do.
 *
 * The packages are first renamed aside (one rename each, so a failure puts them back), the prune recorded on the
 * tenant's chain (who, why, each run and the digests dropped, the archive record that holds them), then removed.
 */
import { existsSync, lstatSync, mkdirSync, readdirSync, renameSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { iterateAudit, filterBounds, parseFilter } from '../audit/query.js';
import { verifyStore } from '../audit/verify.js';
import { assertVerified } from '../engine/release-package.js';
import { RELEASE_FILES } from '../engine/release-types.js';
import { LkError } from '../errors.js';
import { fsyncPath } from '../files.js';
import { RunStore } from '../store/run-store.js';
import type { Store } from '../store/store.js';
import { sha256File } from './archive-manifest.js';

/** The instant a record that ended at `endedAt` may be dropped: `years` calendar years later (UTC). */
export function retentionEnds(endedAt: number, years: number): number {
  const d = new Date(endedAt);
  d.setUTCFullYear(d.getUTCFullYear() + years);
  return d.getTime();
}

/** A release package that may be dropped. */
export interface PruneCandidate {
  readonly run: string;
  readonly batch: string;
  readonly endedAt: string;
  readonly retainUntil: string;
  /** SHA-256 of release.json, release.pdf and the audit bundle, as they are now. */
  readonly sha256: { readonly json: string; readonly pdf: string; readonly bundle: string };
  /** The `audit.archive` entry (tenant chain seq) and archive that hold it byte for byte. */
  readonly archivedIn: { readonly seq: number; readonly archive: string } | null;
}

export interface PrunePlan {
  readonly tenant: string;
  readonly before: string;
  readonly retentionYears: number;
  readonly candidates: readonly PruneCandidate[];
}

const iso = (ms: number): string => new Date(ms).toISOString();

/**
 * What `archive prune --before` would drop, checked: nothing inside the retention period, everything archived.
 * Writes nothing.
 * @throws LkError LK_VALIDATION (a bad date), LK_RETENTION_ACTIVE, LK_NOT_ARCHIVED, LK_AUDIT_BROKEN,
 *   LK_NOT_FOUND (no chain for the tenant).
 */
export function planPrune(store: Store, o: { tenant: string; before: string; years: number; now: number }): PrunePlan {
  const bound = filterBounds(parseFilter({ from: o.before })).from!;
  const cutoff = Date.parse(bound);
  const ends = retentionEnds(cutoff, o.years);
  if (ends > o.now) {
    const latest = new Date(o.now);
    latest.setUTCFullYear(latest.getUTCFullYear() - o.years);
    throw new LkError('LK_RETENTION_ACTIVE', `--before ${o.before} is inside the retention period of ${o.years} years: only records of runs that ended before ${latest.toISOString()} may be dropped; nothing was dropped`, { before: bound, years: o.years, retainUntil: iso(ends) });
  }
  if (!store.audit.chains().includes(o.tenant)) throw new LkError('LK_NOT_FOUND', `no audit chain "${o.tenant}"`, { tenant: o.tenant });
  // the archive records are read from the chain: only from one that verifies
  assertVerified(verifyStore(store, { tenant: o.tenant }), o.tenant);

  const runs = new RunStore(store.db);
  const archived = archiveRecords(store, o.tenant);
  const candidates: PruneCandidate[] = [];
  for (const name of packageFolders(store.dataDir, o.tenant)) {
    const run = runs.run(o.tenant, name);
    if (!run || run.endedAt === null || run.endedAt >= cutoff) continue;
    const until = retentionEnds(run.endedAt, o.years);
    if (until > o.now) throw new LkError('LK_RETENTION_ACTIVE', `run ${run.id} is kept until ${iso(until)}; nothing was dropped`, { run: run.id, retainUntil: iso(until) });
    const sha256 = digests(join(store.dataDir, 'releases', o.tenant, name));
    const hit = sha256 && archived.get(run.id)?.find((a) => a.json === sha256.json && a.pdf === sha256.pdf && a.bundle === sha256.bundle);
    candidates.push({ run: run.id, batch: run.batch, endedAt: iso(run.endedAt), retainUntil: iso(until), sha256: sha256 ?? { json: '', pdf: '', bundle: '' }, archivedIn: hit ? { seq: hit.seq, archive: hit.archive } : null });
  }
  const missing = candidates.filter((c) => c.archivedIn === null);
  if (missing.length > 0) {
    throw new LkError('LK_NOT_ARCHIVED', `${missing.length} of ${candidates.length} release packages before ${o.before} are in no archive as they are now (${missing.slice(0, 5).map((c) => c.run).join(', ')}${missing.length > 5 ? ', …' : ''}): archive them first (linekeeper archive run|period); nothing was dropped`, { runs: missing.map((c) => c.run) });
  }
  return { tenant: o.tenant, before: bound, retentionYears: o.years, candidates };
}

/**
 * Drop the release packages of a checked plan, as `actor` (a re-authenticated person) with `reason`: each renamed
 * aside, the prune recorded on the tenant's chain and checkpointed, then removed. A record that cannot be written
 * puts every package back.
 * @returns the seq of the `archive.prune` entry (null when there was nothing to drop).
 */
export function prunePackages(store: Store, plan: PrunePlan, who: { actor: string; reason: string; osUser?: string }): number | null {
  if (plan.candidates.length === 0) return null;
  const releases = join(store.dataDir, 'releases');
  const aside = join(releases, `.pruning-${store.clock.now()}-${process.pid}`);
  mkdirSync(aside, { mode: 0o700 });
  const moved: [string, string][] = [];
  const putBack = (): void => {
    for (const [from, to] of moved.reverse()) renameSync(to, from);
    rmSync(aside, { recursive: true, force: true });
  };
  let seq: number;
  try {
    for (const c of plan.candidates) {
      const from = join(releases, plan.tenant, c.run);
      const to = join(aside, c.run);
      renameSync(from, to);
      moved.push([from, to]);
    }
    seq = store.audit.append({
      tenant: plan.tenant, actor: who.actor, kind: 'retention', action: 'archive.prune',
      args: { before: plan.before, retention_years: plan.retentionYears, ...(who.osUser ? { os_user: who.osUser } : {}) },
      result: { dropped: plan.candidates.map((c) => ({ run: c.run, batch: c.batch, ended_at: c.endedAt, retain_until: c.retainUntil, release: { ...c.sha256 }, archived_in: c.archivedIn!.seq, archive: c.archivedIn!.archive })) },
      reason: who.reason,
    }).seq;
    store.audit.checkpoint(plan.tenant);
  } catch (err) {
    putBack();
    throw err;
  }
  rmSync(aside, { recursive: true, force: true });
  fsyncPath(join(releases, plan.tenant));
  return seq;
}

/** The run folders of `<data>/releases/<tenant>/` (no staging or hidden folder). */
function packageFolders(dataDir: string, tenant: string): string[] {
  const dir = join(dataDir, 'releases', tenant);
  if (!existsSync(dir)) return [];
  return readdirSync(dir).filter((n) => !n.startsWith('.') && lstatSync(join(dir, n)).isDirectory()).sort();
}

/** The digests of a package folder holding exactly the three package files, else null (not as any archive holds it). */
function digests(dir: string): PruneCandidate['sha256'] | null {
  const names = readdirSync(dir).sort();
  const expected = Object.values(RELEASE_FILES).sort();
  if (names.length !== expected.length || names.some((n, i) => n !== expected[i] || !lstatSync(join(dir, n)).isFile())) return null;
  return { json: sha256File(join(dir, RELEASE_FILES.json)), pdf: sha256File(join(dir, RELEASE_FILES.pdf)), bundle: sha256File(join(dir, RELEASE_FILES.bundle)) };
}

/** Per run, the release digests of every `audit.archive` record of the tenant's chain. */
function archiveRecords(store: Store, tenant: string): Map<string, { seq: number; archive: string; json: unknown; pdf: unknown; bundle: unknown }[]> {
  const out = new Map<string, { seq: number; archive: string; json: unknown; pdf: unknown; bundle: unknown }[]>();
  for (const e of iterateAudit(store.db, tenant, { kind: 'audit_access', action: 'audit.archive' })) {
    const r = e.result as { archive?: unknown; runs?: { run?: unknown; release?: { json?: unknown; pdf?: unknown; bundle?: unknown } | null }[] } | undefined;
    for (const x of Array.isArray(r?.runs) ? r.runs : []) {
      if (typeof x.run !== 'string' || !x.release) continue;
      const list = out.get(x.run) ?? [];
      list.push({ seq: e.seq, archive: String(r?.archive ?? ''), json: x.release.json, pdf: x.release.pdf, bundle: x.release.bundle });
      out.set(x.run, list);
    }
  }
  return out;
}
