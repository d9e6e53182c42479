/**
 * `linekeeper policy show | limits | eval | autonomy show | autonomy set`: the
 * same engine the daemon asks, for process engineers checking a bundle and
 * for scripts. `eval` exits 0 for every decision it makes (deny included);
 * non-zero only when no decision could be made (bad bundle, bad options).
 * `autonomy show` reads the data directory; `autonomy set` goes through the
 * daemon's PUT /autonomy as the signed-in person (`linekeeper login`): no name
 * is taken on trust, and a raise is signed with the password typed again.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { Command } from 'commander';
import { systemClock } from '../../clock.js';
import { defaultConfigFile, loadConfig } from '../../config/load.js';
import { siteIso } from '../../domain/site-time.js';
import { autonomyRows, autonomyView } from '../../store/autonomy-store.js';
import { readLine, readPassword } from '../prompt.js';
import { connect } from '../session.js';
import { LinekeeperError } from '../../sdk/errors.js';
import { lastAcceptedBundle } from '../../engine/policy-gate.js';
import { DB_FILE, openStore, type Store } from '../../store/store.js';
import { AUTONOMY_LEVELS, type AutonomyLevel, type Decision, type ModelRecord, type PolicyContext } from '../../domain/policy.js';
import { modelRecordOf } from '../../engine/capping.js';
import type { WriteProposal } from '../../engine/writer-types.js';
import { registrySources } from '../../models/sources.js';
import { LkError } from '../../errors.js';
import { evaluate, toSetpointUnit } from '../../policy/index.js';
import { type LoadedPolicyBundle, loadPolicyBundle } from '../../config/policy-bundle.js';

interface Common {
  config: string;
  policy?: string;
  json?: boolean;
}

function load(opts: Common): LoadedPolicyBundle {
  const cfg = loadConfig(opts.config);
  return loadPolicyBundle(opts.policy ?? cfg.policyDir, { site: cfg.config });
}

function out(text: string): void {
  process.stdout.write(text.endsWith('\n') ? text : `${text}\n`);
}

function level(v: string, flag = '--autonomy'): AutonomyLevel {
  if (!(AUTONOMY_LEVELS as readonly string[]).includes(v)) throw new LkError('LK_VALIDATION', `${flag} must be one of ${AUTONOMY_LEVELS.join(', ')} (there is no unattended level), got "${v}"`);
  return v as AutonomyLevel;
}

function common(cmd: Command): Command {
  return cmd
    .option('-c, --config <file>', 'site configuration file', defaultConfigFile())
    .option('--policy <dir>', 'policy bundle folder (default: the one the configuration names)')
    .option('--json', 'machine-readable output');
}

export function registerPolicy(program: Command): void {
  const policy = program.command('policy').description('Inspect the policy bundle and ask the policy engine for a decision');

  common(policy.command('show').description('Print the compiled bundle: version, change record, design spaces, allow-lists, autonomy, validated and low-risk setpoints, thresholds')).action(
    (opts: Common) => {
      const { bundle, changeControl } = load(opts);
      const c = bundle.content;
      const view = {
        version: bundle.version,
        change: bundle.change,
        changeControl: changeControl.kind,
        site: c.site,
        thresholds: { cappingRisk: c.cappingRiskThreshold, attendanceWindowMs: c.attendanceWindowMs, ownershipWindowMs: c.ownershipWindowMs },
        writableBatchStates: c.writableBatchStates,
        approvers: c.approvers,
        autonomy: {
          raiseRoles: c.raiseRoles,
          agents: Object.fromEntries(Object.entries(c.agents).map(([k, a]) => [k, a.autonomy])),
          setpoints: Object.fromEntries(Object.entries(c.setpoints).map(([k, s]) => [k, s.autonomy])),
        },
        allowLists: Object.fromEntries(Object.entries(c.agents).map(([k, a]) => [k, a.allow])),
        validated: Object.values(c.setpoints).filter((s) => s.validated).map((s) => s.id),
        lowRisk: Object.values(c.setpoints).filter((s) => s.lowRisk).map((s) => s.id),
        modelFamilies: Object.fromEntries(Object.entries(c.agents).flatMap(([k, a]) => (a.modelFamily ? [[k, a.modelFamily]] : []))),
        designSpaces: Object.values(c.designSpaces),
      };
      if (opts.json) return out(JSON.stringify(view, null, 2));
      out(`policy bundle ${bundle.version}`);
      out(`  change ${bundle.change.change_ref} approved by ${bundle.change.approver.name} (${bundle.change.approver.role}) on ${bundle.change.date}: ${bundle.change.reason}`);
      out(`  site ${c.site}; capping risk ≤ ${c.cappingRiskThreshold}; attendance window ${c.attendanceWindowMs / 1000} s; ownership window ${c.ownershipWindowMs / 1000} s; writable batch states ${c.writableBatchStates.join(', ')}`);
      for (const [id, a] of Object.entries(c.agents)) out(`  ${id} ${a.autonomy}${a.modelFamily ? ` model family ${a.modelFamily}` : ''}: ${a.allow.length ? a.allow.join(', ') : '(read-only)'}`);
      out(`  validated: ${view.validated.join(', ')}`);
      out(`  low-risk (L3): ${view.lowRisk.join(', ')}`);
      for (const d of view.designSpaces) out(`  design space ${d.product} × ${d.tooling}: ${Object.keys(d.setpoints).length} setpoints (${d.approvedBy})`);
    },
  );

  common(
    policy
      .command('limits')
      .description('Print the approved design space of a product family × tooling family')
      .requiredOption('--product <id>', 'product family, e.g. ir-family-a')
      .requiredOption('--tooling <id>', 'tooling family, e.g. round-10mm-ff'),
  ).action((opts: Common & { product: string; tooling: string }) => {
    const { bundle } = load(opts);
    const ds = bundle.designSpace.approved(opts.product, opts.tooling);
    const rows = Object.entries(ds.setpoints).map(([id, l]) => {
      const s = bundle.content.setpoints[id]!;
      return { setpoint: id, min: l.min, max: l.max, unit: l.unit, maxStep: l.maxStep, maxRatePerMin: l.maxRatePerMin, validated: s.validated, lowRisk: s.lowRisk, autonomyCeiling: s.autonomy };
    });
    if (opts.json) return out(JSON.stringify({ bundleVersion: bundle.version, product: ds.product, tooling: ds.tooling, approvedBy: ds.approvedBy, setpoints: rows }, null, 2));
    out(`design space ${ds.product} × ${ds.tooling} (${ds.approvedBy}), bundle ${bundle.version.slice(0, 12)}`);
    for (const r of rows) {
      const flags = [r.validated ? 'validated' : '', r.lowRisk ? 'low-risk' : ''].filter(Boolean).join(', ');
      out(`  ${r.setpoint.padEnd(26)} ${String(r.min).padStart(7)} – ${String(r.max).padEnd(7)} ${r.unit.padEnd(10)} step ≤ ${r.maxStep}, rate ≤ ${r.maxRatePerMin}/min${flags ? `  [${flags}]` : ''}`);
    }
  });

  common(
    policy
      .command('eval')
      .description('Ask the policy engine for a decision on one setpoint move (exit 0 whatever the decision)')
      .requiredOption('--product <id>', 'product family')
      .requiredOption('--tooling <id>', 'tooling family')
      .requiredOption('--agent <id>', 'agent id, e.g. agent.compress_fill')
      .requiredOption('--setpoint <tag>', 'setpoint tag id, e.g. press.MainForce')
      .requiredOption('--value <value>', 'value with its UCUM unit, e.g. "12.5 kN"')
      .option('--current <value>', 'current value of the setpoint (with unit); without it the step limit cannot be checked and the move is denied')
      .option('--autonomy <level>', 'agent autonomy L0..L3 (default: the bundle level)')
      .option('--attended', 'an operator is signed in with a fresh presence heartbeat')
      .option('--batch-state <state>', 'batch state', 'running')
      .option('--reviewer <name>', 'named reviewer assigned to the batch')
      .option('--model <id@version>', 'model that produced the proposal, looked up in the model registry of --data for --tenant')
      .option('--tenant <id>', 'tenant whose model registry answers for --model (default: the first tenant of the configuration)')
      .option('--data <dir>', 'data directory holding the model registry (default: data_dir of the configuration)')
      .option('--capping-risk <fraction>', 'what-if capping risk of the vector (0.01 = 1 %); the guarded writer never takes it from anyone: it predicts it from the tenant\'s twin'),
  ).action(
    (
      opts: Common & {
        product: string;
        tooling: string;
        agent: string;
        setpoint: string;
        value: string;
        current?: string;
        autonomy?: string;
        attended?: boolean;
        batchState: string;
        reviewer?: string;
        model?: string;
        tenant?: string;
        data?: string;
        cappingRisk?: string;
      },
    ) => {
      // before anything is loaded: `__proto__` or `constructor` would otherwise find Object's own members
      if (!TAG_ID.test(opts.setpoint)) throw new LkError('LK_VALIDATION', `--setpoint "${opts.setpoint}" is not a tag id (<equipment>.<Tag>, e.g. press.MainForce)`, { option: '--setpoint' });
      const risk = opts.cappingRisk === undefined ? undefined : parseCappingRisk(opts.cappingRisk);
      const { bundle } = load(opts);
      const now = systemClock.now();
      const sp = Object.hasOwn(bundle.content.setpoints, opts.setpoint) ? bundle.content.setpoints[opts.setpoint] : undefined;
      let current: number | null = null;
      if (opts.current !== undefined && sp) {
        const c = toSetpointUnit(bundle.index, /^\s*[-+.\d][\d.eE+-]*\s*$/.test(opts.current) ? Number(opts.current) : opts.current, sp.unit);
        if (!c.ok) throw new LkError('LK_VALIDATION', `--current "${opts.current}" is not a value in a unit compatible with ${sp.unit} (${c.reason})`);
        current = c.value;
      }
      let model: PolicyContext['model'];
      if (opts.model !== undefined) {
        const at = opts.model.lastIndexOf('@');
        if (at <= 0 || at === opts.model.length - 1) throw new LkError('LK_VALIDATION', `--model must be <id>@<version>, got "${opts.model}"`);
        model = { id: opts.model.slice(0, at), version: opts.model.slice(at + 1) };
      }
      const modelRecord = model ? registryRecord(opts, model.id) : undefined;
      const context: PolicyContext = {
        now,
        batchState: opts.batchState,
        current,
        ...(opts.autonomy ? { autonomy: { agent: level(opts.autonomy) } } : {}),
        ...(opts.attended ? { attendance: { operator: process.env.USER || 'cli', lastPresenceAt: now } } : {}),
        ...(opts.reviewer ? { reviewer: opts.reviewer } : {}),
        ...(model ? { model, modelRecord: modelRecord ?? null } : {}),
        ...(risk !== undefined ? { capping: { risk, model: null } } : {}),
      };
      const d = evaluate({ agent: opts.agent, setpoint: opts.setpoint, value: opts.value, product: opts.product, tooling: opts.tooling }, bundle, context);
      if (opts.json) return out(JSON.stringify(d, null, 2));
      out(describe(d));
    },
  );

  registerAutonomy(policy);
  registerApply(policy);
}

function registerApply(policy: Command): void {
  policy
    .command('apply')
    .description('Sign a policy bundle change: compile <dir>, show what it changes against the bundle in force, re-authenticate the approver (a role of approvers.change of the bundle in force), sign it with the site key, audit it with the diff, install it in the folder in force; then `systemctl reload linekeeper`')
    .argument('<dir>', 'folder of the new bundle (not the folder in force)')
    .requiredOption('--change <ref>', 'change reference of the approved change record (the change_ref of its CHANGE.yaml), e.g. CC-2026-0301')
    .option('-c, --config <file>', 'site configuration file', defaultConfigFile())
    .option('-d, --data <dir>', 'data directory (overrides data_dir of the config)')
    .option('--approver <user>', 'user id of the approver (asked for when not given); must be the approver CHANGE.yaml names')
    .option('--meaning <id|text>', 'the meaning signed: one of the site\'s policy_change signature meanings (default: the first); a wrong one lists them, before any password')
    .option('--dry-run', 'compile and show the diff only')
    .option('--json', 'machine-readable output')
    .action(async (dir: string, opts: { change: string; config: string; data?: string; approver?: string; meaning?: string; dryRun?: boolean; json?: boolean }) => {
      const cfg = loadConfig(opts.config, opts.data !== undefined ? { dataDir: opts.data } : {});
      const { applyPolicyChange, policyChangeMeaning, previewPolicyChange } = await import('../../ops/policy-change.js');
      const store = openStore({ dataDir: cfg.dataDir });
      try {
        const p = previewPolicyChange(store, cfg, dir);
        if (!opts.json) {
          out(`policy bundle ${p.inForce ? `${p.inForce.version.slice(0, 12)}… (in force)` : '(none in force)'} → ${p.next.version.slice(0, 12)}… (${dir}), change ${opts.change}`);
          for (const c of p.changes) out(`  ${c.text}`);
          if (p.changes.length === 0) out('  (no change of content)');
          out(`may sign: ${p.allowedRoles.join(', ')} (approvers.change of ${p.inForce ? 'the bundle in force' : 'this bundle: none is in force yet'})`);
        }
        if (opts.dryRun) {
          if (opts.json) out(JSON.stringify({ inForce: p.inForce?.version ?? null, version: p.next.version, changes: p.changes, allowedRoles: p.allowedRoles }, null, 2));
          return;
        }
        // the meaning from the site's list before anyone types a password
        const meaning = policyChangeMeaning(cfg, opts.meaning, opts.change, p.next.version);
        if (!opts.json) out(`meaning: ${meaning.text} (${meaning.id})`);
        const approver = opts.approver ?? (await readLine('approver (user id): '));
        if (!approver) throw new LkError('LK_VALIDATION', 'an approver is required');
        const password = await readPassword(`password of ${approver} (signing policy change ${opts.change}): `);
        const { Identity } = await import('../../api/identity.js');
        const identity = new Identity({ store, clock: store.clock, maxFailedAttempts: cfg.config.api.max_failed_attempts });
        const r = await applyPolicyChange({ store, identity, loaded: cfg, dir, changeRef: opts.change, approver, password, meaning: meaning.id });
        if (opts.json) return out(JSON.stringify({ version: r.version, auditSeq: r.seq, changes: r.changes }, null, 2));
        out(`signed by ${approver} under ${opts.change} (site audit seq ${r.seq}); installed in ${cfg.policyDir} (previous kept as ${cfg.policyDir}.prev)`);
        out('apply now: systemctl reload linekeeper (SIGHUP); the daemon loads it only with this signature');
      } finally {
        store.close();
      }
    });
}

/** A tag id as the configuration builds it: `<equipment>.<Tag>`. */
const TAG_ID = /^[a-z][a-z0-9-]*\.[A-Z][A-Za-z0-9]*$/;

