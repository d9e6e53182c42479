/**
 * The event-loop delay monitor (src/ops/loop-delay.ts) on the real loop of this process: a task that holds the
 * loop longer than the bound is seen, logged and counted. Only lower bounds are asserted (a loaded machine makes
 * a delay longer, never shorter).
 */
import { describe, expect, it } from 'vitest';
import pino from 'pino';
import { Writable } from 'node:stream';
import { LoopDelayMonitor, type LoopDelaySnapshot } from '../../src/ops/loop-delay.js';

const hold = (ms: number): void => {
  const end = performance.now() + ms;
  while (performance.now() < end) { /* hold the loop */ }
};
const tick = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

describe('LoopDelayMonitor', () => {
  it('sees a task that holds the loop past the bound: logged, counted, and the worst delay kept', async () => {
    const lines: string[] = [];
    const logger = pino({ level: 'warn' }, new Writable({ write(c: Buffer, _e, cb) { lines.push(c.toString()); cb(); } }));
    const m = new LoopDelayMonitor({ boundMs: 50, windowMs: 60_000, resolutionMs: 5, logger }).start();
    const seen: LoopDelaySnapshot[] = [];
    m.onWindow((s) => seen.push(s));
    try {
      expect(m.snapshot()).toMatchObject({ p99Ms: 0, maxMs: 0, overBound: 0, boundMs: 50 });
      await tick(20);
      hold(200);
      await tick(20);
      m.endWindow();
      const s = m.snapshot();
      expect(s.maxMs).toBeGreaterThan(150);
      expect(s.worstMs).toBe(s.maxMs);
      expect(s.overBound).toBe(1);
      expect(seen).toEqual([s]);
      expect(lines).toHaveLength(1);
      expect(JSON.parse(lines[0]!)).toMatchObject({ level: 40, boundMs: 50, maxMs: s.maxMs });
      // the next window starts afresh; the worst since start stays
      await tick(20);
      m.endWindow();
      const next = m.snapshot();
      expect(seen).toHaveLength(2);
      expect(next.worstMs).toBe(Math.max(s.maxMs, next.maxMs));
      expect(next.overBound).toBe(next.maxMs > 50 ? 2 : 1);
    } finally {
      m.stop();
    }
  });
});
