/**
 * The demo twin against the embedded default's simulated plant (config/site.yaml, seed 20261121) at the
 * master recipe of B-1042 and at a rehearsed candidate: the same setpoints must give the same tablets,
 * within the twin card's own acceptance. A gap between "the twin's candidate" and "what the press makes"
 * is only a model error when both are taken at the same setpoints; the last test shows that compress_fill,
 * its moves applied, brings weight and hardness into the batch record's specification on this plant.
 */
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { loadConfig } from '../../src/config/load.js';
import { decide, PRESS_SETPOINTS } from '../../src/agents/compress-fill.js';
import type { Reading } from '../../src/agents/types.js';
import type { TwinArtefact } from '../../src/models/artefacts.js';
import { buildTwin } from '../../src/models/seed.js';
import { SITE_LIMITS } from '../../src/models/golden.js';
import { pressModel, type PressSetpoints } from '../../src/twin/process.js';
import { simulate } from '../../src/twin/simulate.js';
import { DEFAULT_DESIGN_SPACE, type DesignSpaceRanges } from '../../src/twin/setpoints.js';
import { Plant } from '../../connectors/sim/index.js';
import { DS } from './agents-fixtures.js';

const config = loadConfig().config;
const SEED = config.simulator.seed;
const twin = buildTwin('acme-pharma', SEED).artefact as TwinArtefact;
const limit = (m: string): number => SITE_LIMITS.twin[m]!.max!;
// B-1042's master recipe, at its own turret speed and at the 30 rpm the run-engine test releases as LKG
const RECIPES: PressSetpoints[] = [40, 30].map((turretRpm) => ({ fillDepthMm: 8.5, mainForceKn: 12, preForceKn: 2.5, turretRpm }));

function newPlant(): { plant: Plant; clock: ManualClock } {
  const clock = new ManualClock();
  const plant = new Plant({ equipment: config.equipment, clock, seed: SEED, timeScale: 600, watchdogTimeoutMs: 1e12, punchDiameterMm: config.tooling[0]!.punch_diameter_mm });
  return { plant, clock };
}

const tags = (s: PressSetpoints): Record<string, number> => ({ FillDepth: s.fillDepthMm, MainForce: s.mainForceKn, PreForce: s.preForceKn, TurretSpeed: s.turretRpm });

/** Settle the press at its setpoints, then take `n` readings of weight and hardness (process time, drift and noise on). */
function sample(plant: Plant, clock: ManualClock, n: number): { weights: Reading[]; hardness: Reading[]; capping: Reading[] } {
  const out = { weights: [] as Reading[], hardness: [] as Reading[], capping: [] as Reading[] };
  for (let i = 0; i < 100 + 20 * n; i++) {
    clock.advance(100);
    plant.tick();
    if (i < 100 || i % 20 !== 0) continue;
    const at = clock.now();
    out.weights.push({ tag: 'press.TabletWeight', value: plant.read('press', 'TabletWeight') as number, unit: 'mg', at });
    out.hardness.push({ tag: 'press.Hardness', value: plant.read('press', 'Hardness') as number, unit: 'N', at });
    out.capping.push({ tag: 'press.CappingRate', value: plant.read('press', 'CappingRate') as number, unit: '%', at });
  }
  return out;
}

const mean = (xs: readonly Reading[]): number => xs.reduce((a, b) => a + b.value, 0) / xs.length;

