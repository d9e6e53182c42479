import { describe, expect, it, vi } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { loadConfig } from '../../src/config/load.js';
import { pressModel, lodPct, dryingRatePerMin } from '../../src/twin/process.js';
import { MODELS, Plant, SUPERVISED, TAU_MS, trueParameters } from '../../connectors/sim/index.js';
import { codeOf } from '../helpers/codes.js';

const config = loadConfig().config;

function plant(opts: { seed?: number; timeScale?: number; watchdogTimeoutMs?: number } = {}): { p: Plant; clock: ManualClock } {
  const clock = new ManualClock();
  const p = new Plant({ equipment: config.equipment, clock, seed: opts.seed ?? 42, timeScale: opts.timeScale ?? 1, watchdogTimeoutMs: opts.watchdogTimeoutMs ?? 1000 });
  return { p, clock };
}

function run(p: Plant, clock: ManualClock, ms: number, stepMs = 50): void {
  for (let t = 0; t < ms; t += stepMs) {
    clock.advance(Math.min(stepMs, ms - t));
    p.tick();
  }
}


describe('plant dynamics', () => {
  it('is deterministic for a seed and differs between seeds', () => {
    const a = plant({ seed: 7 });
    const b = plant({ seed: 7 });
    const c = plant({ seed: 8 });
    for (const x of [a, b, c]) {
      x.p.writeSetpoint('press', 'MainForce', 18);
      run(x.p, x.clock, 5000);
    }
    expect(a.p.snapshot('press')).toEqual(b.p.snapshot('press'));
    expect(a.p.snapshot('fluidbed')).toEqual(b.p.snapshot('fluidbed'));
    expect(c.p.snapshot('press').Hardness).not.toEqual(a.p.snapshot('press').Hardness);
    expect(a.p.truth.press.sigma0).not.toEqual(c.p.truth.press.sigma0);
  });

  it('hidden true parameters differ from nominal, and equal trueParameters(seed)', () => {
    const { p } = plant({ seed: 3 });
    expect(p.truth).toEqual(trueParameters(3, 10));
    expect(p.truth.press.heckelK).not.toBe(1 / 100);
  });

  it('actuators approach a setpoint as a first-order lag (63 % after one time constant)', () => {
    // a long watchdog: this test is about the dynamics, and sends no heartbeats
    const { p, clock } = plant({ timeScale: 1, watchdogTimeoutMs: 10_000_000 });
    const f0 = p.processState('press').force!;
    p.writeSetpoint('press', 'MainForce', 20);
    p.heartbeat('press', 1);
    run(p, clock, TAU_MS.pressActuator, 10);
    const f1 = p.processState('press').force!;
    expect(f1).toBeCloseTo(20 - (20 - f0) * Math.exp(-1), 6);
    run(p, clock, 5 * TAU_MS.pressActuator, 250);
    expect(p.processState('press').force!).toBeCloseTo(20, 1);
  });

  it('bulk density drifts slowly around its true value (weight moves at a fixed fill depth); drift: false holds it', () => {
    const clock = new ManualClock();
    const p = new Plant({ equipment: config.equipment, clock, seed: 11, timeScale: 600, watchdogTimeoutMs: 1e9 });
    const still = new Plant({ equipment: config.equipment, clock: new ManualClock(), seed: 11, timeScale: 600, watchdogTimeoutMs: 1e9, drift: false });
    const factors: number[] = [];
    for (let h = 0; h < 48; h++) {
      run(p, clock, 6000, 1000); // one process hour
      factors.push(p.effectiveParameters().press.bulkDensity / p.truth.press.bulkDensity);
    }
    const mean = factors.reduce((a, b) => a + b, 0) / factors.length;
    expect(Math.max(...factors) - Math.min(...factors)).toBeGreaterThan(0.01);
    expect(Math.abs(mean - 1)).toBeLessThan(0.03);
    expect(still.effectiveParameters()).toBe(still.truth);
  });

  it('time scale: process time runs timeScale × wall time', () => {
    const { p, clock } = plant({ timeScale: 60 });
    run(p, clock, 1000);
    expect(p.processTimeMs()).toBe(60_000);
  });

  it('press measurements follow the true process relations: more main force, harder tablets', () => {
    const { p, clock } = plant({ timeScale: 60 });
    const mean = (n: number): number => {
      let s = 0;
      for (let i = 0; i < n; i++) {
        run(p, clock, 50);
        s += p.read('press', 'Hardness') as number;
      }
      return s / n;
    };
    run(p, clock, 2000);
    const before = mean(200);
    const sp = p.setpoints('press');
    const truthBefore = pressModel({ fillDepthMm: sp.FillDepth!, mainForceKn: sp.MainForce!, preForceKn: sp.PreForce!, turretRpm: sp.TurretSpeed! }, p.effectiveParameters().press).hardnessN;
    expect(Math.abs(before - truthBefore) / truthBefore).toBeLessThan(0.02);
    p.writeSetpoint('press', 'MainForce', 20);
    p.heartbeat('press', 1);
    for (let i = 0; i < 20; i++) {
      run(p, clock, 100);
      p.heartbeat('press', i + 2);
    }
    expect(mean(100)).toBeGreaterThan(before * 1.2);
  });

  it('fluid bed moisture falls along the true falling-rate curve', () => {
    const { p, clock } = plant({ timeScale: 60 });
    run(p, clock, 20_000, 100); // 20 process minutes at the LKG inlet temperature
    const st = p.processState('fluidbed');
    const k = dryingRatePerMin(st.inlet!, st.air!, p.truth.drying);
    expect(st.lod!).toBeCloseTo(lodPct(20, k, p.truth.drying), 6);
    expect(p.read('fluidbed', 'DryingTime')).toBeCloseTo(20, 6);
    expect(p.read('fluidbed', 'ProductTemp') as number).toBeGreaterThan(p.truth.drying.wetBulbC);
  });

  it('blender stops at its target revolutions and uniformity improves', () => {
    const { p, clock } = plant({ timeScale: 60 });
    run(p, clock, 2000);
    const rsdEarly = p.processState('blender').revs!;
    run(p, clock, 60_000, 200); // 60 process minutes at 20 rpm would be 1200 rev; target is 300
    const revs = p.read('blender', 'Revolutions') as number;
    expect(revs).toBeGreaterThan(295);
    expect(revs).toBeLessThan(310);
    expect(rsdEarly).toBeLessThan(revs);
    expect(p.read('blender', 'SpeedActual') as number).toBeLessThan(0.5);
  });

  it('NIR scans every ScanInterval; potency scatters around the true potency, blend concentration by the blend RSD', () => {
    const { p, clock } = plant({ timeScale: 1, watchdogTimeoutMs: 10_000_000 });
    run(p, clock, 35_000, 500);
    expect(p.read('nir', 'ScanCount')).toBe(3);
    const sample = (n: number, tag: string): number[] => {
      const out: number[] = [];
      for (let i = 0; i < n; i++) {
        run(p, clock, 10_000, 10_000);
        out.push(p.read('nir', tag) as number);
      }
      return out;
    };
    const sd = (xs: number[]): number => {
      const m = xs.reduce((a, b) => a + b, 0) / xs.length;
      return Math.sqrt(xs.reduce((a, b) => a + (b - m) ** 2, 0) / (xs.length - 1));
    };
    const early = sample(12, 'BlendConcentration'); // first 2 min at 20 rpm: ~40 rev, RSD still high
    run(p, clock, 20 * 60_000, 10_000); // blender reaches its 300 rev target
    const late = sample(60, 'BlendConcentration');
    expect(sd(early)).toBeGreaterThan(2 * sd(late));
    const potency = sample(200, 'Potency');
    const mean = potency.reduce((a, b) => a + b, 0) / potency.length;
    expect(Math.abs(mean - p.truth.nir.potencyPct)).toBeLessThan(0.4);
  });

  it('vision inspects the press output and rejects more when the press caps', () => {
    const { p, clock } = plant({ timeScale: 60, watchdogTimeoutMs: 10_000_000 });
    run(p, clock, 1000); // one process minute at 40 rpm
    const inspected = p.read('vision', 'Inspected') as number;
    expect(inspected).toBeGreaterThan(0.9 * 40 * 36);
    expect(inspected).toBeLessThan(1.1 * 40 * 36);
    expect(p.read('vision', 'TriggerId')).toBe(inspected);
    run(p, clock, 5000);
    const calm = p.read('vision', 'DefectRate') as number;
    p.writeSetpoints('press', { MainForce: 38, PreForce: 0, TurretSpeed: 100 });
    run(p, clock, 10_000);
    expect(p.read('press', 'CappingRate') as number).toBeGreaterThan(5);
    expect(p.read('vision', 'DefectRate') as number).toBeGreaterThan(3 * calm);
    expect(p.read('vision', 'Rejected') as number).toBeLessThanOrEqual(p.read('vision', 'Inspected') as number);
  });
});

