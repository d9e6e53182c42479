/**
 * Changes in a folder of per-tenant documents, for the MES inbox and the LIMS
 * results folder.
 *
 * The source of truth is a scan: every scan compares the folder with the
 * previous one (file identity, size and times, then the SHA-256 of what
 * changed), so no event is invented and none is lost when the operating
 * system drops a notification. `fs.watch` — non-recursive, one watcher for the
 * root and one per tenant folder, because recursive watching is not reliable
 * on every platform Node runs on — only makes the next scan come sooner; a
 * poll at a fixed interval is the fallback that always runs. Network file
 * systems and containers often deliver no notifications at all: the poll
 * still sees every change.
 */
import { type FSWatcher, lstatSync, watch } from 'node:fs';
import { join } from 'node:path';
import { documentNames, readDocument, tenantDirs } from './files.js';

export interface InboxChange {
  readonly tenant: string;
  /** File name inside the tenant folder, e.g. `B-1042.json`. */
  readonly name: string;
  readonly kind: 'added' | 'changed' | 'removed';
}

export interface InboxWatchOptions {
  /** Interval of the scan that always runs, ms. */
  readonly pollMs: number;
  /** Also use `fs.watch` to scan soon after a change (default true; tests turn it off to exercise the poll). */
  readonly fsWatch: boolean;
  /** Where errors of a scan or thrown by `onChange` go (never thrown out of a timer). */
  readonly onError: (err: unknown) => void;
}

interface Seen {
  readonly stat: string;
  /** null when the bytes could not be read (symlink, too large, unreadable). */
  readonly sha256: string | null;
}

/** Delay between an fs.watch notification and the scan it triggers, so a burst of events makes one scan. */
const SETTLE_MS = 25;

function scan(root: string, prev: ReadonlyMap<string, Seen>): Map<string, Seen> {
  const next = new Map<string, Seen>();
  for (const tenant of tenantDirs(root)) {
    for (const name of documentNames(root, tenant)) {
      const key = `${tenant}/${name}`;
      let stat: string;
      try {
        const st = lstatSync(join(root, tenant, name));
        stat = `${st.isSymbolicLink() ? 'l' : 'f'}:${st.ino}:${st.size}:${st.mtimeMs}:${st.ctimeMs}`;
      } catch {
        continue; // gone between readdir and lstat: the next scan reports it as removed
      }
      const old = prev.get(key);
      if (old && old.stat === stat) {
        next.set(key, old);
        continue;
      }
      const r = readDocument(join(root, tenant, name));
      next.set(key, { stat, sha256: r.ok ? r.sha256 : null });
    }
  }
  return next;
}

function diff(prev: ReadonlyMap<string, Seen>, next: ReadonlyMap<string, Seen>): InboxChange[] {
  const out: InboxChange[] = [];
  const split = (key: string): { tenant: string; name: string } => {
    const i = key.indexOf('/');
    return { tenant: key.slice(0, i), name: key.slice(i + 1) };
  };
  for (const [key, seen] of next) {
    const old = prev.get(key);
    if (!old) out.push({ ...split(key), kind: 'added' });
    else if (old.sha256 !== seen.sha256 || (seen.sha256 === null && old.stat !== seen.stat)) out.push({ ...split(key), kind: 'changed' });
  }
  for (const key of prev.keys()) if (!next.has(key)) out.push({ ...split(key), kind: 'removed' });
  return out.sort((a, b) => (a.tenant + '/' + a.name < b.tenant + '/' + b.name ? -1 : 1));
}

/**
 * Watch `root` for documents added, changed (different bytes) or removed.
 * The current content is the baseline (no events for it), taken before this
 * returns, so a file written right after the call is reported. Returns the
 * function that stops watching (idempotent).
 */
export function watchInbox(root: string, opts: InboxWatchOptions, onChange: (change: InboxChange) => void): () => void {
  let stopped = false;
  let snapshot = scan(root, new Map());
  let pending: NodeJS.Timeout | undefined;
  const watchers = new Map<string, FSWatcher>();

  const soon = (): void => {
    if (stopped || pending) return;
    pending = setTimeout(() => {
      pending = undefined;
      tick();
    }, SETTLE_MS);
    pending.unref();
  };

  const refreshWatchers = (): void => {
    if (!opts.fsWatch) return;
    const wanted = new Set([root, ...tenantDirs(root).map((t) => join(root, t))]);
    for (const [dir, w] of watchers) {
      if (!wanted.has(dir)) {
        w.close();
        watchers.delete(dir);
      }
    }
    for (const dir of wanted) {
      if (watchers.has(dir)) continue;
      try {
        const w = watch(dir, { persistent: false }, soon);
        // a watcher that fails (folder removed, platform limit) is dropped; the poll carries on
        w.on('error', () => {
          w.close();
          if (watchers.get(dir) === w) watchers.delete(dir);
          soon();
        });
        watchers.set(dir, w);
      } catch {
        // fs.watch unavailable here: polling alone
      }
    }
  };

  const tick = (): void => {
    if (stopped) return;
    let changes: InboxChange[] = [];
    try {
      const next = scan(root, snapshot);
      changes = diff(snapshot, next);
      snapshot = next;
      refreshWatchers();
    } catch (e) {
      opts.onError(e);
    }
    for (const c of changes) {
      if (stopped) return;
      try {
        onChange(c);
      } catch (e) {
        opts.onError(e);
      }
    }
  };

  refreshWatchers();
  const poll = setInterval(tick, opts.pollMs);
  poll.unref();

  return () => {
    if (stopped) return;
    stopped = true;
    clearInterval(poll);
    if (pending) clearTimeout(pending);
    for (const w of watchers.values()) w.close();
    watchers.clear();
  };
}
