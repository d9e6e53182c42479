/**
 * `linekeeper config report`: the configuration specification of a node as a signed record (GAMP 5 configuration
 * specification; EU GMP Annex 11 §4, §10) — what the configuration file holds, all of it (secrets as "(set)"), the
 * roles it maps, the policy bundle with its signature, the site's users and roles, the models with their status and
 * cards — with a few consistency checks that can fail, so a validation lead approves exactly this configuration and
 * later compares two reports (`--diff`: {@link previousConfigReport}, src/validation/data-diff.ts).
 *
 * Nothing here writes: the content is made from the configuration, the bundle folder and a store opened read-only;
 * make.ts signs and keeps it.
 */
import { readFileSync } from 'node:fs';
import { basename, dirname, resolve } from 'node:path';
import { canonicalJson, SITE_TENANT, type Json } from '../audit/entry.js';
import { loadSitePublicKey, type PublicSiteKey } from '../audit/keys.js';
import { SUPERVISOR_TAGS, type LoadedConfig } from '../config/load.js';
import { readPolicyBundle } from '../config/policy-bundle.js';
import { roleMapOf } from '../domain/roles.js';
import { lastAcceptedBundle, verifyPolicySignature } from '../engine/policy-gate.js';
import { LkError } from '../errors.js';
import { readInputFile } from '../files.js';
import { listModels, type ModelSummary } from '../models/registry.js';
import type { PolicyBundle } from '../policy/index.js';
import type { Store } from '../store/store.js';
import { UserStore, type UserRecord } from '../store/user-store.js';
import { configReportSections } from './config-report-pdf.js';
import { changeLine, diffData, type DataChange } from './data-diff.js';
import { countSummary, type ReportContent } from './make.js';
import { verifyReport, type ReportCheck, type SignedReport } from './report.js';

/** How a secret of the configuration shows in the report: that it is set, never what it is. */
export const SET = '(set)';

/**
 * A key whose text value is a secret, or names a file holding one (`password_file`, `metrics_token_file`, a TLS
 * `key`, an OIDC `client_secret`). Numbers and booleans under such a name are settings (`token_ttl_s`,
 * `accept_id_tokens`) and show.
 */
const SECRET_KEY = /pass(word|wd|phrase)|secret|token|credential|private|api_?key|^key$|_key$/i;
/** `scheme://user:password@host`: the password of a URL. */
const URL_PASSWORD = /^([a-z][a-z0-9+.-]*:\/\/[^/@:\s]*):([^/@\s]*)@/i;

/**
 * `v` as JSON for a signed record: every text under a secret's key (at any depth, so keys another version of the
 * configuration adds are covered too) becomes "(set)", a URL's password too; a number that JSON cannot hold becomes
 * null, an absent value is left out.
 */
export function redacted(v: unknown, key = ''): Json | undefined {
  if (v === undefined || typeof v === 'function') return undefined;
  if (v === null || typeof v === 'boolean') return v;
  if (typeof v === 'number') return Number.isFinite(v) ? v : null;
  if (typeof v === 'string') return SECRET_KEY.test(key) ? SET : v.replace(URL_PASSWORD, `$1:${SET}@`);
  if (v instanceof Date) return v.toISOString();
  if (Array.isArray(v)) return v.map((x) => redacted(x, key) ?? null);
  const out: { [k: string]: Json } = {};
  for (const [k, x] of Object.entries(v as Record<string, unknown>)) {
    const r = redacted(x, k);
    if (r !== undefined) out[k] = r;
  }
  return out;
}

/** The verified signature of the bundle on this node, or why the daemon would refuse it. */
function policySignature(store: Store, loaded: LoadedConfig, bundle: PolicyBundle): { [key: string]: Json } {
  try {
    const { record, payload: p } = verifyPolicySignature(store, loadSitePublicKey(loaded.dataDir), loaded.config.site.id, bundle, null);
    return { status: 'verified', keyId: p.key_id, signer: { id: p.signer.id, name: p.signer.name, role: p.signer.role }, changeRef: p.change_ref, signedAt: p.signed_at, method: p.method, auditSeq: record.seq };
  } catch (err) {
    if (!LkError.is(err)) throw err;
    return { status: 'refused', code: err.code, message: err.message };
  }
}

