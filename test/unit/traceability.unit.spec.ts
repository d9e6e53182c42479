/**
 * Requirements and traceability (validation/requirements.yaml, tools/requirements.ts): the requirements
 * file holds to its strict schema, every requirement that is not procedural is verified by a tagged test,
 * every tag names a requirement, and the generated matrix is what the generator writes now — so it cannot
 * go stale. The scanner and the checks are also run on samples made to break them, so they can fail.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { ERRORS } from '../../src/errors.js';
import { buildMatrix, loadRequirements, MATRIX_JSON, MATRIX_MD, renderJson, renderMarkdown, RequirementsFile, scanTestFile, scanTests, tagsOf } from '../../tools/requirements.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const reqs = loadRequirements(ROOT);
const tests = scanTests(ROOT);
const matrix = buildMatrix(reqs, tests);
const scratch = mkdtempSync(join(tmpdir(), 'lk-trace-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

const base = { text: 'a requirement', source: { document: 'doc', section: '§1' } };

describe('[A11.4] requirements and traceability', () => {
  it('requirements.yaml parses through its strict schema, with unique ids, and every LK_* code it names is in the registry', () => {
    expect(reqs.requirements.length).toBeGreaterThanOrEqual(12);
    for (const id of ['R1', 'R12', 'P11.10(e)', 'P11.300', 'A11.9', 'INV-WRITE-PATH']) expect(reqs.requirements.map((r) => r.id)).toContain(id);
    const codes = reqs.requirements.flatMap((r) => r.codes ?? []);
    expect(codes.length).toBeGreaterThan(0);
    expect(codes.filter((c) => !(c in ERRORS))).toEqual([]);
  });

  it('the schema refuses a duplicate id, an unknown key, an id of no known shape, and a partial or procedural requirement without what the site does and why', () => {
    const ok = { ...base, id: 'R1', status: 'implemented', implementation: 'does it' };
    expect(RequirementsFile.safeParse({ version: 1, requirements: [ok] }).success).toBe(true);
    const refused = (requirements: unknown[]): boolean => !RequirementsFile.safeParse({ version: 1, requirements }).success;
    expect(refused([ok, ok])).toBe(true);
    expect(refused([{ ...ok, owner: 'x' }])).toBe(true);
    expect(refused([{ ...ok, id: 'R13' }])).toBe(true);
    expect(refused([{ ...ok, id: 'P11.10(l)' }])).toBe(true);
    expect(refused([{ ...ok, status: 'partial' }])).toBe(true);
    expect(refused([{ ...ok, status: 'partial', procedure: 'site does' }])).toBe(true);
    expect(refused([{ ...ok, status: 'partial', procedure: 'site does', reason: 'why' }])).toBe(false);
    expect(refused([{ ...base, id: 'P11.10(i)', status: 'procedural', reason: 'why' }])).toBe(true);
    expect(refused([{ ...base, id: 'P11.10(i)', status: 'implemented' }])).toBe(true);
    expect(refused([{ ...ok, codes: ['not a code'] }])).toBe(true);
  });

  it('[P11.10(a)] every requirement that is not procedural is verified by at least one tagged test', () => {
    expect(matrix.figures.untraced).toEqual([]);
    expect(matrix.requirements.filter((r) => r.status !== 'procedural' && r.tests.length === 0).map((r) => r.id)).toEqual([]);
  });

  it('every tag in a test title names a requirement of requirements.yaml', () => {
    expect(matrix.unknownTags).toEqual([]);
    expect(matrix.figures.taggedTests).toBeGreaterThan(100);
  });

  it('[P11.10(k)] docs/traceability.md and validation/traceability.json are what the generator writes now (npm run traceability)', () => {
    expect(readFileSync(join(ROOT, MATRIX_JSON), 'utf8')).toBe(renderJson(matrix));
    expect(readFileSync(join(ROOT, MATRIX_MD), 'utf8')).toBe(renderMarkdown(matrix));
  });
});

describe('the checks can fail', () => {
  it('the scanner reads it/test/describe titles, through .each, .runIf and .skip, lets describe tags apply inside, and ignores brackets of another shape', () => {
    const file = join(scratch, 'sample.unit.spec.ts');
    writeFileSync(file, [
      "describe('[R2] outer', () => {",
      "  it('[R3] [P11.50] signs', () => {});",
      "  it.each([1])('[R4] case %i', () => {});",
      "  describe('inner', () => { test.runIf(true)(`[INV-WRITE-PATH] ${'x'} deep`, () => {}); });",
      "});",
      "it.skip('converts 140 [degF]; [needs a merge]; x.test(y) is no test', () => { /re/.test('it(\\'[R5] no\\')'); });",
    ].join('\n'));
    const got = scanTestFile(scratch, file);
    expect(got.map((t) => [t.title, t.tags])).toEqual([
      ['[R2] outer > [R3] [P11.50] signs', ['R2', 'R3', 'P11.50']],
      ['[R2] outer > [R4] case %i', ['R2', 'R4']],
      ["[R2] outer > inner > [INV-WRITE-PATH] ${'x'} deep", ['R2', 'INV-WRITE-PATH']],
      ['converts 140 [degF]; [needs a merge]; x.test(y) is no test', []],
    ]);
    expect(tagsOf('[R99] [ERR-NOPE] [A11.4]')).toEqual(['R99', 'ERR-NOPE', 'A11.4']);
  });

  it('a requirement without a test is untraced unless procedural, and a tag naming no requirement is reported with its place', () => {
    const file = RequirementsFile.parse({
      version: 1,
      requirements: [
        { ...base, id: 'R1', status: 'implemented', implementation: 'x' },
        { ...base, id: 'R2', status: 'partial', implementation: 'x', procedure: 'y', reason: 'z' },
        { ...base, id: 'P11.10(i)', status: 'procedural', procedure: 'y', reason: 'z' },
      ],
    });
    const m = buildMatrix(file, [
      { file: 'test/unit/a.unit.spec.ts', line: 3, title: '[R1] ok', tags: ['R1'] },
      { file: 'test/unit/a.unit.spec.ts', line: 9, title: '[R7] stray', tags: ['R7'] },
    ]);
    expect(m.figures.untraced).toEqual(['R2']);
    expect(m.unknownTags).toEqual([{ file: 'test/unit/a.unit.spec.ts', line: 9, title: '[R7] stray', tag: 'R7' }]);
    expect(m.figures).toMatchObject({ requirements: 3, traced: 1, procedural: 1, taggedTests: 2, tags: 2 });
    expect(renderMarkdown(m)).toContain('| R2 | a requirement | doc, §1 | partial |');
  });
});
