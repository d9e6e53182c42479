import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import { runCli as run } from '../helpers/cli.js';
import { bundle, bundleCopy, cleanupCopies } from './policy-helpers.js';

afterAll(cleanupCopies);

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
    const base = ['policy', 'eval', ...pair, '--agent', 'agent.compress_fill', '--setpoint', 'press.MainForce', '--current', '12000 N', '--model', 'compaction-ir-family-a-v3@3.2.0', '--json'];
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
