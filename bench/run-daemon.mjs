/**
 * The measured side of bench/run.bench.ts, run by plain `node` on the build (dist/, what `linekeeper serve` runs), so
 * that the memory it reports is the compiled daemon's own, with no TypeScript loader in the process. Plain
 * JavaScript for that reason: the bench's own code, in bench/run.bench.ts, starts it and reports what it prints.
 *
 *   node [V8 flags of the shipped unit] bench/run-daemon.mjs seed  <site.yaml> <data dir>
 *   node [V8 flags of the shipped unit] bench/run-daemon.mjs batch <site.yaml> <data dir> <poll ms>
 *
 * `seed`: the embedded default's first start (demo models fitted and validated, the bundle signed, the demo
 * identities made), then a clean stop. `batch`: the daemon as `serve` runs it (the REST API served, the simulator in
 * its own child process) restarted on that data directory; one batch of B-1042, the QA reviewer signing the release
 * in-process as soon as the gate asks; one JSON line on stdout with the figures (see the end of this file).
 */
import { readFileSync } from 'node:fs';
import { constants, monitorEventLoopDelay, performance, PerformanceObserver } from 'node:perf_hooks';
import { startDaemon } from '../dist/src/daemon.js';
import { createLogger } from '../dist/src/log.js';

const [mode, configFile, dataDir, pollMs] = process.argv.slice(2);
const T = 'acme-pharma';
const TERMINAL = new Set(['SUCCEEDED', 'FAILED', 'REJECTED', 'ABORTED', 'HELD', 'INTERRUPTED']);
const mb = (bytes) => +(bytes / 2 ** 20).toFixed(1);

if (mode === 'seed') {
  const first = await startDaemon({ configFile, dataDir, logger: createLogger('error'), embeddedSimulator: 'process', api: { host: '127.0.0.1', port: 0 }, maintenance: false });
  await first.stop('first start done');
  process.exit(0);
}
if (mode !== 'batch') throw new Error(`usage: run-daemon.mjs seed|batch <site.yaml> <data dir> [poll ms]`);

const s0 = performance.now();
const d = await startDaemon({ configFile, dataDir, logger: createLogger('error'), pollMs: Number(pollMs), embeddedSimulator: 'process', api: { host: '127.0.0.1', port: 0 } });
const startMs = performance.now() - s0;
// ready does not wait for a connection past its timeout (the connectors keep retrying): on a loaded machine, wait
const equipment = d.loaded.config.equipment.map((e) => e.id);
const settled = () => d.connectors.every((c) => c.health().state === 'connected') && equipment.every((e) => d.supervision().get(e)?.state !== undefined);
for (let i = 0; i < 600 && !settled(); i++) await new Promise((r) => setTimeout(r, 100));
const readyMem = process.memoryUsage();
const simPid = d.simulatorProcess.pid;

// what the batch costs the event loop (the heartbeats' thread): its delay, and the garbage collector's pauses by kind
const loop = monitorEventLoopDelay({ resolution: 10 });
const gc = { minor: [0, 0, 0], major: [0, 0, 0], incremental: [0, 0, 0], weakcb: [0, 0, 0] };
const kinds = { [constants.NODE_PERFORMANCE_GC_MINOR]: 'minor', [constants.NODE_PERFORMANCE_GC_MAJOR]: 'major', [constants.NODE_PERFORMANCE_GC_INCREMENTAL]: 'incremental', [constants.NODE_PERFORMANCE_GC_WEAKCB]: 'weakcb' };
const gcObserver = new PerformanceObserver((list) => {
  for (const e of list.getEntries()) {
    const g = gc[kinds[e.detail?.kind] ?? 'minor'];
    g[0]++;
    g[1] += e.duration;
    g[2] = Math.max(g[2], e.duration);
  }
});
gcObserver.observe({ entryTypes: ['gc'] });
loop.enable();