/** A local user as the specification lists them: who, in which role, for which tenants — no hash, no counter. */
function userSpec(u: UserRecord): { [key: string]: Json } {
  return { id: u.id, name: u.name, role: u.role, tenants: [...u.tenants], disabled: u.disabled, createdAt: u.createdAt, createdBy: u.createdBy };
}

/** A model with its status and the summary of its card (the ids of its training data are counted, not listed). */
function modelSpec(m: ModelSummary): { [key: string]: Json } {
  const c = m.card;
  return redacted({
    id: m.id, kind: m.kind, version: m.version, status: m.status, sites: m.sites, sha256: m.sha256,
    changedAt: m.changedAt, changedBy: m.changedBy, changeRef: m.changeRef,
    card: {
      intendedUse: c.intendedUse, tenant: c.tenant,
      trainingData: { summary: c.trainingData.summary, samples: c.trainingData.samples, ids: c.trainingData.ids.length, ...(c.trainingData.seed !== undefined ? { seed: c.trainingData.seed } : {}) },
      metrics: c.metrics, acceptance: c.acceptance, fidelity: c.fidelity, validRanges: c.validRanges, limitations: c.limitations,
    },
  }) as { [key: string]: Json };
}

/** The hash of the configuration the node last started or reloaded with (site chain), or null before its first start. */
/** The configuration the node last started or reloaded with, as the site chain recorded it (its canonical hash). */
export function configInForce(store: Store): { hash: string; seq: number; action: string } | null {
  const row = store.db
    .prepare("SELECT seq, action, args, new_value AS newValue FROM audit_entry WHERE tenant = ? AND action IN ('site.start', 'config.change') ORDER BY seq DESC LIMIT 1")
    .get(SITE_TENANT) as { seq: number; action: string; args: string | null; newValue: string | null } | undefined;
  if (!row) return null;
  const hash = row.action === 'config.change' ? (JSON.parse(row.newValue ?? 'null') as unknown) : (JSON.parse(row.args ?? '{}') as { config_hash?: unknown }).config_hash;
  return typeof hash === 'string' ? { hash, seq: row.seq, action: row.action } : null;
}

/** The secrets the report must not hold: every password hash of the store, what the configuration's secret files hold, a URL's password. */
function secretsOf(loaded: LoadedConfig, users: readonly UserRecord[]): { values: string[]; hashes: number; files: number } {
  const values = users.flatMap((u) => [u.password, ...u.passwordHistory]);
  const hashes = values.length;
  let files = 0;
  const visit = (v: unknown, key: string): void => {
    if (typeof v === 'string' && SECRET_KEY.test(key) && /_file$|^key$|_key$/.test(key)) {
      try {
        // compared, never kept: a secret shorter than 8 characters would match by chance
        const first = readFileSync(resolve(dirname(loaded.file), v), 'utf8').split(/\r?\n/)[0]!.trim();
        if (first.length >= 8) values.push(first);
        files++;
      } catch {
        // not readable by this user (a daemon's 0600 file): it cannot have been read into the report either
      }
    } else if (typeof v === 'string') {
      const pw = URL_PASSWORD.exec(v)?.[2];
      if (pw && pw.length >= 8) values.push(pw);
    } else if (v && typeof v === 'object') for (const [k, x] of Object.entries(v)) visit(x, Array.isArray(v) ? key : k);
  };
  visit(loaded.config, '');
  return { values, hashes, files };
}

/** A report this site signed, read and verified with the site's own key (pinned: a report re-signed with another key is refused). */
export interface PreviousReport {
  file: string;
  signed: SignedReport;
}

/**
 * Read `file` as the previous configuration report to compare with: it must verify with `key`, the site's public key
 * (not only with the key it carries, which whoever changed it could have replaced), and be a configuration report.
 * @throws LkError LK_FILE_* (missing, unreadable), LK_REPORT_INVALID (not JSON, not a report, changed after signing,
 *   signed by another key), LK_VALIDATION (a report of another kind).
 */
