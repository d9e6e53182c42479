/**
 * The agents are pure (R11): the same input gives a byte-identical JSON
 * output, also after the input itself went through JSON (as a recorded call
 * does on replay); outputs are plain JSON data with finite numbers only
 * (fast-check over wide inputs); no file under src/agents reaches I/O, the
 * clock or Math.random, directly or through what it imports; and the
 * declarations agree with the shipped policy bundle.
 */
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { AGENTS, AGENT_ROLES, DECIDE, replan, summariseRehearsal } from '../../src/agents/index.js';
import { LkError } from '../../src/errors.js';
import { DEFAULT_DESIGN_SPACE } from '../../src/twin/setpoints.js';
import { simulate } from '../../src/twin/simulate.js';
import { perturbParams } from '../../connectors/sim/ground/truth.js';
import { NOMINAL_PARAMS } from '../../src/twin/params.js';
import { DS, NOMINAL_PRESS, T0, TWIN, limit, noisy, numbersOf, pressInput, series } from './agents-fixtures.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const sha = (i: number): string => (i.toString(16).padStart(8, '0') + 'ab'.repeat(28)).slice(0, 64);

/** One representative input per deciding agent. */
const SAMPLES: { [R in keyof typeof DECIDE]: Parameters<(typeof DECIDE)[R]>[0] } = {
  blend_dispense: {
    now: T0,
    scans: noisy(30, 100, 6, 2).map((concentrationPct, i) => ({ seq: i, concentrationPct, at: T0 - (30 - i) * 10_000 })),
    revolutions: 300,
    targetRevolutions: 300,
    limits: { rsdMaxPct: 5, meanMinPct: 90, meanMaxPct: 110, block: 10, consecutive: 3, confidence: 0.95 },
    targetRevolutionsLimit: limit('blender.TargetRevolutions'),
  },
  granulate_dry: {
    now: T0,
    lod: series('fluidbed.Lod', '%', [16, 15, 14.1, 13.3], T0, 60_000),
    productTemp: series('fluidbed.ProductTemp', 'Cel', [33, 33.4, 33.9, 34.2], T0, 60_000),
    inletAirTempC: 60,
    airflowM3h: 250,
    targetLodPct: 2,
    model: { ...TWIN },
    params: { ...NOMINAL_PARAMS.drying },
    designSpace: { 'fluidbed.InletAirTemp': limit('fluidbed.InletAirTemp'), 'fluidbed.Airflow': limit('fluidbed.Airflow') },
  },
  compress_fill: pressInput({ ...NOMINAL_PRESS, 'press.FillDepth': 7.8 }),
  coat_dry: {
    now: T0,
    weightGain: series('coater.WeightGain', '%', [1.1, 1.2]),
    wettingRatio: series('coater.WettingRatio', '1', [0.93, 0.96, 0.95]),
    exhaustC: series('coater.ExhaustTemp', 'Cel', [39, 38.8]),
    current: { 'coater.SprayRate': 160, 'coater.InletAirTemp': 60, 'coater.Airflow': 1500, 'coater.PanSpeed': 8 },
    targetWeightGainPct: 3,
    params: { ...NOMINAL_PARAMS.coating },
    model: { ...TWIN },
    designSpace: { 'coater.SprayRate': limit('coater.SprayRate'), 'coater.InletAirTemp': limit('coater.InletAirTemp'), 'coater.Airflow': limit('coater.Airflow'), 'coater.PanSpeed': limit('coater.PanSpeed') },
  },
  defect_inspect: {
    now: T0,
    inspected: 50_000,
    rejected: 300,
    defectRatePct: 0.55,
    classified: [{ label: 'good', count: 20 }, { label: 'capped', count: 18 }, { label: 'chipped', count: 4 }],
    specMaxPct: 1,
    rejectThreshold: { valuePct: 50, limit: limit('vision.RejectThreshold') },
  },
  quality_potency: {
    now: T0,
    scores: noisy(15, 100, 1.5, 4).map((potencyPct, i) => ({ spectrumId: 900 + i, potencyPct, sha256: sha(i), model: { id: 'potency-pls-v1', version: 1 } })),
    spec: { minPct: 95, maxPct: 105 },
    rmsepPct: 1.2,
  },
  quality_conf: { now: T0, weights: series('press.TabletWeight', 'mg', noisy(30, 300, 1.9, 6)), turretSpeed: 55, targets: { weightMg: 300, weightRsdMaxPct: 2 }, params: NOMINAL_PARAMS },
  yield_takt: { now: T0, outputTabletsPerHour: 90_000, targetTabletsPerHour: 100_000, turretSpeed: 45, designSpace: { min: 30, max: 70, maxStep: 5 } },
};

