/**
 * The core simulator's seeds as vitest runs them inside `npm test` (two files, so the two workers share them):
 * each seed must hold every invariant; a failure prints the seed's invariant, message and trace, and the command
 * that replays it.
 */
import { expect, it } from 'vitest';
import { INVARIANTS, simulateSeed } from './core-sim.js';

/** Steps per seed in the suite (`npm run sim` defaults to 60). */
export const SUITE_STEPS = 40;

export function seedRange(first: number, count: number): void {
  it(`seeds ${first}..${first + count - 1} × ${SUITE_STEPS} steps hold every invariant under injected faults`, async () => {
    let faults = 0;
    let writes = 0;
    for (let seed = first; seed < first + count; seed++) {
      const r = await simulateSeed(seed, { steps: SUITE_STEPS });
      if (r.failure) {
        const f = r.failure;
        expect.fail(`seed ${f.seed} broke ${f.invariant} (${INVARIANTS[f.invariant]}) at step ${f.step}: ${f.message}\n${f.trace.join('\n')}\nreplay: npm run sim -- --seed ${f.seed} --seeds 1 --steps ${SUITE_STEPS}`);
      }
      faults += r.faults;
      writes += r.writes;
    }
    // the seeds did exercise the faults and the write path (a simulator that writes nothing proves nothing)
    expect(faults).toBeGreaterThan(count);
    expect(writes).toBeGreaterThan(count / 2);
  });
}
