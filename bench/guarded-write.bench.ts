/**
 * One end-to-end guarded write (arbitration + policy with the twin's capping
 * risk + audit intent + OPC UA write + read-back + audit outcome, SQLite at
 * synchronous=FULL) on loopback against the simulator, against the floor of a
 * durable supervised write measured in the same run (bench/peers/durable-write-floor.ts):
 * - the floor: one raw node-opcua Read of the current setpoints the guard reads
 *   (the step check and the capping risk need the true values), a
 *   synchronous=FULL commit of the intent row, the raw Write, the raw Read-back
 *   compared with the written value, a synchronous=FULL commit of the outcome
 *   row — rows of the byte size of linekeeper's, in a WAL file like the store;
 * - the audited floor (bench/peers/audited-write-floor.ts): the floor whose
 *   two commits carry the three SHA-256-chained records of the write into a
 *   table with the trail's secondary indexes — the pages a reviewable audit
 *   trail must commit. The WAL pages each side's commits add per write are
 *   counted, so what the trail's records cost in I/O is measured, apart from
 *   what linekeeper's own code costs in CPU;
 * - the issue's narrower floor without the Read before (write, read-back and
 *   the two commits), and the bare write + read-back, for reference.
 * All five run in alternating blocks, so a shared machine's load swings hit
 * them alike. After them, 300 more writes of ours are timed phase by phase at
 * the writer's seams (the connector's Read, the write capability, store.tx)
 * and the medians printed: where what is above the floor goes. Target:
 * floor / ours ≥ 0.8 at p50 and at p99. The simulated PLCs
 * run in their own process (`linekeeper sim`), as PLCs do.
 *
 * `LK_BENCH_GW_BLOCKS` (default 25) blocks of 20 calls each.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { AttributeIds, DataType, OPCUACertificateManager, OPCUAClient } from 'node-opcua';
import { createConnectors } from '../connectors/index.js';
import { loadConfig } from '../src/config/load.js';
import { ManualClock } from '../src/clock.js';
import { GuardedWriter } from '../src/engine/guarded-writer.js';
import { changeAutonomy, initialAutonomy } from '../src/policy/index.js';
import { loadPolicyBundle } from '../src/config/policy-bundle.js';
import { openStore } from '../src/store/store.js';
import { cloneParams, NOMINAL_PARAMS } from '../src/twin/params.js';
import { latencies, percentile, report } from './lib.js';
import { auditedWriteFloor } from './peers/audited-write-floor.js';
import { durableWriteFloor } from './peers/durable-write-floor.js';

const cfg = loadConfig();
const { bundle } = loadPolicyBundle(cfg.policyDir, { site: cfg.config });
const NOW = Date.UTC(2026, 2, 3, 8);
const BLOCKS = Number(process.env.LK_BENCH_GW_BLOCKS ?? 25);

const dir = mkdtempSync(join(tmpdir(), 'lk-bench-gw-'));
// the simulated PLCs run in a process of their own, as PLCs do: their scans, heartbeat watchdogs and OPC UA server
// are not this process's CPU, so what is measured here is the writer and the floor, side by side
const simProc = spawn(process.execPath, ['--import', 'tsx', 'src/cli/bin.ts', 'sim', '--time-scale', '1', '--seed', '1', '--watchdog-timeout-ms', '600000', '--log-level', 'error'], {
  cwd: fileURLToPath(new URL('..', import.meta.url)),
  stdio: ['ignore', 'pipe', 'inherit'],
});
const endpoints = await new Promise<{ opcua: string; modbus: string }>((resolve, reject) => {
  let out = '';
  simProc.stdout.on('data', (c: Buffer) => {
    out += c.toString();
    const line = out.split('\n').find((l) => l.startsWith('{'));
    if (line) resolve(JSON.parse(line) as { opcua: string; modbus: string });
  });
  simProc.on('exit', (code) => reject(new Error(`simulator exited ${code}`)));
});
const [modbusHost, modbusPort] = [endpoints.modbus.split(':')[0]!, Number(endpoints.modbus.split(':')[1])];
const sim = { opcuaUrl: endpoints.opcua, modbusHost, modbusPort, namespaceUri: cfg.config.connections.find((c) => c.protocol === 'opcua')!.namespace_uri };
const store = openStore({ dataDir: join(dir, 'data') });
const opcua = createConnectors(cfg.config, { dataDir: join(dir, 'data'), sim: { opcuaUrl: sim.opcuaUrl, modbusHost: sim.modbusHost, modbusPort: sim.modbusPort } }).filter((c) => c.protocol === 'opcua');
await Promise.all(opcua.map((c) => c.connect()));
// where one of our writes spends its time: marks at the writer's seams (the connectors' Read, the write capability,
// store.tx), set only during an instrumented pass after the measured blocks — a null check while those run
let phases: [string, number][] | null = null;
const mark = (k: string): void => void phases?.push([k, performance.now()]);
for (const c of opcua) {
  const read = c.read.bind(c);
  c.read = async (tags) => {
    mark('read');
    try {
      return await read(tags);
    } finally {
      mark('read end');
    }
  };
  const claim = c.claimWriter.bind(c);
  c.claimWriter = () => {
    const cap = claim();
    return Object.freeze({
      ...cap,
      write: async (tag: string, value: number) => {
        mark('write');
        try {
          return await cap.write(tag, value);
        } finally {
          mark('write end');
        }
      },
    });
  };
}
const tx = store.tx.bind(store);
let txDepth = 0;
store.tx = <T>(fn: (t: Parameters<Parameters<typeof store.tx>[0]>[0]) => T): T => {
  if (txDepth > 0 || !phases) return tx(fn);
  txDepth++;
  mark('tx');
  try {
    return tx((t) => {
      mark('records');
      try {
        return fn(t);
      } finally {
        mark('commit');
      }
    });
  } finally {
    txDepth--;
    mark('tx end');
  }
};
const clock = new ManualClock(NOW);
const qa = { person: 'q.russo', role: 'qa_reviewer' };
const autonomy = changeAutonomy(initialAutonomy(bundle), { target: { agent: 'agent.compress_fill' }, to: 'L3', by: qa, changeRef: 'CC-BENCH', at: NOW }, bundle).state;
// the writer predicts capping itself: here from the nominal twin (the cost is the same as a fitted one's)
const twin = { id: 'process-twin-v1', version: 1, params: cloneParams(NOMINAL_PARAMS), validRanges: {} };
const view = { tenant: 'acme-pharma', id: 'process-twin-v1', analyte: 'process', family: 'twin', version: 1, kind: 'twin' as const, status: 'validated' as const, sites: [cfg.config.site.id], sha256: '0'.repeat(64) };
const writer = new GuardedWriter({
  batches: () => ({ state: 'running', reviewer: 'a.bianchi' }),
  store,
  site: cfg.config,
  connectors: opcua,
  clock,
  policy: () => bundle,
  autonomy: () => autonomy,
  attendance: () => ({ operator: 'l.verdi', lastPresenceAt: clock.now() }),
  twin: () => twin,
  processTimeScale: 60,
  models: (tenant, id) => (tenant === view.tenant && id === view.id ? view : null),
});
let flip = 0;
const guarded = async (): Promise<void> => {
  // one move a minute of process time keeps inside the rate-of-change limit: a second of the clock at the time
  // scale of 60 the daemon's accelerated runs use, so the trail's checkpoint interval (300 s) lapses at its pace
  // on a line (every 300 writes here) rather than every fifth write
  clock.advance(1_000);
  const out = await writer.propose({
    id: `bench-${flip}`,
    tenant: 'acme-pharma',
    batch: 'B-BENCH',
    agent: 'agent.compress_fill',
    product: 'ir-family-a',
    tooling: 'round-10mm-ff',
    moves: [{ setpoint: 'press.MainForce', value: flip++ % 2 === 0 ? '12.5 kN' : '12 kN' }],
    attribute: 'content_uniformity',
    justification: 'bench',
    model: { id: 'process-twin-v1', version: '1' },
  });
  if (out.status !== 'written') throw new Error(`guarded write ${out.status}: ${JSON.stringify(out.decisions.map((d) => d.reasons))}`);
};

// warm up ours first: the trail's rows of one write tell the floor how many bytes each commit carries
await latencies(guarded, 0, 30);
const rows = store.db
  .prepare(`SELECT kind, intent IS NOT NULL AS closes, length(CAST(concat(tenant, seq, ts, actor, kind, action, run, batch, agent, tool, setpoint, reviewer,
      args, result, reason, old_value, new_value, intent, signature, prev_hash, hash) AS BLOB)) AS bytes
    FROM audit_entry WHERE tenant = 'acme-pharma' ORDER BY seq DESC LIMIT 3`)
  .all() as { kind: string; closes: number; bytes: number }[];
const outcomeBytes = rows.filter((r) => r.kind === 'outcome').reduce((a, r) => a + r.bytes, 0);
const intentBytes = rows.filter((r) => r.kind !== 'outcome').reduce((a, r) => a + r.bytes, 0);
const bytesOf = (kind: string): number => {
  const row = rows.find((r) => r.kind === kind);
  if (!row) throw new Error(`no ${kind} entry among the trail's last rows (${rows.map((r) => r.kind).join(', ')}): the audited floor would carry rows of another size`);
  return row.bytes;
};
const entriesPerWrite = rows.length;

const client = OPCUAClient.create({
  endpointMustExist: false,
  connectionStrategy: { maxRetry: 0 },
  clientCertificateManager: new OPCUACertificateManager({ rootFolder: join(dir, 'raw-pki'), automaticallyAcceptUnknownCertificate: true }),
});
await client.connect(sim.opcuaUrl);
const session = await client.createSession();
const ns = (await session.readNamespaceArray()).indexOf(sim.namespaceUri);
const node = (tag: string): string => `ns=${ns};s=${tag.replace('.', '.Setpoints.')}`;
// the same nodes the guard reads before a press move: the move's setpoint and the press setpoints of the capping risk
const currentNodes = ['press.MainForce', 'press.FillDepth', 'press.PreForce', 'press.TurretSpeed'].map(node);
const floor = durableWriteFloor({ session, nodeId: node('press.MainForce'), currentNodeIds: currentNodes, file: join(dir, 'floor.db'), intentBytes, outcomeBytes });
const audited = auditedWriteFloor({ session, nodeId: node('press.MainForce'), currentNodeIds: currentNodes, file: join(dir, 'audited.db'), decisionBytes: bytesOf('policy_decision'), intentBytes: bytesOf('intent'), outcomeBytes: bytesOf('outcome') });
let floorFlip = 0;
const floorAudited = (): Promise<void> => audited.write(floorFlip++ % 2 === 0 ? 12.5 : 12);
const floorFull = (): Promise<void> => floor.write(floorFlip++ % 2 === 0 ? 12.5 : 12, true);
const floorIssue = (): Promise<void> => floor.write(floorFlip++ % 2 === 0 ? 12.5 : 12, false);
const raw = async (): Promise<void> => {
  const value = floorFlip++ % 2 === 0 ? 12.5 : 12;
  const st = await session.write({ nodeId: node('press.MainForce'), attributeId: AttributeIds.Value, value: { value: { dataType: DataType.Double, value } } });
  if (!st.isGood()) throw new Error(`raw write ${st.name}`);
  const dv = await session.read({ nodeId: node('press.MainForce'), attributeId: AttributeIds.Value });
  if (Math.abs((dv.value.value as number) - value) > 1e-9) throw new Error('raw read-back differs');
};

await latencies(floorFull, 0, 30);
await latencies(floorAudited, 0, 30);
await latencies(floorIssue, 0, 30);
await latencies(raw, 0, 30);
// WAL pages (4 KiB frames, each written and fsync'd) one write's commits add, each side: the I/O its durable content costs
const walPagesPerWrite = async (db: { pragma(sql: string, o?: { simple: boolean }): unknown }, fn: () => Promise<void>, n = 40): Promise<number> => {
  db.pragma('wal_checkpoint(TRUNCATE)');
  const auto = db.pragma('wal_autocheckpoint', { simple: true }) as number;
  db.pragma('wal_autocheckpoint = 0');
  for (let i = 0; i < n; i++) await fn();
  const [w] = db.pragma('wal_checkpoint(PASSIVE)') as { log: number }[];
  db.pragma(`wal_autocheckpoint = ${auto}`);
  return w!.log / n;
};
const pages = { g: await walPagesPerWrite(store.db, guarded), f: await walPagesPerWrite(floor.db, floorFull), fa: await walPagesPerWrite(audited.db, floorAudited) };
const g: number[] = [];
const f: number[] = [];
const fi: number[] = [];
const fa: number[] = [];
const r: number[] = [];
// CPU time of this process per call, each side: what a loaded two-core machine stretches (a millisecond of CPU
// waits for a core as long as the run queue is deep), where the commits' fsyncs and the round trips only wait
const cpu = { g: 0, f: 0, fa: 0, fi: 0, r: 0 };
const block = async (key: keyof typeof cpu, fn: () => Promise<void>, into: number[]): Promise<void> => {
  const c0 = process.cpuUsage();
  into.push(...(await latencies(fn, 20, 0)));
  const c = process.cpuUsage(c0);
  cpu[key] += (c.user + c.system) / 1000;
};
for (let i = 0; i < BLOCKS; i++) {
  await block('g', guarded, g);
  await block('f', floorFull, f);
  await block('fa', floorAudited, fa);
  await block('fi', floorIssue, fi);
  await block('r', raw, r);
}
const cpuPer = (k: keyof typeof cpu): number => cpu[k] / (BLOCKS * 20);
// the instrumented pass: the phases of 300 more writes, medians (the seams' own cost is in them, a few µs). Each
// phase is a run of the marks' intervals: marks 0 start, 1 read, 2 read end, 3 tx, 4 records, 5 commit, 6 tx end,
// 7 write, 8 write end, 9 tx, 10 records, 11 commit, 12 tx end, 13 end
const PHASES: [string, number, number][] = [
  ['before the Read', 0, 1], ['· Read of the current setpoints', 1, 2], ['· decision', 2, 3], ['· intent records', 3, 5], ['+ commit', 5, 6],
  ['· Write + Read-back', 6, 8], ['· outcome record', 8, 11], ['+ commit', 11, 12], ['· after', 12, 13],
];
const byPhase: number[][] = PHASES.map(() => []);
phases = [];
for (let i = 0; i < 300; i++) {
  phases.length = 0;
  mark('start');
  await guarded();
  mark('end');
  const names = phases.map(([k]) => k).join(' ');
  if (names !== 'start read read end tx records commit tx end write write end tx records commit tx end end') throw new Error(`a write's phases were ${names}`);
  PHASES.forEach(([, from, to], k) => byPhase[k]!.push(phases![to]![1] - phases![from]![1]));
}
phases = null;
const split = `  where linekeeper's write goes (medians of 300 instrumented writes, ms): ${PHASES.map(([name], k) => `${name} ${percentile(byPhase[k]!, 50).toFixed(2)}`).join(' ')}\n`;
const p = (s: number[], q: number): number => percentile(s, q);
const line = (name: string, s: number[], k: keyof typeof cpu): string => `  ${name.padEnd(58)} p50 ${p(s, 50).toFixed(2)} ms  p99 ${p(s, 99).toFixed(2)} ms  CPU ${cpuPer(k).toFixed(2)} ms/call  (n=${s.length})\n`;
process.stdout.write(
  `guarded write vs its durability floor (${entriesPerWrite} audit entries per write; rows: intent commit ${intentBytes} B, outcome commit ${outcomeBytes} B;\n` +
    `  WAL pages per write: linekeeper ${pages.g.toFixed(1)}, floor ${pages.f.toFixed(1)}, audited floor ${pages.fa.toFixed(1)}):\n` +
    line('linekeeper GuardedWriter.propose', g, 'g') +
    line('floor: read current + commit + write + read-back + commit', f, 'f') +
    line('audited floor: the floor committing the three chained records', fa, 'fa') +
    line('floor without the read before (the issue\'s)', fi, 'fi') +
    line('raw write + read-back', r, 'r') +
    split,
);
const ratio50 = p(f, 50) / p(g, 50);
const ratio99 = p(f, 99) / p(g, 99);
report({
  name: 'guarded write vs its durability floor (loopback)',
  unit: 'ms p50',
  ours: { label: 'GuardedWriter.propose: arbitration + policy with the twin\'s capping risk + audit intent + OPC UA write + read-back + audit outcome', value: p(g, 50) },
  peer: { label: 'raw node-opcua read of the current setpoints + better-sqlite3 synchronous=FULL commit + write + read-back + commit', value: p(f, 50) },
  higherIsBetter: false,
  target: 'floor / ours ≥ 0.8 at p50 and p99',
  extra: {
    ours_p99_ms: p(g, 99),
    floor_p99_ms: p(f, 99),
    ratio_p99: ratio99,
    ours_cpu_ms_per_write: cpuPer('g'),
    floor_cpu_ms_per_write: cpuPer('f'),
    audited_floor_p50_ms: p(fa, 50),
    audited_floor_p99_ms: p(fa, 99),
    audited_ratio_p50: p(fa, 50) / p(g, 50),
    audited_cpu_ms_per_write: cpuPer('fa'),
    wal_pages_per_write: pages.g,
    floor_wal_pages_per_write: pages.f,
    audited_wal_pages_per_write: pages.fa,
    target_met: ratio50 >= 0.8 && ratio99 >= 0.8 ? 'yes' : `NO (p50 ${ratio50.toFixed(2)}, p99 ${ratio99.toFixed(2)})`,
    floor_no_read_p50_ms: p(fi, 50),
    floor_no_read_p99_ms: p(fi, 99),
    raw_write_read_p50_ms: p(r, 50),
    raw_write_read_p99_ms: p(r, 99),
    audit_entries_per_write: entriesPerWrite,
  },
});
floor.close();
audited.close();
await session.close();
await client.disconnect();
await Promise.all(opcua.map((c) => c.close()));
store.close();
simProc.kill('SIGTERM');
await new Promise((r) => simProc.once('exit', r));
rmSync(dir, { recursive: true, force: true });
