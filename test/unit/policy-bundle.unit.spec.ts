import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { evaluate } from '../../src/policy/index.js';
import { loadPolicyBundle } from '../../src/config/policy-bundle.js';
import { bundle, bundleCopy, cleanupCopies, context, policyDir, request, site } from './policy-helpers.js';
import { codeOf } from '../helpers/codes.js';

afterAll(cleanupCopies);


function messageOf(fn: () => unknown): string {
  try {
    fn();
  } catch (e) {
    return e instanceof Error ? e.message : String(e);
  }
  return '';
}

describe('policy bundle: load and compile', () => {
  it('versions the bundle as SHA-256 of its canonical content, stable across loads and insensitive to comments and key order', () => {
    expect(bundle.version).toMatch(/^[0-9a-f]{64}$/);
    expect(loadPolicyBundle(policyDir, { site }).bundle.version).toBe(bundle.version);
    const dir = bundleCopy({
      'bundle.yaml': (t) => `# a reviewer's comment\n${t.replace('format: 1\nsite: site-ravenna', 'site: site-ravenna\nformat: 1')}`,
    });
    expect(loadPolicyBundle(dir, { site }).bundle.version).toBe(bundle.version);
  });

  it('changes the version when a limit changes', () => {
    const dir = bundleCopy({ 'design-space.yaml': (t) => t.replace('press.MainForce:          { min: 8,    max: 18,', 'press.MainForce:          { min: 8,    max: 19,') });
    expect(loadPolicyBundle(dir, { site, lastAccepted: null }).bundle.version).not.toBe(bundle.version);
  });

  it('approvers.reassign is optional: absent, the content has no such key (the version stays what it was); set, it is in the content and changes the version', () => {
    expect('reassign' in bundle.content.approvers).toBe(false);
    const dir = bundleCopy({ 'bundle.yaml': (t) => t.replace('  change: [qa_reviewer]\n', '  change: [qa_reviewer]\n  reassign: [qa_reviewer]\n') });
    const b = loadPolicyBundle(dir, { site, lastAccepted: null }).bundle;
    expect(b.content.approvers.reassign).toEqual(['qa_reviewer']);
    expect(b.version).not.toBe(bundle.version);
  });

  it('[LIM-SETPOINT-BOUNDS] DesignSpace.approved gives unit-aware limits narrower than the instrument range', () => {
    const ds = bundle.designSpace.approved('ir-family-a', 'round-10mm-ff');
    const mf = ds.setpoints['press.MainForce']!;
    expect(mf).toMatchObject({ min: 8, max: 18, unit: 'kN', maxStep: 1.5 });
    for (const [id, lim] of Object.entries(ds.setpoints)) {
      const ir = bundle.content.setpoints[id]!.instrumentRange!;
      expect(lim.min).toBeGreaterThanOrEqual(ir.min);
      expect(lim.max).toBeLessThanOrEqual(ir.max);
      expect(lim.max - lim.min).toBeLessThan(ir.max - ir.min);
    }
    expect(bundle.designSpace.approved('ir-family-b', 'round-10mm-ff').setpoints['press.MainForce']!.max).toBe(22);
    expect(codeOf(() => bundle.designSpace.approved('ir-family-a', 'oval-12mm'))).toBe('LK_NOT_FOUND');
  });

  it('converts limits written in another compatible unit to the tag unit once, at load (steps without the offset)', () => {
    const dir = bundleCopy({
      'design-space.yaml': (t) =>
        t.replace(
          'fluidbed.InletAirTemp:    { min: 55,   max: 68,   unit: Cel,         max_step: 2,',
          'fluidbed.InletAirTemp:    { min: 131,  max: 154.4, unit: "[degF]",   max_step: 3.6,',
        ),
    });
    const b = loadPolicyBundle(dir, { site }).bundle;
    const lim = b.designSpace.approved('ir-family-a', 'round-10mm-ff').setpoints['fluidbed.InletAirTemp']!;
    expect(lim.unit).toBe('Cel');
    expect(lim.min).toBeCloseTo(55, 9);
    expect(lim.max).toBeCloseTo(68, 9);
    expect(lim.maxStep).toBeCloseTo(2, 9);
    expect(lim.declared.unit).toBe('[degF]');
  });

  it('refuses a unit incompatible with the tag, or unknown, naming file, line and path', () => {
    const dir = bundleCopy({ 'design-space.yaml': (t) => t.replace('press.PreForce:           { min: 1.5,  max: 4,    unit: kN,', 'press.PreForce:           { min: 1.5,  max: 4,    unit: mm,') });
    expect(codeOf(() => loadPolicyBundle(dir, { site }))).toBe('LK_POLICY_BUNDLE');
    expect(messageOf(() => loadPolicyBundle(dir, { site }))).toMatch(/design-space\.yaml:\d+: design_spaces\[0\]\.setpoints\["press\.PreForce"\]\.unit: .*cannot be converted/);
    const dir2 = bundleCopy({ 'design-space.yaml': (t) => t.replace('unit: kN,          max_step: 1.5', 'unit: kNN,          max_step: 1.5') });
    expect(messageOf(() => loadPolicyBundle(dir2, { site }))).toMatch(/"kNN" is not a UCUM unit/);
  });

  it('refuses a missing folder, a missing file, bad YAML, unknown keys and stray files (fail closed: LK_POLICY_BUNDLE)', () => {
    expect(codeOf(() => loadPolicyBundle(join(policyDir, 'nope'), { site }))).toBe('LK_POLICY_BUNDLE');
    const missing = bundleCopy();
    rmSync(join(missing, 'agents.yaml'));
    expect(messageOf(() => loadPolicyBundle(missing, { site }))).toMatch(/agents\.yaml: \(file\): file is missing/);
    const bad = bundleCopy({ 'setpoints.yaml': (t) => `${t}\n  - { id: broken\n` });
    expect(codeOf(() => loadPolicyBundle(bad, { site }))).toBe('LK_POLICY_BUNDLE');
    expect(messageOf(() => loadPolicyBundle(bad, { site }))).toMatch(/setpoints\.yaml:\d+:/);
    const unknown = bundleCopy({ 'agents.yaml': (t) => t.replace('    autonomy: L3\n    allow: [press.FillDepth', '    autonomy: L3\n    alow: []\n    allow: [press.FillDepth') });
    expect(messageOf(() => loadPolicyBundle(unknown, { site }))).toMatch(/agents\.yaml:\d+: agents\["agent\.compress_fill"\]\.alow: unknown key "alow"/);
    const stray = bundleCopy();
    writeFileSync(join(stray, 'design-space-v2.yaml'), 'design_spaces: []\n');
    expect(codeOf(() => loadPolicyBundle(stray, { site }))).toBe('LK_POLICY_BUNDLE');
    // a copy of model statuses in the bundle is refused: the model registry in the store is the one source of truth
    const copy = bundleCopy();
    writeFileSync(join(copy, 'models.yaml'), 'models:\n  - { id: process-twin-v1, validated_version: "1", sites: [site-ravenna] }\n');
    expect(messageOf(() => loadPolicyBundle(copy, { site }))).toMatch(/unknown bundle file models\.yaml/);
  });

  it('refuses cross-reference errors: unknown setpoint, low-risk outside compression/coating/inspection, validated and low-risk at once, another site, range beyond the instrument', () => {
    const cases: [Record<string, (t: string) => string>, RegExp][] = [
      [{ 'agents.yaml': (t) => t.replace('allow: [vision.RejectThreshold]', 'allow: [vision.RejectTreshold]') }, /"vision\.RejectTreshold" is not a setpoint/],
      [{ 'setpoints.yaml': (t) => t.replace('  - coater.PanSpeed\n', '  - coater.PanSpeed\n  - blender.Speed\n') }, /only compression, coating and inspection/],
      [{ 'setpoints.yaml': (t) => t.replace('  - coater.PanSpeed\n', '  - coater.PanSpeed\n  - vision.RejectThreshold\n') }, /validated parameter and cannot also be low-risk/],
      [{ 'bundle.yaml': (t) => t.replace('site: site-ravenna', 'site: site-lisbon') }, /approved for site "site-lisbon"/],
      [{ 'design-space.yaml': (t) => t.replace('min: 8,    max: 18,', 'min: 8,    max: 45,') }, /outside the instrument range/],
      [{ 'agents.yaml': (t) => t.replace('model_family: defects-softmax', 'model_family: defects-softmax-v4') }, /agents\.yaml:\d+: agents\["agent\.defect_inspect"\]\.model_family: must be <analyte>-<family>/],
      [{ 'agents.yaml': (t) => t.replace('model_family: defects-softmax', 'model: defects-ir-v4') }, /agents\.yaml:\d+: agents\["agent\.defect_inspect"\]\.model: unknown key "model"/],
      [{ 'CHANGE.yaml': (t) => t.replace('role: qa_reviewer', 'role: operator') }, /may not approve a policy change/],
      [{ 'bundle.yaml': (t) => t.replace('    plc.LineSpeedFactor: L1', '    plc.LineSpeedFactor: L4') }, /bundle\.yaml:\d+: autonomy\.setpoints\["plc\.LineSpeedFactor"\]/],
    ];
    for (const [edits, msg] of cases) {
      const dir = bundleCopy(edits);
      expect(codeOf(() => loadPolicyBundle(dir, { site }))).toBe('LK_POLICY_BUNDLE');
      expect(messageOf(() => loadPolicyBundle(dir, { site }))).toMatch(msg);
    }
  });

  it('[INV-FAIL-CLOSED-AUDIT] without a bundle every write is denied (fail closed)', () => {
    const d = evaluate(request(), null, context());
    expect(d.outcome).toBe('deny');
    expect(d.reasons).toEqual(['BUNDLE_MISSING']);
    expect(d.bundleVersion).toBe('none');
  });
});

