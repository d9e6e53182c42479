#!/usr/bin/env node
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
