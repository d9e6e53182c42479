/**
 * Core simulator, seeds 101..200 (test/sim/core-sim.ts): the second half of the suite's seeds, on the other worker;
 * and three whole batch runs (test/sim/run-sim.ts): the daemon on the in-memory plant, on virtual time, from start to
 * release or rejection under faults and people.
 */
import { describe, expect, it } from 'vitest';
import { RUN_INVARIANTS, simulateRun } from '../sim/run-sim.js';
import { seedRange } from '../sim/seeds.js';

describe('[INV-WRITE-PATH] core simulator (writer, policy, store, plant, people, faults on virtual time)', () => {
  seedRange(101, 100);
});

describe('[INV-RELEASE-EXCEPTIONS] [R3] core simulator, whole runs: the daemon on the in-memory plant, a batch from start to its end', () => {
  it('three seeds: each run ends released or rejected, and holds every run invariant (no failing batch released, one state, no write without its intent)', async () => {
    const ends: string[] = [];
    for (const seed of [1, 2, 3]) {
      const r = await simulateRun(seed);
      if (r.failure) expect.fail(`run seed ${seed} broke ${r.failure.invariant} (${RUN_INVARIANTS[r.failure.invariant]}): ${r.failure.message}\n${r.failure.trace.join('\n')}\nreplay: npm run sim -- --runs --seed ${seed} --seeds 1`);
      ends.push(r.status);
      // the run moved the line: the writer wrote to the plant
      expect(r.writes).toBeGreaterThan(0);
    }
    expect(ends.every((s) => s === 'SUCCEEDED' || s === 'REJECTED')).toBe(true);
  });
});
