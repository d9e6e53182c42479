/**
 * Heartbeat jitter while a process engineer's 10,000-candidate rehearsal runs (issue: the heartbeat never
 * starves; target p99 ≤ 50 ms, max ≤ 250 ms, against a 3 s PLC watchdog). On a real daemon (embedded default:
 * plant simulator, connectors and their PLC heartbeats, SQLite, REST API), through the path the API uses:
 * `POST /v1/tenants/acme-pharma/twin/simulate` with 10,000 candidates — guard, the worker thread, the answer's
 * encoding, the audit entry — answered over real HTTP to a client in a child process (receiving and parsing
 * 14 MB is the client's work, not the daemon's).
 *
 *  - ours: a timer on the daemon's main thread (setInterval) while ROUNDS rehearsals run one after another;
 *    jitter = how late each tick came after the one before;
 *  - peer: the bare heartbeat loop, the same timer with nothing else running (daemon stopped), for as long;
 *  - extra: the same timer on the daemon with nothing asked of it (what the machine and the plant cost); the main
 *    thread's own work for one answer timed alone, now and as it was (decode the result, schema-encode it); the
 *    longest main-loop task (monitorEventLoopDelay max) during the rehearsals, and the same for one
 *    rehearsal the old way, all on the main thread (simulate, then JSON encoding of the whole result).
 *
 * The timer ticks every 100 ms (LK_BENCH_HEARTBEAT_MS), as in release.bench.ts.
 */
import { spawn } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { performance } from 'node:perf_hooks';
import { deserialize, serialize } from 'node:v8';
import { safeEncode } from 'zod/v4/core';
import { heartbeatJitterDuring, percentile, report, type HeartbeatJitter } from './lib.js';
import { defaultConfigFile } from '../src/config/load.js';
import { startDaemon } from '../src/daemon.js';
import { SimulationView } from '../src/api/schemas.js';
import { encodeRehearsal } from '../src/engine/rehearsal-encode.js';
import { silentLogger } from '../src/log.js';
import { twinModelOf } from '../src/models/artefacts.js';
import { loadValidated } from '../src/models/registry.js';
import { simulate } from '../src/twin/simulate.js';
import { twinDesignSpace } from '../src/twin/design-space.js';

const CANDIDATES = 10_000;
const ROUNDS = Number(process.env['LK_BENCH_REHEARSAL_ROUNDS'] ?? 10);
const HB = Number(process.env['LK_BENCH_HEARTBEAT_MS'] ?? 100);
const T = 'acme-pharma';
/** The HTTP client (a child process): for each request body on stdin, POST, read the answer's bytes, print "<status> <bytes>". */
const CLIENT = `import { createInterface } from 'node:readline';
for await (const body of createInterface({ input: process.stdin })) {
  const r = await fetch(process.env.LK_URL, { method: 'POST', headers: { authorization: 'Bearer ' + process.env.LK_TOKEN, 'content-type': 'application/json' }, body });
  const b = await r.arrayBuffer();
  process.stdout.write(r.status + ' ' + b.byteLength + (r.status === 200 ? '' : ' ' + Buffer.from(b).toString('utf8', 0, 300)) + '\\n');
}`;

const heartbeatDuring = (work: () => Promise<unknown>): Promise<HeartbeatJitter> => heartbeatJitterDuring(HB, work);

