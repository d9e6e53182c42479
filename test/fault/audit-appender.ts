/**
 * Crash-test child: appends to the audit trail as fast as it can and prints
 * `<tenant> <seq>` on stdout for every entry once its transaction has
 * committed (synchronous=FULL). The parent SIGKILLs it at a random moment.
 *
 *   node --import tsx test/fault/audit-appender.ts <dataDir> <seed>
 */
import { writeSync } from 'node:fs';
import { createRng } from '../../src/clock.js';
import { recordSiteEvent } from '../../src/audit/site-events.js';
import type { AuditEntry } from '../../src/audit/entry.js';
import { openStore } from '../../src/store/store.js';
import { CRASH_MIGRATIONS, CRASH_TENANT } from './audit-crash-schema.js';

const [dataDir, seedArg] = process.argv.slice(2);
if (!dataDir) {
  process.stderr.write('usage: audit-appender.ts <dataDir> <seed>\n');
  process.exit(2);
}
const rng = createRng(Number(seedArg ?? 1));
// Small checkpoint policy so kills also land between the checkpoint log write and its database row.
const store = openStore({ dataDir, migrations: CRASH_MIGRATIONS, audit: { checkpointEvery: 25, checkpointIntervalS: 1 } });
/**
 * Write `text` whole to stdout, a pipe: writeSync returns once the kernel has the bytes, so an ack is never ahead of
 * its commit. The pipe may be non-blocking and full while a loaded parent reads slowly (EAGAIN, or part written):
 * wait a millisecond and write the rest, as a blocking write would have waited.
 */
const pause = new Int32Array(new SharedArrayBuffer(4));
function say(text: string): void {
  let rest = Buffer.from(text);
  while (rest.length > 0) {
    try {
      rest = rest.subarray(writeSync(1, rest));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EAGAIN') throw err;
      Atomics.wait(pause, 0, 0, 1);
    }
  }
}

say('ready\n');

const ack = (es: readonly AuditEntry[]): void => {
  say(es.map((e) => `${e.tenant} ${e.seq}\n`).join(''));
};
const insertState = store.db.prepare('INSERT INTO crash_state (seq, value) VALUES (?, ?)');
for (let i = 0; ; i++) {
  const r = rng.next();
  const value = Math.round(rng.uniform(5, 25) * 100) / 100;
  if (r < 0.5) {
    const e = store.tx((t) => {
      const entry = t.audit.append({ tenant: CRASH_TENANT, actor: 'agent.compress_fill', kind: 'state_change', action: 'press.write_setpoint', subject: { setpoint: 'press.MainForce' }, new: value });
      insertState.run(entry.seq, value);
      return entry;
    });
    ack([e]);
  } else if (r < 0.9) {
    const n = rng.int(1, 20);
    ack(store.audit.appendBatch(Array.from({ length: n }, (_, k) => ({ tenant: k % 3 === 0 ? 'borealis-bio' : CRASH_TENANT, actor: 'system', kind: 'tool_call', action: 'twin.simulate', args: { i, k } }))));
  } else {
    ack([recordSiteEvent(store.audit, { kind: 'heartbeat', action: 'heartbeat.started', detail: { equipment: 'press', i } })]);
  }
}
