import { readFileSync } from 'node:fs';

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
