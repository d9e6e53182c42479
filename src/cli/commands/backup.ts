/**
 * `linekeeper backup` and `linekeeper restore` (src/ops/backup.ts). A backup may be taken while the daemon
 * runs (SQLite's online backup from a read-only connection); a restore needs the daemon stopped.
 */
import { join } from 'node:path';
import type { Command } from 'commander';
import { defaultConfigFile, loadConfig } from '../../config/load.js';
import { backupStore, pruneBackups, restoreBackup } from '../../ops/backup.js';
import { openStore } from '../../store/store.js';

interface Opts {
  config: string;
  data?: string;
  json?: boolean;
}

function site(opts: Opts): { dataDir: string; backupDir: string; keep: number } {
  const loaded = loadConfig(opts.config, opts.data !== undefined ? { dataDir: opts.data } : {});
  const m = loaded.config.maintenance;
  return { dataDir: loaded.dataDir, backupDir: m.backup_dir ?? join(loaded.dataDir, 'backups'), keep: m.backup_keep };
}

export function registerBackup(program: Command): void {
  program
    .command('backup')
    .description('Online backup of the database with the checkpoint log and the public site key, verified before it counts (the daemon may be running)')
    .option('-c, --config <file>', 'site configuration file', defaultConfigFile())
    .option('-d, --data <dir>', 'data directory (overrides data_dir of the config)')
    .option('-o, --to <dir>', 'backup folder (default: maintenance.backup_dir, else <data>/backups)')
    .option('--prune', 'then keep only the newest maintenance.backup_keep backups in that folder')
    .option('--json', 'print the manifest as JSON')
    .action(async (opts: Opts & { to?: string; prune?: boolean }) => {
      const s = site(opts);
      const store = openStore({ dataDir: s.dataDir, readonly: true });
      let r;
      try {
        r = await backupStore(store, opts.to ?? s.backupDir);
      } finally {
        store.close();
      }
      const pruned = opts.prune ? pruneBackups(opts.to ?? s.backupDir, s.keep) : [];
      if (opts.json) process.stdout.write(`${JSON.stringify({ dir: r.dir, manifest: r.manifest, pruned }, null, 2)}\n`);
      else {
        const chains = Object.entries(r.manifest.chains).map(([t, h]) => `${t}@${h.seq}`).join(', ');
        process.stdout.write(`${r.dir}: verified (${chains}; key ${r.manifest.key_id.slice(0, 16)}…)${pruned.length ? `; pruned ${pruned.length}` : ''}\n`);
      }
    });
  program
    .command('restore')
    .description('Restore a backup into the data directory: verifies the audit chain first, moves the current database aside (daemon stopped)')
    .argument('<backup>', 'backup folder (linekeeper-YYYYMMDDTHHMMSSZ)')
    .option('-c, --config <file>', 'site configuration file', defaultConfigFile())
    .option('-d, --data <dir>', 'data directory (overrides data_dir of the config)')
    .option('--force', 'replace an existing database (it is moved to <data>/replaced-<time>/, not deleted)')
    .option('--reason <text>', 'why (recorded on the site chain)')
    .option('--json', 'print the result as JSON')
    .action((backup: string, opts: Opts & { force?: boolean; reason?: string }) => {
      const s = site(opts);
      const actor = process.env['SUDO_USER'] ?? process.env['USER'] ?? 'system';
      const r = restoreBackup(backup, s.dataDir, { ...(opts.force ? { force: true } : {}), osUser: actor, ...(opts.reason ? { reason: opts.reason } : {}) });
      if (opts.json) process.stdout.write(`${JSON.stringify(r, null, 2)}\n`);
      else {
        process.stdout.write(`restored ${backup} (taken ${r.manifest.created_at}) into ${r.dataDir}; audit chain verified${r.replacedTo ? `; previous files in ${r.replacedTo}` : ''}\n`);
        if (!r.audited) process.stdout.write('note: the private site key is not in this data directory: restore it from escrow into keys/ before `serve` (the restore itself could not be recorded)\n');
      }
    });
}
