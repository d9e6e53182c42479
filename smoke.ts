import { cpSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { defaultConfigFile } from './src/config/load.js';
import { startDaemon } from './src/daemon.js';
import { createLogger } from './src/log.js';

const dir = mkdtempSync(join(tmpdir(), 'lk-smoke-'));
cpSync(join(defaultConfigFile(), '..', 'policy'), join(dir, 'policy'), { recursive: true });
cpSync(join(defaultConfigFile(), '..', 'batches'), join(dir, 'batches'), { recursive: true });
const rec = JSON.parse(readFileSync(join(dir, 'batches/acme-pharma/B-1042.json'), 'utf8'));
rec.batch_size.tablets = 30000;
writeFileSync(join(dir, 'batches/acme-pharma/B-1042.json'), JSON.stringify(rec));
writeFileSync(join(dir, 'site.yaml'), readFileSync(defaultConfigFile(), 'utf8').replace('time_scale: 60', 'time_scale: 300'));
const t0 = Date.now();
// the daemon validates the demo models through the golden gate at its first start (embedded default)
console.log('seeded', Date.now() - t0);
const d = await startDaemon({ configFile: join(dir, 'site.yaml'), dataDir: join(dir, 'data'), logger: createLogger('warn'), pollMs: 100 });
console.log('ready', Date.now() - t0);
const run = d.engine.start({ tenant: 'acme-pharma', request: 'run batch B-1042 on line-3, keep weight and hardness on target, capping risk under 1.5%, weight RSD under 1.4%', by: 'o.operator' });
console.log(run.id, run.plan.text);
d.engine.onToolCall((row) => console.log(new Date(row.at).toISOString().slice(11, 19), row.kind, row.tool, row.kind === 'call' ? JSON.stringify(row.args).slice(0, 150) : row.summary));
const iv = setInterval(() => d.engine.presence('o.operator'), 10000);
for (;;) {
  await new Promise((r) => setTimeout(r, 1000));
  const v = d.engine.get('acme-pharma', run.id);
  if (process.env.CORRUPT && v.steps.find((s) => s.name === 'compress.press')?.status === 'RUNNING' && !(globalThis as any).done) {
    (globalThis as any).done = true;
    const { appendFileSync } = await import('node:fs');
    appendFileSync(join(dir, 'data/models/acme-pharma/process-twin-v1/artefact.json'), ' ');
    console.log('CORRUPTED twin artefact');
  }
  if (v.status === 'APPROVAL') {
    const a = d.engine.pendingApprovals('acme-pharma')[0]!;
    d.engine.decide('acme-pharma', a.id, { signer: { user: 'm.rossi', name: 'Maria Rossi', role: 'qa_reviewer' }, decision: 'approve', meaning: 'QA release of batch B-1042' });
  }
  if (['SUCCEEDED', 'FAILED', 'REJECTED', 'HELD', 'INTERRUPTED'].includes(v.status)) {
    console.log(v.status, v.reason); for (const s of v.steps) console.log(s.seq, s.name, s.status, s.duration, s.detail.slice(0, 400)); console.log(JSON.stringify(v.approvalGate), JSON.stringify(v.release));
    break;
  }
}
clearInterval(iv);
console.log('total', Date.now() - t0);
for (const eq of ['press', 'coater', 'blender']) console.log(eq, JSON.stringify(d.simulator!.plant.supervisor(eq)));
await d.stop('smoke done');