/** Plain JSON data with finite numbers: survives a JSON round trip unchanged (no undefined, no -0, no class instances). */
function expectJsonData(out: unknown): void {
  for (const n of numbersOf(out)) expect(Number.isFinite(n.value), n.path).toBe(true);
  expect(JSON.parse(JSON.stringify(out))).toStrictEqual(out);
}

/** Run an agent on an arbitrary input: it returns JSON data or throws an LkError, nothing else. Counts what it saw. */
function judge(run: () => unknown, seen: Tally): void {
  let out: unknown;
  try {
    out = run();
  } catch (e) {
    // an input error is fine; LK_INTERNAL would mean the agent itself produced a non-finite or non-JSON output
    expect(LkError.is(e) && e.code !== 'LK_INTERNAL', String(e)).toBe(true);
    seen.refused++;
    return;
  }
  expectJsonData(out);
  seen.returned++;
  const proposals = (out as { proposals?: unknown[] }).proposals;
  if (proposals && proposals.length > 0) seen.proposing++;
}

interface Tally {
  returned: number;
  refused: number;
  proposing: number;
}
const tally = (): Tally => ({ returned: 0, refused: 0, proposing: 0 });

describe('agents are pure functions of their input', () => {
  for (const role of Object.keys(SAMPLES) as (keyof typeof DECIDE)[]) {
    it(`${role}: same input → byte-identical JSON, also replayed from recorded JSON; input untouched`, () => {
      const decide = DECIDE[role] as (x: unknown) => unknown;
      const input = SAMPLES[role];
      const before = structuredClone(input);
      const a = JSON.stringify(decide(input));
      expect(JSON.stringify(decide(input))).toBe(a);
      expect(JSON.stringify(decide(JSON.parse(JSON.stringify(input))))).toBe(a);
      expect(input).toStrictEqual(before);
      expectJsonData(decide(input));
    });
  }

  it('the samples exercise proposals (so the checks above cover their traces)', () => {
    for (const role of ['blend_dispense', 'granulate_dry', 'compress_fill', 'coat_dry', 'defect_inspect', 'quality_conf', 'yield_takt'] as const) {
      const out = (DECIDE[role] as (x: unknown) => { proposals: unknown[] })(SAMPLES[role]);
      expect(out.proposals.length, role).toBe(1);
    }
  });

  it('replan and the orchestrator summaries are deterministic JSON data too', () => {
    const ctx = { now: T0, outputTabletsPerHour: 90_000, targetTabletsPerHour: 100_000, remainingTablets: 120_000, nextChangeover: { planned: true, plannedMin: 60, offlineMin: 15 } };
    const r = replan({ setpoint: 'press.TurretSpeed', reason: 'OUTRANKED', score: 1 }, ctx);
    expect(JSON.stringify(replan({ setpoint: 'press.TurretSpeed', reason: 'OUTRANKED', score: 1 }, JSON.parse(JSON.stringify(ctx))))).toBe(JSON.stringify(r));
    expectJsonData(r);
    const sim = simulate({ id: 'process-twin-v1', version: 1, params: NOMINAL_PARAMS, validRanges: {} }, { candidates: 50, horizon: 'full batch', seed: 3, designSpace: DEFAULT_DESIGN_SPACE });
    expect(JSON.stringify(summariseRehearsal(sim))).toBe(JSON.stringify(summariseRehearsal(structuredClone(sim))));
    expectJsonData(summariseRehearsal(sim));
  });
});

