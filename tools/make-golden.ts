/**
 * Write the golden datasets of the model promotion gate to config/golden/
 * (see src/models/golden-data.ts for what each holds and from which seeds),
 * and the default defect classifier trained from the default seed to
 * config/models/ (src/models/seed.ts: training renders 700 frame sets of
 * 6 × 640×480, too slow for every fresh data directory).
 * Deterministic: running it again writes the same bytes, and
 * test/unit/models-golden.unit.spec.ts fails when the committed files differ
 * from what the generators give.
 *
 *   npx tsx tools/make-golden.ts [--out DIR]
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { buildGoldenDatasets, defaultGoldenDir, GOLDEN_FILES, goldenText } from '../src/models/golden-data.js';
import { MODEL_KINDS } from '../src/models/registry.js';
import { trainDefaultVision, trainedVisionFile } from '../src/models/seed.js';
import { GOLDEN_PLANT_SEED } from '../src/models/golden-data.js';

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
if (i < 0) {
  const file = trainedVisionFile(GOLDEN_PLANT_SEED);
  mkdirSync(dirname(file), { recursive: true });
  const trained = trainDefaultVision(GOLDEN_PLANT_SEED);
  writeFileSync(file, `${JSON.stringify(trained, null, 1)}\n`);
  process.stdout.write(`${file}: held-out precision.min ${trained.metrics['precision.min']}, recall.min ${trained.metrics['recall.min']}\n`);
}
