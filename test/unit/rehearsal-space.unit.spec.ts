/**
 * The design space the twin rehearses a batch in, on a site that names its line its own way and may lack units of
 * the reference line: approved limits come by role from the site's tags; a role the site does not map (no coater)
 * is rehearsed on the twin's built-in range; a mapped role without approved limits is refused.
 */
import { describe, expect, it } from 'vitest';
import { roleMapOf } from '../../src/domain/roles.js';
import { rehearsalSpace } from '../../src/engine/run/steps/plan-steps.js';
import { LkError } from '../../src/errors.js';
import { DEFAULT_DESIGN_SPACE, SETPOINT_IDS } from '../../src/twin/setpoints.js';

type Eq = { id: string; tags: { name: string }[] };
const tagNames = (eq: string): string[] => SETPOINT_IDS.filter((id) => id.startsWith(`${eq}.`)).map((id) => id.split('.')[1]!);
const UNITS = ['blender', 'fluidbed', 'press', 'coater'];
/** A site whose units are renamed `<eq>1` and whose MainForce is `Hauptdruck`; `without` units are not there. */
function site(without: readonly string[] = []): { equipment: Eq[]; roles: Record<string, string> } {
  const kept = UNITS.filter((u) => !without.includes(u));
  const equipment = kept.map((u) => ({ id: `${u}1`, tags: tagNames(u).map((n) => ({ name: n === 'MainForce' ? 'Hauptdruck' : n })) }));
  const roles: Record<string, string> = Object.fromEntries(kept.map((u) => [u, `${u}1`]));
  if (kept.includes('press')) roles['press.MainForce'] = 'press1.Hauptdruck';
  return { equipment, roles };
}
/** The role map of such a site (only its equipment and roles matter to it). */
const rolesOf = (s: { equipment: Eq[]; roles: Record<string, string> }): ReturnType<typeof roleMapOf> => roleMapOf(s as unknown as Parameters<typeof roleMapOf>[0]);
/** Approved limits on the site's tags: each the built-in range narrowed by 10 % of its width on both sides. */
function approved(s: { equipment: Eq[]; roles: Record<string, string> }): Record<string, { min: number; max: number; unit: string }> {
  const roles = rolesOf(s);
  const out: Record<string, { min: number; max: number; unit: string }> = {};
  for (const id of SETPOINT_IDS) {
    if (!roles.has(id)) continue;
    const d = DEFAULT_DESIGN_SPACE[id];
    const w = (d.max - d.min) / 10;
    out[roles.tag(id)] = { min: d.min + w, max: d.max - w, unit: d.unit };
  }
  return out;
}

describe('rehearsalSpace', () => {
  it('takes every limit from the site\'s approved tags, by role', () => {
    const s = site();
    const space = rehearsalSpace(approved(s), rolesOf(s), 'a × b');
    expect(Object.keys(space).sort()).toEqual([...SETPOINT_IDS].sort());
    const d = DEFAULT_DESIGN_SPACE['press.MainForce'];
    expect(space['press.MainForce']).toEqual({ min: d.min + (d.max - d.min) / 10, max: d.max - (d.max - d.min) / 10, unit: d.unit });
  });

  it('rehearses a unit the line does not have on the twin\'s built-in range (an uncoated line: no coater)', () => {
    const s = site(['coater']);
    const space = rehearsalSpace(approved(s), rolesOf(s), 'a × b');
    for (const id of SETPOINT_IDS.filter((x) => x.startsWith('coater.'))) expect(space[id]).toEqual(DEFAULT_DESIGN_SPACE[id]);
    expect(space['fluidbed.InletAirTemp'].min).toBeGreaterThan(DEFAULT_DESIGN_SPACE['fluidbed.InletAirTemp'].min);
  });

  it('refuses a unit the line has whose limits the bundle does not approve (LK_POLICY_BUNDLE)', () => {
    const s = site();
    const a = approved(s);
    delete a['press1.Hauptdruck'];
    let err: unknown;
    try {
      rehearsalSpace(a, rolesOf(s), 'a × b');
    } catch (e) {
      err = e;
    }
    expect(LkError.is(err) && [err.code, err.detail?.['missing']]).toEqual(['LK_POLICY_BUNDLE', ['press.MainForce']]);
  });
});
