import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { openStore } from '../../src/store/store.js';
import { runCli as run } from '../helpers/cli.js';
import { parseCappingRisk } from '../../src/cli/commands/policy.js';
import { registeredTwin } from '../helpers/models.js';
import { bundle, bundleCopy, cleanupCopies } from './policy-helpers.js';

/** A data directory whose model registry holds acme-pharma's validated twin (what `eval --model` asks). */
let registry: string;
let empty: string;
beforeAll(() => {
  registry = mkdtempSync(join(tmpdir(), 'lk-policy-cli-'));
  empty = mkdtempSync(join(tmpdir(), 'lk-policy-cli-empty-'));
  const store = openStore({ dataDir: registry });
  try {
    registeredTwin(store, registry);
  } finally {
    store.close();
  }
});
afterAll(() => {
  cleanupCopies();
  for (const d of [registry, empty]) if (d) rmSync(d, { recursive: true, force: true });
});

beforeEach(() => {
  process.exitCode = undefined;
});


const pair = ['--product', 'ir-family-a', '--tooling', 'round-10mm-ff'];

describe('linekeeper policy (CLI over the same engine)', () => {
  it('show --json prints the compiled bundle with its version', async () => {
    const r = await run('policy', 'show', '--json');
    expect(r.code).toBe(0);
    const v = JSON.parse(r.out) as { version: string; allowLists: Record<string, string[]>; lowRisk: string[]; validated: string[]; designSpaces: unknown[] };
    expect(v.version).toBe(bundle.version);
    expect(v.allowLists['agent.compress_fill']).toContain('press.MainForce');
    expect(v.validated).toContain('vision.RejectThreshold');
    expect(v.designSpaces).toHaveLength(2);
  });

  it('limits --json prints min, max, unit, max step, validated and low-risk per setpoint', async () => {
    const r = await run('policy', 'limits', ...pair, '--json');
    expect(r.code).toBe(0);
    const v = JSON.parse(r.out) as { setpoints: { setpoint: string; min: number; max: number; unit: string; maxStep: number; validated: boolean; lowRisk: boolean }[] };
    expect(v.setpoints.find((s) => s.setpoint === 'press.MainForce')).toMatchObject({ min: 8, max: 18, unit: 'kN', maxStep: 1.5, validated: false, lowRisk: true });
  });

  it('limits for an unknown pair fails with LK_NOT_FOUND', async () => {
    const r = await run('policy', 'limits', '--product', 'ir-family-z', '--tooling', 'round-10mm-ff');
    expect(r.code).toBe(1);
    expect(r.err).toContain('[LK_NOT_FOUND]');
  });

  it('eval exits 0 for every decision it made and prints reasons and bundle version', async () => {
    const base = ['policy', 'eval', ...pair, '--agent', 'agent.compress_fill', '--setpoint', 'press.MainForce', '--current', '12000 N', '--model', 'process-twin-v1@1', '--data', registry, '--capping-risk', '0.004', '--json'];
    const allow = await run(...base, '--value', '12.5 kN', '--autonomy', 'L3', '--attended');
    expect(allow.code).toBe(0);
    expect(JSON.parse(allow.out)).toMatchObject({ outcome: 'allow', bundleVersion: bundle.version, valueInSetpointUnit: 12.5 });
    const qa = await run(...base, '--value', '19 kN', '--autonomy', 'L3', '--attended', '--current', '18 kN');
    expect(JSON.parse(qa.out)).toMatchObject({ outcome: 'needs_qa', reasons: expect.arrayContaining(['OUTSIDE_DESIGN_SPACE']) });
    const unattended = await run(...base, '--value', '12.5 kN', '--autonomy', 'L3');
    expect(JSON.parse(unattended.out)).toMatchObject({ outcome: 'recommend_only', reasons: ['UNATTENDED'] });
    const deny = await run(...base, '--value', '12.5 Cel', '--batch-state', 'hold');
    expect(deny.code).toBe(0);
    expect(JSON.parse(deny.out)).toMatchObject({ outcome: 'deny', reasons: expect.arrayContaining(['UNIT_INCOMPATIBLE', 'BATCH_STATE_FORBIDS']) });
    const text = await run('policy', 'eval', ...pair, '--agent', 'agent.yield_takt', '--setpoint', 'press.MainForce', '--value', '12.5 kN');
    expect(text.code).toBe(0);
    expect(text.out).toMatch(/^deny {2}\(dec_[0-9a-f]+\)/);
    expect(text.out).toContain('NOT_IN_ALLOW_LIST');
  });

  it('eval asks the model registry of the data directory for --model, and denies a press move without a capping risk', async () => {
    const base = ['policy', 'eval', ...pair, '--agent', 'agent.compress_fill', '--setpoint', 'press.MainForce', '--current', '12 kN', '--value', '12.5 kN', '--autonomy', 'L3', '--attended', '--json'];
    const allow = await run(...base, '--model', 'process-twin-v1@1', '--data', registry, '--capping-risk', '0.004');
    expect(JSON.parse(allow.out)).toMatchObject({ outcome: 'allow', inputs: { context: { modelRecord: { owner: 'own', status: 'validated', family: 'process-twin' } } } });
    const missing = await run(...base, '--model', 'process-twin-v1@1', '--data', empty, '--capping-risk', '0.004');
    expect(JSON.parse(missing.out)).toMatchObject({ outcome: 'deny', reasons: ['MODEL_MISSING'] });
    const other = await run(...base, '--model', 'process-twin-v1@1', '--data', registry, '--tenant', 'borealis-bio', '--capping-risk', '0.004');
    expect(JSON.parse(other.out)).toMatchObject({ outcome: 'deny', reasons: ['MODEL_TENANT'] });
    const version = await run(...base, '--model', 'process-twin-v1@2', '--data', registry, '--capping-risk', '0.004');
    expect(JSON.parse(version.out)).toMatchObject({ outcome: 'deny', reasons: ['MODEL_NOT_VALIDATED'] });
    const noRisk = await run(...base, '--model', 'process-twin-v1@1', '--data', registry);
    expect(JSON.parse(noRisk.out)).toMatchObject({ outcome: 'deny', reasons: ['CAPPING_RISK_UNKNOWN'] });
    const high = await run(...base, '--model', 'process-twin-v1@1', '--data', registry, '--capping-risk', '0.02');
    expect(JSON.parse(high.out)).toMatchObject({ outcome: 'deny', reasons: ['CAPPING_RISK_TOO_HIGH'] });
  });

  it('exits non-zero only when no decision could be made: bad level, bad --current, broken bundle', async () => {
    const base = ['policy', 'eval', ...pair, '--agent', 'agent.compress_fill', '--setpoint', 'press.MainForce', '--value', '12.5 kN'];
    const lvl = await run(...base, '--autonomy', 'L4');
    expect(lvl.code).toBe(2);
    expect(lvl.err).toContain('[LK_VALIDATION]');
    expect((await run(...base, '--current', 'twelve')).code).toBe(2);
    const broken = bundleCopy({ 'agents.yaml': (t) => t.replace('agents:', 'agents:\n  agent.x: 3') });
    const b = await run(...base, '--policy', broken);
    expect(b.code).toBe(1);
    expect(b.err).toMatch(/agents\.yaml:\d+: .*\[LK_POLICY_BUNDLE\]/s);
  });
});

