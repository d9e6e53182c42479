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
 * The packages are first renamed aside into `releases/.pruning-<ms>-<pid>/<tenant>/<run>/` (one rename each) and
 * hashed again there — the person's password was typed since they were checked — then the prune is recorded on the
 * tenant's chain (who, why, each run and the digests dropped, the archive record that holds them, the aside
 * folder's name), then they are removed. Before the record, any failure (a package changed: LK_NOT_ARCHIVED) puts
 * every package back and nothing is recorded; once the record is committed nothing is put back (the trail says they
 * were dropped, so they are): a checkpoint that fails after it is a warning. A process that dies between the
 * rename and the removal leaves the aside folder; the next `archive` command ({@link recoverPruning}) restores the
 * packages whose prune was not recorded and finishes removing those whose prune was.
 */
import { existsSync, lstatSync, mkdirSync, readdirSync, renameSync, rmdirSync, rmSync } from 'node:fs';
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

/** The folders a prune renames packages aside into, under `<data>/releases/`: `.pruning-<ms>-<pid>`. */
const PRUNING_PREFIX = '.pruning-';
const PRUNING_NAME = /^\.pruning-(\d+)-(\d+)$/;

export interface PruneResult {
  /** The seq of the `archive.prune` entry (null when there was nothing to drop). */
  readonly seq: number | null;
  /** What failed after the prune was recorded (the packages are dropped all the same). */
  readonly warnings: readonly string[];
}

/**
 * Drop the release packages of a checked plan, as `actor` (a re-authenticated person) with `reason`: each renamed
 * aside and hashed again there, the prune recorded on the tenant's chain, then removed and checkpointed. Anything
 * that fails before the record puts every package back and throws; nothing that fails after it does (warnings).
 * @throws LkError LK_NOT_ARCHIVED when a package changed since the plan checked it (nothing dropped); whatever the
 *   append or a rename throws (every package put back, nothing recorded).
 */
export function prunePackages(store: Store, plan: PrunePlan, who: { actor: string; reason: string; osUser?: string }): PruneResult {
  if (plan.candidates.length === 0) return { seq: null, warnings: [] };
  const releases = join(store.dataDir, 'releases');
  const name = `${PRUNING_PREFIX}${store.clock.now()}-${process.pid}`;
  const aside = join(releases, name);
  mkdirSync(join(aside, plan.tenant), { recursive: true, mode: 0o700 });
  const moved: [string, string][] = [];
  const putBack = (): void => {
    for (const [from, to] of moved.reverse()) {
      try {
        renameSync(to, from);
      } catch {
        // it stays aside, its prune unrecorded: the next archive command (recoverPruning) puts it back
      }
    }
    // only empty folders go, never a package
    removeIfEmpty(join(aside, plan.tenant));
    removeIfEmpty(aside);
  };
  let seq: number;
  try {
    for (const c of plan.candidates) {
      const from = join(releases, plan.tenant, c.run);
      const to = join(aside, plan.tenant, c.run);
      renameSync(from, to);
      moved.push([from, to]);
    }
    // what is dropped is what was checked: hashed again where nothing else writes (the password prompt came between)
    const changed = plan.candidates.filter((c) => !same(digests(join(aside, plan.tenant, c.run)), c.sha256));
    if (changed.length > 0) {
      throw new LkError('LK_NOT_ARCHIVED', `${changed.length} of ${plan.candidates.length} release packages changed since they were checked (${changed.slice(0, 5).map((c) => c.run).join(', ')}${changed.length > 5 ? ', …' : ''}): they are not as any archive holds them; every package was put back, nothing was dropped`, { runs: changed.map((c) => c.run) });
    }
    seq = store.audit.append({
      tenant: plan.tenant, actor: who.actor, kind: 'retention', action: 'archive.prune',
      args: { before: plan.before, retention_years: plan.retentionYears, aside: name, ...(who.osUser ? { os_user: who.osUser } : {}) },
      result: { dropped: plan.candidates.map((c) => ({ run: c.run, batch: c.batch, ended_at: c.endedAt, retain_until: c.retainUntil, release: { ...c.sha256 }, archived_in: c.archivedIn!.seq, archive: c.archivedIn!.archive })) },
      reason: who.reason,
    }).seq;
  } catch (err) {
    putBack();
    throw err;
  }
  // Recorded: the trail says these packages were dropped, so they are; nothing from here on puts them back.
  const warnings: string[] = [];
  try {
    rmSync(aside, { recursive: true, force: true });
    fsyncPath(join(releases, plan.tenant));
    fsyncPath(releases);
  } catch (err) {
    warnings.push(`the prune is recorded on ${plan.tenant} #${seq}, but releases/${name} could not be removed (${err instanceof Error ? err.message : String(err)}): the next archive command removes it`);
  }
  try {
    store.audit.checkpoint(plan.tenant);
  } catch (err) {
    warnings.push(`the prune is recorded on ${plan.tenant} #${seq}, but no checkpoint could be signed now (${err instanceof Error ? err.message : String(err)}): the next checkpoint signs the record`);
  }
  return { seq, warnings };
}

