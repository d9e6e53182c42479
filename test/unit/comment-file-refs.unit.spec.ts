/**
 * A comment in src/ that names a `.ts` file names one that exists: a bare name (`load.ts`) is a file beside the
 * commenting file, a path (`src/config/load.ts`, `connectors/mes/archive.ts`, `../process.ts`) is one from the
 * repository root or from the commenting file's folder. A comment about a file that was renamed or never written
 * sends a reader looking for nothing; this keeps such comments from going stale unnoticed.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** The `.ts` files named in the comments of `text` (a file at `file`) that `exists` does not find, with their lines. */
function missingMentions(text: string, file: string, exists: (path: string) => boolean): { line: number; name: string }[] {
  const out: { line: number; name: string }[] = [];
  const lineOf = (pos: number): number => text.slice(0, pos).split('\n').length;
  const scanner = ts.createScanner(ts.ScriptTarget.Latest, false, ts.LanguageVariant.Standard, text);
  for (let k = scanner.scan(); k !== ts.SyntaxKind.EndOfFileToken; k = scanner.scan()) {
    if (k !== ts.SyntaxKind.SingleLineCommentTrivia && k !== ts.SyntaxKind.MultiLineCommentTrivia) continue;
    const comment = scanner.getTokenText();
    for (const m of comment.matchAll(/[\w./-]*\b[\w-]+\.ts\b/g)) {
      const name = m[0].replace(/^\.\//, '');
      const found = name.includes('/') ? exists(join(ROOT, name)) || exists(join(dirname(file), name)) : exists(join(dirname(file), name));
      if (!found) out.push({ line: lineOf(scanner.getTokenStart() + m.index), name });
    }
  }
  return out;
}

function tsFiles(dir: string, out: string[] = []): string[] {
  for (const n of readdirSync(dir)) {
    const p = join(dir, n);
    if (statSync(p).isDirectory()) tsFiles(p, out);
    else if (n.endsWith('.ts')) out.push(p);
  }
  return out;
}

describe('file names in comments of src/', () => {
  it('every .ts file a comment names exists (bare: beside the file; a path: from the root or the file\'s folder)', () => {
    const files = tsFiles(join(ROOT, 'src'));
    expect(files.length).toBeGreaterThan(150);
    const stale = files.flatMap((f) => missingMentions(readFileSync(f, 'utf8'), f, existsSync).map((x) => `${relative(ROOT, f)}:${x.line}: ${x.name}`));
    expect(stale).toEqual([]);
  });

  it('finds a stale name in a block or line comment, and only in comments', () => {
    const file = join(ROOT, 'src/policy/index.ts');
    const sample = [
      '/**',
      ' * Pure except `loadPolicyBundle` (load.ts), beside compile.ts; the folder is read by src/config/policy-bundle.ts.',
      ' */',
      "import { x } from './gone.js'; // see src/nowhere/gone.ts",
      "const s = 'not a comment: missing.ts';",
      '// ../twin/process.ts and ../twin/absent.ts',
    ].join('\n');
    expect(missingMentions(sample, file, existsSync)).toEqual([
      { line: 2, name: 'load.ts' },
      { line: 4, name: 'src/nowhere/gone.ts' },
      { line: 6, name: '../twin/absent.ts' },
    ]);
  });
});
