/**
 * `linekeeper runs list|show|watch|exceptions` (and `resume|abort|reassign`, runs-lifecycle.ts): a tenant's runs — their steps, tool-call log and genealogy. Signed in
 * (`linekeeper login`), list and show ask the running daemon over its REST API; with `--offline`, `--data` or
 * `--config`, or without a session, they read the data directory instead: the database is opened read-only
 * (beside a running daemon, or on a copy an auditor was given) and nothing is written. `watch` follows a run
 * on the daemon (src/cli/commands/run.ts).
 */
import type { Command } from 'commander';
import { defaultConfigFile } from '../../config/installation.js';
import { TERMINAL_RUN, type RunStatus } from '../../domain/run.js';
import { siteClock, siteIso } from '../../domain/site-time.js';
import { LkError } from '../../errors.js';
import type { z } from 'zod';
import type { ExceptionList } from '../../api/schemas.js';
import type { RunRecord, RunStore } from '../../store/run-store.js';
import { formatExceptions } from './exceptions.js';
import type { LinekeeperClient } from '../../sdk/client.js';
import { LinekeeperError, sdkError } from '../../sdk/errors.js';
import { formatGenealogy, formatRunTable, offlineGenealogy, offlineView } from '../run-format.js';
import type { ApiRun, LogLine } from '../run-transcript.js';
import { connect, readSession } from '../session.js';
import { daemonZone } from '../site-zone.js';
import { registerWatch } from './run.js';
import { registerRunLifecycle } from './runs-lifecycle.js';

interface Common {
  tenant?: string;
  config: string;
  data?: string;
  offline?: boolean;
  url?: string;
  json?: boolean;
}

const FORMATS = ['table', 'log', 'genealogy', 'json'];

/** Offline when asked (`--offline`, `--data`, an explicit `--config`) or when nobody is signed in. */
function offline(opts: Common, cmd: Command): boolean {
  if (opts.offline || opts.data !== undefined || cmd.getOptionValueSource('config') === 'cli') return true;
  return readSession() === null;
}

interface Offline {
  readonly runs: RunStore;
  readonly tenant: string;
  readonly tz: string;
  /** The run's specification table and exceptions, as the daemon's route answers them. */
  exceptionsOf(run: RunRecord): z.output<typeof ExceptionList>;
  close(): void;
}

/**
 * The data directory, read-only, and the site's time zone of its configuration (for the tables' times). The
 * configuration's loader and the store are loaded here, when a command reads offline: asking the daemon needs
 * neither (the YAML parser, the configuration's schema, SQLite and the unit tables: about half of the modules
 * `runs list` would otherwise load at every invocation).
 */
async function open(opts: Common): Promise<Offline> {
  if (!opts.tenant) throw new LkError('LK_VALIDATION', '--tenant is required when reading the data directory (offline)', { hint: 'or sign in (linekeeper login) to ask the running daemon' });
  const [{ loadConfig }, { openStore }, { RunStore }, { ExceptionStore }, { exceptionList }] = await Promise.all([
    import('../../config/load.js'), import('../../store/store.js'), import('../../store/run-store.js'), import('../../store/exception-store.js'), import('../../api/routes-exceptions.js'),
  ]);
  const loaded = loadConfig(opts.config, opts.data ? { dataDir: opts.data } : {});
  const store = openStore({ dataDir: loaded.dataDir, readonly: true });
  return {
    runs: new RunStore(store.db),
    tenant: opts.tenant,
    tz: loaded.config.site.timezone,
    exceptionsOf: (run) => exceptionList(run, store.schemaVersion >= 9 ? new ExceptionStore(store).ofRun(run.id) : []),
    close: () => store.close(),
  };
}

/** The tool-call log, each line's time of day on the site's clock with its offset (`tz`). */
function logText(lines: readonly Pick<LogLine, 'id' | 'at' | 'kind' | 'tool' | 'args' | 'summary'>[], tz: string): string {
  return lines.map((c) => `${String(c.id).padStart(5)}  ${siteClock(c.at, tz)}  ${c.kind === 'call' ? `${c.tool}(${JSON.stringify(c.args)})` : `${c.kind} ${c.tool}: ${c.summary ?? ''}`}`).join('\n');
}

/** The tool-call log of a finished run from its event stream (which ends after the last line). */
async function onlineLog(client: LinekeeperClient, run: ApiRun): Promise<LogLine[]> {
  if (!TERMINAL_RUN.has(run.status as RunStatus)) {
    throw new LkError('LK_VALIDATION', `${run.id} is ${run.status}: its log is still growing`, { hint: `follow it with: linekeeper runs watch ${run.id} (or read what is stored so far with --offline)` });
  }
  const out: LogLine[] = [];
  // a stream dropped on the way is resumed after the last line read, a few times at most
  const log = client.toolCalls(run.id, { after: 0, maxRetries: 3 });
  try {
    for await (const l of log) out.push(l);
  } catch (err) {
    // the reader gave up reconnecting: say where the daemon was looked for, as for any other call
    if (LinekeeperError.is(err, 'LK_API_UNREACHABLE') && !err.detail.startsWith('cannot reach')) throw sdkError('LK_API_UNREACHABLE', `cannot reach the linekeeper daemon at ${client.url} (${err.detail})`, { cause: err });
    throw err;
  } finally {
    await log.return();
  }
  return out;
}

