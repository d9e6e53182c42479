/**
 * The long crash run (not part of `npm test`): 1,000 SIGKILLs of an appender,
 * each followed by integrity_check, `audit verify` and the check that every
 * acknowledged seq survived. 100 kills share one database (crash after crash
 * on the same file), then a fresh one starts, so verify time stays flat.
 *
 *   npx tsx test/fault/audit-crash-loop.ts [iterations=1000] [seed=1]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createRng } from '../../src/clock.js';
import { crashOnce } from './audit-crash-lib.js';

const n = Number(process.argv[2] ?? 1000);
const rng = createRng(Number(process.argv[3] ?? 1));
const root = mkdtempSync(join(tmpdir(), 'lk-crash-loop-'));
let failures = 0;
let acked = 0;
const t0 = Date.now();
try {
  for (let i = 1; i <= n; i++) {
    const r = await crashOnce(join(root, `db${Math.floor((i - 1) / 100)}`), rng, { earlyKill: i % 10 === 0 });
    acked += r.ackedCount;
    const ok = r.integrity === 'ok' && r.verifyOk && r.lost.length === 0 && r.torn === 0;
    if (!ok) {
      failures++;
      process.stdout.write(`iteration ${i}: FAILED ${JSON.stringify(r)}\n`);
    }
    if (i % 50 === 0 || !ok) process.stdout.write(`${i}/${n}: ${acked} acknowledged entries, heads ${JSON.stringify(r.heads)}, ${((Date.now() - t0) / 1000).toFixed(0)} s\n`);
  }
} finally {
  rmSync(root, { recursive: true, force: true });
}
process.stdout.write(`${n} kills, ${failures} failures, ${acked} acknowledged entries, all present: ${failures === 0}\n`);
process.exitCode = failures === 0 ? 0 : 1;
