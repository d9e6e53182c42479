/**
 * The retention period of the site configuration (`retention: { years }`): its default, its strict validation with
 * errors that name the file, line and path, and the calendar arithmetic that says when a record may be dropped.
 * What refuses a drop inside the period is tested on a real store in test/integration/archive.int.spec.ts.
 */
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defaultConfigFile, loadConfig } from '../../src/config/load.js';
import { LkError } from '../../src/errors.js';
import { retentionEnds } from '../../src/ops/retention.js';
import { configRefusal } from '../helpers/config.js';

const original = readFileSync(defaultConfigFile(), 'utf8');
let dir: string;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'lk-retention-'));
  cpSync(join(defaultConfigFile(), '..', 'policy'), join(dir, 'policy'), { recursive: true });
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function withRetention(name: string, yaml: string): string {
  const f = join(dir, `${name}.yaml`);
  writeFileSync(f, `${original.trimEnd()}\n${yaml}\n`);
  return f;
}

describe('[P11.10(c)] the retention period in the site configuration', () => {
  it('is 10 years when the configuration says nothing, and what the file says otherwise', () => {
    expect(original).not.toMatch(/^retention:/m);
    expect(loadConfig().config.retention).toEqual({ years: 10 });
    expect(loadConfig(withRetention('fifteen', 'retention: { years: 15 }')).config.retention).toEqual({ years: 15 });
  });

  it('refuses less than a year, a fraction, a string and an unknown key, naming the file, the line and the path', () => {
    for (const [name, yaml, path, why] of [
      ['zero', 'retention: { years: 0 }', 'retention.years', /at least 1/],
      ['fraction', 'retention: { years: 2.5 }', 'retention.years', /integer|int/i],
      ['text', 'retention: { years: "ten" }', 'retention.years', /number/i],
      ['unknown', 'retention: { years: 10, months: 6 }', 'retention', /months/],
    ] as const) {
      const err = configRefusal(withRetention(name, yaml));
      expect(err.code, name).toBe('LK_CONFIG_INVALID');
      expect(err.message, name).toMatch(new RegExp(`${name}\\.yaml:\\d+: ${path.replace('.', '\\.')}`));
      expect(err.message, name).toMatch(why);
    }
  });

  it('ends whole calendar years after the end of a run, in UTC (29 February ends on 1 March)', () => {
    expect(new Date(retentionEnds(Date.UTC(2016, 5, 30, 23, 59, 59, 999), 10)).toISOString()).toBe('2026-06-30T23:59:59.999Z');
    expect(new Date(retentionEnds(Date.UTC(2024, 1, 29, 12), 1)).toISOString()).toBe('2025-03-01T12:00:00.000Z');
    expect(retentionEnds(Date.UTC(2020, 0, 1), 10)).toBeGreaterThan(Date.UTC(2029, 11, 31, 23, 59, 59, 999));
  });
});