async function showOnline(id: string, opts: Common & { format: string }): Promise<string> {
  const { client } = connect(opts, Date.now());
  const run = await client.getRun(id);
  if (opts.format === 'json' || opts.json) return JSON.stringify({ run, genealogy: await client.genealogy(id) }, null, 2);
  const tz = await daemonZone(client);
  if (opts.format === 'genealogy') return formatGenealogy(await client.genealogy(id), tz);
  if (opts.format === 'log') return logText(await onlineLog(client, run), tz);
  return formatRunTable(run, tz);
}

async function listOnline(client: LinekeeperClient, limit: number): Promise<ApiRun[]> {
  const items: ApiRun[] = [];
  let cursor: string | undefined;
  do {
    const page = await client.listRuns({ limit: Math.min(200, limit - items.length), ...(cursor ? { cursor } : {}) });
    items.push(...page.items);
    cursor = page.next;
  } while (cursor && items.length < limit);
  return items;
}

export function registerRuns(program: Command): void {
  const runs = program.command('runs').description('supervised batch runs of a tenant: from the daemon when signed in, else (or with --offline) read-only from the data directory');
  const common = (c: Command): Command =>
    c
      .option('--tenant <id>', 'tenant whose runs to read (default when signed in: the session\'s; another tenant\'s run is not found)')
      .option('--url <url>', 'the daemon\'s REST API (default: LINEKEEPER_URL, else the session\'s)')
      .option('--offline', 'read the data directory instead of asking the daemon')
      .option('--config <file>', 'site configuration file (offline)', defaultConfigFile())
      .option('--data <dir>', 'data directory (offline; default: the configuration data_dir)')
      .option('--json', 'print JSON');

  common(runs.command('list').description('the tenant’s runs, newest first').option('--limit <n>', 'how many', '50')).action(async (opts: Common & { limit: string }, cmd: Command) => {
    const limit = Number(opts.limit);
    if (!Number.isInteger(limit) || limit < 1 || limit > 1000) throw new LkError('LK_VALIDATION', '--limit must be a whole number from 1 to 1000');
    let list: { id: string; createdAt: string; batch: string; status: string; goal: string }[];
    let json: unknown;
    let tz = 'UTC';
    if (offline(opts, cmd)) {
      const { runs: rs, tenant, close, tz: zone } = await open(opts);
      tz = zone;
      try {
        const records = rs.runs(tenant, limit);
        json = records.map(({ record: _r, data: _d, ...r }) => r);
        list = records.map((r) => ({ ...r, createdAt: new Date(r.createdAt).toISOString() }));
      } finally {
        close();
      }
    } else {
      const { client } = connect(opts, Date.now());
      [list, tz] = await Promise.all([listOnline(client, limit), opts.json ? 'UTC' : daemonZone(client)]);
      json = list;
    }
    if (opts.json) process.stdout.write(`${JSON.stringify(json, null, 2)}\n`);
    else for (const r of list) process.stdout.write(`${r.id}  ${siteIso(r.createdAt, tz)}  batch ${r.batch.padEnd(10)} ${r.status.padEnd(11)} ${r.goal}\n`);
  });

  common(runs.command('show <run_id>').description('a run: its steps (table), tool-call log (log), genealogy, or everything (json)').option('--format <f>', 'table | log | genealogy | json', 'table')).action(
    async (runId: string, opts: Common & { format: string }, cmd: Command) => {
      if (!FORMATS.includes(opts.format)) throw new LkError('LK_VALIDATION', `--format must be table, log, genealogy or json, not "${opts.format}"`);
      if (!offline(opts, cmd)) {
        process.stdout.write(`${await showOnline(runId, opts)}\n`);
        return;
      }
      const { runs: rs, tenant, close, tz } = await open(opts);
      try {
        const run = rs.run(tenant, runId);
        if (!run) throw new LkError('LK_NOT_FOUND', `no run ${runId} for tenant ${tenant}`, { run: runId });
        let out: string;
        if (opts.format === 'json' || opts.json) out = JSON.stringify({ run, steps: rs.steps(run.id), approval: rs.approvalOfRun(run.id), toolCalls: rs.toolCalls(run.id), genealogy: rs.events(run.id) }, null, 2);
        else if (opts.format === 'log') out = logText(rs.toolCalls(run.id).map((c) => ({ ...c, summary: c.summary ?? undefined })), tz);
        else if (opts.format === 'genealogy') out = formatGenealogy(offlineGenealogy(run, rs.events(run.id)), tz);
        else out = formatRunTable(offlineView(run, rs.steps(run.id), rs.approvalOfRun(run.id)), tz);
        process.stdout.write(`${out}\n`);
      } finally {
        close();
      }
    },
  );

  common(runs.command('exceptions').description('a run’s specification table and exceptions (review by exception): open, blocking release, closed with who and why').argument('<run_id>'))
    .action(async (runId: string, opts: Common, cmd: Command) => {
      let list: z.output<typeof ExceptionList>;
      let tz = 'UTC';
      if (!offline(opts, cmd)) {
        const { client } = connect(opts, Date.now());
        [list, tz] = await Promise.all([client.exceptions(runId), opts.json ? 'UTC' : daemonZone(client)]);
      } else {
        const { runs: rs, tenant, close, exceptionsOf, tz: zone } = await open(opts);
        tz = zone;
        try {
          const run = rs.run(tenant, runId);
          if (!run) throw new LkError('LK_NOT_FOUND', `no run ${runId} for tenant ${tenant}`, { run: runId });
          list = exceptionsOf(run);
        } finally {
          close();
        }
      }
      process.stdout.write(`${opts.json ? JSON.stringify(list, null, 2) : formatExceptions(list, tz)}\n`);
    });
  registerWatch(runs);
  registerRunLifecycle(runs);
}