describe('the demo twin and the simulated plant of the embedded default', () => {
  it('predict the same tablets at B-1042’s recipe (40 and 30 rpm), within the card’s acceptance', () => {
    const { plant } = newPlant();
    for (const s of RECIPES) {
      const truth = pressModel(s, plant.truth.press);
      const pred = pressModel(s, twin.params.press);
      expect(Math.abs(pred.tabletWeightMg - truth.tabletWeightMg), `weight at ${s.turretRpm} rpm`).toBeLessThan(limit('rmsep.tabletWeightMg'));
      expect(Math.abs(pred.hardnessN - truth.hardnessN), `hardness at ${s.turretRpm} rpm`).toBeLessThan(limit('rmsep.hardnessN'));
      expect(Math.abs(pred.thicknessMm - truth.thicknessMm), `thickness at ${s.turretRpm} rpm`).toBeLessThan(limit('rmsep.thicknessMm'));
      // this plant's recipe makes hard, slightly light tablets (≈ 160 N, ≈ 290 mg): the twin says so too
      expect(pred.hardnessN).toBeGreaterThan(150);
      expect(pred.tabletWeightMg).toBeLessThan(300);
    }
  });

  it('the plant, set to the rehearsed candidate, makes what the twin predicted for it (not what the recipe makes)', () => {
    const space = { ...DEFAULT_DESIGN_SPACE } as DesignSpaceRanges;
    for (const id of PRESS_SETPOINTS) space[id] = { min: DS[id]!.min, max: DS[id]!.max, unit: DS[id]!.unit };
    const best = simulate({ id: 'process-twin-v1', version: 1, params: twin.params, validRanges: twin.validRanges }, { candidates: 64, horizon: 'full batch', seed: 1042, designSpace: space, cappingThresholdPct: 1.5 }).ranked[0]!;
    const s: PressSetpoints = { fillDepthMm: best.setpoints['press.FillDepth'].value, mainForceKn: best.setpoints['press.MainForce'].value, preForceKn: best.setpoints['press.PreForce'].value, turretRpm: best.setpoints['press.TurretSpeed'].value };
    const { plant, clock } = newPlant();
    plant.writeSetpoints('press', tags(s));
    const m = sample(plant, clock, 30);
    // the means of 30 readings: instrument scatter (≈ 1 % weight, 3 % hardness) and the bulk-density drift allowed for
    expect(Math.abs(mean(m.weights) - best.predicted.tabletWeightMg)).toBeLessThan(0.02 * best.predicted.tabletWeightMg);
    expect(Math.abs(mean(m.hardness) - best.predicted.hardnessN)).toBeLessThan(0.04 * best.predicted.hardnessN);
    // and it is not the recipe: a candidate's prediction compared with the press at its recipe is no model error
    expect(Math.abs(best.predicted.hardnessN - pressModel(RECIPES[0]!, twin.params.press).hardnessN)).toBeGreaterThan(20);
  });

  for (const start of RECIPES) {
    it(`compress_fill, its moves applied, brings weight and hardness into B-1042’s specification from the recipe at ${start.turretRpm} rpm`, () => {
      const { plant, clock } = newPlant();
      plant.writeSetpoints('press', tags(start));
      let onTarget = false;
      for (let round = 0; round < 6 && !onTarget; round++) {
        const m = sample(plant, clock, 20);
        const sp = plant.setpoints('press');
        const current = { 'press.FillDepth': sp['FillDepth']!, 'press.MainForce': sp['MainForce']!, 'press.PreForce': sp['PreForce']!, 'press.TurretSpeed': sp['TurretSpeed']! };
        const out = decide({
          now: clock.now(), seed: round, ...m, current, cappingThresholdPct: 1.5, model: { id: 'process-twin-v1', version: 1 }, params: twin.params, validRanges: twin.validRanges,
          targets: { weightMg: 300, weightTolerancePct: 5, hardnessMinN: 80, hardnessMaxN: 150 },
          designSpace: Object.fromEntries(PRESS_SETPOINTS.map((id) => [id, DS[id]!])) as Parameters<typeof decide>[0]['designSpace'],
        });
        // the twin describes this plant: never the "refit before steering" refusal
        expect(out.trace.why).not.toMatch(/refit/);
        if (round === 0) expect(out.verdict.onTarget).toBe(false);
        onTarget = out.verdict.onTarget;
        for (const p of out.proposals) plant.writeSetpoints('press', Object.fromEntries(p.moves.map((mv) => [mv.setpoint.slice('press.'.length), mv.value])));
      }
      expect(onTarget).toBe(true);
      const m = sample(plant, clock, 20);
      expect(Math.abs(mean(m.weights) - 300)).toBeLessThan(15);
      expect(mean(m.hardness)).toBeGreaterThan(80);
      expect(mean(m.hardness)).toBeLessThan(150);
    });
  }
});
