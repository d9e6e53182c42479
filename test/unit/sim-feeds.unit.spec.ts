/**
 * The simulator's raw-data feeds on a ManualClock: one spectrum per NIR scan
 * drawn from the plant's true state (tablet potency, or the blend's local
 * concentration while blending), one six-camera frame set per trigger with a
 * label drawn from the station's defect rates, ground truth kept per id, and
 * the seeded streams of the rest of the plant left as they were.
 */
import { describe, expect, it } from 'vitest';
import { decodeFrame } from '../../connectors/opcua/frames.js';
import { defectRates, drawDefect, HISTORY, NirFeed, type FeedContext } from '../../connectors/sim/feeds.js';
import { Plant } from '../../connectors/sim/index.js';
import { createRng, ManualClock } from '../../src/clock.js';
import { loadConfig } from '../../src/config/load.js';
import type { EquipmentConfig } from '../../src/config/schema.js';
import { nirSample, skipNirSample, WL_COUNT } from '../../src/twin/nir/spectra.js';
import { DEFECT_CLASSES, HEIGHT, PIXELS, WIDTH } from '../../src/twin/vision/frames.js';
import { codeOf } from '../helpers/codes.js';

const config = loadConfig().config;
const FRAMES = ['Frame1', 'Frame2', 'Frame3', 'Frame4', 'Frame5', 'Frame6'];

function plant(opts: { seed?: number; timeScale?: number; equipment?: readonly EquipmentConfig[] } = {}): { p: Plant; clock: ManualClock } {
  const clock = new ManualClock();
  const p = new Plant({ equipment: opts.equipment ?? config.equipment, clock, seed: opts.seed ?? 42, timeScale: opts.timeScale ?? 1, watchdogTimeoutMs: 1e9 });
  return { p, clock };
}

function run(p: Plant, clock: ManualClock, ms: number, stepMs = 50, each?: () => void): void {
  for (let t = 0; t < ms; t += stepMs) {
    clock.advance(Math.min(stepMs, ms - t));
    p.tick();
    each?.();
  }
}

const sd = (xs: number[]): number => {
  const m = xs.reduce((a, b) => a + b, 0) / xs.length;
  return Math.sqrt(xs.reduce((a, b) => a + (b - m) ** 2, 0) / (xs.length - 1));
};

describe('NIR spectrum feed', () => {
  it('publishes one spectrum per scan, named by SpectrumId = ScanCount, stamped with the scan time, its truth kept', () => {
    const { p, clock } = plant();
    const t0 = clock.now();
    const first = p.read('nir', 'Spectrum');
    run(p, clock, 9_000, 500);
    expect(p.read('nir', 'Spectrum')).toBe(first); // no scan yet: the same spectrum, not a redraw
    run(p, clock, 26_000, 500);
    expect(p.read('nir', 'SpectrumId')).toBe(3);
    expect(p.read('nir', 'ScanCount')).toBe(3);
    const s = p.read('nir', 'Spectrum');
    expect(s).toBeInstanceOf(Float64Array);
    expect((s as Float64Array).length).toBe(WL_COUNT);
    expect((p.read('nir', 'Wavelengths') as Float64Array)[0]).toBe(1100);
    expect(p.nirScan(3)).toEqual({ spectrumId: 3, potencyPct: p.effectiveParameters().nir.potencyPct, source: 'tablet', at: t0 + 30_000 });
    expect(p.acquisition('nir', 'Spectrum')).toEqual(p.acquisition('nir', 'SpectrumId'));
    expect(p.acquisition('nir', 'Spectrum')!.at).toBe(t0 + 30_000);
    expect(p.acquisition('nir', 'Potency')).toBeUndefined();
    expect(p.nirScan(99)).toBeUndefined();
  });

  it('while blending, each spectrum is of the probe’s local concentration, which scatters by the blend RSD', () => {
    const { p, clock } = plant({ timeScale: 10 });
    p.setBatchPhase('BLEND');
    p.writeSetpoint('nir', 'ScanInterval', 1);
    const collect = (ms: number): number[] => {
      const out: number[] = [];
      run(p, clock, ms, 100, () => {
        const t = p.nirScan(p.read('nir', 'SpectrumId') as number)!;
        expect(t.source).toBe('blend');
        expect(t.potencyPct).toBe(p.processState('nir').blendTrue);
        if (out.length === 0 || out[out.length - 1] !== t.potencyPct) out.push(t.potencyPct);
      });
      return out;
    };
    const early = collect(6_000); // first process minute: ~20 revolutions
    run(p, clock, 120_000, 500); // the blender reaches its 300 revolutions
    const late = collect(6_000);
    expect(early.length).toBeGreaterThan(30);
    expect(sd(early)).toBeGreaterThan(4 * sd(late));
    p.setBatchPhase('COMPRESS');
    run(p, clock, 200, 100);
    expect(p.nirScan(p.read('nir', 'SpectrumId') as number)?.source).toBe('tablet');
  });

  it('keeps the truth of the last HISTORY spectra only', () => {
    // without cameras: a frame set per step would cost seconds here
    const noCameras = config.equipment.filter((e) => e.type !== 'vision');
    const { p, clock } = plant({ timeScale: 1000, equipment: noCameras });
    p.writeSetpoint('nir', 'ScanInterval', 1);
    run(p, clock, HISTORY + 200, 1); // one scan per step
    const last = p.read('nir', 'SpectrumId') as number;
    expect(last).toBeGreaterThan(HISTORY + 10);
    expect(p.nirScan(last)).toBeDefined();
    expect(p.nirScan(last - HISTORY + 1)).toBeDefined();
    expect(p.nirScan(last - HISTORY - 5)).toBeUndefined();
  });
});

