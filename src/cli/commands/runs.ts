/**
 * `linekeeper runs list|show`: the runs of a tenant as the store holds them — their steps, tool-call log and
 * genealogy. The database is opened read-only (beside a running daemon, or on a copy an auditor was given);
 * nothing is written.
 */
import type { Command } from 'commander';
import { defaultConfigFile, loadConfig } from '../../config/load.js';
import { composePlan, formatDuration, planSummary, timeOfDay } from '../../domain/run.js';
import { LkError } from '../../errors.js';
import { renderGenealogyText } from '../../engine/genealogy-text.js';
import { GENEALOGY_KINDS, type GenealogyEvent, type LosingRequest } from '../../engine/release-types.js';
import { RunStore, type RunRecord } from '../../store/run-store.js';
import { openStore } from '../../store/store.js';

interface Common {
  tenant: string;
  config: string;
  data?: string;
  json?: boolean;
}

function open(opts: Common): { runs: RunStore; close: () => void } {
  const loaded = loadConfig(opts.config, opts.data ? { dataDir: opts.data } : {});
  const store = openStore({ dataDir: loaded.dataDir, readonly: true });
  return { runs: new RunStore(store.db), close: () => store.close() };
}

function dur(ms: number | null, continuous: boolean): string {
  return formatDuration(ms, continuous && ms !== null);
}

function table(run: RunRecord, runs: RunStore): string {
  const steps = runs.steps(run.id);
  const gate = runs.approvalOfRun(run.id);
  const lines = [
    `${run.id}  ${run.tenant}  batch ${run.batch}  line ${run.line}  ${run.status}${run.reason ? ` (${run.reason})` : ''}`,
    `goal: ${run.goal}`,
    `plan: ${planSummary(composePlan()).text}; autonomy ≤ ${run.autonomy}; started by ${run.startedBy} at ${new Date(run.createdAt).toISOString()}`,
    '',
    ...steps.map((s) => `${s.seq}  ${s.name.padEnd(25)} ${s.status.padEnd(11)} ${dur(s.startedAt === null ? null : (s.endedAt ?? run.updatedAt) - s.startedAt, s.continuous).padStart(10)}  ${s.agent.padEnd(22)} ${s.tool}`),
  ];
  if (gate) {
    const sig = gate.signature as { name?: string; user?: string; timestamp?: string; meaning?: string } | null;
    lines.push('', `approval ${gate.id}: ${gate.status}${sig ? ` by ${sig.name} (${sig.user}) at ${sig.timestamp}: ${sig.meaning}` : ` — waits for ${gate.reviewer}`}; record ${gate.recordHash}`);
  }
  return lines.join('\n');
}

function genealogy(run: RunRecord, runs: RunStore): string {
  const kinds = new Set<string>(GENEALOGY_KINDS);
  const events = runs.events(run.id);
  const ev: GenealogyEvent[] = events.map((e) => ({
    at: e.at, kind: (kinds.has(e.kind) ? e.kind : 'step') as GenealogyEvent['kind'], summary: e.summary,
    ...(e.step ? { step: e.step } : {}), ...(e.agent ? { agent: e.agent } : {}), ...(e.tag ? { tag: e.tag } : {}),
  }));
  const losing: LosingRequest[] = events.filter((e) => e.kind === 'arbitration').flatMap((e) => ((e.data as { declined?: LosingRequest[] } | null)?.declined ?? []).map((d) => ({ ...d, at: e.at })));
  return renderGenealogyText(ev, { losingRequests: losing, title: `${run.id} · batch ${run.batch} · ${run.status}` });
}

export function registerRuns(program: Command): void {
  const runs = program.command('runs').description('supervised batch runs of a tenant, read from the data directory (read-only)');
  const common = (c: Command): Command =>
    c
      .requiredOption('--tenant <id>', 'tenant whose runs to read (another tenant’s run is not found)')
      .option('--config <file>', 'site configuration file', defaultConfigFile())
      .option('--data <dir>', 'data directory (default: the configuration data_dir)')
      .option('--json', 'print JSON');

  common(runs.command('list').description('the tenant’s runs, newest first').option('--limit <n>', 'how many', '50')).action((opts: Common & { limit: string }) => {
    const limit = Number(opts.limit);
    if (!Number.isInteger(limit) || limit < 1 || limit > 1000) throw new LkError('LK_VALIDATION', '--limit must be a whole number from 1 to 1000');
    const { runs: rs, close } = open(opts);
    try {
      const list = rs.runs(opts.tenant, limit);
      if (opts.json) process.stdout.write(`${JSON.stringify(list.map(({ record: _r, data: _d, ...r }) => r), null, 2)}\n`);
      else for (const r of list) process.stdout.write(`${r.id}  ${new Date(r.createdAt).toISOString()}  batch ${r.batch.padEnd(10)} ${r.status.padEnd(11)} ${r.goal}\n`);
    } finally {
      close();
    }
  });

  common(runs.command('show <run_id>').description('a run: its steps (table), tool-call log (log), genealogy, or everything (json)').option('--format <f>', 'table | log | genealogy | json', 'table')).action(
    (runId: string, opts: Common & { format: string }) => {
      if (!['table', 'log', 'genealogy', 'json'].includes(opts.format)) throw new LkError('LK_VALIDATION', `--format must be table, log, genealogy or json, not "${opts.format}"`);
      const { runs: rs, close } = open(opts);
      try {
        const run = rs.run(opts.tenant, runId);
        if (!run) throw new LkError('LK_NOT_FOUND', `no run ${runId} for tenant ${opts.tenant}`, { run: runId });
        let out: string;
        if (opts.format === 'json' || opts.json) out = JSON.stringify({ run, steps: rs.steps(run.id), approval: rs.approvalOfRun(run.id), toolCalls: rs.toolCalls(run.id), genealogy: rs.events(run.id) }, null, 2);
        else if (opts.format === 'log') out = rs.toolCalls(run.id).map((c) => `${String(c.id).padStart(5)}  ${timeOfDay(c.at)}  ${c.kind === 'call' ? `${c.tool}(${JSON.stringify(c.args)})` : `${c.kind} ${c.tool}: ${c.summary ?? ''}`}`).join('\n');
        else if (opts.format === 'genealogy') out = genealogy(run, rs);
        else out = table(run, rs);
        process.stdout.write(`${out}\n`);
      } finally {
        close();
      }
    },
  );
}
