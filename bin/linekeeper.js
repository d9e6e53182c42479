#!/usr/bin/env -S node --max-semi-space-size=4
// The flag on the line above: V8's young generation at most 2 × 4 MB, as the systemd unit and `npm start` run the
// daemon (see systemd/linekeeper.service) — so a `linekeeper serve` started by hand holds the same memory. V8 sizes
// its heap before any JavaScript runs, so it can only be a command-line flag; `env -S` (GNU coreutils 8.30+)
// passes it. `node bin/linekeeper.js …` runs without it.
// Entry point of the `linekeeper` command. Runs the compiled CLI (built by
// `npm run build`, which `npm ci` runs through the `prepare` script).
import('../dist/src/cli/main.js').then((m) => m.main(process.argv)).catch((err) => {
  if (err && err.code === 'ERR_MODULE_NOT_FOUND' && String(err.message).includes('dist/src/cli/main.js')) {
    console.error('linekeeper: not built yet; run `npm run build` (npm ci does it for you).');
  } else {
    console.error(err);
  }
  process.exit(70);
});
