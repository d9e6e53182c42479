/** Core simulator, seeds 101..200 (test/sim/core-sim.ts): the second half of the suite's seeds, on the other worker. */
import { describe } from 'vitest';
import { seedRange } from '../sim/seeds.js';

describe('[INV-WRITE-PATH] core simulator (writer, policy, store, plant, people, faults on virtual time)', () => {
  seedRange(101, 100);
});
