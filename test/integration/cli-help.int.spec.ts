/**
 * The installed command's help comes from the build's help manifest (src/cli/commands/help-manifest.ts): the same
 * text, byte for byte, as the program prints with every command module loaded — here run in this process from the
 * sources, which have no manifest and load them all.
 */
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { COMMAND_NAMES } from '../../src/cli/commands/index.js';
import { HELP_MANIFEST_FILE, readHelpManifest } from '../../src/cli/commands/help-manifest.js';
import { ensureBuilt } from '../helpers/bin.js';
import { runCli, spawnCli } from '../helpers/cli.js';

const MANIFEST = new URL(`../../dist/src/cli/commands/${HELP_MANIFEST_FILE}`, import.meta.url);

beforeAll(() => ensureBuilt());

describe('linekeeper --help from the help manifest', () => {
  it('the build writes a manifest of exactly its commands, and the installed command prints from it what the commands would', async () => {
    expect(existsSync(fileURLToPath(MANIFEST))).toBe(true);
    expect(readHelpManifest(COMMAND_NAMES, MANIFEST)?.commands.map((c) => c.name)).toEqual(COMMAND_NAMES);
    const fromSources = await runCli('--help');
    expect(fromSources.code).toBe(0);
    expect(fromSources.out).toContain('Commands:');
    for (const args of [['--help'], ['-h'], ['help']]) {
      const installed = await spawnCli(args);
      expect([installed.code, installed.err], args.join(' ')).toEqual([0, '']);
      expect(installed.out, args.join(' ')).toBe(fromSources.out);
    }
    // with no command at all the same list goes to stderr, exit 2, as before
    const none = await spawnCli([]);
    expect([none.code, none.out, none.err]).toEqual([2, '', fromSources.out]);
    // the manifest holds what help lists, nothing of a command's options or actions
    expect(Object.keys(JSON.parse(readFileSync(MANIFEST, 'utf8')) as object)).toEqual(['format', 'commands']);
  });
});
