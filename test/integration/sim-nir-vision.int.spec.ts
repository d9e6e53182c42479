/**
 * The simulator's NIR spectra and six-camera frame sets read by linekeeper's
 * own OPC UA connector (real server, real client, port 0) and scored with the
 * demo site's default models (seeded and validated into a temp data directory) — checked against the
 * plant's ground truth: PLS predictions against the true potency of each
 * scan, defect classes against the label of each trigger.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { assembleFrameSet, createOpcUaConnector, decodeFrame, type OpcUaConnector } from '../../connectors/opcua/index.js';
import type { Sample } from '../../connectors/types.js';
import type { OpcUaConnectionConfig, OpcUaEquipmentConfig } from '../../src/config/schema.js';
import { LkError } from '../../src/errors.js';
import { nirModelOf, visionModelOf } from '../../src/models/artefacts.js';
import { ensureDemoModels } from '../../src/models/demo.js';
import { loadValidated } from '../../src/models/registry.js';
import { openStore } from '../../src/store/store.js';
import { nirScore, type NirModel } from '../../src/twin/nir/pls.js';
import { classifyFrameSet, type VisionArtefact } from '../../src/twin/vision/classifier.js';
import { startTestSimulator, type Simulator } from '../helpers/sim.js';

const TENANT = 'acme-pharma';
const SITE = 'site-ravenna';
const FRAMES = ['vision.Frame1', 'vision.Frame2', 'vision.Frame3', 'vision.Frame4', 'vision.Frame5', 'vision.Frame6'];

let sim: Simulator;
let dataDir: string;
let c: OpcUaConnector;
let nir: NirModel;
let vision: VisionArtefact;

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), 'lk-nir-vision-'));
  // time scale 120: the blender homogenises visibly within a second; a long watchdog, as the test moves setpoints at the plant
  sim = await startTestSimulator({ timeScale: 120, watchdogTimeoutMs: 600_000 });
  // the demo site's default models: seeded, then validated through the golden gate
  const store = openStore({ dataDir });
  try {
    ensureDemoModels(store, dataDir, { site: SITE, tenants: [TENANT], approvers: ['qa_reviewer'] });
    nir = nirModelOf(loadValidated(store, dataDir, TENANT, SITE, 'potency', 'pls'));
    vision = visionModelOf(loadValidated(store, dataDir, TENANT, SITE, 'defects', 'softmax'));
  } finally {
    store.close();
  }
  const cfg = sim.config.config;
  const connection = { ...(cfg.connections.find((k) => k.protocol === 'opcua') as OpcUaConnectionConfig), keepalive_ms: 500, request_timeout_ms: 2000, max_data_age_ms: 2000 };
  const equipment = cfg.equipment.filter((e): e is OpcUaEquipmentConfig => e.protocol === 'opcua');
  c = createOpcUaConnector({ connection, equipment, url: sim.opcuaUrl, dataDir, backoff: { initialMs: 100, maxMs: 500 } });
  await c.connect();
  sim.plant.writeSetpoint('nir', 'ScanInterval', 1);
}, 120_000); // the golden gate renders 140 frame sets of 6 × 640×480 (seconds; more on a loaded machine)

afterAll(async () => {
  await c?.close();
  await sim?.close();
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
});

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

interface Scan {
  id: number;
  spectrum: readonly number[];
}

/** Read spectrum and id in one Read until `n` distinct scans or `ms` elapsed; every pair must share the scan's source timestamp. */
async function scans(n: number, ms: number): Promise<Scan[]> {
  const out: Scan[] = [];
  const end = Date.now() + ms;
  while (out.length < n && Date.now() < end) {
    const [s, id] = (await c.read(['nir.Spectrum', 'nir.SpectrumId'])) as [Sample, Sample];
    expect(s.quality).toBe('good');
    expect(id.quality).toBe('good');
    expect(s.sourceTime).toBe(id.sourceTime);
    const v = id.value as number;
    if (out[out.length - 1]?.id !== v) out.push({ id: v, spectrum: s.value as readonly number[] });
    await sleep(30);
  }
  return out;
}

