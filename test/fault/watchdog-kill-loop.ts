/**
 * The long watchdog run of rule R8 (not part of `npm test`): linekeeper SIGKILLed mid-batch again and again,
 * heartbeat 1 s, PLC watchdog 3 s, and for each kill the time until every PLC runs its LKG recipe, measured
 * by the plant's own revert timestamps. Prints p50/p99 against the target p99 ≤ 3.5 s; exit 1 when a round
 * failed (a PLC did not revert, the audit trail does not verify) or the target is missed.
 *
 *   npm run fault:watchdog [-- kills=20 [seed=1]]
 */
import { percentile } from '../../bench/lib.js';
import { runKillLoop } from './watchdog-kill-lib.js';

const TARGET_P99_MS = 3500;
const kills = Number(process.argv[2] ?? 20);
const seed = Number(process.argv[3] ?? 1);
const t0 = Date.now();
const r = await runKillLoop({ kills, seed, heartbeatMs: 1000, watchdogTimeoutMs: 3000, log: (l) => process.stdout.write(`${l}\n`) });
const line = r.rounds.map((x) => x.lineMs);
const plc = r.rounds.flatMap((x) => Object.values(x.latencyMs));
const fmt = (xs: number[]): string => `p50 ${percentile(xs, 50)} ms, p99 ${percentile(xs, 99)} ms, min ${Math.min(...xs)} ms, max ${Math.max(...xs)} ms`;
process.stdout.write(`\n${r.rounds.length} kills in ${((Date.now() - t0) / 1000).toFixed(0)} s; heartbeat ${r.heartbeatMs} ms, watchdog ${r.watchdogTimeoutMs} ms, PLC scan ${r.scanMs} ms (bound ${r.watchdogTimeoutMs + r.scanMs} ms)\n`);
if (line.length > 0) {
  process.stdout.write(`line on LKG (last PLC) after SIGKILL: ${fmt(line)}\n`);
  process.stdout.write(`each PLC (${plc.length} reverts): ${fmt(plc)}\n`);
}
const p99 = percentile(line, 99);
const met = line.length === kills && p99 <= TARGET_P99_MS;
process.stdout.write(`target p99 ≤ ${TARGET_P99_MS} ms: ${met ? 'met' : 'NOT met'}; failures: ${r.failures.length === 0 ? 'none' : `\n  ${r.failures.join('\n  ')}`}\n`);
process.exitCode = met && r.failures.length === 0 ? 0 : 1;
