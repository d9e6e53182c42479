/**
 * `npm run traceability`: writes docs/traceability.md and validation/traceability.json from
 * validation/requirements.yaml and the [ID] tags of the test titles (tools/requirements.ts), and prints the
 * figures. Exits 1 — writing nothing — when a tag names no requirement or an implemented or partial
 * requirement has no test; test/unit/traceability.unit.spec.ts holds the suite to the same rules.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildMatrix, loadRequirements, MATRIX_JSON, MATRIX_MD, renderJson, renderMarkdown, scanTests } from './requirements.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const m = buildMatrix(loadRequirements(ROOT), scanTests(ROOT));
for (const u of m.unknownTags) console.error(`${u.file}:${u.line}: [${u.tag}] names no requirement of validation/requirements.yaml`);
for (const id of m.figures.untraced) console.error(`${id}: no test names it (tag a test that verifies it, or mark it procedural with the reason)`);
if (m.unknownTags.length > 0 || m.figures.untraced.length > 0) process.exit(1);
writeFileSync(join(ROOT, MATRIX_MD), renderMarkdown(m));
writeFileSync(join(ROOT, MATRIX_JSON), renderJson(m));
const f = m.figures;
console.log(`${f.requirements} requirements (implemented ${f.implemented}, partial ${f.partial}, procedural ${f.procedural}); traced to tests ${f.traced}; tagged tests ${f.taggedTests} (${f.tags} tags)`);
console.log(`wrote ${MATRIX_MD} and ${MATRIX_JSON}`);