export function previousConfigReport(file: string, key: PublicSiteKey): PreviousReport {
  const text = readInputFile(file, 'previous report (--diff)', 64 * 1024 * 1024);
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (err) {
    throw new LkError('LK_REPORT_INVALID', `${file}: not JSON, so not a signed report (${(err as Error).message})`, { file }, { cause: err });
  }
  const verdict = verifyReport(doc, key);
  if (!verdict.ok) throw new LkError('LK_REPORT_INVALID', `${file} does not verify, nothing is compared with it: ${verdict.problems.join('; ')}`, { file, problems: verdict.problems });
  const signed = doc as SignedReport;
  if (signed.record.kind !== 'config') throw new LkError('LK_VALIDATION', `${file} is ${signed.record.kind === 'iq' ? 'an' : 'a'} ${signed.record.kind} report, not a configuration report`, { file, kind: signed.record.kind });
  return { file, signed };
}

/** Keys of `data` that say where it came from or what it was compared with: shown beside a diff, not in it. */
const NOT_COMPARED = ['source', 'diffAgainst'] as const;
const compared = (data: { [key: string]: Json }): { [key: string]: Json } => Object.fromEntries(Object.entries(data).filter(([k]) => !(NOT_COMPARED as readonly string[]).includes(k)));

/**
 * The configuration specification of `loaded` on the node whose store is `store` (read-only is enough), as the content
 * of a signed report; with `previous`, what changed since that report (in `data.diffAgainst`, a PDF section and the
 * summary).
 * @throws LkError LK_INTERNAL when the content would hold a password hash or a secret (a fault: nothing is written).
 */