const pearson = (x: number[], y: number[]): number => {
  const mx = x.reduce((a, b) => a + b, 0) / x.length;
  const my = y.reduce((a, b) => a + b, 0) / y.length;
  let sxy = 0;
  let sxx = 0;
  let syy = 0;
  for (let i = 0; i < x.length; i++) {
    sxy += (x[i]! - mx) * (y[i]! - my);
    sxx += (x[i]! - mx) ** 2;
    syy += (y[i]! - my) ** 2;
  }
  return sxy / Math.sqrt(sxx * syy);
};

describe('NIR spectra over OPC UA, scored by the PLS model', () => {
  it('serves the spectrum as a 351-point array on its wavelength axis, read-only', async () => {
    const [s, wl] = (await c.read(['nir.Spectrum', 'nir.Wavelengths'])) as [Sample, Sample];
    expect((s.value as readonly number[]).length).toBe(nir.artefact.wavelengths.count);
    const axis = wl.value as readonly number[];
    expect([axis[0], axis[1]! - axis[0]!, axis.length]).toEqual([nir.artefact.wavelengths.startNm, nir.artefact.wavelengths.stepNm, nir.artefact.wavelengths.count]);
    const d = await c.describe();
    expect(d.find((t) => t.tag === 'nir.Spectrum')).toMatchObject({ dataType: 'DoubleArray', writable: false, unit: '1' });
    expect(d.find((t) => t.tag === 'vision.Frame1')).toMatchObject({ dataType: 'ByteString', writable: false });
    const writer = c.claimWriter();
    let code: string | undefined;
    try {
      await writer.write('nir.Spectrum', 1);
    } catch (e) {
      code = LkError.is(e) ? e.code : String(e);
    }
    expect(code).toBe('LK_TAG_NOT_WRITABLE');
  });

  it('tablets: the prediction is within its 95 % interval of the true potency for ≥ 90 % of scans', async () => {
    sim.plant.setBatchPhase('COMPRESS');
    await sleep(100);
    const got = await scans(40, 8000);
    expect(got.length).toBeGreaterThanOrEqual(30);
    let inside = 0;
    for (const s of got) {
      const truth = sim.plant.nirScan(s.id);
      expect(truth?.source).toBe('tablet');
      const score = nirScore(nir, s.spectrum);
      if (truth!.potencyPct >= score.ci95[0] && truth!.potencyPct <= score.ci95[1]) inside++;
    }
    console.log(`NIR tablets: ${inside}/${got.length} predictions within CI95 of the true potency (RMSEP ${nir.artefact.rmsep.toFixed(2)} %)`);
    expect(inside / got.length).toBeGreaterThanOrEqual(0.9);
  });

  it('blending: predictions follow the probe’s scattered local concentration scan by scan', async () => {
    sim.plant.resetBatch('blender');
    sim.plant.setBatchPhase('BLEND');
    await sleep(60);
    const got = await scans(30, 3000);
    sim.plant.setBatchPhase('COMPRESS');
    expect(got.length).toBeGreaterThanOrEqual(20);
    const truth = got.map((s) => sim.plant.nirScan(s.id)!);
    expect(truth.every((t) => t.source === 'blend')).toBe(true);
    const t = truth.map((x) => x.potencyPct);
    const p = got.map((s) => nirScore(nir, s.spectrum).prediction);
    const spread = Math.max(...t) - Math.min(...t);
    const r = pearson(t, p);
    console.log(`NIR blend: ${got.length} scans, true concentration spread ${spread.toFixed(1)} % LC, r(prediction, truth) = ${r.toFixed(3)}`);
    // early in the blend the local concentration scatters by tens of % LC; a spectrum paired with the wrong scan would not correlate
    expect(spread).toBeGreaterThan(10);
    expect(r).toBeGreaterThan(0.95);
  });
});

