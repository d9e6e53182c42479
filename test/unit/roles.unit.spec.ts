/**
 * Equipment roles: the engine's vocabulary, mapped to a site's own tags. The map is pure (site.yaml in, role ↔
 * tag out); the configuration refuses a map that would make a role mean something else than it says (wrong
 * kind, wrong unit, a tag that does not exist, one tag for two roles, a name that would be ambiguous).
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { defaultConfigFile, loadConfig } from '../../src/config/load.js';
import { byRole, missingRoles, ROLES, roleMapOf, STEP_ROLES } from '../../src/domain/roles.js';
import { LkError } from '../../src/errors.js';
import { SETPOINT_IDS } from '../../src/twin/setpoints.js';

const dir = mkdtempSync(join(tmpdir(), 'lk-roles-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const original = readFileSync(defaultConfigFile(), 'utf8');

function variant(name: string, edit: (t: string) => string): string {
  const text = edit(original).replace(/^(\s+bundle: )\.\/policy$/m, `$1${join(dirname(defaultConfigFile()), 'policy')}`);
  expect(text).not.toBe(original);
  const f = join(dir, `${name}.yaml`);
  writeFileSync(f, text);
  return f;
}

/** The shipped site with its press renamed `kp200` and MainForce renamed `Hauptdruck`, plus a `roles:` block. */
function renamedPress(roles: string): (t: string) => string {
  return (t) =>
    t
      .replace(/^( {2}- id: )press$/m, '$1kp200')
      .replace(/^(\s+equipment: \[[^\]]*)\bpress\b/m, '$1kp200')
      .replace('{ name: MainForce, kind: setpoint', '{ name: Hauptdruck, kind: setpoint')
      .replace(/^policy:/m, `roles:\n${roles}\npolicy:`);
}

function refusal(file: string): string {
  try {
    loadConfig(file);
  } catch (e) {
    if (LkError.is(e)) return e.message;
    throw e;
  }
  throw new Error('expected the configuration to be refused');
}

describe('equipment roles', () => {
  it('the shipped site maps every role by the same tag id; the engine\u2019s steps need nothing more', () => {
    const roles = roleMapOf(loadConfig().config);
    expect(roles.entries.size).toBe(Object.keys(ROLES).length);
    for (const step of Object.keys(STEP_ROLES)) expect(missingRoles(step, roles)).toEqual([]);
    // every setpoint the twin varies is a role (the twin speaks roles)
    for (const id of SETPOINT_IDS) expect(Object.keys(ROLES)).toContain(id);
    expect(roles.tag('press.MainForce')).toBe('press.MainForce');
  });

  it('a site that names its press kp200 and the force Hauptdruck maps the role to it, both ways', () => {
    const f = variant('renamed', renamedPress(ROLE_BLOCK));
    const c = loadConfig(f).config;
    const roles = roleMapOf(c);
    expect(roles.tag('press.MainForce')).toBe('kp200.Hauptdruck');
    expect(roles.role('kp200.Hauptdruck')).toBe('press.MainForce');
    expect(roles.tag('press.TabletWeight')).toBe('kp200.TabletWeight');
    // the other press roles through the equipment role: kp200's tags of the same names
    expect(roles.tag('press.Hardness')).toBe('kp200.Hardness');
    // a site tag that plays no role passes through
    expect(roles.tag('kp200.Heartbeat')).toBe('kp200.Heartbeat');
    expect(missingRoles('compress.press', roles)).toEqual([]);
    // the design space, approved on the site's tags, seen by role
    expect(byRole({ 'kp200.Hauptdruck': 1, 'kp200.Heartbeat': 2 }, roles)).toEqual({ 'press.MainForce': 1 });
  });

  it('a press renamed without its roles leaves compression unmapped: the step is named as held', () => {
    const f = variant('unmapped', (t) => t.replace(/^( {2}- id: )press$/m, '$1kp200').replace(/^(\s+equipment: \[[^\]]*)\bpress\b/m, '$1kp200'));
    const roles = roleMapOf(loadConfig(f).config);
    expect(missingRoles('compress.press', roles)).toContain('press.MainForce');
    expect(STEP_ROLES['compress.press']!.missing).toBe('hold');
    expect(missingRoles('coat.spray', roles)).toEqual([]);
  });

  const refusals: [string, string, RegExp][] = [
    ['an unknown role', '  press.MainPower: kp200.Hauptdruck', /roles\.press\.MainPower: unknown role "press\.MainPower"/],
    ['an unknown equipment role', '  granulator: kp200', /roles\.granulator: unknown equipment role "granulator"/],
    ['an equipment role on no equipment', '  press: kp300', /roles\.press: "kp300" is not configured equipment/],
    ['a tag that does not exist', '  press.MainForce: kp200.Druck', /roles\.press\.MainForce: "kp200\.Druck" is not a configured tag/],
    ['a setpoint role on a measurement', '  press.MainForce: kp200.Hardness', /press\.MainForce is a setpoint: "kp200\.Hardness" is a measurement tag/],
    ['a role in another unit', '  press.MainForce: kp200.Hardness\n  press.TabletWeight: kp200.Hauptdruck', /press\.TabletWeight is in mg: "kp200\.Hauptdruck" is in kN/],
    ['one tag for two roles', '  press.MainForce: kp200.Hauptdruck\n  press.PreForce: kp200.Hauptdruck', /"kp200\.Hauptdruck" already plays press\.MainForce/],
  ];
  for (const [what, block, msg] of refusals) {
    it(`refuses ${what}, naming the file and the path`, () => {
      const f = variant(what.replace(/\W+/g, '-'), renamedPress(block));
      const m = refusal(f);
      expect(m).toContain(f);
      expect(m).toMatch(msg);
    });
  }

  it('refuses a role mapped away from a site tag of the same name (a read by that name would be ambiguous)', () => {
    const f = variant('ambiguous', (t) => t.replace(/^policy:/m, 'roles:\n  press.MainForce: press.PreForce\npolicy:'));
    expect(refusal(f)).toMatch(/the site also has a tag named press\.MainForce/);
  });
});

describe('docs/roles.md', () => {
  it('[P11.10(k)] lists every role with its kind, unit and meaning, and every step’s needs, as the code has them', () => {
    const doc = readFileSync(join(dirname(defaultConfigFile()), '..', 'docs', 'roles.md'), 'utf8');
    for (const [id, r] of Object.entries(ROLES)) expect(doc).toContain(`| \`${id}\` | ${r.kind} | \`${r.unit}\` | ${r.meaning} |`);
    const listed = [...doc.matchAll(/^\| `([a-z]+\.[A-Za-z0-9]+)` \| (setpoint|measurement) \|/gm)].map((m) => m[1]);
    expect(listed.sort()).toEqual(Object.keys(ROLES).sort());
    for (const [step, r] of Object.entries(STEP_ROLES)) expect(doc).toContain(`| \`${step}\` | ${r.roles.map((x) => `\`${x}\``).join(', ')} | ${r.missing === 'skip' ? 'SKIPPED' : 'HELD'} — ${r.without} |`);
  });
});

const ROLE_BLOCK = '  press: kp200\n  press.MainForce: kp200.Hauptdruck';
