/**
 * One measurement of bench/worker-memory.bench.ts, in a fresh process (nothing compiled or cached before it):
 * start a worker thread that imports `module` (or nothing), and report how far the process's RSS rose while it
 * loaded (peak, sampled every millisecond) and what it holds once loaded, in bytes, as one JSON line.
 *   node --max-semi-space-size=4 bench/worker-memory-probe.mjs [module URL]
 */
import { Worker } from 'node:worker_threads';

const target = process.argv[2];
await new Promise((r) => setTimeout(r, 300));
const base = process.memoryUsage.rss();
let peak = base;
const sampler = setInterval(() => {
  peak = Math.max(peak, process.memoryUsage.rss());
}, 1);
const code = `(async () => { ${target ? `await import(${JSON.stringify(target)});` : ''} require('node:worker_threads').parentPort.postMessage('loaded'); })()`;
const w = new Worker(code, { eval: true });
await new Promise((resolve, reject) => {
  w.once('message', resolve);
  w.once('error', reject);
});
await new Promise((r) => setTimeout(r, 200));
peak = Math.max(peak, process.memoryUsage.rss());
const held = process.memoryUsage.rss() - base;
clearInterval(sampler);
await w.terminate();
process.stdout.write(`${JSON.stringify({ peak: peak - base, held })}\n`);