/**
 * `--capping-risk`: a fraction 0…1 written as a plain decimal number. `Number("")` is 0 and `Number(" ")`
 * too, so an empty value would have been taken as "no risk at all"; negative and >1 values are no risk either.
 * @throws LkError LK_VALIDATION
 */
export function parseCappingRisk(v: string): number {
  const n = /^\s*[+]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?\s*$/.test(v) ? Number(v) : Number.NaN;
  if (!Number.isFinite(n) || n < 0 || n > 1) {
    throw new LkError('LK_VALIDATION', `--capping-risk must be a fraction from 0 to 1 (0.01 = 1 %), got "${v}"`, { option: '--capping-risk', value: v });
  }
  return n;
}

/** What the registry of the data directory says of a model id for the tenant (null: nothing, or no registry). */
function registryRecord(opts: Common & { tenant?: string; data?: string }, id: string): ModelRecord | null {
  const cfg = loadConfig(opts.config, opts.data !== undefined ? { dataDir: opts.data } : {});
  const tenant = opts.tenant ?? cfg.config.tenants[0]!.id;
  if (!existsSync(join(cfg.dataDir, DB_FILE))) return null;
  const store = openStore({ dataDir: cfg.dataDir, readonly: true });
  try {
    return modelRecordOf(registrySources(store, cfg.dataDir, cfg.config.site.id).models, { tenant, model: { id, version: '' } } as WriteProposal) ?? null;
  } finally {
    store.close();
  }
}

