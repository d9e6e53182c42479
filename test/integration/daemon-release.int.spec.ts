/**
 * A stopped daemon is let go at once: nothing its start left running (a timer, a listener) still reaches it, so its
 * store, identities and engine can be collected as soon as `stop()` returns — not 15 s later, when the start's
 * connect timeout fired. A real daemon in this process (in-memory plant, REST API on port 0) started with the
 * default connect timeout; the store's connection is watched through a WeakRef across forced collections. Nothing
 * here waits on the clock: the collection is forced.
 */
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { afterAll, describe, expect, it } from 'vitest';
import { defaultConfigFile } from '../../src/config/load.js';
import { startDaemon } from '../../src/daemon.js';
import { silentLogger } from '../../src/log.js';
import { relaxedWatchdog } from '../helpers/api.js';
import { firstStart, TEST_HASH_LOG2N } from '../helpers/first-start.js';

// the collector, for this file only: a context made after the flag is set has `gc`
setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

const dir = mkdtempSync(join(tmpdir(), 'lk-release-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Start a daemon on a fresh site, stop it, and hand back only a weak reference to its store's connection. */
async function startAndStop(): Promise<WeakRef<object>> {
  cpSync(join(defaultConfigFile(), '..', 'policy'), join(dir, 'policy'), { recursive: true });
  writeFileSync(join(dir, 'site.yaml'), relaxedWatchdog(readFileSync(defaultConfigFile(), 'utf8')));
  const files = { config: join(dir, 'site.yaml'), data: join(dir, 'data') };
  await firstStart(files.config, files.data, 'wall', { ownPasswords: true });
  const d = await startDaemon({ configFile: files.config, dataDir: files.data, logger: silentLogger, api: { host: '127.0.0.1', port: 0 }, passwordHashLog2N: TEST_HASH_LOG2N, embeddedSimulator: 'memory' });
  const db = new WeakRef<object>(d.store.db);
  await d.stop('test done');
  return db;
}

describe('a stopped daemon', () => {
  it('holds nothing of itself once stop() returns: its store can be collected', async () => {
    const db = await startAndStop();
    for (let i = 0; i < 10 && db.deref() !== undefined; i++) {
      await new Promise((r) => setImmediate(r));
      gc();
    }
    expect(db.deref()).toBeUndefined();
  });
});
