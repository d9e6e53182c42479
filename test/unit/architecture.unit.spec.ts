/**
 * The architecture rules (test/unit/architecture-rules.ts, docs/architecture.md)
 * hold on the real tree, and each rule fails on a sample written to break it:
 * the samples are in-memory files fed to the same compiler and checker, so a
 * checker that cannot fail cannot pass this test.
 */
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { beforeAll, describe, expect, it } from 'vitest';
import { checkArchitecture, LAYERS, layerOf, loadCompilerOptions, overlayHost, sourceFiles, type Violation, WRITE_HOLDERS } from './architecture-rules.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const options = loadCompilerOptions(ROOT);
const files = sourceFiles(ROOT, ['src', 'connectors']);
const cache = new Map<string, ts.SourceFile>();
let real: ts.Program;

beforeAll(() => {
  real = ts.createProgram(files, options, overlayHost(options, new Map(), cache));
}, 120_000);

/** Check in-memory files (paths relative to the repo root) against the rules, beside the real tree. */
function checkSamples(samples: Readonly<Record<string, string>>): Violation[] {
  const overlay = new Map(Object.entries(samples).map(([p, text]) => [resolve(ROOT, p), text] as const));
  const roots = [...new Set([...files, ...overlay.keys()])];
  const program = ts.createProgram(roots, options, overlayHost(options, overlay, cache), real);
  return checkArchitecture(program, ROOT, [...overlay.keys()]);
}

const lines = (v: readonly Violation[], file: string, rule: Violation['rule']): number[] => v.filter((x) => x.file === file && x.rule === rule).map((x) => x.line).sort((a, b) => a - b);

describe('architecture: the real tree', () => {
  it('[INV-WRITE-PATH] [INV-PURE-CORE] every file of src/ and connectors/ is in a layer and breaks no rule', () => {
    expect(files.length).toBeGreaterThan(150);
    expect(checkArchitecture(real, ROOT, files)).toEqual([]);
  }, 120_000);

  it('[INV-WRITE-PATH] the holder of the write capability does claim it (otherwise nothing could write at all)', () => {
    const checker = real.getTypeChecker();
    let claims = 0;
    for (const h of WRITE_HOLDERS) {
      const sf = real.getSourceFile(resolve(ROOT, h))!;
      const visit = (n: ts.Node): void => {
        if (ts.isPropertyAccessExpression(n) && n.name.text === 'claimWriter') {
          const decl = checker.getSymbolAtLocation(n.name)?.declarations?.[0];
          if (decl?.getSourceFile().fileName.endsWith('connectors/types.ts')) claims++;
        }
        ts.forEachChild(n, visit);
      };
      visit(sf);
    }
    expect(claims).toBeGreaterThan(0);
  });

  it('the layer table is closed: every allowed import names a layer of the table', () => {
    for (const [name, l] of Object.entries(LAYERS)) for (const x of [...l.imports, ...(l.types ?? [])]) expect([name, x]).toEqual([name, expect.toSatisfy((y: string) => y in LAYERS)]);
    expect(layerOf('src/twin/predict.ts')).toBe('twin');
    expect(layerOf('src/config/schema.ts')).toBe('config-schema');
    expect(layerOf('src/config/load.ts')).toBe('config');
    expect(layerOf('connectors/sim/ground/truth.ts')).toBe('ground-truth');
    expect(layerOf('connectors/sim/truth.ts')).toBe('connectors');
    expect(layerOf('src/quality/spec.ts')).toBe('quality');
    expect(LAYERS.quality?.pure).toBe(true);
    expect(layerOf('src/contract/runs.ts')).toBe('contract');
    expect(LAYERS.contract?.pure).toBe(true);
  });
});