function describe(d: Decision): string {
  const v = d.valueInSetpointUnit === null ? 'n/a' : `${d.valueInSetpointUnit} ${d.setpointUnit ?? ''}`.trim();
  return [
    `${d.outcome}  (${d.id})`,
    `  reasons: ${d.reasons.length ? d.reasons.join(', ') : '(none)'}`,
    `  value in setpoint unit: ${v}; effective autonomy ${d.autonomy}; pending approval: ${d.pendingApproval}`,
    `  bundle ${d.bundleVersion}`,
  ].join('\n');
}

interface AutonomyOpts extends Common {
  data?: string;
}

/** The data directory's store, and the bundle on disk, which must be the one the daemon accepted there (when any). */
function withStore<T>(opts: AutonomyOpts, readonly: boolean, fn: (store: Store | null, bundle: LoadedPolicyBundle['bundle']) => T): T {
  const cfg = loadConfig(opts.config, opts.data !== undefined ? { dataDir: opts.data } : {});
  const { bundle } = loadPolicyBundle(opts.policy ?? cfg.policyDir, { site: cfg.config });
  if (readonly && !existsSync(join(cfg.dataDir, DB_FILE))) return fn(null, bundle);
  const store = openStore({ dataDir: cfg.dataDir, readonly });
  try {
    const accepted = lastAcceptedBundle(store);
    if (accepted && accepted.version !== bundle.version) {
      throw new LkError('LK_CONFLICT', `the bundle in ${opts.policy ?? cfg.policyDir} (${bundle.version.slice(0, 12)}…) is not the one accepted in ${cfg.dataDir} (${accepted.version.slice(0, 12)}…): start the daemon to accept it first`);
    }
    return fn(store, bundle);
  } finally {
    store.close();
  }
}

