/**
 * A linekeeper daemon in a child process for the evidence tests (issue 11): a second instance on the same
 * data directory, a SIGKILL mid-run. No API, a short connect timeout; the site configuration points at
 * whatever the test wants (unreachable endpoints are fine: the connectors keep retrying).
 *
 *   node --import tsx test/fault/evidence-daemon.ts CONFIG DATA
 *
 * stdout: {"t":"ready","pid":…} once started, or {"t":"error","code":"LK_…"} and exit 1.
 * SIGTERM stops cleanly (exit 0).
 */
import { startDaemon } from '../../src/daemon.js';
import { LkError } from '../../src/errors.js';
import { createLogger } from '../../src/log.js';

const [configFile, dataDir] = process.argv.slice(2);
if (!configFile || !dataDir) {
  process.stderr.write('usage: evidence-daemon.ts CONFIG DATA\n');
  process.exit(2);
}
try {
  const daemon = await startDaemon({ configFile, dataDir, logger: createLogger('warn'), connectTimeoutMs: 300, liveLogMs: 3_600_000 });
  process.on('SIGTERM', () => {
    void daemon.stop('signal SIGTERM').then(() => process.exit(0));
  });
  process.stdout.write(`${JSON.stringify({ t: 'ready', pid: process.pid })}\n`);
} catch (err) {
  process.stdout.write(`${JSON.stringify({ t: 'error', code: LkError.is(err) ? err.code : 'raw', message: err instanceof Error ? err.message : String(err) })}\n`);
  process.exit(1);
}
