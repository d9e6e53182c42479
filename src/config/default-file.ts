/**
 * Where the embedded default configuration is, apart from its loader: every command names it as the default of its
 * `--config` option when it registers, and a command that talks only to the daemon must not load the YAML parser,
 * the configuration's schema and the unit tables to say so.
 */
import { existsSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The embedded default configuration shipped with linekeeper (config/site.yaml), from src/ or dist/src/. */
export function defaultConfigFile(): string {
  const here = dirname(fileURLToPath(import.meta.url));
  for (const up of ['../..', '../../..']) {
    const f = resolve(here, up, 'config/site.yaml');
    if (existsSync(f)) return f;
  }
  return resolve(here, '../..', 'config/site.yaml');
}