function registerAutonomy(policy: Command): void {
  const autonomy = policy.command('autonomy').description('Show or change autonomy levels (per agent, per agent × setpoint, per setpoint ceiling) in the data directory');
  const data = (c: Command): Command => common(c).option('--data <dir>', 'data directory (default: data_dir of the configuration)');

  data(autonomy.command('show').description('Print a tenant\'s levels in force: the bundle\'s, overridden by that tenant\'s persisted changes (who, when, change reference)'))
    .requiredOption('--tenant <id>', 'the tenant whose levels to print (levels are per tenant)')
    .action((opts: AutonomyOpts & { tenant: string }) => {
      const view = withStore(opts, true, (store, bundle) => autonomyView(bundle, store ? autonomyRows(store.db, opts.tenant) : []));
      if (opts.json) return out(JSON.stringify(view, null, 2));
      // when each change was made, on the site's clock with its offset (src/domain/site-time.ts)
      const tz = loadConfig(opts.config, opts.data !== undefined ? { dataDir: opts.data } : {}).config.site.timezone;
      out(`autonomy of ${opts.tenant} (bundle ${view.bundleVersion.slice(0, 12)}…); effective level = min(agent on the setpoint, setpoint ceiling)`);
      const line = (k: string, v: object): string => {
        const m = v as { level: string; source: string; by?: string; role?: string; changeRef?: string | null; at?: string };
        return `  ${k.padEnd(40)} ${m.level}  ${m.source === 'bundle' ? '(bundle)' : `by ${m.by} (${m.role})${m.changeRef ? ` ${m.changeRef}` : ''} at ${m.at === undefined ? '?' : siteIso(m.at, tz)}`}`;
      };
      for (const [k, v] of Object.entries(view.agents)) out(line(k, v));
      for (const v of view.agentSetpoints) out(line(`${(v as { agent: string }).agent} on ${(v as { setpoint: string }).setpoint}`, v));
      for (const [k, v] of Object.entries(view.setpoints)) out(line(`ceiling ${k}`, v));
    });

  autonomy
    .command('set')
    .description('Change one level on the daemon as the signed-in person (linekeeper login): lower always; raise one step at a time by a role the bundle permits, with a change reference and your password (a signature); audited with you as actor')
    .option('--agent <id>', 'agent id, e.g. agent.compress_fill')
    .option('--setpoint <tag>', 'setpoint tag id: with --agent the agent on this setpoint, alone the setpoint ceiling')
    .requiredOption('--level <level>', 'L0..L3 (there is no unattended level)')
    .option('--change-ref <ref>', 'change-control reference (required to raise)')
    .option('--reason <text>', 'why')
    .option('--meaning <id|text>', 'a raise\'s meaning: one of the site\'s autonomy_raise signature meanings (default: the first); a wrong one lists them, before any password')
    .option('--tenant <id>', 'tenant whose path the request uses (default: the session\'s): the tenant whose levels change')
    .option('--url <url>', 'the daemon\'s REST API (default: LINEKEEPER_URL, else the session\'s)')
    .option('--json', 'machine-readable output')
    .action(async (opts: { agent?: string; setpoint?: string; level: string; changeRef?: string; reason?: string; meaning?: string; tenant?: string; url?: string; json?: boolean }) => {
      if (opts.agent === undefined && opts.setpoint === undefined) throw new LkError('LK_VALIDATION', 'give --agent, --setpoint, or both');
      const { session, client, tenant } = connect(opts, Date.now());
      const body = {
        ...(opts.agent !== undefined ? { agent: opts.agent } : {}), ...(opts.setpoint !== undefined ? { setpoint: opts.setpoint } : {}), level: level(opts.level, '--level'),
        ...(opts.changeRef !== undefined ? { changeRef: opts.changeRef } : {}), ...(opts.reason !== undefined ? { reason: opts.reason } : {}),
        ...(opts.meaning !== undefined ? { meaning: opts.meaning } : {}),
      };
      let ev: AutonomyChange;
      try {
        ev = await client.setAutonomy(body);
      } catch (err) {
        // a raise is signed: the daemon asks for the password only once it knows the change is permitted
        if (!LinekeeperError.is(err, 'LK_REAUTH_REQUIRED')) throw err;
        const password = await readPassword(`password for ${session.user} (raising autonomy is signed): `);
        ev = await client.setAutonomy({ ...body, password });
      }
      if (opts.json) return out(JSON.stringify(ev, null, 2));
      const what = [opts.agent, opts.setpoint].filter(Boolean).join(' on ');
      out(ev.type === 'autonomy_unchanged' ? `${what}: already ${ev.to} (nothing changed)` : `${what}: ${ev.from} → ${ev.to} by ${ev.by} (${ev.role})${ev.changeRef ? `, ${ev.changeRef}` : ''}${ev.signed ? ', signed' : ''}; audit ${tenant} #${ev.auditSeq}`);
    });
}

interface AutonomyChange {
  type: string;
  from: string;
  to: string;
  by: string;
  role: string;
  changeRef: string | null;
  auditSeq: number | null;
  signed: boolean;
}
