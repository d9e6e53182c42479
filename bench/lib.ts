/**
 * Shared benchmark helpers. Every benchmark measures linekeeper and a named
 * peer (the raw library, or a real alternative) in the same run, and reports
 * both with their ratio through {@link report}. `npm run bench` (bench/run.ts)
 * runs each `*.bench.ts` in its own process and prints the table.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

export interface Figure {
  /** Who was measured, e.g. "linekeeper OpcUaConnector.read" or "raw node-opcua session.read". */
  readonly label: string;
  readonly value: number;
}

export interface BenchResult {
  readonly name: string;
  readonly unit: string;
  readonly ours: Figure;
  readonly peer: Figure;
  /** True when more is better (throughput); false for latencies. */
  readonly higherIsBetter: boolean;
  /** Free-form extra figures (p50/p99, counts, budget). */
  readonly extra?: Readonly<Record<string, number | string>>;
  /** The target the issue set, in words, e.g. "ours ≥ 0.85 × raw". */
  readonly target?: string;
}

/** ours/peer for throughput, peer/ours for latency: above 1 means we are faster. */
export function speedRatio(r: Pick<BenchResult, 'ours' | 'peer' | 'higherIsBetter'>): number {
  return r.higherIsBetter ? r.ours.value / r.peer.value : r.peer.value / r.ours.value;
}

export function report(r: BenchResult): void {
  const ratio = speedRatio(r);
  const fmt = (v: number): string => (Math.abs(v) >= 100 ? v.toFixed(0) : v.toPrecision(3));
  const extra = r.extra ? `  ${Object.entries(r.extra).map(([k, v]) => `${k}=${typeof v === 'number' ? fmt(v) : v}`).join(' ')}` : '';
  process.stdout.write(
    `${r.name}: ours ${fmt(r.ours.value)} ${r.unit} (${r.ours.label}) vs peer ${fmt(r.peer.value)} ${r.unit} (${r.peer.label}) → ratio ${ratio.toFixed(2)}${r.target ? ` [target ${r.target}]` : ''}${extra}\n`,
  );
  process.stdout.write(`BENCH ${JSON.stringify({ ...r, ratio })}\n`);
}

/** Run `fn` repeatedly for about `ms` milliseconds after a warm-up; returns operations per second. */
export async function opsPerSecond(fn: () => unknown | Promise<unknown>, ms = 2000, warmupMs = 300): Promise<number> {
  const until = (t: number): Promise<number> => loop(fn, t);
  await until(warmupMs);
  const t0 = performance.now();
  const n = await until(ms);
  return n / ((performance.now() - t0) / 1000);
}

async function loop(fn: () => unknown | Promise<unknown>, ms: number): Promise<number> {
  const end = performance.now() + ms;
  let n = 0;
  while (performance.now() < end) {
    const r = fn();
    if (r instanceof Promise) await r;
    n++;
  }
  return n;
}

/** Latency samples (ms) of `n` sequential calls, after `warmup` calls. */
export async function latencies(fn: () => unknown | Promise<unknown>, n: number, warmup = Math.min(100, n)): Promise<number[]> {
  for (let i = 0; i < warmup; i++) await fn();
  const out = new Array<number>(n);
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    await fn();
    out[i] = performance.now() - t0;
  }
  return out;
}

export function percentile(samples: readonly number[], p: number): number {
  const s = [...samples].sort((a, b) => a - b);
  if (s.length === 0) return Number.NaN;
  const i = Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1));
  return s[i]!;
}

/** What {@link heartbeatJitterDuring} measured: each tick's lateness (ms), how long it ran, the loop's max delay. */
export interface HeartbeatJitter {
  readonly late: number[];
  readonly ms: number;
  readonly loopMaxMs: number;
}

/**
 * Run `work` while a heartbeat timer ticks every `periodMs` on this thread: each tick's lateness after the one
 * before (what holds the loop holds a PLC heartbeat), and monitorEventLoopDelay's max over the same time.
 */
export async function heartbeatJitterDuring(periodMs: number, work: () => Promise<unknown>): Promise<HeartbeatJitter> {
  const late: number[] = [];
  const h = monitorEventLoopDelay({ resolution: 10 });
  h.enable();
  let last = performance.now();
  const timer = setInterval(() => {
    const now = performance.now();
    late.push(Math.max(0, now - last - periodMs));
    last = now;
  }, periodMs);
  const start = performance.now();
  try {
    await work();
    await new Promise((r) => setTimeout(r, 2 * periodMs));
  } finally {
    clearInterval(timer);
    h.disable();
  }
  return { late, ms: performance.now() - start, loopMaxMs: h.max / 1e6 };
}

/** Build dist/ again when a source of src/ or connectors/ is newer than it (the benches that run the compiled daemon). */
export function ensureBuilt(): void {
  const built = join(ROOT, 'dist', 'src', 'cli', 'main.js');
  const newest = (d: string): number =>
    readdirSync(d, { withFileTypes: true }).reduce((n, e) => Math.max(n, e.isDirectory() ? newest(join(d, e.name)) : e.name.endsWith('.ts') ? statSync(join(d, e.name)).mtimeMs : 0), 0);
  if (existsSync(built) && Math.max(newest(join(ROOT, 'src')), newest(join(ROOT, 'connectors'))) <= statSync(built).mtimeMs) return;
  execFileSync(process.execPath, [join(ROOT, 'tools/build.mjs')], { cwd: ROOT, stdio: 'inherit' });
}
