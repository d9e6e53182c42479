/**
 * Loaded into every Node process of a profiled suite run (`npm run profile:suite`, NODE_OPTIONS=--require): the
 * inspector's sampling profiler (1 ms), written to LK_PROFILE_DIR as <pid>-<n>.cpuprofile every 5 s and when the
 * process exits, its parent closes the IPC channel, or a SIGTERM or SIGINT ends it (vitest's fork workers end
 * without `exit`); a SIGKILL loses at most the last 5 s.
 * `--cpu-prof` would do the same but is refused in NODE_OPTIONS. Main threads only.
 */
'use strict';
const inspector = require('node:inspector');
const { writeFileSync } = require('node:fs');
const { join } = require('node:path');
const { isMainThread } = require('node:worker_threads');

const dir = process.env.LK_PROFILE_DIR;
if (dir && isMainThread) {
  const session = new inspector.Session();
  session.connect();
  session.post('Profiler.enable');
  session.post('Profiler.setSamplingInterval', { interval: 1000 });
  session.post('Profiler.start');
  let n = 0;
  let done = false;
  const flush = (again) => {
    session.post('Profiler.stop', (err, r) => {
      if (err || !r) return;
      try {
        writeFileSync(join(dir, `${process.pid}-${n++}.cpuprofile`), JSON.stringify(r.profile));
      } catch {
        // a profile that cannot be written is a profile missing from the summary, never a failed test
      }
    });
    if (again) session.post('Profiler.start');
  };
  const last = () => {
    if (done) return;
    done = true;
    flush(false);
  };
  process.on('exit', last);
  process.on('disconnect', last);
  // vitest's pool ends its workers with a signal: write the profile, then let the signal do what it would have
  // done (a process that handles the signal itself, a daemon stopping gracefully, keeps its own handling)
  for (const sig of ['SIGTERM', 'SIGINT']) {
    const onSignal = () => {
      last();
      if (process.listenerCount(sig) === 1) {
        process.removeListener(sig, onSignal);
        process.kill(process.pid, sig);
      }
    };
    process.prependListener(sig, onSignal);
  }
  setInterval(() => done || flush(true), 5_000).unref();
}
