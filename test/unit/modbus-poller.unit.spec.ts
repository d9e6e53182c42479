import { describe, expect, it } from 'vitest';
import { PollGroup } from '../../connectors/modbus/poller.js';
import type { Sample } from '../../connectors/types.js';

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const sample = (value: number): Sample => ({ tag: 't', value, quality: 'good', status: 'Good', unit: '1', sourceTime: 0, receivedAt: 0 });

describe('modbus polling group', () => {
  it('polls at a fixed rate and reports only changes', async () => {
    let n = 0;
    const got: Sample[] = [];
    // the value changes every third poll
    const g = new PollGroup({
      tags: ['t'], intervalMs: 20, deadband: undefined, stallMs: 1000,
      read: () => Promise.resolve([sample(Math.floor(n++ / 3))]),
      emit: (s) => got.push(...s), onStall: () => undefined, onError: () => undefined,
    });
    g.start();
    await sleep(230);
    g.stop();
    const cycles = g.cycles;
    expect(cycles).toBeGreaterThanOrEqual(5);
    expect(cycles).toBeLessThanOrEqual(13);
    expect(got.map((s) => s.value)).toEqual(Array.from({ length: got.length }, (_, i) => i));
    expect(got.length).toBe(Math.ceil(n / 3));
    await sleep(60);
    expect(g.cycles).toBe(cycles); // stopped means stopped
  });

  it('abandons a stalled cycle, counts it, and keeps polling; the stalled result is never reported', async () => {
    let calls = 0;
    let releaseStalled: ((s: Sample[]) => void) | undefined;
    const got: Sample[] = [];
    const stalls: number[] = [];
    const g = new PollGroup({
      tags: ['t'], intervalMs: 20, deadband: undefined, stallMs: 100,
      read: () => (++calls === 1 ? new Promise<Sample[]>((r) => (releaseStalled = r)) : Promise.resolve([sample(2)])),
      emit: (s) => got.push(...s), onStall: (age) => stalls.push(age), onError: () => undefined,
    });
    g.start();
    await sleep(400);
    releaseStalled?.([sample(1)]);
    await sleep(50);
    g.stop();
    expect(stalls).toHaveLength(1);
    expect(stalls[0]).toBeGreaterThan(100);
    expect(got.map((s) => s.value)).toEqual([2]);
    expect(calls).toBeGreaterThan(5);
  });
});