describe('agent outputs hold finite numbers only (fast-check)', () => {
  // fc.double alone crowds toward the smallest magnitudes (it is uniform over the bit patterns): mix in a uniform draw
  const num = (min: number, max: number) =>
    fc.oneof({ arbitrary: fc.integer({ min: 0, max: 1_000_000 }).map((i) => min + ((max - min) * i) / 1_000_000), weight: 4 }, { arbitrary: fc.double({ min, max, noNaN: true }), weight: 1 });
  const readings = (min: number, max: number, n = 30) => fc.array(num(min, max), { maxLength: n }).map((v) => series('x.Y', '1', v));
  const runs = { numRuns: 120, seed: 7 };

  it('blend_dispense', () => {
    const seen = tally();
    fc.assert(
      fc.property(fc.array(num(0.01, 250), { maxLength: 40 }), num(0, 800), num(100, 700), fc.integer({ min: 3, max: 10 }), fc.integer({ min: 1, max: 4 }), num(0.5, 0.999), num(0.5, 12), (v, rev, target, block, consecutive, confidence, rsdMaxPct) => {
        judge(() =>
          DECIDE.blend_dispense({
            now: T0,
            scans: v.map((concentrationPct, i) => ({ seq: i, concentrationPct, at: T0 + i })),
            revolutions: rev,
            targetRevolutions: target,
            limits: { rsdMaxPct, meanMinPct: 90, meanMaxPct: 110, block, consecutive, confidence },
            targetRevolutionsLimit: limit('blender.TargetRevolutions'),
            blendModel: { model: TWIN, params: NOMINAL_PARAMS.blend },
          }),
          seen,
        );
      }),
      runs,
    );
    // the property is not vacuous: most inputs are judged and some lead to a proposal
    expect(seen.returned).toBeGreaterThan(runs.numRuns / 2);
    expect(seen.proposing).toBeGreaterThan(0);
  });

  it('granulate_dry, on perturbed fitted parameters', () => {
    const seen = tally();
    fc.assert(
      fc.property(readings(0, 30), readings(10, 90), num(30, 90), num(1, 600), num(0.2, 6), fc.integer(), (lod, temp, inlet, airflow, target, seed) => {
        judge(() => DECIDE.granulate_dry({ ...SAMPLES.granulate_dry, lod, productTemp: temp, inletAirTempC: inlet, airflowM3h: airflow, targetLodPct: target, params: perturbParams(NOMINAL_PARAMS, seed).drying }), seen);
      }),
      runs,
    );
    expect(seen.returned).toBe(runs.numRuns);
    expect(seen.proposing).toBeGreaterThan(0);
  });

  it('compress_fill, from inside to well outside the design space', () => {
    const seen = tally();
    fc.assert(
      fc.property(num(5, 12), num(4, 24), num(0.5, 6), fc.oneof(fc.constant(0), num(15, 85)), fc.boolean(), readings(150, 450), readings(0, 300), readings(0, 20), fc.integer(), (fill, force, pre, rpm, wild, w, h, c, seed) => {
        // measurements either what a perturbed press makes there, or anything at all
        const base = pressInput({ 'press.FillDepth': fill, 'press.MainForce': force, 'press.PreForce': pre, 'press.TurretSpeed': rpm }, { seed });
        judge(() => DECIDE.compress_fill({ ...base, ...(wild ? { weights: w, hardness: h, capping: c } : {}), params: perturbParams(NOMINAL_PARAMS, seed) }), seen);
      }),
      { ...runs, numRuns: 80 },
    );
    expect(seen.returned).toBe(80);
    expect(seen.proposing).toBeGreaterThan(0);
  });

  it('coat_dry, including a coater without airflow', () => {
    const seen = tally();
    fc.assert(
      fc.property(readings(0, 5), readings(0, 3), readings(10, 70), num(0, 260), num(30, 80), fc.oneof(fc.constant(0), num(0, 2600)), num(0, 15), (wg, ratio, ex, spray, inlet, air, pan) => {
        judge(() =>
          DECIDE.coat_dry({ ...SAMPLES.coat_dry, weightGain: wg, wettingRatio: ratio, exhaustC: ex, current: { 'coater.SprayRate': spray, 'coater.InletAirTemp': inlet, 'coater.Airflow': air, 'coater.PanSpeed': pan } }),
          seen,
        );
      }),
      runs,
    );
    expect(seen.returned).toBe(runs.numRuns);
    expect(seen.proposing).toBeGreaterThan(0);
  });

  it('defect_inspect, quality_conf, quality_potency, yield_takt and replan', () => {
    fc.assert(
      fc.property(
        fc.nat(1_000_000),
        fc.double({ min: 0, max: 1, noNaN: true }),
        num(0, 100),
        fc.array(fc.record({ label: fc.constantFrom('good', 'capped', 'chipped', 'broken', 'sticking'), count: fc.nat(100) }), { maxLength: 5 }),
        readings(1, 600, 40),
        num(0, 90),
        fc.array(num(0, 200), { maxLength: 40 }),
        num(0, 300_000),
        (inspected, share, live, classes, weights, speed, potencies, output) => {
          const seen = tally();
          const classified = [...new Map(classes.map((c) => [c.label, c])).values()];
          judge(() => DECIDE.defect_inspect({ ...SAMPLES.defect_inspect, inspected, rejected: Math.floor(inspected * share), defectRatePct: live, classified }), seen);
          judge(() => DECIDE.quality_conf({ ...SAMPLES.quality_conf, weights, turretSpeed: speed }), seen);
          judge(() => DECIDE.quality_potency({ ...SAMPLES.quality_potency, scores: potencies.map((potencyPct, i) => ({ spectrumId: i, potencyPct, sha256: sha(i), model: TWIN })) }), seen);
          judge(() => DECIDE.yield_takt({ ...SAMPLES.yield_takt, outputTabletsPerHour: output, turretSpeed: speed }), seen);
          judge(() => replan({ setpoint: 'press.TurretSpeed', reason: 'OUTRANKED', score: 1 }, { now: T0, outputTabletsPerHour: output, targetTabletsPerHour: 100_000, remainingTablets: inspected, nextChangeover: { planned: share > 0.5, plannedMin: 60, offlineMin: live } }), seen);
          // valid inputs all of them: none may be refused
          expect(seen.refused).toBe(0);
        },
      ),
      runs,
    );
  });
});