describe('plant supervision and watchdog', () => {
  it('starts on the LKG recipe, ATTENDED and unarmed; a setpoint write makes ActiveRecipe SUPERVISED', () => {
    const { p } = plant();
    expect(p.read('press', 'ActiveRecipe')).toBe('LKG-press-0007');
    expect(p.read('press', 'LkgRecipeId')).toBe('LKG-press-0007');
    expect(p.supervisor('blender').activeRecipeNumber).toBe(7);
    expect(p.supervisor('press').armed).toBe(false);
    p.writeSetpoint('press', 'MainForce', 14);
    expect(p.read('press', 'ActiveRecipe')).toBe(SUPERVISED);
    expect(p.supervisor('press').activeRecipeNumber).toBe(0);
    expect(p.supervisor('press').armed).toBe(true);
  });

  it('refuses bad writes with stable codes and changes nothing', () => {
    const { p } = plant();
    const before = p.setpoints('press');
    expect(codeOf(() => p.writeSetpoint('press', 'MainForce', 41))).toBe('LK_PLC_OUT_OF_RANGE');
    expect(codeOf(() => p.writeSetpoint('press', 'MainForce', Number.NaN))).toBe('LK_VALUE_INVALID');
    expect(codeOf(() => p.writeSetpoint('press', 'MainForce', Number.POSITIVE_INFINITY))).toBe('LK_VALUE_INVALID');
    expect(codeOf(() => p.writeSetpoint('press', 'Hardness', 100))).toBe('LK_TAG_NOT_WRITABLE');
    expect(codeOf(() => p.writeSetpoint('press', 'Nope', 1))).toBe('LK_TAG_UNKNOWN');
    expect(codeOf(() => p.writeSetpoints('press', { MainForce: 15, FillDepth: 99 }))).toBe('LK_PLC_OUT_OF_RANGE');
    expect(codeOf(() => p.heartbeat('press', -1))).toBe('LK_VALUE_INVALID');
    expect(codeOf(() => p.heartbeat('press', 2 ** 32))).toBe('LK_VALUE_INVALID');
    expect(codeOf(() => p.setSupervisorState('press', 'MAYBE'))).toBe('LK_VALUE_INVALID');
    expect(p.setpoints('press')).toEqual(before);
    expect(p.read('press', 'ActiveRecipe')).toBe('LKG-press-0007');
    expect(p.supervisor('press').armed).toBe(false);
  });

  it('[R8] reverts exactly when the heartbeat has stood still for the timeout (wall clock), then refuses writes until re-armed', () => {
    const { p, clock } = plant({ timeScale: 60, watchdogTimeoutMs: 1000 });
    const events: string[] = [];
    p.on((e) => events.push(`${e.type}:${e.equipment}`));
    const lkg = p.setpoints('press');
    p.heartbeat('press', 1);
    p.writeSetpoint('press', 'MainForce', 20);
    clock.advance(999);
    p.tick();
    expect(p.read('press', 'SupervisorState')).toBe('ATTENDED');
    clock.advance(1);
    p.tick();
    expect(p.read('press', 'SupervisorState')).toBe('LOST');
    expect(p.read('press', 'RevertCount')).toBe(1);
    expect(p.read('press', 'ActiveRecipe')).toBe('LKG-press-0007');
    expect(p.setpoints('press')).toEqual(lkg);
    expect(events).toEqual(['revert:press']);
    // the other equipment had no supervisor: not armed, not reverted
    expect(p.read('coater', 'SupervisorState')).toBe('ATTENDED');

    expect(codeOf(() => p.writeSetpoint('press', 'MainForce', 15))).toBe('LK_PLC_LOST');
    expect(codeOf(() => p.setSupervisorState('press', 'ATTENDED'))).toBe('LK_PLC_NO_HEARTBEAT');
    p.heartbeat('press', 1); // same value: not a beat
    expect(codeOf(() => p.setSupervisorState('press', 'ATTENDED'))).toBe('LK_PLC_NO_HEARTBEAT');
    p.heartbeat('press', 2);
    p.setSupervisorState('press', 'ATTENDED');
    expect(p.read('press', 'SupervisorState')).toBe('ATTENDED');
    expect(p.read('press', 'ActiveRecipe')).toBe('LKG-press-0007');
    p.writeSetpoint('press', 'MainForce', 15);
    expect(p.read('press', 'ActiveRecipe')).toBe(SUPERVISED);
    expect(events).toEqual(['revert:press', 'rearm:press']);
  });

  it('heartbeats that keep changing hold the supervised recipe for many timeouts; a stuck counter does not', () => {
    const { p, clock } = plant({ watchdogTimeoutMs: 500 });
    p.writeSetpoint('coater', 'SprayRate', 150);
    for (let i = 1; i <= 40; i++) {
      clock.advance(100);
      p.heartbeat('coater', i);
      p.tick();
    }
    expect(p.read('coater', 'SupervisorState')).toBe('ATTENDED');
    expect(p.read('coater', 'SprayRate')).toBe(150);
    for (let i = 0; i < 5; i++) {
      clock.advance(100);
      p.heartbeat('coater', 40);
      p.tick();
    }
    expect(p.read('coater', 'SupervisorState')).toBe('LOST');
    expect(p.read('coater', 'SprayRate')).toBe(120);
  });

  it('a fault in one process model does not stop the watchdogs (fault injected into the coater model)', () => {
    const { p, clock } = plant({ watchdogTimeoutMs: 500 });
    p.heartbeat('press', 1);
    p.writeSetpoint('press', 'MainForce', 15);
    const broken = vi.spyOn(MODELS['coater']!, 'step').mockImplementation(() => {
      throw new Error('injected model fault');
    });
    try {
      for (let t = 0; t < 1000; t += 50) {
        clock.advance(50);
        expect(() => p.tick()).toThrow('injected model fault');
      }
    } finally {
      broken.mockRestore();
    }
    expect(p.read('press', 'SupervisorState')).toBe('LOST');
    expect(p.read('press', 'MainForce')).toBe(p.supervisor('press').lkg.setpoints['MainForce']);
  });

  it('a supervisor that writes but never beats gets one timeout of grace', () => {
    const { p, clock } = plant({ watchdogTimeoutMs: 800 });
    p.writeSetpoint('blender', 'Speed', 25);
    run(p, clock, 750);
    expect(p.read('blender', 'SupervisorState')).toBe('ATTENDED');
    run(p, clock, 100);
    expect(p.read('blender', 'SupervisorState')).toBe('LOST');
    expect(p.supervisor('blender').activeRecipeNumber).toBe(7);
  });

  it('SupervisorState LOST commands a revert; a new LKG recipe is what the next revert restores', () => {
    const { p } = plant();
    const lkg = p.setLkgRecipe('press', 8, { MainForce: 11 });
    expect(lkg.id).toBe('LKG-press-0008');
    expect(p.read('press', 'ActiveRecipe')).toBe('LKG-press-0008');
    // a PLC running its LKG recipe runs the new one: the values change with the id
    expect(p.read('press', 'MainForce')).toBe(11);
    p.heartbeat('press', 5);
    p.writeSetpoint('press', 'MainForce', 19);
    p.setSupervisorState('press', 'LOST');
    expect(p.read('press', 'MainForce')).toBe(11);
    expect(p.read('press', 'RevertCount')).toBe(1);
    expect(codeOf(() => p.setLkgRecipe('press', 9, { MainForce: 99 }))).toBe('LK_PLC_OUT_OF_RANGE');
    expect(codeOf(() => p.setWatchdogTimeout(0))).toBe('LK_VALIDATION');
  });
});
