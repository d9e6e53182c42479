/**
 * Requirements and traceability: the requirements linekeeper answers for (validation/requirements.yaml),
 * the tests that name them, and the matrix built from both (docs/traceability.md, validation/traceability.json).
 *
 * A test names a requirement with a tag in its title: `[ID]`, e.g. `it('[R3] a batch release is needs_qa …')`.
 * Tags on a `describe` apply to every test inside it. Titles are read statically with the TypeScript parser
 * (no test is run): every call of `describe`/`it`/`test`, also through `.each(…)`, `.runIf(…)`, `.skip` and the
 * like, whose first argument is a string or template literal. A bracket counts as a tag when its text has
 * the shape of a requirement id (TAG_SHAPE); such a tag must name a requirement of the file.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import ts from 'typescript';
import { parse } from 'yaml';
import { z } from 'zod';

/** Requirement ids: spec rules, spec error-table rows and limits, Part 11 clauses, Annex 11 sections, invariants. */
export const ID_PATTERN = /^(R(?:[1-9]|1[0-2])|ERR-[A-Z0-9]+(?:-[A-Z0-9]+)*|LIM-[A-Z0-9]+(?:-[A-Z0-9]+)*|P11\.(?:10\([a-k]\)|50|70|100|200|300)|A11\.[1-9][0-9]?|INV-[A-Z0-9]+(?:-[A-Z0-9]+)*)$/;

/** What in a title is read as a tag (then checked against the requirements): `[R…]`, `[P11.…]`, `[A11.…]`, `[ERR-…]`, `[LIM-…]`, `[INV-…]`. */
export const TAG_SHAPE = /\[((?:R\d+|P11\.[^\]\s]*|A11\.[^\]\s]*|(?:ERR|LIM|INV)-[^\]\s]*))\]/g;

const text = z.string().trim().min(1);

export const Source = z.strictObject({
  document: text,
  section: text,
});

export const Requirement = z
  .strictObject({
    id: z.string().regex(ID_PATTERN, 'an id: R1–R12, ERR-…, LIM-…, P11.10(a)–(k)/50/70/100/200/300, A11.<section>, INV-…'),
    text,
    source: Source,
    status: z.enum(['implemented', 'partial', 'procedural']),
    /** The `LK_*` codes (src/errors.ts) by which linekeeper refuses or reports the case, where it has one. */
    codes: z.array(z.string().regex(/^LK_[A-Z0-9_]+$/)).min(1).optional(),
    /** What linekeeper does (where it does anything). */
    implementation: text.optional(),
    /** What the site must do procedurally (partial and procedural). */
    procedure: text.optional(),
    /** Why linekeeper does not (fully) do it (partial and procedural). */
    reason: text.optional(),
  })
  .superRefine((r, ctx) => {
    if (r.status !== 'procedural' && !r.implementation) ctx.addIssue({ code: 'custom', path: ['implementation'], message: `${r.id}: an ${r.status} requirement says what linekeeper does` });
    if (r.status !== 'implemented') {
      if (!r.procedure) ctx.addIssue({ code: 'custom', path: ['procedure'], message: `${r.id}: a ${r.status} requirement says what the site must do` });
      if (!r.reason) ctx.addIssue({ code: 'custom', path: ['reason'], message: `${r.id}: a ${r.status} requirement says why` });
    }
  });
export type Requirement = z.infer<typeof Requirement>;

export const RequirementsFile = z
  .strictObject({
    version: z.literal(1),
    requirements: z.array(Requirement).min(1),
  })
  .superRefine((f, ctx) => {
    const seen = new Set<string>();
    f.requirements.forEach((r, i) => {
      if (seen.has(r.id)) ctx.addIssue({ code: 'custom', path: ['requirements', i, 'id'], message: `duplicate requirement id ${r.id}` });
      seen.add(r.id);
    });
  });
export type RequirementsFile = z.infer<typeof RequirementsFile>;

