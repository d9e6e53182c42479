/**
 * Where a worker thread's module is: the compiled `.js` beside the module that starts it; when running from
 * sources (tsx, vitest) the `.ts` one, loaded through tsx's loader registered in the worker (a worker does not
 * inherit the parent's loader hooks). Shared by the release package, rehearsal, audit verify and password
 * estimator workers.
 */
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath, pathToFileURL } from 'node:url';

/** What `new Worker(code, { eval })` takes for the worker module `js` (a `file:` URL ending in `.js`). */
export function workerScript(js: URL): { code: string | URL; eval: boolean } {
  if (existsSync(fileURLToPath(js))) return { code: js, eval: false };
  const ts = js.href.replace(/\.js$/, '.ts');
  const api = pathToFileURL(createRequire(js).resolve('tsx/esm/api')).href.replace(/\.cjs$/, '.mjs');
  return { code: `import(${JSON.stringify(api)}).then((m) => { m.register(); return import(${JSON.stringify(ts)}); });`, eval: true };
}
