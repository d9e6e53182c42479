/**
 * Where the files of this installation are — a source checkout (modules in src/) or a built package (in
 * dist/src/) — apart from the configuration's loader: every command names the default configuration as the default
 * of its `--config` option when it registers, and a command that talks only to the daemon must not load the YAML
 * parser, the configuration's schema and the unit tables to say so.
 */
import { existsSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The folders an installation's root can be from here: a checkout's (src/config/) or a package's (dist/src/config/). */
const ROOTS = ['../..', '../../..'].map((up) => resolve(dirname(fileURLToPath(import.meta.url)), up));

/**
 * `<root>/<rel>` of the installation this module belongs to: the first root where `present` holds for it (by
 * default: it exists); undefined when none has it.
 */
export function installationPath(rel: string, present: (path: string) => boolean = existsSync): string | undefined {
  return ROOTS.map((root) => resolve(root, rel)).find(present);
}

/** The embedded default configuration shipped with linekeeper (config/site.yaml), from src/ or dist/src/. */
export function defaultConfigFile(): string {
  return installationPath('config/site.yaml') ?? resolve(ROOTS[0]!, 'config/site.yaml');
}
