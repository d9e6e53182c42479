/**
 * `npm run bench`: runs every bench/*.bench.ts in its own process, one after
 * the other (a two-core edge box measures badly in parallel), and prints a
 * table of ours vs peer. `npm run bench -- opcua audit` runs the matching ones.
 */
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { BenchResult } from './lib.js';

const here = dirname(fileURLToPath(import.meta.url));
const filters = process.argv.slice(2);
const files = readdirSync(here)
  .filter((f) => f.endsWith('.bench.ts'))
  .filter((f) => filters.length === 0 || filters.some((x) => f.includes(x)))
  .sort();

const results: (BenchResult & { ratio: number })[] = [];
let failed = 0;
process.stdout.write(`linekeeper bench — ${new Date().toISOString().slice(0, 10)}, Node ${process.version}, ${cpus().length} × ${cpus()[0]?.model ?? 'cpu'}, ${(totalmem() / 2 ** 30).toFixed(0)} GiB\n\n`);
for (const f of files) {
  process.stdout.write(`── ${f}\n`);
  const r = spawnSync(process.execPath, ['--import', 'tsx', join(here, f)], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'], timeout: 600_000 });
  for (const line of (r.stdout ?? '').split('\n')) {
    if (line.startsWith('BENCH ')) results.push(JSON.parse(line.slice(6)) as BenchResult & { ratio: number });
    else if (line.trim()) process.stdout.write(`   ${line}\n`);
  }
  if (r.status !== 0) {
    failed++;
    process.stdout.write(`   FAILED (exit ${r.status ?? r.signal})\n`);
  }
}
process.stdout.write('\n| benchmark | ours | peer | ratio (>1 = ours faster) | target |\n|---|---|---|---|---|\n');
const fmt = (v: number): string => (Math.abs(v) >= 100 ? Math.round(v).toLocaleString('en-US') : v.toPrecision(3));
for (const r of results) {
  process.stdout.write(`| ${r.name} | ${fmt(r.ours.value)} ${r.unit} | ${fmt(r.peer.value)} ${r.unit} (${r.peer.label}) | ${r.ratio.toFixed(2)} | ${r.target ?? ''} |\n`);
}
process.exitCode = failed > 0 ? 1 : 0;