describe('policy eval refuses what it cannot mean', () => {
  const base = ['policy', 'eval', ...pair, '--agent', 'agent.compress_fill', '--value', '12.5 kN', '--current', '12 kN'];

  it('--capping-risk that is empty, blank, negative, above 1 or not a plain number: LK_VALIDATION, exit 2', async () => {
    for (const bad of ['', ' ', '-0.01', '-1', '1.5', 'NaN', 'Infinity', '0x10', '1%']) {
      const r = await run(...base, '--setpoint', 'press.MainForce', '--capping-risk', bad);
      expect(r.code, JSON.stringify(bad)).toBe(2);
      expect(r.err).toContain('[LK_VALIDATION]');
    }
    expect(parseCappingRisk('0')).toBe(0);
    expect(parseCappingRisk('0.004')).toBe(0.004);
    expect(parseCappingRisk('1e-3')).toBe(0.001);
  });

  it('prototype keys as setpoint ids are refused as not a tag id, not looked up', async () => {
    for (const key of ['__proto__', 'constructor', 'toString', 'hasOwnProperty']) {
      const r = await run(...base, '--setpoint', key);
      expect(r.code, key).toBe(2);
      expect(r.err).toContain('is not a tag id');
      expect(r.err).toContain('[LK_VALIDATION]');
    }
  });
});
