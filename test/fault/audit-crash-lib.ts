/**
 * One crash iteration: start the appender child on `dataDir`, SIGKILL it at a
 * random moment, reopen the database and check what must survive a kill:
 * SQLite integrity, an intact chain, every acknowledged seq present, and no
 * state change without its audit entry (or the reverse).
 */
import { spawn } from 'node:child_process';
import type { Rng } from '../../src/clock.js';
import { verifyStore } from '../../src/audit/verify.js';
import { openStore } from '../../src/store/store.js';
import { CRASH_MIGRATIONS, CRASH_TENANT } from './audit-crash-schema.js';
import { childScript } from '../helpers/bin.js';


export interface CrashResult {
  /** Acknowledged (committed) entries per chain: highest seq. */
  acked: Record<string, number>;
  ackedCount: number;
  /** Chain heads after reopening. */
  heads: Record<string, number>;
  integrity: string;
  verifyOk: boolean;
  damage?: string;
  /** Acknowledged seqs missing after reopening (must be empty). */
  lost: string[];
  /** state_change entries without a state row, or state rows without an entry (must be 0). */
  torn: number;
  killedBeforeReady: boolean;
}

/**
 * One appender child, SIGKILLed at a random moment: during start-up (`earlyKill`), or 1..maxDelayMs after it
 * is ready — or, with `afterFirstAck`, after its first acknowledged commit, so the kill lands among appends
 * even when a loaded machine commits nothing in the first maxDelayMs after ready.
 */
export async function crashOnce(dataDir: string, rng: Rng, opts: { maxDelayMs?: number; earlyKill?: boolean; afterFirstAck?: boolean } = {}): Promise<CrashResult> {
  const acked: Record<string, number> = {};
  const seqs = new Map<string, Set<number>>();
  let ackedCount = 0;
  let ready = false;
  const p = spawn(process.execPath, [...childScript('test/fault/audit-appender.ts'), dataDir, String(rng.int(1, 2 ** 30))], { stdio: ['ignore', 'pipe', 'pipe'] });
  let buf = '';
  let err = '';
  p.stderr.on('data', (d: Buffer) => {
    err += d.toString();
  });
  const exited = new Promise<void>((resolve) => p.on('exit', () => resolve()));
  let firstAck: () => void = () => undefined;
  const firstAckP = new Promise<void>((resolve) => (firstAck = resolve));
  const readyP = new Promise<void>((resolve) => {
    p.stdout.on('data', (d: Buffer) => {
      buf += d.toString();
      let nl: number;
      while ((nl = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        if (line === 'ready') {
          ready = true;
          resolve();
          continue;
        }
        const [tenant, s] = line.split(' ');
        const seq = Number(s);
        if (!tenant || !Number.isInteger(seq)) continue;
        acked[tenant] = Math.max(acked[tenant] ?? 0, seq);
        let set = seqs.get(tenant);
        if (!set) seqs.set(tenant, (set = new Set()));
        set.add(seq);
        ackedCount++;
        firstAck();
      }
    });
  });
  if (opts.earlyKill) await new Promise((r) => setTimeout(r, rng.int(0, 400)));
  else {
    await Promise.race([opts.afterFirstAck ? firstAckP : readyP, exited]);
    await new Promise((r) => setTimeout(r, rng.int(1, opts.maxDelayMs ?? 150)));
  }
  const killedBeforeReady = !ready;
  p.kill('SIGKILL');
  await exited;
  if (p.exitCode !== null && p.exitCode !== 0) throw new Error(`appender failed before the kill: ${err}`);

  // Reopen as the daemon would (writable: runs migrations and key checks), then verify.
  const s = openStore({ dataDir, migrations: CRASH_MIGRATIONS });
  try {
    const integrity = String(s.db.pragma('integrity_check', { simple: true }));
    const r = verifyStore(s);
    const heads: Record<string, number> = {};
    for (const c of r.chains) heads[c.tenant] = c.head.seq;
    const lost: string[] = [];
    for (const [tenant, set] of seqs) {
      const have = new Set(s.db.prepare('SELECT seq FROM audit_entry WHERE tenant = ?').pluck().all(tenant) as number[]);
      for (const q of set) if (!have.has(q)) lost.push(`${tenant}#${q}`);
    }
    const torn = (s.db.prepare(
      `SELECT (SELECT COUNT(*) FROM audit_entry e WHERE e.tenant = ? AND e.kind = 'state_change' AND NOT EXISTS (SELECT 1 FROM crash_state c WHERE c.seq = e.seq))
            + (SELECT COUNT(*) FROM crash_state c WHERE NOT EXISTS (SELECT 1 FROM audit_entry e WHERE e.tenant = ? AND e.seq = c.seq AND e.kind = 'state_change'))`,
    ).pluck().get(CRASH_TENANT, CRASH_TENANT) as number);
    const bad = r.chains.find((c) => !c.ok)?.damage;
    return { acked, ackedCount, heads, integrity, verifyOk: r.ok, ...(bad ? { damage: `${bad.kind}@${bad.seq}: ${bad.detail}` } : {}), lost, torn, killedBeforeReady };
  } finally {
    // Close WITHOUT the clean-stop checkpoint: the next iteration must also cope with an unanchored tail.
    s.db.close();
  }
}
