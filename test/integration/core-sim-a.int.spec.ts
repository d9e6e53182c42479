/**
 * Core simulator, seeds 1..100 (test/sim/core-sim.ts), and the planted defects it must catch: a writer whose
 * audit intents are not committed, and one that takes an approval as binding whatever vector is pending.
 */
import { describe, expect, it } from 'vitest';
import { simulateSeed, type PlantedBug } from '../sim/core-sim.js';
import { seedRange, SUITE_STEPS } from '../sim/seeds.js';

describe('[INV-WRITE-PATH] core simulator (writer, policy, store, plant, people, faults on virtual time)', () => {
  seedRange(1, 100);

  it.each<[PlantedBug, string]>([
    ['skip-intent', 'write-without-intent'],
    ['approve-any-hash', 'approval-hash'],
  ])('a planted defect (%s) is caught by a seed, which replays identically', async (bug, invariant) => {
    let caught: Awaited<ReturnType<typeof simulateSeed>>['failure'];
    for (let seed = 1; seed <= 60 && !caught; seed++) caught = (await simulateSeed(seed, { steps: SUITE_STEPS, bug })).failure;
    expect(caught?.invariant).toBe(invariant);
    const again = (await simulateSeed(caught!.seed, { steps: SUITE_STEPS, bug })).failure;
    expect(again).toEqual(caught);
  });
});
