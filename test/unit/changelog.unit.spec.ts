/**
 * CHANGELOG.md is kept by habit, and this holds the habit: the version in package.json (or Unreleased) has a
 * section, every entry of every version states its GxP impact (what a site re-validates after the upgrade),
 * and every requirement id it names exists in validation/requirements.yaml.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadRequirements, tagsOf } from '../../tools/requirements.js';

const root = join(import.meta.dirname, '..', '..');
const text = readFileSync(join(root, 'CHANGELOG.md'), 'utf8');
const version = (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version: string }).version;

/** The sections `## [x]`, each with its entries: a top-level `- ` bullet and its continuation lines. */
function sections(md: string): { heading: string; preamble: string; entries: string[] }[] {
  const out: { heading: string; preamble: string; entries: string[] }[] = [];
  for (const line of md.split('\n')) {
    const h = /^## \[([^\]]+)\]/.exec(line);
    if (h) {
      out.push({ heading: h[1]!, preamble: '', entries: [] });
      continue;
    }
    const s = out.at(-1);
    if (!s) continue;
    if (line.startsWith('- ')) s.entries.push(line);
    else if (/^\s+\S/.test(line) && s.entries.length > 0) s.entries[s.entries.length - 1] += ` ${line.trim()}`;
    else if (!line.startsWith('#') && s.entries.length === 0) s.preamble += ` ${line}`;
  }
  return out;
}

describe('[A11.10] CHANGELOG.md: the GxP impact of every change, per version', () => {
  const s = sections(text);

  it('has a section for the version in package.json, and Unreleased first when it exists', () => {
    expect(s.map((x) => x.heading)).toContain(version);
    const unreleased = s.findIndex((x) => x.heading === 'Unreleased');
    expect(unreleased === -1 || unreleased === 0).toBe(true);
    for (const x of s.filter((y) => y.heading !== 'Unreleased')) expect(x.heading, 'a version is semver').toMatch(/^\d+\.\d+\.\d+$/);
  });

  it('every entry (or a version without entries, its text) states its GxP impact', () => {
    for (const x of s) {
      if (x.entries.length === 0) expect(x.preamble, `## [${x.heading}]`).toMatch(/GxP impact: \S/);
      for (const e of x.entries) expect(e, `## [${x.heading}]: ${e.slice(0, 80)}`).toMatch(/GxP impact: \S/);
    }
  });

  it('every requirement id it names is a requirement', () => {
    const ids = new Set(loadRequirements(root).requirements.map((r) => r.id));
    const named = tagsOf(text);
    expect(named.length).toBeGreaterThan(0);
    for (const id of named) expect(ids.has(id), id).toBe(true);
  });

  it('finds an entry that states no impact (the check itself can fail)', () => {
    const bad = sections('## [Unreleased]\n### Added\n- a change\n  that says nothing of its impact\n');
    expect(bad[0]!.entries).toEqual(['- a change that says nothing of its impact']);
    expect(bad[0]!.entries[0]).not.toMatch(/GxP impact: \S/);
  });
});
