/**
 * The lifecycle runner (src/ops/lifecycle.ts) with components that only record what is done to them: start in
 * order, stop in reverse, a start failing part-way, a stop asked for twice or concurrently, a stop that throws.
 */
import { describe, expect, it } from 'vitest';
import { Lifecycle, type Component, type StopFailure } from '../../src/ops/lifecycle.js';

/** Components a..n that append `start x` / `stop x (reason)` to `log`; `failStart` / `failStop` name the ones that throw. */
function parts(names: readonly string[], log: string[], o: { failStart?: string; failStop?: readonly string[]; asyncStop?: boolean } = {}): Component[] {
  return names.map((name) => ({
    name,
    start: async () => {
      await Promise.resolve();
      if (o.failStart === name) {
        log.push(`start ${name} half`);
        throw new Error(`${name} would not start`);
      }
      log.push(`start ${name}`);
    },
    stop: async (reason: string) => {
      if (o.asyncStop) await new Promise((r) => setTimeout(r, 1));
      log.push(`stop ${name} (${reason})`);
      if (o.failStop?.includes(name)) throw new Error(`${name} would not stop`);
    },
  }));
}

/** A logger that keeps the error lines. */
function errorLog(): { lines: { obj: Record<string, unknown>; msg: string }[]; error(obj: object, msg: string): void; debug(): void } {
  const lines: { obj: Record<string, unknown>; msg: string }[] = [];
  return { lines, error: (obj, msg) => void lines.push({ obj: obj as Record<string, unknown>, msg }), debug: () => undefined };
}

