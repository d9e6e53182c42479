/**
 * `linekeeper replay <run_id>`: re-run every recorded agent decision of a run (R11), with the models it
 * recorded or against another version of the tenant's twin, and print what changed. The database is
 * opened read-only; nothing is written, no equipment is touched.
 */
import type { Command } from 'commander';
import { defaultConfigFile, loadConfig } from '../../config/load.js';
import { parseModelRef, replayRun, type ReplayCall, type ReplayReport } from '../../engine/run/replay.js';
import { openStore } from '../../store/store.js';

interface ReplayOptions {
  tenant: string;
  model?: string;
  data?: string;
  config: string;
  json?: boolean;
}

const num = (x: number): string => String(+x.toPrecision(4));

function value(x: number | null, unit: string, current: number | null): string {
  if (x !== null) return `${x} ${unit}`;
  return current === null ? 'no move' : `no move (stays ${current} ${unit})`;
}

function predicted(p: Record<string, number> | null): string {
  return p ? Object.entries(p).map(([k, v]) => `${k} ${num(v)}`).join(', ') : 'no proposal';
}

function shown(v: unknown): string {
  if (typeof v === 'number') return num(v);
  const s = JSON.stringify(v) ?? 'nothing';
  return s.length > 60 ? `${s.slice(0, 57)}…` : s;
}

const CHANGE: Record<string, string> = { proposed: 'new move', withdrawn: 'move withdrawn', value: 'other value', attribute: 'other attribute', predicted: 'other predictions' };

function callRows(c: ReplayCall): string[] {
  const head = `${`#${c.id}`.padStart(5)}  ${c.step.padEnd(24)} ${c.agent.padEnd(22)}`;
  const pad = ' '.repeat(head.length);
  const rows: string[] = [];
  c.proposals.forEach((p, i) => {
    rows.push(`${i === 0 ? head : pad} ${p.setpoint.padEnd(24)} ${value(p.recorded, p.unit, p.current)} → ${value(p.replayed, p.unit, p.current)}  [${CHANGE[p.change]}]`);
  });
  for (const [side, key] of [['recorded', 'recordedPredicted'], ['new', 'replayedPredicted']] as const) {
    // one line per proposal (vector) on each side, whatever number of its moves changed
    const sets = [...new Set(c.proposals.map((p) => p[key]).filter((x) => x !== null).map((x) => JSON.stringify(x)))].map((x) => JSON.parse(x) as Record<string, number>);
    if (c.proposals.length > 0) for (const p of sets.length > 0 ? sets : [null]) rows.push(`${pad}   predicted, ${side.padEnd(8)} ${predicted(p)}`);
  }
  if (c.verdict.length > 0) rows.push(`${rows.length === 0 ? head : pad} verdict: ${c.verdict.map((v) => `${v.field} ${shown(v.recorded)} → ${shown(v.replayed)}`).join('; ')}`);
  return rows;
}

/** Ids as ranges: `#20–#21, #32–#61`. */
function ids(xs: readonly number[]): string {
  const out: string[] = [];
  for (let i = 0; i < xs.length; i++) {
    let j = i;
    while (j + 1 < xs.length && xs[j + 1] === xs[j]! + 1) j++;
    out.push(j > i ? `#${xs[i]}–#${xs[j]}` : `#${xs[i]}`);
    i = j;
  }
  return out.join(', ');
}

/** The human-readable report of a replay (what `replay` prints without --json). */
export function formatReplay(r: ReplayReport): string {
  const lines: string[] = [];
  const against = r.model ? `against ${r.model}` : 'with the models it recorded';
  lines.push(`replay of ${r.run.id} (${r.run.tenant}, batch ${r.run.batch}, ${r.run.product} × ${r.run.tooling}, ${r.run.line}) ${against}`);
  const changed = r.calls.filter((c) => !c.error && (c.proposals.length > 0 || c.verdict.length > 0));
  if (changed.length > 0) {
    lines.push('', ` call  ${'step'.padEnd(24)} ${'agent'.padEnd(22)} ${'setpoint'.padEnd(24)} recorded → new`);
    for (const c of changed) lines.push(...callRows(c));
  }
  const traceOnly = r.calls.filter((c) => !c.error && !c.identical && c.substituted && c.proposals.length === 0 && c.verdict.length === 0);
  if (traceOnly.length > 0) lines.push('', `same proposals and verdicts, other reasoning trace (model reference, predictions): ${ids(traceOnly.map((c) => c.id))}`);
  const unstable = r.calls.filter((c) => !c.substituted && !c.identical && !c.error);
  if (unstable.length > 0) {
    lines.push('', 'NOT DETERMINISTIC — replayed on the recorded input, the output differs (R11):');
    for (const c of unstable) {
      const d = c.firstDifference;
      lines.push(`  #${c.id} ${c.fn} (${c.step}): first difference at ${d?.path ?? '$'}: recorded ${shown(d?.recorded)}, replayed ${shown(d?.replayed)}`);
    }
  }
  const failed = r.calls.filter((c) => c.error);
  if (failed.length > 0) {
    lines.push('', 'not replayed:');
    for (const c of failed) lines.push(`  #${c.id} ${c.fn} (${c.step}): ${c.error!.message} [${c.error!.code}]`);
  }
  const s = r.summary;
  lines.push(
    '',
    `${s.calls} agent calls replayed ${against}${r.model ? ` (${s.substituted} with it)` : ''}: ${s.identical} byte-identical, ${s.differing} differ ` +
      `(${s.movesChanged} with other moves, ${s.proposalsChanged} with other proposals, ${s.verdictsChanged} with other verdicts), ${s.errors} not replayed; ` +
      `${s.nondeterministic === 0 ? 'deterministic' : `${s.nondeterministic} NOT DETERMINISTIC`}`,
  );
  return `${lines.join('\n')}\n`;
}

export function registerReplay(program: Command): void {
  program
    .command('replay')
    .description("Replay a run's recorded agent decisions (R11), with its recorded models or against another version of the tenant's twin, and diff the recommendations")
    .argument('<run_id>', 'the run (run_<token>)')
    .requiredOption('--tenant <id>', 'tenant of the run (another tenant’s run is not found)')
    .option('--model <id@version>', 'another version of the tenant’s twin to replay against, e.g. process-twin-v2@2 (drafts allowed)')
    .option('--config <file>', 'site configuration file (its site id pins the model)', defaultConfigFile())
    .option('--data <dir>', 'data directory (default: the configuration data_dir)')
    .option('--json', 'print the report as JSON')
    .action((runId: string, opts: ReplayOptions) => {
      // a malformed --model is a usage error before anything is opened
      const model = opts.model === undefined ? undefined : parseModelRef(opts.model);
      const loaded = loadConfig(opts.config, opts.data ? { dataDir: opts.data } : {});
      const store = openStore({ dataDir: loaded.dataDir, readonly: true });
      let report: ReplayReport;
      try {
        report = replayRun(store, loaded.dataDir, opts.tenant, runId, { site: loaded.config.site.id, ...(model ? { model } : {}) });
      } finally {
        store.close();
      }
      process.stdout.write(opts.json ? `${JSON.stringify(report, null, 2)}\n` : formatReplay(report));
    });
}