describe('six-camera frame feed', () => {
  it('[LIM-CAMERAS] six frames carry the trigger id of vision.TriggerId in their header at every scan, and their truth is kept', () => {
    const { p, clock } = plant({ timeScale: 60 });
    let checked = 0;
    run(p, clock, 3000, 50, () => {
      const trigger = p.read('vision', 'TriggerId') as number;
      const frames = FRAMES.map((f) => decodeFrame(p.read('vision', f) as Uint8Array));
      frames.forEach((f, cam) => {
        expect(f).toMatchObject({ triggerId: trigger, camera: cam, width: WIDTH, height: HEIGHT });
        expect(f.pixels.length).toBe(PIXELS);
      });
      expect(p.visionTrigger(trigger)?.triggerId).toBe(trigger);
      expect(p.acquisition('vision', 'Frame3')).toEqual(p.acquisition('vision', 'TriggerId'));
      checked++;
    });
    expect(checked).toBe(60);
    expect(p.read('vision', 'TriggerId')).toBe(p.read('vision', 'Inspected'));
  });

  it('labels follow the station’s defect rates: mostly good, capped when the press caps, any class when injected', () => {
    const labels = (p: Plant, clock: ManualClock, ms: number): Record<string, number> => {
      const out: Record<string, number> = {};
      run(p, clock, ms, 50, () => {
        const l = p.visionTrigger(p.read('vision', 'TriggerId') as number)!.label;
        out[l] = (out[l] ?? 0) + 1;
      });
      return out;
    };
    const { p, clock } = plant({ timeScale: 60 });
    const calm = labels(p, clock, 10_000);
    expect((calm.good ?? 0) / 200).toBeGreaterThan(0.9);
    p.writeSetpoints('press', { MainForce: 38, PreForce: 0, TurretSpeed: 100 });
    run(p, clock, 5000);
    const capping = p.read('press', 'CappingRate') as number;
    expect(capping).toBeGreaterThan(5);
    const capped = labels(p, clock, 20_000);
    expect((capped.capped ?? 0) / 400).toBeGreaterThan(0.5 * (capping / 100));

    const rejected0 = p.read('vision', 'Rejected') as number;
    const inspected0 = p.read('vision', 'Inspected') as number;
    p.injectDefects({ chipped: 15, sticking: 15, coating_defect: 15, foreign_particle: 15, broken: 15 });
    const injected = labels(p, clock, 20_000);
    // the press still caps (at ~90 %): rates summing past 100 % are scaled down, so each injected class expects
    // 400 × 15 / (75 + capping) draws; at least half of that (3 SD below) for every class
    const share = 15 / Math.max(100, 75 + (p.read('press', 'CappingRate') as number));
    for (const c of ['chipped', 'sticking', 'coating_defect', 'foreign_particle', 'broken']) expect(injected[c] ?? 0, c).toBeGreaterThan(0.5 * 400 * share);
    // the counters follow the injected defects too
    const rejectRate = ((p.read('vision', 'Rejected') as number) - rejected0) / ((p.read('vision', 'Inspected') as number) - inspected0);
    expect(rejectRate).toBeGreaterThan(0.5);
    p.injectDefects({});
    expect(p.injectedDefects()).toEqual({});
  });

  it('refuses bad injected rates with LK_VALIDATION and keeps the previous ones', () => {
    const { p } = plant();
    p.injectDefects({ chipped: 10 });
    for (const bad of [{ scratched: 5 }, { chipped: -1 }, { chipped: Number.NaN }, { capped: 101 }, { capped: 60, broken: 50 }, { good: 5 }]) {
      expect(codeOf(() => p.injectDefects(bad as never))).toBe('LK_VALIDATION');
    }
    expect(p.injectedDefects()).toEqual({ chipped: 10 });
  });

  it('draws classes in proportion to their rates', () => {
    const rng = createRng(3);
    const rates = defectRates(10, 2, { broken: 20 });
    expect(rates.capped).toBe(10);
    expect(rates.broken).toBeCloseTo(20 + 2 * 0.1, 10);
    const n = 20_000;
    const counts: Record<string, number> = {};
    for (let i = 0; i < n; i++) {
      const c = drawDefect(rates, rng);
      counts[c] = (counts[c] ?? 0) + 1;
    }
    for (const c of DEFECT_CLASSES) {
      const expected = c === 'good' ? 100 - Object.values(rates).reduce((a, b) => a + b, 0) : rates[c];
      expect(Math.abs((100 * (counts[c] ?? 0)) / n - expected), c).toBeLessThan(1);
    }
    // rates past 100 % are scaled: never `good`
    expect(new Set(Array.from({ length: 500 }, () => drawDefect({ chipped: 80, capped: 80, sticking: 0, coating_defect: 0, foreign_particle: 0, broken: 0 }, rng)))).toEqual(new Set(['chipped', 'capped']));
  });
});