describe('array subscriptions and the data-age watchdog', () => {
  it('an unchanging array (the wavelength axis) is not taken for an undelivered change', async () => {
    // the watchdog re-reads subscribed nodes; a fresh array compared by identity would always look changed, and go stale in ~1.5 s
    const stale: unknown[] = [];
    const off = c.on((e) => {
      if (e.type === 'stale') stale.push(e);
    });
    const got: Sample[] = [];
    const sub = await c.subscribe(['nir.Wavelengths', 'nir.Spectrum'], { intervalMs: 50 }, (samples) => got.push(...samples));
    await sleep(2500);
    await sub.close();
    off();
    expect(stale).toEqual([]);
    expect(got.filter((s) => s.tag === 'nir.Wavelengths').length).toBe(1);
    expect(got.filter((s) => s.tag === 'nir.Spectrum' && s.quality === 'good').length).toBeGreaterThan(10);
  });
});

describe('six-camera frame sets over OPC UA, classified by the defect model', () => {
  it('six frames and the trigger id of one Read are one trigger; classes agree with the truth for ≥ 90 % of ≥ 30 sets', async () => {
    sim.faults.injectDefects({ chipped: 10, capped: 10, sticking: 10, coating_defect: 10, foreign_particle: 10, broken: 10 });
    await sleep(100);
    const seen = new Set<number>();
    let agree = 0;
    const truthCounts: Record<string, number> = {};
    // each Read carries six 640×480 frames (1.8 MB) the simulator renders on demand: up to 30 s on a loaded machine
    const end = Date.now() + 30_000;
    while (seen.size < 60 && Date.now() < end) {
      const [trig, ...frames] = await c.read(['vision.TriggerId', ...FRAMES]);
      expect([trig, ...frames].every((s) => s!.quality === 'good')).toBe(true);
      const triggerId = trig!.value as number;
      expect(frames.every((f) => f.sourceTime === trig!.sourceTime)).toBe(true);
      const set = assembleFrameSet(
        frames.map((f) => f.value as Uint8Array),
        triggerId,
      );
      if (!seen.has(triggerId)) {
        seen.add(triggerId);
        const truth = sim.plant.visionTrigger(triggerId)!.label;
        truthCounts[truth] = (truthCounts[truth] ?? 0) + 1;
        if (classifyFrameSet(vision, set).label === truth) agree++;
      }
      await sleep(30);
    }
    sim.faults.injectDefects({});
    console.log(`vision: ${agree}/${seen.size} frame sets classified as the truth; truth classes ${JSON.stringify(truthCounts)}`);
    expect(seen.size).toBeGreaterThanOrEqual(30);
    expect(agree / seen.size).toBeGreaterThanOrEqual(0.9);
    // not trivially all good: several defect classes, most sets defective
    expect(Object.keys(truthCounts).filter((k) => k !== 'good').length).toBeGreaterThanOrEqual(4);
    expect(seen.size - (truthCounts.good ?? 0)).toBeGreaterThanOrEqual(15);
  });

  it('a subscription to the six frames yields complete sets by their header, each stamped with one acquisition time', async () => {
    const byTrigger = new Map<number, Sample[]>();
    const sub = await c.subscribe(FRAMES, { intervalMs: 50 }, (samples) => {
      for (const s of samples) {
        if (s.quality !== 'good') continue;
        const f = decodeFrame(s.value as Uint8Array);
        const list = byTrigger.get(f.triggerId) ?? [];
        list.push(s);
        byTrigger.set(f.triggerId, list);
      }
    });
    await sleep(4000); // each notification set is 1.8 MB, rendered on demand: slower than the 50 ms scan on a loaded machine
    await sub.close();
    const complete = [...byTrigger.entries()].filter(([, list]) => new Set(list.map((s) => s.tag)).size === 6);
    console.log(`vision subscription: ${complete.length} complete sets of ${byTrigger.size} triggers seen`);
    expect(complete.length).toBeGreaterThanOrEqual(5);
    for (const [trigger, list] of complete) {
      const ordered = FRAMES.map((tag) => list.find((s) => s.tag === tag)!.value as Uint8Array);
      expect(assembleFrameSet(ordered).triggerId).toBe(trigger);
      expect(new Set(list.map((s) => s.sourceTime)).size).toBe(1);
      expect(sim.plant.visionTrigger(trigger)).toBeDefined();
    }
  });
});
