import { readFileSync, statSync } from 'node:fs';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

/** linekeeper's version, from package.json (recorded in every start event of the audit trail). */
export const VERSION: string = (() => {
  for (const up of ['../package.json', '../../package.json']) {
    try {
      return (JSON.parse(readFileSync(new URL(up, import.meta.url), 'utf8')) as { version: string }).version;
    } catch {
      // try the next candidate (src/ vs dist/src/)
    }
  }
  return '0.0.0';
})();

/**
 * When this build was made: `SOURCE_DATE_EPOCH` (seconds, the reproducible-builds convention) when set, else the
 * modification time of this compiled module (under dist/ that is the build; run from source, the last edit).
 * Reported as the BuildInfo of the simulator's OPC UA server.
 */
export const BUILD_DATE: Date = (() => {
  const epoch = Number(process.env['SOURCE_DATE_EPOCH']);
  if (process.env['SOURCE_DATE_EPOCH'] && Number.isFinite(epoch)) return new Date(epoch * 1000);
  try {
    return statSync(fileURLToPath(import.meta.url)).mtime;
  } catch {
    return new Date(0);
  }
})();

/**
 * The folder linekeeper runs from — the one holding its package.json, beside `src/` (run from source) or `dist/`
 * (built, installed) — where the package's own files are found: config templates, tools, validation/.
 */
export const INSTALL_ROOT: string = (() => {
  for (const up of ['../package.json', '../../package.json']) {
    const f = new URL(up, import.meta.url);
    try {
      if ((JSON.parse(readFileSync(f, 'utf8')) as { name?: string }).name === 'linekeeper') return dirname(fileURLToPath(f));
    } catch {
      // try the next candidate (src/ vs dist/src/)
    }
  }
  return dirname(dirname(fileURLToPath(import.meta.url)));
})();