describe('feeds and the rest of the plant', () => {
  it('are deterministic for a seed, and leave every other reading exactly as a plant without feeds makes it', () => {
    const feedTags = new Set(['Spectrum', 'Wavelengths', 'SpectrumId', ...FRAMES]);
    const bare = config.equipment.map((e) => ({ ...e, tags: (e.tags as readonly { name: string }[]).filter((t) => !feedTags.has(t.name)) })) as unknown as EquipmentConfig[];
    const a = plant({ timeScale: 60 });
    const b = plant({ timeScale: 60 });
    const c = plant({ timeScale: 60, equipment: bare });
    for (const x of [a, b, c]) run(x.p, x.clock, 5000);
    expect([...(a.p.read('nir', 'Spectrum') as Float64Array)]).toEqual([...(b.p.read('nir', 'Spectrum') as Float64Array)]);
    expect([...(a.p.read('vision', 'Frame2') as Uint8Array)]).toEqual([...(b.p.read('vision', 'Frame2') as Uint8Array)]);
    for (const e of ['press', 'coater', 'nir', 'vision', 'blender', 'fluidbed']) {
      const snap = a.p.snapshot(e);
      for (const t of feedTags) delete snap[t];
      expect(snap, e).toEqual(c.p.snapshot(e));
    }
    expect(c.p.acquisition('nir', 'Spectrum')).toBeUndefined();
    expect(c.p.nirScan(0)).toBeUndefined();
  });
});

describe('a spectrum is computed when first read, with the draws of its scan', () => {
  it('skipNirSample moves a stream exactly as nirSample does', () => {
    for (const seed of [1, 2, 3, 20261121]) {
      const a = createRng(seed);
      const b = createRng(seed);
      for (let i = 0; i < 5; i++) {
        nirSample(95 + i, a);
        skipNirSample(b);
        expect(b.next()).toBe(a.next());
        expect(b.normal()).toBe(a.normal()); // a half-pair left over is the same too
      }
    }
  });

  it('whichever scans are read, and when, each spectrum is the one the scan would have drawn at once', () => {
    const feed = new NirFeed(createRng(11));
    const eager = createRng(11);
    const ctx = (potencyPct: number, now: number): FeedContext => ({ truth: { nir: { potencyPct } } as FeedContext['truth'], phase: 'COMPRESS', now, injected: {} });
    const pending: (() => void)[] = [];
    for (let scan = 1; scan <= 40; scan++) {
      const potency = 90 + (scan % 7) * 3;
      feed.update({ scans: scan }, ctx(potency, scan * 1000));
      const want = nirSample(potency, eager).spectrum;
      const readings = feed.readings;
      // read some at once, some a few scans later, some never
      const check = (): void => expect([...(readings['Spectrum'] as Float64Array)]).toEqual([...want]);
      if (scan % 3 === 0) check();
      else if (scan % 3 === 1) pending.push(check);
    }
    for (const c of pending) c();
    expect(feed.truth(40)?.potencyPct).toBe(90 + (40 % 7) * 3);
  });
});