// ───────────────────────────── architecture ─────────────────────────────

interface Source {
  path: string;
  source: string;
}

function stripComments(src: string): string {
  return src.replace(/\/\*[\s\S]*?\*\//g, (m) => m.replace(/[^\n]/g, ' ')).replace(/(^|[^:'"`\\])\/\/[^\n]*/gm, (m, p: string) => p + ' '.repeat(m.length - p.length));
}

const IMPURE: [string, RegExp][] = [
  ['reads the clock (Date.now)', /\bDate\s*\.\s*now\s*\(/],
  ['reads the clock (new Date())', /\bnew\s+Date\s*\(\s*\)/],
  ['reads the clock (performance.now / hrtime)', /\bperformance\s*\.\s*now\s*\(|\bprocess\s*\.\s*hrtime\b/],
  ['draws Math.random', /\bMath\s*\.\s*random\s*\(/],
  ['reads the environment', /\bprocess\s*\.\s*env\b/],
  ['schedules timers', /\bset(Timeout|Interval|Immediate)\s*\(/],
  ['imports a node: module', /\bfrom\s+['"]node:|\bimport\s*\(\s*['"]node:|\brequire\s*\(/],
];

/** Value-import specifiers of a module (`import type` / `export type` are erased and cannot do I/O). */
function valueImports(source: string): string[] {
  const code = stripComments(source);
  const out: string[] = [];
  for (const m of code.matchAll(/\b(?:import|export)\s+(?!type\b)(?:[^'";]*?\bfrom\s*)?['"]([^'"]+)['"]|\bimport\s*\(\s*['"]([^'"]+)['"]\s*\)/g)) out.push(m[1] ?? m[2]!);
  return out;
}

/** Direct violations in the given files, plus every package reached through their value imports. */
function impurities(files: readonly Source[], load: (path: string) => string | undefined): { violations: string[]; packages: string[] } {
  const violations: string[] = [];
  for (const f of files) {
    const code = stripComments(f.source);
    for (const [rule, re] of IMPURE) if (re.test(code)) violations.push(`${f.path}: ${rule}`);
  }
  const packages = new Set<string>();
  const seen = new Set<string>();
  const queue = files.map((f) => ({ path: f.path, source: f.source }));
  while (queue.length > 0) {
    const f = queue.shift()!;
    if (seen.has(f.path)) continue;
    seen.add(f.path);
    for (const spec of valueImports(f.source)) {
      if (!spec.startsWith('.')) {
        packages.add(spec);
        continue;
      }
      const target = join(dirname(f.path), spec).split(sep).join('/').replace(/\.js$/, '.ts');
      const source = load(target);
      if (source === undefined) violations.push(`${f.path}: unresolved import ${spec}`);
      else queue.push({ path: target, source });
    }
  }
  for (const p of packages) if (p.startsWith('node:') || builtinModules.includes(p)) violations.push(`reaches the Node built-in ${p}`);
  return { violations, packages: [...packages].sort() };
}

function agentSources(): Source[] {
  const dir = join(ROOT, 'src/agents');
  return readdirSync(dir)
    .filter((n) => n.endsWith('.ts') && statSync(join(dir, n)).isFile())
    .map((n) => ({ path: relative(ROOT, join(dir, n)).split(sep).join('/'), source: readFileSync(join(dir, n), 'utf8') }));
}

const loadRepo = (path: string): string | undefined => {
  try {
    return readFileSync(resolve(ROOT, path), 'utf8');
  } catch {
    return undefined;
  }
};

describe('architecture: src/agents is pure', () => {
  it('no agent file imports node:* or reads the clock, randomness, environment or timers — nor does anything it imports', () => {
    const files = agentSources();
    expect(files.length).toBeGreaterThanOrEqual(12);
    const r = impurities(files, loadRepo);
    expect(r.violations).toEqual([]);
    // the only packages reached: the chi-square / t quantiles and the seeded generator
    expect(r.packages).toEqual(['jstat', 'pure-rand']);
  });

  it('the checker catches each kind of impurity, directly and through an import', () => {
    const rogue: Source[] = [
      { path: 'src/agents/a.ts', source: 'const t = Date.now();\n' },
      { path: 'src/agents/b.ts', source: "import { readFileSync } from 'node:fs';\n" },
      { path: 'src/agents/c.ts', source: 'const x = Math.random();\nconst d = new Date();\n' },
      { path: 'src/agents/d.ts', source: "import { helper } from '../twin/leaky.js';\n" },
      { path: 'src/agents/e.ts', source: "import type { X } from '../twin/types-only.js';\n// Date.now() in a comment is fine\n" },
    ];
    const repo: Record<string, string> = { 'src/twin/leaky.ts': "import { createHash } from 'crypto';\nexport const helper = 1;\n", 'src/twin/types-only.ts': "import fs from 'node:fs';\n" };
    const r = impurities(rogue, (p) => repo[p]);
    expect(r.violations).toEqual([
      'src/agents/a.ts: reads the clock (Date.now)',
      'src/agents/b.ts: imports a node: module',
      'src/agents/c.ts: reads the clock (new Date())',
      'src/agents/c.ts: draws Math.random',
      'reaches the Node built-in node:fs',
      'reaches the Node built-in crypto',
    ]);
  });
});

describe('declarations', () => {
  const SPEC_TOOLS = new Set(['mes.read_batch_record', 'twin.simulate', 'policy.evaluate', 'nir.score', 'nir.evidence_chain', 'plc.write_setpoint', 'press.write_setpoint', 'press.read_force_curve', 'coater.write_setpoint', 'vision.stream', 'approval.request', 'audit.write_release_package']);

  it('nine agents, ids agent.<role>, spec tool names, twin verification and Part 11 audit', () => {
    expect(Object.keys(AGENTS)).toEqual([...AGENT_ROLES]);
    for (const role of AGENT_ROLES) {
      const a = AGENTS[role];
      expect(a.id).toBe(`agent.${role}`);
      expect(a.goal.length).toBeGreaterThan(40);
      expect(a.tools.length).toBeGreaterThan(0);
      for (const t of a.tools) expect(SPEC_TOOLS.has(t), `${role}: ${t}`).toBe(true);
      expect(a).toMatchObject({ verify: 'twin', audit: 'part11' });
    }
  });

  it('autonomy levels are those of config/policy/agents.yaml', () => {
    const yaml = parse(readFileSync(join(ROOT, 'config/policy/agents.yaml'), 'utf8')) as { agents: Record<string, { autonomy: string }> };
    expect(Object.keys(yaml.agents).sort()).toEqual(AGENT_ROLES.map((r) => `agent.${r}`).sort());
    for (const role of AGENT_ROLES) expect(AGENTS[role].autonomy, role).toBe(yaml.agents[`agent.${role}`]!.autonomy);
  });

  it('the test design space matches the shipped bundle for ir-family-a', () => {
    const yaml = parse(readFileSync(join(ROOT, 'config/policy/design-space.yaml'), 'utf8')) as { design_spaces: { product: string; setpoints: Record<string, { min: number; max: number; max_step: number }> }[] };
    const a = yaml.design_spaces.find((d) => d.product === 'ir-family-a')!;
    for (const [id, l] of Object.entries(DS)) expect({ min: l.min, max: l.max, maxStep: l.maxStep }, id).toEqual({ min: a.setpoints[id]!.min, max: a.setpoints[id]!.max, maxStep: a.setpoints[id]!.max_step });
  });
});
