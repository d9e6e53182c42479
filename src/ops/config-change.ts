/**
 * Change control of the site configuration (Annex 11 §10): `linekeeper config apply FILE --change <ref>`
 * validates the new file, shows the diff, re-authenticates a named approver whose role may approve it (admin or
 * process_engineer), records `config.apply` on the site chain with the old and new hashes, then replaces the
 * file. The running daemon, on SIGHUP, takes a new file only when an approval of exactly that content (hash) is
 * on the chain, and only the sections it can apply without dropping equipment connections; anything else is
 * refused with the old configuration kept, and the refusal is audited.
 */
import { renameSync, writeFileSync, readFileSync, existsSync, copyFileSync } from 'node:fs';
import canonicalize from 'canonicalize';
import { SITE_TENANT } from '../audit/entry.js';
import type { Identity } from '../api/identity.js';
import type { LoadedConfig } from '../config/load.js';
import type { SiteConfig } from '../config/schema.js';
import { chooseMeaning, meaningsInForce, type ChosenMeaning } from '../domain/signature-meanings.js';
import { LkError } from '../errors.js';
import type { Store } from '../store/store.js';

/** Roles that may approve a configuration change. */
export const CONFIG_APPROVER_ROLES = ['admin', 'process_engineer'] as const;

/**
 * Sections the daemon applies on SIGHUP; every other section needs a restart (it would drop connections).
 * `signatures` is read by the signing routes at each request; `retention` by `archive prune` from the file itself
 * (the daemon holds nothing of it).
 */
export const LIVE_SECTIONS = ['log', 'maintenance', 'signatures', 'retention'] as const;

/**
 * A line diff of two texts (`-`/`+`/` ` prefixed lines, unchanged runs over 3 lines elided), from the longest
 * common subsequence. Configuration files are small; O(n·m) is fine.
 */
export function lineDiff(oldText: string, newText: string, context = 3): string {
  const a = oldText.split('\n');
  const b = newText.split('\n');
  const n = a.length;
  const m = b.length;
  const lcs: Uint32Array[] = Array.from({ length: n + 1 }, () => new Uint32Array(m + 1));
  for (let i = n - 1; i >= 0; i--) for (let j = m - 1; j >= 0; j--) lcs[i]![j] = a[i] === b[j] ? lcs[i + 1]![j + 1]! + 1 : Math.max(lcs[i + 1]![j]!, lcs[i]![j + 1]!);
  const ops: { t: ' ' | '-' | '+'; line: string; at: number }[] = [];
  let i = 0;
  let j = 0;
  while (i < n || j < m) {
    if (i < n && j < m && a[i] === b[j]) ops.push({ t: ' ', line: a[i++]!, at: j++ + 1 });
    else if (j < m && (i >= n || lcs[i]![j + 1]! >= lcs[i + 1]![j]!)) ops.push({ t: '+', line: b[j]!, at: ++j });
    else ops.push({ t: '-', line: a[i++]!, at: j + 1 });
  }
  const keep = ops.map((o, k) => o.t !== ' ' || ops.slice(Math.max(0, k - context), k + context + 1).some((x) => x.t !== ' '));
  const out: string[] = [];
  let skipped = false;
  ops.forEach((o, k) => {
    if (!keep[k]) {
      if (!skipped) out.push(`@@ … @@`);
      skipped = true;
      return;
    }
    skipped = false;
    out.push(`${o.t}${o.line}`);
  });
  return out.join('\n');
}

/** Top-level sections whose content differs between two configurations. */
export function changedSections(a: SiteConfig, b: SiteConfig): string[] {
  const keys = new Set([...Object.keys(a), ...Object.keys(b)]);
  return [...keys].filter((k) => canonicalize((a as Record<string, unknown>)[k]) !== canonicalize((b as Record<string, unknown>)[k])).sort();
}

export interface ConfigApproval {
  readonly seq: number;
  readonly approver: string;
  readonly role: string;
  readonly changeRef: string;
  readonly newHash: string;
}

