/**
 * linekeeper in a child process for the fault tests of rule R8: the daemon supervises an EXTERNAL plant
 * simulator (the test process runs it), so a SIGKILL of this process takes the supervisor away and leaves the
 * PLCs running, as on a real line.
 *
 *   node --import tsx test/fault/run-daemon.ts --config FILE --data DIR [--tenant T] [--batch B]
 *        [--operator U] [--no-start] [--seed-only] [--poll-ms N]
 *
 * (The tests start it compiled, `node dist/test/fault/run-daemon.js …`: childScript in test/helpers/bin.ts.)
 *
 * Before the daemon starts: the batch record is copied into `<data>/mes/inbox/<tenant>/` (the daemon seeds
 * its inbox only with an embedded simulator) and the tenant's default models are fitted and validated in the
 * data directory as the embedded default does at its first start (`ensureDemoModels`; a no-op once done).
 * `--seed-only` does just that and exits (a template data directory for several daemons).
 *
 * Then the daemon starts, a run of the batch starts unless `--no-start` (as the operator, who is kept present
 * by presence heartbeats), and stdout carries one JSON object a line:
 *   {"t":"ready","pid":…,"endpoints":{…}}
 *   {"t":"state","at":ms,"run":"run_…","step":null,"status":"RUNNING","reason":…}           a run status change
 *   {"t":"state","at":ms,"run":"run_…","step":"03","name":"blend.uniformity","status":"RUNNING","attempt":1,"detail":…}
 *   {"t":"tool","at":ms,"run":…,"step":"blend.uniformity","tool":"plc.write_setpoint","kind":"ok","summary":…}
 *   {"t":"approved","pending":"pw_…","needs":"qa","status":"written"} / {"t":"ack","cmd":…} / {"t":"error",…}
 * The states already in the store are printed first (a restarted daemon shows the run it found interrupted).
 *
 * Commands on stdin, one JSON object a line (people acting through the daemon's own API):
 *   {"cmd":"start"}    start the run (with --no-start)
 *   {"cmd":"resume"}   the operator resumes the tenant's HELD or INTERRUPTED run
 *   {"cmd":"approve"}  every pending write is approved by the batch's named QA reviewer or reviewer
 *   {"cmd":"stop"}     clean stop (exit 0)
 * SIGTERM and SIGINT stop cleanly too; SIGKILL is what the tests send.
 */