describe('policy bundle: change control', () => {
  const accepted = { version: bundle.version, changeRef: bundle.change.change_ref };
  const changed = (): string =>
    bundleCopy({ 'agents.yaml': (t) => t.replace('allow: [press.TurretSpeed, plc.LineSpeedFactor]', 'allow: [plc.LineSpeedFactor]') });

  it('accepts the first bundle and an unchanged one, reporting the change record for the audit trail', () => {
    const first = loadPolicyBundle(policyDir, { site, lastAccepted: null }).changeControl;
    expect(first).toMatchObject({ kind: 'initial', previousVersion: null, changeRef: 'CC-2026-0219', approver: { name: 'm.rossi', role: 'qa_reviewer' } });
    expect(loadPolicyBundle(policyDir, { site, lastAccepted: accepted }).changeControl.kind).toBe('unchanged');
  });

  it('[A11.10] refuses a changed bundle that still carries the last accepted change reference', () => {
    expect(codeOf(() => loadPolicyBundle(changed(), { site, lastAccepted: accepted }))).toBe('LK_POLICY_CHANGE_CONTROL');
  });

  it('accepts a changed bundle under a new change reference and approver, and says so', () => {
    const dir = changed();
    writeFileSync(join(dir, 'CHANGE.yaml'), 'change_ref: CC-2026-0177\napprover: { name: g.neri, role: qa_reviewer }\nreason: yield_takt no longer moves the turret\ndate: "2026-02-20"\n');
    const r = loadPolicyBundle(dir, { site, lastAccepted: accepted });
    expect(r.changeControl).toMatchObject({ kind: 'changed', previousVersion: bundle.version, changeRef: 'CC-2026-0177', approver: { name: 'g.neri' } });
    expect(r.bundle.version).not.toBe(bundle.version);
  });

  it('refuses a change record without an approver', () => {
    const dir = changed();
    writeFileSync(join(dir, 'CHANGE.yaml'), 'change_ref: CC-2026-0178\nreason: x\ndate: "2026-02-20"\n');
    expect(codeOf(() => loadPolicyBundle(dir, { site, lastAccepted: accepted }))).toBe('LK_POLICY_BUNDLE');
  });
});