export const REQUIREMENTS_FILE = 'validation/requirements.yaml';
export const MATRIX_MD = 'docs/traceability.md';
export const MATRIX_JSON = 'validation/traceability.json';
export const TEST_DIRS = ['test/unit', 'test/integration', 'test/e2e'];

/** Parse and validate requirements.yaml; throws a ZodError naming the field on anything wrong. */
export function loadRequirements(root: string): RequirementsFile {
  return RequirementsFile.parse(parse(readFileSync(join(root, REQUIREMENTS_FILE), 'utf8')));
}

/** One test title as written, with the tags of its own title and of the describes around it. */
export interface TaggedTest {
  file: string;
  line: number;
  /** describe titles and the test title joined by ' > ', as vitest reports them. */
  title: string;
  tags: string[];
}

/** Every tag-shaped bracket of a title (in order, duplicates kept out). */
export function tagsOf(title: string): string[] {
  return [...new Set([...title.matchAll(TAG_SHAPE)].map((m) => m[1]!))];
}

const CALLEES = new Set(['describe', 'it', 'test']);

/** `it`, `it.skip`, `it.each(x)`, `test.runIf(c)` … → the root name and whether it is a suite. */
function calleeRoot(e: ts.Expression): string | undefined {
  if (ts.isIdentifier(e)) return CALLEES.has(e.text) ? e.text : undefined;
  if (ts.isPropertyAccessExpression(e)) return calleeRoot(e.expression);
  if (ts.isCallExpression(e)) return calleeRoot(e.expression);
  return undefined;
}

function literalText(n: ts.Node | undefined, sf: ts.SourceFile): string | undefined {
  if (!n) return undefined;
  if (ts.isStringLiteral(n) || ts.isNoSubstitutionTemplateLiteral(n)) return n.text;
  if (ts.isTemplateExpression(n)) return n.getText(sf).slice(1, -1);
  return undefined;
}