const heads = () => d.store.audit.chains().reduce((n, c) => n + d.store.audit.head(c).seq, 0);
const auditBefore = heads();
const t0 = performance.now();
const cpu0 = process.cpuUsage();
const run = d.engine.start({ tenant: T, request: 'run batch B-1042 on line-3, keep weight and hardness on target, capping risk under 1.5%, weight RSD under 1.4%', by: 'o.operator' });
const presence = setInterval(() => d.engine.presence('o.operator'), 10_000);
let status = run.status;
while (!TERMINAL.has(status)) {
  await new Promise((r) => setTimeout(r, 20));
  for (const a of d.engine.pendingApprovals(T)) {
    const signer = { user: 'm.rossi', name: 'Maria Rossi', role: 'qa_reviewer' };
    try {
      d.engine.decide(T, a.id, { signer, decision: 'approve', meaning: 'QA release of batch B-1042' });
    } catch (err) {
      // a batch that cannot be released (a failed specification, an open exception: a loaded machine's PLC
      // watchdog or control) is rejected, so the run ends and its figures are still reported, marked by its status
      process.stderr.write(`release refused: ${err instanceof Error ? err.message : String(err)}\n`);
      d.engine.decide(T, a.id, { signer, decision: 'reject', meaning: 'QA rejection of batch B-1042' });
    }
  }
  status = d.engine.get(T, run.id).status;
}
const wallMs = performance.now() - t0;
// The batch's package — its release, or the record of its rejection — is written once the decision is committed,
// by the same sealing worker either way: wait for step 10 to settle, so that the peak and the CPU include it.
const p0 = performance.now();
const packageStep = () => d.engine.get(T, run.id).steps.find((s) => s.name === 'release.genealogy');
for (let i = 0; i < 3000 && ['PENDING', 'RUNNING'].includes(packageStep()?.status ?? ''); i++) await new Promise((r) => setTimeout(r, 20));
const packageMs = performance.now() - p0;
// the daemon's CPU over the batch and its package, its worker threads included: what the V8 flags trade memory against
const cpu = process.cpuUsage(cpu0);
clearInterval(presence);
loop.disable();
gcObserver.disconnect();
const maxRssMb = process.resourceUsage().maxRSS / 1024;
const endMem = process.memoryUsage();
const simPeakMb = peakRssMb(simPid);
const view = d.engine.get(T, run.id);
// what a QA reviewer reads beside the steps: every exception the run raised, with its evidence
const exceptions = d.engine.exceptionsOf(T, run.id).map((e) => ({ kind: e.kind, severity: e.severity, step: e.step, status: e.status, title: e.title, evidence: e.evidence }));
const toolCalls = d.engine.toolCalls(T, run.id).filter((c) => c.kind === 'call').length;
const auditEntries = heads() - auditBefore;
await d.stop('bench done');

const ms = (ns) => +(ns / 1e6).toFixed(1);
process.stdout.write(`${JSON.stringify({
  status, reason: view.reason ?? null, exceptions, steps: view.steps.map((s) => ({ seq: s.seq, name: s.name, status: s.status, detail: s.detail, durationMs: s.durationMs })),
  wallMs, packageMs, startMs, toolCalls, auditEntries, cpuS: (cpu.user + cpu.system) / 1e6,
  execArgv: process.execArgv,
  readyRssMb: readyMem.rss / 2 ** 20, maxRssMb,
  heapUsedReadyMb: mb(readyMem.heapUsed), heapTotalReadyMb: mb(readyMem.heapTotal), externalReadyMb: mb(readyMem.external),
  heapUsedEndMb: mb(endMem.heapUsed), heapTotalEndMb: mb(endMem.heapTotal), externalEndMb: mb(endMem.external), arrayBuffersEndMb: mb(endMem.arrayBuffers),
  simPeakMb,
  loopDelay: { p50Ms: ms(loop.percentile(50)), p99Ms: ms(loop.percentile(99)), maxMs: ms(loop.max) },
  gc: Object.fromEntries(Object.entries(gc).map(([k, [n, total, max]]) => [k, { n, totalMs: +total.toFixed(1), maxMs: +max.toFixed(2) }])),
})}\n`);
process.exit(0);

/** A process's peak resident set (VmHWM, Linux), in MB; null where /proc does not say. */
function peakRssMb(pid) {
  try {
    const m = /^VmHWM:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? +(Number(m[1]) / 1024).toFixed(1) : null;
  } catch {
    return null;
  }
}