/** The newest `config.apply` on the site chain that approved exactly `hash`, or null. */
export function findApproval(store: Pick<Store, 'db'>, hash: string): ConfigApproval | null {
  const rows = store.db
    .prepare("SELECT seq, actor, args FROM audit_entry WHERE tenant = ? AND action = 'config.apply' AND new_value = ? ORDER BY seq DESC LIMIT 1")
    .all(SITE_TENANT, JSON.stringify(hash)) as { seq: number; actor: string; args: string | null }[];
  const r = rows[0];
  if (!r) return null;
  const args = (r.args ? JSON.parse(r.args) : {}) as { role?: string; change_ref?: string };
  return { seq: r.seq, approver: r.actor, role: args.role ?? '', changeRef: args.change_ref ?? '', newHash: hash };
}

export interface ApplyRequest {
  readonly store: Store;
  readonly identity: Pick<Identity, 'reauthenticate'>;
  /** The configuration in force (the file to be replaced). */
  readonly current: LoadedConfig;
  /** The validated new configuration. */
  readonly next: LoadedConfig;
  readonly changeRef: string;
  readonly approver: string;
  readonly password: string;
  readonly reason?: string;
  /** One of the signature meanings for config_change of the configuration in force (an id or its text); default: the first. */
  readonly meaning?: string;
}

/**
 * The meaning a configuration change is approved with: an entry of the list of the configuration IN FORCE (a new
 * file cannot word its own approval) for config_change, filled with the change reference.
 * @throws LkError LK_MEANING_NOT_ALLOWED
 */
export function configChangeMeaning(current: LoadedConfig, chosen: string | undefined, changeRef: string): ChosenMeaning {
  return chooseMeaning(meaningsInForce(current.config.signatures?.meanings), 'config_change', chosen, { change: changeRef });
}

/**
 * Approve and apply a configuration change: take the meaning from the list in force, re-authenticate the approver,
 * check the role, audit `config.apply` (with the meaning and its id), then replace the file in force atomically
 * (the previous one is kept as `<file>.prev`).
 * @throws LkError LK_VALIDATION (empty change reference, nothing changed), LK_MEANING_NOT_ALLOWED (before the
 *   password), LK_REAUTH_FAILED, LK_PASSWORD_CHANGE_REQUIRED
 *   (the approver's password), LK_FORBIDDEN (a role that may not approve configuration).
 */
export async function applyConfigChange(r: ApplyRequest): Promise<{ seq: number; sections: string[] }> {
  if (!/^[A-Za-z0-9][A-Za-z0-9._/-]{1,63}$/.test(r.changeRef)) throw new LkError('LK_VALIDATION', 'a change reference (e.g. CC-2026-0301) is required');
  if (r.current.hash === r.next.hash) throw new LkError('LK_VALIDATION', 'the new configuration is the same as the one in force: nothing to apply');
  const meaning = configChangeMeaning(r.current, r.meaning, r.changeRef);
  const user = await r.identity.reauthenticate(r.approver, r.password, { purpose: 'config.apply', change_ref: r.changeRef });
  if (!(CONFIG_APPROVER_ROLES as readonly string[]).includes(user.role)) {
    r.store.audit.append({ tenant: SITE_TENANT, actor: user.id, kind: 'config_change', action: 'config.apply_refused', args: { change_ref: r.changeRef, role: user.role }, reason: 'role may not approve configuration changes' });
    throw new LkError('LK_FORBIDDEN', `${user.id} (${user.role}) may not approve configuration changes: ${CONFIG_APPROVER_ROLES.join(' or ')} required`);
  }
  const sections = changedSections(r.current.config, r.next.config);
  const e = r.store.audit.append({
    tenant: SITE_TENANT, actor: user.id, kind: 'config_change', action: 'config.apply',
    args: { change_ref: r.changeRef, role: user.role, name: user.name, file: r.current.file, from: r.next.file, sections, meaning: meaning.text, meaning_id: meaning.id },
    ...(r.reason ? { reason: r.reason } : {}), old: r.current.hash, new: r.next.hash,
  });
  const text = readFileSync(r.next.file, 'utf8');
  if (existsSync(r.current.file)) copyFileSync(r.current.file, `${r.current.file}.prev`);
  const tmp = `${r.current.file}.tmp-${process.pid}`;
  writeFileSync(tmp, text, { mode: 0o644 });
  renameSync(tmp, r.current.file);
  return { seq: e.seq, sections };
}