/** The titled tests (it/test) of one file, with describe tags inherited. */
export function scanTestFile(root: string, path: string): TaggedTest[] {
  const sf = ts.createSourceFile(path, readFileSync(path, 'utf8'), ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
  const file = relative(root, path).split(sep).join('/');
  const out: TaggedTest[] = [];
  const visit = (n: ts.Node, suites: string[]): void => {
    if (ts.isCallExpression(n)) {
      const root = calleeRoot(n.expression);
      const title = root ? literalText(n.arguments[0], sf) : undefined;
      if (root && title !== undefined) {
        const chain = [...suites, title];
        if (root === 'describe') {
          for (const a of n.arguments.slice(1)) visit(a, chain);
          return;
        }
        const full = chain.join(' > ');
        out.push({ file, line: sf.getLineAndCharacterOfPosition(n.getStart(sf)).line + 1, title: full, tags: tagsOf(full) });
        return;
      }
    }
    ts.forEachChild(n, (c) => visit(c, suites));
  };
  visit(sf, []);
  return out;
}

function specFiles(dir: string): string[] {
  let entries: string[];
  try {
    entries = readdirSync(dir, { recursive: true, encoding: 'utf8' });
  } catch {
    return [];
  }
  return entries.filter((f) => /\.(unit|int|e2e)\.spec\.ts$/.test(f)).map((f) => join(dir, f)).sort();
}

/** Every titled test of test/unit, test/integration and test/e2e. */
export function scanTests(root: string): TaggedTest[] {
  return TEST_DIRS.flatMap((d) => specFiles(join(root, d))).flatMap((f) => scanTestFile(root, f));
}

export interface MatrixRow {
  id: string;
  text: string;
  source: string;
  status: Requirement['status'];
  codes: string[];
  implementation: string | null;
  procedure: string | null;
  reason: string | null;
  tests: { file: string; title: string }[];
}

export interface Matrix {
  figures: { requirements: number; implemented: number; partial: number; procedural: number; traced: number; untraced: string[]; taggedTests: number; tags: number };
  unknownTags: { file: string; line: number; title: string; tag: string }[];
  requirements: MatrixRow[];
}

export function buildMatrix(reqs: RequirementsFile, tests: readonly TaggedTest[]): Matrix {
  const known = new Set(reqs.requirements.map((r) => r.id));
  const byId = new Map<string, { file: string; title: string }[]>();
  const unknownTags: Matrix['unknownTags'] = [];
  for (const t of tests)
    for (const tag of t.tags) {
      if (!known.has(tag)) unknownTags.push({ file: t.file, line: t.line, title: t.title, tag });
      else byId.set(tag, [...(byId.get(tag) ?? []), { file: t.file, title: t.title }]);
    }
  const rows: MatrixRow[] = reqs.requirements.map((r) => ({
    id: r.id,
    text: r.text,
    source: `${r.source.document}, ${r.source.section}`,
    status: r.status,
    codes: r.codes ?? [],
    implementation: r.implementation ?? null,
    procedure: r.procedure ?? null,
    reason: r.reason ?? null,
    tests: (byId.get(r.id) ?? []).sort((a, b) => (a.file === b.file ? (a.title < b.title ? -1 : a.title > b.title ? 1 : 0) : a.file < b.file ? -1 : 1)),
  }));
  const count = (s: Requirement['status']): number => rows.filter((r) => r.status === s).length;
  return {
    figures: {
      requirements: rows.length,
      implemented: count('implemented'),
      partial: count('partial'),
      procedural: count('procedural'),
      traced: rows.filter((r) => r.tests.length > 0).length,
      untraced: rows.filter((r) => r.status !== 'procedural' && r.tests.length === 0).map((r) => r.id),
      taggedTests: tests.filter((t) => t.tags.length > 0).length,
      tags: tests.reduce((n, t) => n + t.tags.length, 0),
    },
    unknownTags,
    requirements: rows,
  };
}

const cell = (s: string): string => s.replace(/</g, '&lt;').replace(/\|/g, '\\|').replace(/\s*\n\s*/g, ' ');

export function renderJson(m: Matrix): string {
  return `${JSON.stringify(m, null, 2)}\n`;
}

export function renderMarkdown(m: Matrix): string {
  const f = m.figures;
  const out: string[] = [
    '# Traceability matrix',
    '',
    '<!-- Generated by `npm run traceability` from validation/requirements.yaml and the test titles; do not edit by hand. -->',
    '',
    'Every requirement linekeeper answers for — the service specification\'s rules R1–R12, its error table and limits,',
    'the 21 CFR Part 11 clauses, the EU GMP Annex 11 sections linekeeper addresses and linekeeper\'s own safety',
    'invariants — with its source, its status, what linekeeper does, what the site must do where linekeeper does',
    'not (fully) do it, and the tests that verify it (a test names a requirement with `[ID]` in its title; see',
    'README, "Validation"). The same matrix is in validation/traceability.json.',
    '',
    `Requirements: ${f.requirements} (implemented ${f.implemented}, partial ${f.partial}, procedural ${f.procedural}); traced to tests: ${f.traced}; tagged tests: ${f.taggedTests} (${f.tags} tags).`,
    '',
    '| id | requirement | source | status | linekeeper / site | tests |',
    '|---|---|---|---|---|---|',
  ];
  for (const r of m.requirements) {
    const what = [r.codes.length ? `codes: ${r.codes.map((c) => `\`${c}\``).join(', ')}` : '', r.implementation ? `linekeeper: ${r.implementation}` : '', r.procedure ? `site: ${r.procedure}` : '', r.reason ? `why: ${r.reason}` : ''].filter(Boolean).join('<br>');
    const tests = r.tests.length ? r.tests.map((t) => `\`${t.file}\`: ${cell(t.title)}`).join('<br>') : r.status === 'procedural' ? '— (procedural)' : '**none**';
    out.push(`| ${r.id} | ${cell(r.text)} | ${cell(r.source)} | ${r.status} | ${cell(what)} | ${tests} |`);
  }
  return `${out.join('\n')}\n`;
}
