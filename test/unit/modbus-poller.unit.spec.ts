/**
 * The polling group on fake timers: cycle counts, the fixed rate and the stall watchdog are
 * properties of the code, so they are asserted exactly against virtual time, never against the
 * speed of the machine running the suite.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { PollGroup } from '../../connectors/modbus/poller.js';
import type { Sample } from '../../connectors/types.js';

const sample = (value: number): Sample => ({ tag: 't', value, quality: 'good', status: 'Good', unit: '1', sourceTime: 0, receivedAt: 0 });
/** The fake clock's reading (vitest fakes Date together with the timers). */
const now = (): number => Date.now();

describe('modbus polling group', () => {
  beforeEach(() => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'Date'] });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('polls at a fixed rate and reports only changes', async () => {
    let n = 0;
    const got: Sample[] = [];
    // the value changes every third poll
    const g = new PollGroup({
      tags: ['t'], intervalMs: 20, deadband: undefined, stallMs: 1000, now,
      read: () => Promise.resolve([sample(Math.floor(n++ / 3))]),
      emit: (s) => got.push(...s), onStall: () => undefined, onError: () => undefined,
    });
    g.start();
    await vi.advanceTimersByTimeAsync(230);
    g.stop();
    expect(g.cycles).toBe(12); // at 0, 20, …, 220 ms
    expect(got.map((s) => s.value)).toEqual([0, 1, 2, 3]);
    await vi.advanceTimersByTimeAsync(60);
    expect(g.cycles).toBe(12); // stopped means stopped
    expect(n).toBe(12);
  });

  it('keeps a fixed rate, not a fixed delay, when each read takes part of the interval', async () => {
    const starts: number[] = [];
    const t0 = now();
    const g = new PollGroup({
      tags: ['t'], intervalMs: 20, deadband: undefined, stallMs: 1000, now,
      read: () => {
        starts.push(now() - t0);
        return new Promise<Sample[]>((r) => setTimeout(() => r([sample(starts.length)]), 15));
      },
      emit: () => undefined, onStall: () => undefined, onError: () => undefined,
    });
    g.start();
    await vi.advanceTimersByTimeAsync(100);
    g.stop();
    expect(starts).toEqual([0, 20, 40, 60, 80, 100]);
  });

  it('abandons a stalled cycle, counts it, and keeps polling; the stalled result is never reported', async () => {
    let calls = 0;
    let releaseStalled: ((s: Sample[]) => void) | undefined;
    const got: Sample[] = [];
    const stalls: number[] = [];
    const g = new PollGroup({
      tags: ['t'], intervalMs: 20, deadband: undefined, stallMs: 100, now,
      read: () => (++calls === 1 ? new Promise<Sample[]>((r) => (releaseStalled = r)) : Promise.resolve([sample(2)])),
      emit: (s) => got.push(...s), onStall: (age) => stalls.push(age), onError: () => undefined,
    });
    g.start();
    await vi.advanceTimersByTimeAsync(400);
    releaseStalled?.([sample(1)]);
    await vi.advanceTimersByTimeAsync(50);
    g.stop();
    expect(stalls).toHaveLength(1);
    expect(stalls[0]).toBeGreaterThan(100);
    expect(got.map((s) => s.value)).toEqual([2]);
    expect(calls).toBeGreaterThan(5);
  });
});