describe('architecture: each rule fails on a sample that breaks it', () => {
  it('layers: a pure layer importing the engine, the store importing the API, a file outside every layer', () => {
    const v = checkSamples({
      'src/domain/arch-sample.ts': "import { GuardedWriter } from '../engine/guarded-writer.js';\nexport const g = GuardedWriter;\n",
      'src/store/arch-sample.ts': "import { buildServer } from '../api/server.js';\nexport const b = buildServer;\n",
      'src/newthing/arch-sample.ts': 'export const x = 1;\n',
      'src/twin/arch-sample-dyn.ts': "export const m = await import(['../engine', 'guarded-writer.js'].join('/'));\n",
    });
    expect(lines(v, 'src/domain/arch-sample.ts', 'layer')).toEqual([1]);
    expect(lines(v, 'src/store/arch-sample.ts', 'layer')).toEqual([1]);
    expect(lines(v, 'src/newthing/arch-sample.ts', 'unlayered')).toEqual([1]);
    expect(lines(v, 'src/twin/arch-sample-dyn.ts', 'layer')).toEqual([1]);
  });

  it('the run\'s steps: a step importing another step (even a type) or the registry is refused, a helper importing a step too; steps share through the helpers', () => {
    const v = checkSamples({
      'src/engine/run/steps/arch-sample.ts': [
        "import { proposeAll } from './common.js';", // 1: fine
        "import { pressFidelity } from './press-fidelity.js';", // 2: fine
        "import { blend } from './blend-dry.js';", // 3
        "import type { StepHandler } from '../types.js';", // 4: fine
        "import { STEPS } from './index.js';", // 5
        "export const x: StepHandler[] = [blend, STEPS['compress.press']]; export const y = [proposeAll, pressFidelity];",
        "export type Z = typeof import('./press.js');", // 7
      ].join('\n'),
    });
    expect(lines(v, 'src/engine/run/steps/arch-sample.ts', 'step-imports-step')).toEqual([3, 5, 7]);
    // the shared helpers in place of the real file: they may not lean on a step either
    const helper = checkSamples({ 'src/engine/run/steps/common.ts': "import type { StepHandler } from '../types.js';\nimport { gate } from './gate.js';\nexport const g: StepHandler = gate;\n" });
    expect(lines(helper, 'src/engine/run/steps/common.ts', 'step-imports-step')).toEqual([2]);
    // the registry imports every step
    expect(checkSamples({ 'src/engine/run/steps/index.ts': "import { blend } from './blend-dry.js';\nimport { compress } from './press.js';\nexport const s = [blend, compress];\n" })).toEqual([]);
  });

  it('the run\'s steps reach neither the guarded writer, the store nor the engine (even a type, a helper too); they work through StepContext and StepServices', () => {
    const v = checkSamples({
      'src/engine/run/steps/arch-sample.ts': [
        "import type { StepHandler } from '../types.js';", // 1: fine
        "import type { StepServices } from '../step-services.js';", // 2: fine
        "import type { WriteOutcome } from '../step-context.js';", // 3: fine
        "import type { GuardedWriter } from '../../guarded-writer.js';", // 4
        "import { RunStore } from '../../../store/run-store.js';", // 5
        "import type { RunRecord } from '../../../store/run-store.js';", // 6
        "import type { RunEngine } from '../engine.js';", // 7
        "export type Z = typeof import('../../../store/store.js');", // 8
        'export const h: StepHandler = async (_ctx, s: StepServices) => ({ status: \'SUCCEEDED\', detail: String([s.dataDir, RunStore]) });',
        'export type T = [GuardedWriter, RunRecord, RunEngine, WriteOutcome];',
      ].join('\n'),
    });
    expect(lines(v, 'src/engine/run/steps/arch-sample.ts', 'step-reaches-engine')).toEqual([4, 5, 6, 7, 8]);
    // a shared helper in place of the real file is a step's file too
    const helper = checkSamples({ 'src/engine/run/steps/common.ts': "import type { RunEngine } from '../engine.js';\nexport type E = RunEngine;\n" });
    expect(lines(helper, 'src/engine/run/steps/common.ts', 'step-reaches-engine')).toEqual([1]);
    // the engine itself (outside the steps' folder) holds them all
    expect(lines(checkSamples({ 'src/engine/run/arch-sample.ts': "import type { RunStore } from '../../store/run-store.js';\nimport type { GuardedWriter } from '../guarded-writer.js';\nexport type T = [RunStore, GuardedWriter];\n" }), 'src/engine/run/arch-sample.ts', 'step-reaches-engine')).toEqual([]);
  });

  it('the wire contract stays shippable: zod and the domain only, no store, engine, API or I/O', () => {
    const v = checkSamples({
      'src/contract/arch-sample.ts': [
        "import { z } from 'zod';", // 1: fine
        "import { RUN_STATUSES } from '../domain/run.js';", // 2: fine
        "import type { RunRecord } from '../store/run-store.js';", // 3
        "import { RunEngine } from '../engine/run/engine.js';", // 4
        "import { RunView } from '../api/schemas.js';", // 5
        "import { readFileSync } from 'node:fs';", // 6
        'export type R = RunRecord;',
        'export const all = [z, RUN_STATUSES, RunEngine, RunView, readFileSync];',
      ].join('\n'),
      // the SDK may carry it by value
      'src/sdk/arch-sample.ts': "import { RunView } from '../contract/runs.js';\nexport const r = RunView;\n",
    });
    expect(lines(v, 'src/contract/arch-sample.ts', 'layer')).toEqual([3, 4, 5]);
    expect(lines(v, 'src/contract/arch-sample.ts', 'io-module')).toEqual([6]);
    expect(v.filter((x) => x.file === 'src/sdk/arch-sample.ts')).toEqual([]);
  });

  it('[INV-PURE-CORE] no I/O modules in a pure layer (node:fs, fs, better-sqlite3, node:net, a dynamic import)', () => {
    const v = checkSamples({
      'src/twin/arch-sample.ts': [
        "import { readFileSync } from 'node:fs';",
        "import * as fs from 'fs';",
        "import Database from 'better-sqlite3';",
        "import { createHash } from 'node:crypto';",
        "export const n = await import('node:net');",
        'export const all = [readFileSync, fs, Database, createHash, n];',
      ].join('\n'),
    });
    expect(lines(v, 'src/twin/arch-sample.ts', 'io-module')).toEqual([1, 2, 3, 5]);
  });

  it('[INV-PURE-CORE] no wall clock or randomness in a pure layer, aliased or not', () => {
    const v = checkSamples({
      'src/agents/arch-sample.ts': [
        'export const a = Date.now();', // 1
        'const d = Date;', // 2: the alias escapes
        'export const b = d.now();', // 3
        'export const c = globalThis.Date.now();', // 4
        'export const e = new Date();', // 5
        'export const f = Math.random();', // 6
        'const { random } = Math;', // 7
        "export const g = Date['now']();", // 8
        'export const h = Date();', // 9
        "import { randomUUID } from 'node:crypto';", // 10
        'export const i = [random, randomUUID];', // 11
        'export const ok = [Date.UTC(2026, 0, 1), new Date(0).toISOString(), Date.parse("2026-01-01")];', // 12: fine
      ].join('\n'),
    });
    expect(lines(v, 'src/agents/arch-sample.ts', 'clock-or-random')).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    // the same code is allowed where I/O lives
    const io = checkSamples({ 'src/engine/arch-sample.ts': 'export const a = [Date.now(), Math.random(), new Date()];\n' });
    expect(io).toEqual([]);
  });

  it("the simulated plant's ground truth: out of the product's reach, pure, and below the simulator's I/O", () => {
    const v = checkSamples({
      // the product twin, agents and policy never see the plant's hidden parameters, not even as a type
      'src/twin/arch-sample-ground.ts': "import { perturbParams } from '../../connectors/sim/ground/truth.js';\nexport const p = perturbParams;\n",
      'src/agents/arch-sample-ground.ts': "import type { BatchPlan } from '../../connectors/sim/ground/batches.js';\nexport type P = BatchPlan;\n",
      'src/policy/arch-sample-ground.ts': "import { recordBatches } from '../../connectors/sim/ground/batches.js';\nexport const r = recordBatches;\n",
      // the ground truth is pure and does not reach up into the simulator's servers
      'connectors/sim/ground/arch-sample.ts': [
        "import { readFileSync } from 'node:fs';", // 1
        'export const a = Date.now();', // 2
        'export const b = Math.random();', // 3
        "import { Plant } from '../plant.js';", // 4
        "import { createRng } from '../../../src/clock.js';", // 5: fine
        "import { NOMINAL_PARAMS } from '../../../src/twin/params.js';", // 6: fine
        'export const all = [readFileSync, Plant, createRng, NOMINAL_PARAMS];',
      ].join('\n'),
      // the default models and the simulator build on it
      'src/models/arch-sample-ground.ts': "import { recordBatches } from '../../connectors/sim/ground/batches.js';\nexport const r = recordBatches;\n",
      'connectors/sim/arch-sample-ground.ts': "import { perturbParams } from './ground/truth.js';\nexport const p = perturbParams;\n",
    });
    expect(lines(v, 'src/twin/arch-sample-ground.ts', 'layer')).toEqual([1]);
    expect(lines(v, 'src/agents/arch-sample-ground.ts', 'layer')).toEqual([1]);
    expect(lines(v, 'src/policy/arch-sample-ground.ts', 'layer')).toEqual([1]);
    expect(lines(v, 'connectors/sim/ground/arch-sample.ts', 'io-module')).toEqual([1]);
    expect(lines(v, 'connectors/sim/ground/arch-sample.ts', 'clock-or-random')).toEqual([2, 3]);
    expect(lines(v, 'connectors/sim/ground/arch-sample.ts', 'layer')).toEqual([4]);
    expect(v.filter((x) => x.file === 'connectors/sim/ground/arch-sample.ts' && (x.line === 5 || x.line === 6))).toEqual([]);
    expect(v.filter((x) => x.file === 'src/models/arch-sample-ground.ts' || x.file === 'connectors/sim/arch-sample-ground.ts')).toEqual([]);
  });

  it('[INV-WRITE-PATH] one holder of write capabilities: claiming by name, by computed key, by destructuring, or naming the type', () => {
    const v = checkSamples({
      'src/api/arch-sample.ts': [
        "import type { Connector, WriteCapability } from '../../connectors/types.js';", // 1: names the type
        'export function a(c: Connector) { return c.claimWriter(); }', // 2
        "export function b(c: Connector) { return c[['claim', 'Writer'].join('')](); }", // 3: computed key
        'export function d(c: Connector) { const { claimWriter } = c; return claimWriter; }', // 4
        "export function e(c: Connector) { return c['claimWriter'](); }", // 5
        'export type W = WriteCapability;', // 6
      ].join('\n'),
      'connectors/mqtt/arch-sample.ts': "import type { Connector } from '../types.js';\nexport const f = (c: Connector) => c.claimWriter();\n",
    });
    expect(lines(v, 'src/api/arch-sample.ts', 'write-capability')).toEqual([1, 2, 3, 4, 5, 6]);
    expect(lines(v, 'connectors/mqtt/arch-sample.ts', 'write-capability')).toEqual([2]);
  });

  it('[INV-WRITE-PATH] the holder itself must not hand the capability out through an export', () => {
    const holder = [...WRITE_HOLDERS][0]!;
    const text = ts.sys.readFile(resolve(ROOT, holder))!;
    const leak = "\nexport function leakedCapability(c: import('../../connectors/types.js').Connector) { return c.claimWriter(); }\n";
    const v = checkSamples({ [holder]: text + leak });
    expect(v.filter((x) => x.file === holder).map((x) => x.detail)).toEqual([expect.stringContaining('leakedCapability')]);
  });

  it("src/ reaches connectors only through their entry points, speaks no protocol and never writes the simulator's plant", () => {
    const v = checkSamples({
      'src/engine/arch-sample.ts': [
        "import { writeCapability } from '../../connectors/opcua/writer.js';", // 1
        "import { OPCUAClient } from 'node-opcua';", // 2
        "import type { Plant } from '../../connectors/sim/plant.js';", // 3: type-only, fine
        "export function p(plant: Plant) { plant.writeSetpoint('press', 'MainForce', 30); plant.setSupervisorState('press', 'ATTENDED'); }", // 4
        "import { createConnectors } from '../../connectors/index.js';", // 5: entry point, fine
        'export const all = [writeCapability, OPCUAClient, createConnectors];',
      ].join('\n'),
    });
    expect(lines(v, 'src/engine/arch-sample.ts', 'connector-internals')).toEqual([1]);
    expect(lines(v, 'src/engine/arch-sample.ts', 'protocol')).toEqual([2]);
    expect(lines(v, 'src/engine/arch-sample.ts', 'plant-write')).toEqual([4]);
    expect(v.filter((x) => x.line === 3 || x.line === 5)).toEqual([]);
  });
});