/** A package folder found aside by {@link recoverPruning}, and what was (or, dry, would be) done with it. */
export interface PruneLeftover {
  /** The aside folder, relative to the data directory: `releases/.pruning-<ms>-<pid>`. */
  readonly folder: string;
  /** The tenant and run (empty for a folder left alone whole). */
  readonly tenant: string;
  readonly run: string;
  /**
   * `restore`: no prune of it was recorded, so it goes back to `releases/<tenant>/<run>/`; `remove`: its prune was
   * recorded, so the drop is finished; `leave`: neither may be done (`why`).
   */
  readonly action: 'restore' | 'remove' | 'leave';
  /** False on a dry run, and for `leave`. */
  readonly done: boolean;
  readonly why: string;
}

/**
 * Finish what a prune that stopped (a crash, a kill, a failed removal) left in `releases/.pruning-*`: a package whose
 * `archive.prune` record (the entry naming that folder as `aside`) is on the tenant's chain is removed, since the trail
 * says it was dropped; any other package is renamed back into place, since no one dropped it. Folders of a process
 * still alive (a prune under way) are left alone, as is a package whose place is taken. `dryRun` changes nothing and
 * says what would be done. Run by every `archive` command that reads the data directory, before anything else.
 * @throws LkError LK_AUDIT_BROKEN when a package would be removed on the strength of a chain that does not verify.
 */
export function recoverPruning(store: Store, o: { dryRun?: boolean } = {}): PruneLeftover[] {
  const releases = join(store.dataDir, 'releases');
  if (!existsSync(releases)) return [];
  const out: PruneLeftover[] = [];
  const verified = new Set<string>();
  for (const name of readdirSync(releases).filter((n) => n.startsWith(PRUNING_PREFIX)).sort()) {
    const aside = join(releases, name);
    const folder = `releases/${name}`;
    if (!lstatSync(aside).isDirectory()) continue;
    const pid = Number(PRUNING_NAME.exec(name)?.[2] ?? 0);
    if (pid > 1 && pid !== process.pid && alive(pid)) {
      out.push({ folder, tenant: '', run: '', action: 'leave', done: false, why: `process ${pid}, which is pruning, still runs` });
      continue;
    }
    for (const tenant of readdirSync(aside).sort()) {
      const tdir = join(aside, tenant);
      if (!lstatSync(tdir).isDirectory() || !store.audit.chains().includes(tenant)) {
        out.push({ folder, tenant, run: '', action: 'leave', done: false, why: `${tenant} is not the folder of a tenant of this data directory` });
        continue;
      }
      const dropped = prunedFrom(store, tenant, name);
      for (const run of readdirSync(tdir).sort()) {
        const from = join(tdir, run);
        const to = join(releases, tenant, run);
        if (dropped.has(run)) {
          if (!o.dryRun) {
            if (!verified.has(tenant)) assertVerified(verifyStore(store, { tenant }), tenant);
            verified.add(tenant);
            rmSync(from, { recursive: true, force: true });
          }
          out.push({ folder, tenant, run, action: 'remove', done: !o.dryRun, why: `its prune is recorded on ${tenant} #${dropped.get(run)}` });
        } else if (existsSync(to)) {
          out.push({ folder, tenant, run, action: 'leave', done: false, why: `releases/${tenant}/${run} exists` });
        } else {
          if (!o.dryRun) {
            mkdirSync(join(releases, tenant), { recursive: true });
            renameSync(from, to);
          }
          out.push({ folder, tenant, run, action: 'restore', done: !o.dryRun, why: 'no prune of it is recorded' });
        }
      }
      if (!o.dryRun) removeIfEmpty(tdir);
    }
    if (!o.dryRun) {
      removeIfEmpty(aside);
      fsyncPath(releases);
    }
  }
  return out;
}

/** Per run, the seq of the `archive.prune` entry of `tenant`'s chain that renamed it aside into the folder `name`. */
function prunedFrom(store: Store, tenant: string, name: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const e of iterateAudit(store.db, tenant, { kind: 'retention', action: 'archive.prune' })) {
    if ((e.args as { aside?: unknown } | undefined)?.aside !== name) continue;
    const dropped = (e.result as { dropped?: { run?: unknown }[] } | undefined)?.dropped;
    for (const d of Array.isArray(dropped) ? dropped : []) if (typeof d.run === 'string') out.set(d.run, e.seq);
  }
  return out;
}

/** Whether a process `pid` exists (signal 0 only asks; EPERM: it exists, as another user's). */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Remove `dir` when it is empty; a folder that still holds something stays. */
function removeIfEmpty(dir: string): void {
  try {
    rmdirSync(dir);
  } catch {
    // not empty, or gone: either way nothing is lost
  }
}

const same = (a: PruneCandidate['sha256'] | null, b: PruneCandidate['sha256']): boolean => a !== null && a.json === b.json && a.pdf === b.pdf && a.bundle === b.bundle;

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
