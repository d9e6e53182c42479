/**
 * Write the golden datasets of the model promotion gate to config/golden/
 * (see src/models/golden-data.ts for what each holds and from which seeds).
 * Deterministic: running it again writes the same bytes, and
 * test/unit/models-golden.unit.spec.ts fails when the committed files differ
 * from what the generators give.
 *
 *   npx tsx tools/make-golden.ts [--out DIR]
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { buildGoldenDatasets, defaultGoldenDir, GOLDEN_FILES, goldenText } from '../src/models/golden-data.js';
import { MODEL_KINDS } from '../src/models/registry.js';

const i = process.argv.indexOf('--out');
const out = i > 0 && process.argv[i + 1] ? resolve(process.argv[i + 1]!) : defaultGoldenDir();
mkdirSync(out, { recursive: true });
const sets = buildGoldenDatasets();
let total = 0;
for (const kind of MODEL_KINDS) {
  const text = goldenText(sets[kind]);
  writeFileSync(join(out, GOLDEN_FILES[kind]), text);
  total += Buffer.byteLength(text);
  process.stdout.write(`${GOLDEN_FILES[kind]}: ${Buffer.byteLength(text)} bytes\n`);
}
process.stdout.write(`total ${total} bytes in ${out}\n`);