describe('the lifecycle runner', () => {
  it('starts in order and stops in reverse, recording the order', async () => {
    const log: string[] = [];
    const lc = new Lifecycle();
    await lc.start(parts(['store', 'connectors', 'writer', 'heartbeats', 'api'], log));
    expect(log).toEqual(['start store', 'start connectors', 'start writer', 'start heartbeats', 'start api']);
    await lc.stop('test');
    expect(log.slice(5)).toEqual(['stop api (test)', 'stop heartbeats (test)', 'stop writer (test)', 'stop connectors (test)', 'stop store (test)']);
    expect(lc.stopOrder()).toEqual(['api', 'heartbeats', 'writer', 'connectors', 'store']);
    // each stop finished before the next began
    const phases = lc.history().filter((e) => e.phase === 'stopping' || e.phase === 'stopped').map((e) => `${e.phase} ${e.component}`);
    expect(phases).toEqual(['stopping api', 'stopped api', 'stopping heartbeats', 'stopped heartbeats', 'stopping writer', 'stopped writer', 'stopping connectors', 'stopped connectors', 'stopping store', 'stopped store']);
  });

  it('a start failing part-way stops the failed component and those before it, in reverse, and rethrows; nothing after it starts', async () => {
    const log: string[] = [];
    const lc = new Lifecycle();
    await expect(lc.start(parts(['store', 'connectors', 'writer', 'api'], log, { failStart: 'writer' }))).rejects.toThrow('writer would not start');
    expect(log).toEqual([
      'start store', 'start connectors', 'start writer half',
      'stop writer (start failed: writer would not start)', 'stop connectors (start failed: writer would not start)', 'stop store (start failed: writer would not start)',
    ]);
    expect(lc.history().find((e) => e.phase === 'start_failed')).toMatchObject({ component: 'writer' });
    // a later stop does nothing more
    await lc.stop('again');
    expect(log).toHaveLength(6);
  });

  it('a start failing part-way rethrows the start error even when a stop of the rollback throws too (that one is logged)', async () => {
    const log: string[] = [];
    const logger = errorLog();
    const lc = new Lifecycle({ logger });
    await expect(lc.start(parts(['store', 'connectors', 'writer'], log, { failStart: 'writer', failStop: ['connectors'] }))).rejects.toThrow('writer would not start');
    expect(log.filter((l) => l.startsWith('stop'))).toHaveLength(3);
    expect(logger.lines.map((l) => l.obj['component'])).toEqual(['connectors']);
  });

  it('stops once: a second call, concurrent or later, shares the first promise and its reason', async () => {
    const log: string[] = [];
    const lc = new Lifecycle();
    await lc.start(parts(['store', 'writer', 'api'], log, { asyncStop: true }));
    const first = lc.stop('first');
    const second = lc.stop('second');
    expect(second).toBe(first);
    await Promise.all([first, second]);
    await lc.stop('third');
    expect(log.filter((l) => l.startsWith('stop'))).toEqual(['stop api (first)', 'stop writer (first)', 'stop store (first)']);
  });

  it('a stop that throws does not skip the others: all are stopped, the failure is logged, and the errors are reported at the end', async () => {
    const log: string[] = [];
    const logger = errorLog();
    const lc = new Lifecycle({ logger });
    await lc.start(parts(['store', 'connectors', 'writer', 'engine', 'api'], log));
    const err = await lc.stop('test').then(() => null, (e: unknown) => e);
    expect(log.filter((l) => l.startsWith('stop'))).toHaveLength(5);
    expect(err).toBeNull();

    const log2: string[] = [];
    const lc2 = new Lifecycle({ logger });
    await lc2.start(parts(['store', 'connectors', 'writer', 'engine', 'api'], log2, { failStop: ['engine', 'connectors'] }));
    const e2 = await lc2.stop('test').then(() => null, (e: unknown) => e);
    expect(log2.filter((l) => l.startsWith('stop'))).toEqual(['stop api (test)', 'stop engine (test)', 'stop writer (test)', 'stop connectors (test)', 'stop store (test)']);
    expect(e2).toBeInstanceOf(AggregateError);
    expect((e2 as AggregateError).errors.map((f: StopFailure) => f.component)).toEqual(['engine', 'connectors']);
    expect((e2 as AggregateError).message).toContain('engine, connectors');
    expect(logger.lines.map((l) => l.obj['component'])).toEqual(['engine', 'connectors']);
    expect(lc2.history().filter((e) => e.phase === 'stop_failed').map((e) => e.component)).toEqual(['engine', 'connectors']);
    // the same failure again for a later caller; the components are not stopped twice
    await expect(lc2.stop()).rejects.toBeInstanceOf(AggregateError);
    expect(log2.filter((l) => l.startsWith('stop'))).toHaveLength(5);
  });

  it('components without a start or a stop take their place in the order', async () => {
    const log: string[] = [];
    const lc = new Lifecycle();
    await lc.start([{ name: 'lock', stop: () => void log.push('release') }, { name: 'policy', start: () => void log.push('sign') }, { name: 'timer', start: () => void log.push('tick'), stop: () => void log.push('untick') }]);
    await lc.stop();
    expect(log).toEqual(['sign', 'tick', 'untick', 'release']);
    expect(lc.stopOrder()).toEqual(['timer', 'policy', 'lock']);
  });

  it('a stop asked for during the start waits for the component starting, stops what started, and nothing more starts', async () => {
    const log: string[] = [];
    let release!: () => void;
    const gate = new Promise<void>((r) => { release = r; });
    const lc = new Lifecycle();
    const started = lc.start([
      { name: 'store', start: () => void log.push('start store'), stop: () => void log.push('stop store') },
      { name: 'connectors', start: async () => { await gate; log.push('start connectors'); }, stop: () => void log.push('stop connectors') },
      { name: 'api', start: () => void log.push('start api'), stop: () => void log.push('stop api') },
    ]);
    await new Promise((r) => setTimeout(r, 1));
    const stopped = lc.stop('signal');
    release();
    await stopped;
    await expect(started).rejects.toThrow('stopped during start, before api');
    expect(log).toEqual(['start store', 'start connectors', 'stop connectors', 'stop store']);
  });

  it('refuses a second start and two components of one name', async () => {
    const lc = new Lifecycle();
    await expect(lc.start([{ name: 'a' }, { name: 'a' }])).rejects.toThrow('two components are named a');
    const lc2 = new Lifecycle();
    await lc2.start([{ name: 'a' }]);
    await expect(lc2.start([{ name: 'b' }])).rejects.toThrow('a lifecycle starts once');
  });

  it('listeners see each phase as it happens, before the next component moves', async () => {
    const seen: string[] = [];
    const log: string[] = [];
    const lc = new Lifecycle();
    lc.on((e) => { if (e.phase === 'stopped') seen.push(`${e.component} stopped; log has ${log.length}`); });
    await lc.start(parts(['store', 'writer'], log));
    await lc.stop('x');
    expect(seen).toEqual(['writer stopped; log has 3', 'store stopped; log has 4']);
  });
});