export function configReportContent(o: { loaded: LoadedConfig; store: Store; startedAt: number; previous?: PreviousReport }): ReportContent {
  const { loaded, store } = o;
  const c = loaded.config;
  const checks: ReportCheck[] = [];
  const tags = c.equipment.reduce((n, e) => n + e.tags.length, 0);

  checks.push({
    id: 'CFG-VALID', title: 'The configuration validates: schema (unknown keys refused), units, cross-references', requirements: ['A11.5', 'A11.10'], status: 'pass',
    detail: `${basename(loaded.file)} is valid: site ${c.site.id}, line ${c.line.id}, ${c.equipment.length} equipment, ${tags} tags, ${c.connections.length} connections, ${c.tenants.length} tenants`,
    evidence: { configSha256: loaded.hash },
  });

  const running = configInForce(store);
  checks.push({
    id: 'CFG-IN-FORCE', title: 'The configuration reported is the one the node runs', requirements: ['A11.10'],
    status: running?.hash === loaded.hash ? 'pass' : 'warn',
    detail: !running ? 'the node has not started with any configuration yet: this one takes effect at its first start'
      : running.hash === loaded.hash ? `the node ${running.action === 'site.start' ? 'started' : 'reloaded'} with it (site audit seq ${running.seq})`
        : `the node runs another configuration (sha256 ${running.hash.slice(0, 12)}…, site audit seq ${running.seq}): this one takes effect only through \`linekeeper config apply\``,
    evidence: { inForce: running?.hash ?? null, reported: loaded.hash },
  });

  let bundle: PolicyBundle | null = null;
  let policy: { [key: string]: Json };
  try {
    bundle = readPolicyBundle(loaded.policyDir, c);
    policy = { version: bundle.version, change: redacted(bundle.change)!, signature: policySignature(store, loaded, bundle), content: redacted(bundle.content)! };
    checks.push({
      id: 'CFG-POLICY-COMPILES', title: 'The policy bundle compiles against this configuration (every setpoint, agent, product and tooling it names exists)', requirements: ['R7', 'INV-FAIL-CLOSED-AUDIT'], status: 'pass',
      detail: `bundle ${bundle.version.slice(0, 12)}…: ${Object.keys(bundle.content.designSpaces).length} design spaces, ${Object.keys(bundle.content.agents).length} agents, ${Object.keys(bundle.content.setpoints).length} setpoints`,
      evidence: { version: bundle.version },
    });
  } catch (err) {
    if (!LkError.is(err)) throw err;
    policy = { error: { code: err.code, message: err.message } };
    checks.push({ id: 'CFG-POLICY-COMPILES', title: 'The policy bundle compiles against this configuration', requirements: ['R7', 'INV-FAIL-CLOSED-AUDIT'], status: 'fail', detail: `${err.message} [${err.code}]: every write would be denied` });
  }

  const sig = policy['signature'] as { [key: string]: Json } | undefined;
  const signer = sig?.['signer'] as { id?: string } | undefined;
  checks.push({
    id: 'CFG-POLICY-SIGNED', title: 'The policy bundle is signed, and its signature verifies with the site key for exactly this content', requirements: ['INV-POLICY-SIGNED', 'A11.10'],
    status: !bundle ? 'not_applicable' : sig?.['status'] === 'verified' ? 'pass' : 'fail',
    detail: !bundle ? 'no bundle compiled' : sig?.['status'] === 'verified'
      ? `signed by ${String(signer?.id)} under ${String(sig['changeRef'])} at ${String(sig['signedAt'])} (site audit seq ${String(sig['auditSeq'])})`
      : `${String(sig?.['message'])} [${String(sig?.['code'])}]: the daemon refuses this bundle`,
    ...(sig?.['status'] === 'verified' ? { evidence: { keyId: sig['keyId']!, auditSeq: sig['auditSeq']! } } : {}),
  });

  const accepted = lastAcceptedBundle(store);
  checks.push({
    id: 'CFG-POLICY-IN-FORCE', title: 'The policy bundle reported is the one the node accepted last', requirements: ['A11.10'],
    status: !bundle ? 'not_applicable' : accepted?.version === bundle.version ? 'pass' : 'warn',
    detail: !bundle ? 'no bundle compiled' : !accepted ? 'no bundle accepted on this node yet: the daemon accepts this one (when signed) at its start'
      : accepted.version === bundle.version ? `accepted under ${accepted.changeRef}` : `the node accepted ${accepted.version.slice(0, 12)}… (${accepted.changeRef}) last; this one takes effect at the next reload`,
    evidence: { accepted: accepted?.version ?? null },
  });

  const unsupervised: string[] = [];
  const missing: string[] = [];
  for (const e of c.equipment) {
    if (e.supervision?.mode === 'monitor_only') {
      unsupervised.push(e.id);
      continue;
    }
    for (const s of SUPERVISOR_TAGS) if (!e.tags.some((t) => t.name === s && t.kind === 'supervisor')) missing.push(`${e.id}.${s}`);
  }
  checks.push({
    id: 'CFG-SUPERVISION', title: 'Every supervised equipment has its supervisor tags (heartbeat, watchdog, state, recipes, revert count)', requirements: ['R8', 'INV-LKG-REVERT'],
    status: missing.length === 0 ? 'pass' : 'fail',
    detail: missing.length === 0
      ? `${c.equipment.length - unsupervised.length} supervised equipment, each with ${SUPERVISOR_TAGS.join(', ')}${unsupervised.length ? `; monitor-only (read, never written): ${unsupervised.join(', ')}` : ''}`
      : `missing or not of kind supervisor: ${missing.join(', ')}`,
    evidence: { monitorOnly: unsupervised, missing },
  });

  const userRecords = new UserStore(store.db).all();
  const qaRoles = bundle?.content.approvers.qa ?? [];
  const ssoQa = Object.values(c.api.oidc?.role_map ?? {}).some((r) => qaRoles.includes(r));
  const noSigner = c.tenants.filter((t) => !userRecords.some((u) => qaRoles.includes(u.role) && u.tenants.includes(t.id) && !u.disabled && u.lockedAt === null && !u.mustChange)).map((t) => t.id);
  checks.push({
    id: 'CFG-RELEASE-SIGNERS', title: 'Every tenant has a person who may sign its batch releases (a role of the bundle\'s approvers.qa)', requirements: ['R3', 'P11.10(g)'],
    status: !bundle ? 'not_applicable' : noSigner.length === 0 ? 'pass' : ssoQa ? 'warn' : 'fail',
    detail: !bundle ? 'no bundle compiled' : noSigner.length === 0 ? `each of ${c.tenants.map((t) => t.id).join(', ')} has an active local ${qaRoles.join(' or ')}`
      : `no active local ${qaRoles.join(' or ')} for ${noSigner.join(', ')}${ssoQa ? ': only through the identity provider (api.oidc.role_map maps a QA role)' : ': no batch of theirs can be released'}`,
    evidence: { withoutSigner: noSigner },
  });

  const models = listModels(store);
  const validated = models.filter((m) => m.status === 'validated');
  const astray = validated.filter((m) => !m.sites.includes(c.site.id) || !c.tenants.some((t) => t.id === m.tenant)).map((m) => `${m.tenant}/${m.id}`);
  checks.push({
    id: 'CFG-MODELS', title: 'Every validated model belongs to a tenant of this site and is pinned to it', requirements: ['R9'],
    status: validated.length === 0 ? 'not_applicable' : astray.length === 0 ? 'pass' : 'warn',
    detail: validated.length === 0 ? `no validated model (${models.length} registered)` : astray.length === 0 ? `${validated.length} validated: ${validated.map((m) => `${m.tenant}/${m.id}`).join(', ')}`
      : `validated but not usable here (another site or tenant): ${astray.join(', ')}`,
    evidence: { validated: validated.length, astray },
  });

  const byTenant: { [tenant: string]: Json } = {};
  for (const m of models) ((byTenant[m.tenant] ??= []) as Json[]).push(modelSpec(m));
  const roles = roleMapOf(c);
  const data: { [key: string]: Json } = {
    source: { configFile: loaded.file, configSha256: loaded.hash, policyDir: loaded.policyDir, policyVersion: bundle?.version ?? null, dataDir: loaded.dataDir },
    configuration: redacted(c)!,
    roles: Object.fromEntries([...roles.entries].sort(([a], [b]) => a.localeCompare(b))),
    policy,
    users: userRecords.map(userSpec),
    models: byTenant,
  };
  if (o.previous) {
    const p = o.previous.signed;
    const changes = diffData(compared(p.record.data), compared(data));
    const src = p.record.data['source'] as { configSha256?: Json; policyVersion?: Json } | undefined;
    data['diffAgainst'] = {
      file: basename(o.previous.file), recordHash: p.recordHash, signedAt: p.record.signer.timestamp, signedBy: p.record.signer.user, result: p.record.result,
      configSha256: src?.configSha256 ?? null, policyVersion: src?.policyVersion ?? null, changes: changes as unknown as Json,
    };
  }

  // the guard of last resort: the configuration's secrets are redacted above; this proves it on the finished content
  const secrets = secretsOf(loaded, userRecords);
  const text = canonicalJson(data);
  const leaked = secrets.values.some((s) => text.includes(s)) || text.includes('scrypt$');
  if (leaked) throw new LkError('LK_INTERNAL', 'the configuration report would hold a password hash or a secret: nothing was written');
  checks.push({
    id: 'CFG-NO-SECRETS', title: 'The specification holds no password, password hash, token or secret (a secret shows as "(set)")', requirements: ['P11.10(d)', 'P11.300'], status: 'pass',
    detail: `none of the ${secrets.hashes} password hashes of the ${userRecords.length} users, nor what the ${secrets.files} secret files of the configuration hold, is in the report`,
    evidence: { passwordHashes: secrets.hashes, secretFiles: secrets.files },
  });

  const diff = data['diffAgainst'] as { changes: DataChange[] } | undefined;
  return {
    kind: 'config',
    title: `Configuration specification — site ${c.site.id}, line ${c.line.id}`,
    summary: (cs) => `${countSummary(cs)}; ${c.equipment.length} equipment, ${tags} tags, ${userRecords.length} users, ${models.length} models${diff ? `; ${diff.changes.length} change${diff.changes.length === 1 ? '' : 's'} since the previous report` : ''}`,
    checks, data, startedAt: o.startedAt,
    sections: configReportSections(data),
  };
}

/** The diff of a report's content as lines for a terminal (empty without `--diff`). */
export function diffLines(content: Pick<ReportContent, 'data'>): string[] {
  const d = content.data['diffAgainst'] as { file: string; recordHash: string; signedAt: string; signedBy: string; changes: DataChange[] } | undefined;
  if (!d) return [];
  return [
    `changes since ${d.file} (record ${d.recordHash.slice(0, 12)}…, signed by ${d.signedBy} at ${d.signedAt}): ${d.changes.length || 'none'}`,
    ...d.changes.map((ch) => `  ${changeLine(ch)}`),
  ];
}