const dir = mkdtempSync(join(tmpdir(), 'lk-bench-rehearsal-'));
try {
  cpSync(join(defaultConfigFile(), '..', 'policy'), join(dir, 'policy'), { recursive: true });
  cpSync(join(defaultConfigFile(), '..', 'batches'), join(dir, 'batches'), { recursive: true });
  writeFileSync(join(dir, 'site.yaml'), readFileSync(defaultConfigFile(), 'utf8'));
  const daemon = await startDaemon({ configFile: join(dir, 'site.yaml'), dataDir: join(dir, 'data'), logger: silentLogger, api: { host: '127.0.0.1', port: 0 } });
  let ours!: Awaited<ReturnType<typeof heartbeatDuring>>;
  let onLoop!: Awaited<ReturnType<typeof heartbeatDuring>>;
  let idle!: Awaited<ReturnType<typeof heartbeatDuring>>;
  let bytes = 0;
  let closeClient = (): void => undefined;
  let taskBefore = 0;
  let taskNow = 0;
  try {
    const engineer = daemon.demoUsers.find((u) => u.id === 'p.bianchi')!;
    // the demo's one-time password is someone else's choice: its owner changes it before the session may do anything
    const own = `bench ${engineer.id}: a passphrase of the owner's own choosing`;
    await daemon.identity!.changePassword(engineer.id, engineer.password, own);
    const { token } = await daemon.identity!.signIn(engineer.id, own);
    // the client in a child process, started once: receiving 14 MB is the client's work, not the daemon's, and
    // starting a process (a fork of this large one) is the bench's, not the daemon's
    const client = spawn(process.execPath, ['--input-type=module', '-e', CLIENT], {
      env: { ...process.env, LK_URL: `${daemon.ready.api!}/v1/tenants/${T}/twin/simulate`, LK_TOKEN: token },
      stdio: ['pipe', 'pipe', 'inherit'],
    });
    const answers = createInterface({ input: client.stdout! });
    const waiting: ((line: string) => void)[] = [];
    answers.on('line', (line) => waiting.shift()?.(line));
    closeClient = () => client.stdin!.end();
    const rehearseOverHttp = (seed: number): Promise<void> => new Promise((resolve, reject) => {
      waiting.push((line) => {
        const [status, length] = line.trim().split(' ').map(Number);
        if (status !== 200) reject(new Error(`twin/simulate answered: ${line.slice(0, 300)}`));
        else {
          bytes = length!;
          resolve();
        }
      });
      client.stdin!.write(`${JSON.stringify({ candidates: CANDIDATES, horizon: 'full batch', seed })}\n`);
    });
    await rehearseOverHttp(99); // warm: the worker started, the route compiled
    // the daemon with nothing asked of it, for as long as one rehearsal: what the machine and the plant cost
    idle = await heartbeatDuring(() => new Promise((r) => setTimeout(r, 2000)));
    ours = await heartbeatDuring(async () => {
      for (let r = 0; r < ROUNDS; r++) await rehearseOverHttp(r + 1);
    });
    // before: one rehearsal the old way, on this thread, with the JSON encoding of its whole result
    const { config } = daemon.loaded;
    const product = config.tenants.find((t) => t.id === T)!.products[0]!;
    const tooling = config.products.find((p) => p.id === product)!.tooling[0]!;
    const bundle = daemon.policy.bundle!;
    const model = twinModelOf(loadValidated(daemon.store, daemon.loaded.dataDir, T, config.site.id, 'process', 'twin'));
    const designSpace = twinDesignSpace(bundle.designSpace.approved(product, tooling).setpoints, `${product} × ${tooling}`);
    let result!: ReturnType<typeof simulate>;
    onLoop = await heartbeatDuring(async () => {
      result = simulate(model, { candidates: CANDIDATES, horizon: 'full batch', seed: 1, designSpace, cappingThresholdPct: bundle.content.cappingRiskThreshold * 100 });
      JSON.stringify(result);
    });
    // The main thread's own work for one answer, timed alone (the least of 5: a time slice lost to another
    // process is not the task's). Before: the result decoded from the worker's message (the structured clone's
    // deserialiser), then the response schema's encoding and JSON.stringify. Now: the message holds the summary
    // and a transferred buffer (not copied), sent as it is.
    const leastOf = (f: () => unknown): number => {
      let least = Infinity;
      for (let i = 0; i < 5; i++) {
        const t = performance.now();
        f();
        least = Math.min(least, performance.now() - t);
      }
      return least;
    };
    const wireBefore = serialize({ id: 1, ok: true, result });
    taskBefore = leastOf(() => {
      const r = (deserialize(wireBefore) as { result: unknown }).result;
      const e = safeEncode(SimulationView, r as never);
      if (!e.success) throw new Error('the result does not fit SimulationView');
      return JSON.stringify(e.data);
    });
    const encoded = encodeRehearsal(result);
    const wireNow = serialize({ id: 1, ok: true, encoded: { summary: encoded.summary } });
    taskNow = leastOf(() => {
      const m = deserialize(wireNow) as { encoded: { summary: unknown } };
      return Buffer.from(encoded.body.buffer, encoded.body.byteOffset, encoded.body.byteLength).length + (m.encoded.summary ? 1 : 0);
    });
  } finally {
    closeClient();
    await daemon.stop('bench done');
  }
  // peer: the bare heartbeat loop for as long, nothing else running
  const peer = await heartbeatDuring(() => new Promise((r) => setTimeout(r, ours.ms - 2 * HB)));

  const p99 = percentile(ours.late, 99);
  const max = Math.max(...ours.late);
  const met = p99 <= 50 && max <= 250;
  report({
    name: `heartbeat jitter while ${ROUNDS} rehearsals of ${CANDIDATES.toLocaleString('en-US')} candidates run through POST twin/simulate on the daemon (timer ${HB} ms)`,
    unit: 'ms p99',
    ours: { label: 'timer on the daemon\'s main loop, rehearsal and its encoding in a worker', value: p99 },
    peer: { label: 'bare heartbeat loop, nothing else running', value: percentile(peer.late, 99) },
    higherIsBetter: false,
    target: `p99 ≤ 50 ms and max ≤ 250 ms: ${met ? 'met' : 'NOT met'}`,
    extra: {
      max_ms: max, peer_max_ms: Math.max(...peer.late), idle_daemon_p99_ms: percentile(idle.late, 99), idle_daemon_max_ms: Math.max(...idle.late), ticks: ours.late.length, peer_ticks: peer.late.length,
      rehearsal_s: ours.ms / 1000 / ROUNDS, answer_mb: bytes / 2 ** 20, loop_delay_max_ms: ours.loopMaxMs,
      main_thread_task_ms: taskNow, main_thread_task_before_ms: taskBefore,
      before_on_loop_max_ms: Math.max(...onLoop!.late, onLoop!.loopMaxMs), before_rehearsal_s: onLoop!.ms / 1000,
    },
  });
  process.exitCode = met ? 0 : 1;
} finally {
  rmSync(dir, { recursive: true, force: true });
}