import { copyFileSync, existsSync, mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { loadConfig, type LoadedConfig } from '../../src/config/load.js';
import { startDaemon, type Daemon } from '../../src/daemon.js';
import { lastAcceptedBundle } from '../../src/engine/policy-gate.js';
import { LkError } from '../../src/errors.js';
import { createLogger } from '../../src/log.js';
import { ensureDemoModels } from '../../src/models/demo.js';
import { loadPolicyBundle } from '../../src/config/policy-bundle.js';
import { openStore } from '../../src/store/store.js';

/** The repository: the first folder above this script holding package.json (test/fault/ under tsx, dist/test/fault/ built). */
const repo = ((): string => {
  for (let d = dirname(fileURLToPath(import.meta.url)); ; d = dirname(d)) {
    if (existsSync(join(d, 'package.json'))) return d;
    if (dirname(d) === d) throw new Error('run-daemon: no package.json above this script');
  }
})();
const { values: o } = parseArgs({
  options: {
    config: { type: 'string' },
    data: { type: 'string' },
    tenant: { type: 'string', default: 'acme-pharma' },
    batch: { type: 'string', default: 'B-1042' },
    operator: { type: 'string', default: 'o.operator' },
    'no-start': { type: 'boolean', default: false },
    'seed-only': { type: 'boolean', default: false },
    'poll-ms': { type: 'string' },
  },
});
if (!o.config || !o.data) {
  process.stderr.write('usage: run-daemon.ts --config FILE --data DIR [--tenant T] [--batch B] [--operator U] [--no-start] [--seed-only] [--poll-ms N]\n');
  process.exit(2);
}
const tenant = o.tenant!;
const operator = o.operator!;
const emit = (line: Record<string, unknown>): void => void process.stdout.write(`${JSON.stringify(line)}\n`);

/** The record into the MES inbox, the models into the registry: what the embedded default does for itself. */
function prepare(loaded: LoadedConfig): void {
  const inbox = join(loaded.dataDir, 'mes', 'inbox', tenant);
  mkdirSync(inbox, { recursive: true });
  const record = join(inbox, `${o.batch}.json`);
  if (!existsSync(record)) copyFileSync(join(repo, 'config', 'batches', tenant, `${o.batch}.json`), record);
  const store = openStore({ dataDir: loaded.dataDir });
  try {
    const { bundle } = loadPolicyBundle(loaded.policyDir, { site: loaded.config, lastAccepted: lastAcceptedBundle(store) });
    ensureDemoModels(store, loaded.dataDir, { site: loaded.config.site.id, tenants: [tenant], approvers: bundle.content.approvers.change, seed: loaded.config.simulator.seed });
  } finally {
    store.close();
  }
}

const loaded = loadConfig(o.config, { dataDir: o.data });
prepare(loaded);
if (o['seed-only']) process.exit(0);

const d: Daemon = await startDaemon({
  configFile: o.config,
  dataDir: o.data,
  logger: createLogger(loaded.config.log.level),
  ...(o['poll-ms'] !== undefined ? { pollMs: Number(o['poll-ms']) } : {}),
});
emit({ t: 'ready', pid: process.pid, endpoints: d.ready.endpoints, connections: d.ready.connections, policy: d.ready.policy });

// state changes: the store is the truth (steps change without an event), read every 50 ms and diffed
const seen = new Map<string, string>();
function publish(): void {
  for (const run of d.engine.list(tenant, 3)) {
    const key = `${run.status}|${run.reason ?? ''}`;
    if (seen.get(run.id) !== key) {
      seen.set(run.id, key);
      emit({ t: 'state', at: Date.now(), run: run.id, step: null, status: run.status, reason: run.reason });
    }
    for (const s of run.steps) {
      const k = `${run.id}:${s.seq}`;
      const v = `${s.status}|${s.attempt}`;
      if (seen.get(k) === v) continue;
      seen.set(k, v);
      emit({ t: 'state', at: Date.now(), run: run.id, step: s.seq, name: s.name, status: s.status, attempt: s.attempt, detail: s.detail.slice(0, 300) });
    }
  }
}
publish();
d.engine.onToolCall((row) => {
  if (row.kind !== 'call') emit({ t: 'tool', at: row.at, run: row.run, step: row.step, tool: row.tool, kind: row.kind, summary: (row.summary ?? '').slice(0, 300) });
});
d.engine.onChange(() => publish());
const poll = setInterval(publish, 50);
const presence = setInterval(() => d.engine.presence(operator), 10_000);

const request = `run batch ${o.batch} on ${d.loaded.config.line.id}, keep weight and hardness on target, capping risk under 1.5%`;
const start = (): void => {
  const run = d.engine.start({ tenant, request, by: operator });
  emit({ t: 'ack', cmd: 'start', run: run.id });
};

async function approveAll(): Promise<void> {
  for (const pw of d.writer.pending()) {
    if (pw.proposal.tenant !== tenant) continue;
    const run = pw.proposal.run ? d.engine.runs.runById(pw.proposal.run) : null;
    const qa = pw.needs === 'qa';
    const by = String(run?.record[qa ? 'qa_reviewer' : 'reviewer'] ?? '');
    const out = await d.writer.approve(pw.id, { by, role: qa ? 'qa_reviewer' : 'process_engineer', kind: qa ? 'qa' : 'reviewer', vectorHash: pw.vectorHash });
    emit({ t: 'approved', at: Date.now(), pending: pw.id, needs: pw.needs, by, status: out.status, setpoints: pw.proposal.moves.map((m) => m.setpoint) });
  }
  emit({ t: 'ack', cmd: 'approve' });
}

let stopping = false;
async function stop(why: string): Promise<never> {
  if (!stopping) {
    stopping = true;
    clearInterval(poll);
    clearInterval(presence);
    try {
      // the last state changes are published by the engine's change events while the store is still open
      await d.stop(why);
      emit({ t: 'stopped', why });
    } finally {
      process.exit(0);
    }
  }
  return new Promise(() => undefined);
}

async function command(line: string): Promise<void> {
  let cmd = '';
  try {
    cmd = String((JSON.parse(line) as { cmd?: unknown }).cmd);
    if (cmd === 'start') start();
    else if (cmd === 'approve') await approveAll();
    else if (cmd === 'resume') {
      const run = d.engine.list(tenant, 10).find((r) => r.status === 'HELD' || r.status === 'INTERRUPTED');
      if (!run) throw new LkError('LK_NOT_FOUND', 'no HELD or INTERRUPTED run to resume');
      d.engine.resume(tenant, run.id, operator, 'fault harness: the operator resumes after the PLCs were re-armed');
      emit({ t: 'ack', cmd, run: run.id });
    } else if (cmd === 'stop') await stop('fault harness: stop requested');
    else throw new LkError('LK_VALIDATION', `unknown command ${cmd}`);
  } catch (err) {
    emit({ t: 'error', cmd, code: LkError.is(err) ? err.code : 'LK_INTERNAL', message: err instanceof Error ? err.message : String(err) });
  }
}

// commands run one after the other, in the order they arrive
let queue = Promise.resolve();
createInterface({ input: process.stdin }).on('line', (line) => {
  if (line.trim()) queue = queue.then(() => command(line));
});
process.on('SIGTERM', () => void stop('SIGTERM'));
process.on('SIGINT', () => void stop('SIGINT'));
/**
 * The start at launch: a line with a LOST PLC is not ready (LK_LINE_NOT_READY) until a person re-arms it at the HMI
 * (the harness does); the operator asks again until the line is ready, as one would.
 */
async function startWhenReady(): Promise<void> {
  let said = false;
  for (;;) {
    try {
      start();
      return;
    } catch (err) {
      if (!LkError.is(err, 'LK_LINE_NOT_READY')) {
        emit({ t: 'error', cmd: 'start', code: LkError.is(err) ? err.code : 'LK_INTERNAL', message: err instanceof Error ? err.message : String(err) });
        return;
      }
      if (!said) emit({ t: 'waiting', cmd: 'start', code: err.code, message: err.message });
      said = true;
      await new Promise((r) => setTimeout(r, 200));
    }
  }
}
if (!o['no-start']) queue = queue.then(startWhenReady);
