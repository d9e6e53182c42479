/**
 * Load and validate the site configuration. Validation happens once, at the
 * boundary: shape (zod, strict), then units and cross-references; the result
 * is deep-frozen. Every problem names the file, the line and the path, e.g.
 * `config/site.yaml:57: equipment[2].tags[5].unit: unknown unit "kNN"`.
 */
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { dirname, isAbsolute, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import canonicalize from 'canonicalize';
import { LineCounter, parseDocument } from 'yaml';
import type { z } from 'zod';
import { LkError } from '../errors.js';
import { checkDataDirPath } from '../files.js';
import { EQUIPMENT_ROLES, ROLES, isRole } from '../domain/roles.js';
import { isValidUnit } from '../domain/units.js';
import { defaultConfigFile } from './installation.js';
import { ARRAY_ELEMENT, counterMax, SiteConfig } from './schema.js';

export { defaultConfigFile };

export interface ConfigIssue {
  path: string;
  message: string;
  line?: number;
}

export interface LoadedConfig {
  readonly config: SiteConfig;
  /** Absolute path of the file it came from. */
  readonly file: string;
  /** SHA-256 of the RFC 8785 canonical JSON of the validated config (audited at start). */
  readonly hash: string;
  /** Absolute data directory. */
  readonly dataDir: string;
  /** Absolute policy bundle folder. */
  readonly policyDir: string;
}

/** Format a zod/validation path as `equipment[2].tags[5].unit`. */
export function formatPath(path: readonly PropertyKey[]): string {
  let out = '';
  for (const p of path) {
    if (typeof p === 'number') out += `[${p}]`;
    else out += out === '' ? String(p) : `.${String(p)}`;
  }
  return out || '(root)';
}

function displayName(file: string): string {
  const rel = relative(process.cwd(), file);
  return rel && !rel.startsWith('..') && !isAbsolute(rel) ? rel : file;
}

/** Parse and validate a config file; throws LkError(LK_CONFIG_*) naming the file, line and path. */
export function loadConfig(file: string = defaultConfigFile(), overrides: { dataDir?: string } = {}): LoadedConfig {
  const abs = resolve(file);
  const name = displayName(abs);
  const text = readConfigText(abs, name);
  const lineCounter = new LineCounter();
  const doc = parseDocument(text, { lineCounter, prettyErrors: false, uniqueKeys: true });
  if (doc.errors.length > 0) {
    const e = doc.errors[0]!;
    const line = lineCounter.linePos(e.pos[0]).line;
    throw new LkError('LK_CONFIG_PARSE', `${name}:${line}: ${e.message.split('\n')[0]}`, { file: abs, line });
  }
  const raw: unknown = yamlToJs(doc, (message) => new LkError('LK_CONFIG_PARSE', `${name}: ${message}`, { file: abs }));
  const lineOf = (path: readonly PropertyKey[]): number | undefined => {
    for (let n = path.length; n >= 0; n--) {
      const node = doc.getIn(path.slice(0, n) as (string | number)[], true) as { range?: [number, number, number] } | undefined;
      if (node && typeof node === 'object' && node.range) return lineCounter.linePos(node.range[0]).line;
    }
    return undefined;
  };
  const fail = (issues: ConfigIssue[]): never => {
    const lines = issues.map((i) => `${name}${i.line ? `:${i.line}` : ''}: ${i.path}: ${i.message}`);
    throw new LkError('LK_CONFIG_INVALID', lines.join('\n'), { file: abs, issues });
  };

  const parsed = SiteConfig.safeParse(raw);
  if (!parsed.success) {
    fail(parsed.error.issues.map((i: z.core.$ZodIssue) => toIssue(i, lineOf)));
  }
  const config = (parsed as { data: SiteConfig }).data;
  const issues: ConfigIssue[] = crossCheck(config, dirname(abs)).map(({ rawPath, path, message }) => {
    const line = lineOf(rawPath);
    return { path, message, ...(line ? { line } : {}) };
  });
  if (issues.length > 0) fail(issues);

  // data_dir is relative to the working directory (./data in development, absolute under systemd);
  // the policy bundle is part of the configuration set and is relative to the config file.
  const dataDir = resolve(overrides.dataDir ?? config.data_dir);
  if (overrides.dataDir !== undefined) checkDataDirPath(dataDir);
  else {
    try {
      checkDataDirPath(dataDir);
    } catch {
      // the configuration names it: a configuration error (exit 78, so systemd's ExecStartPre stops the unit)
      const line = lineOf(['data_dir']);
      fail([{ path: 'data_dir', message: `${config.data_dir} exists and is not a directory`, ...(line ? { line } : {}) }]);
    }
  }
  const policyDir = resolve(dirname(abs), config.policy.bundle);
  const hash = createHash('sha256').update(canonicalize(config) ?? '').digest('hex');
  return deepFreeze({ config, file: abs, hash, dataDir, policyDir });
}

/** A configuration is a few kB; a file many times that is not one (and must not exhaust memory). */
const MAX_CONFIG_BYTES = 4 * 1024 * 1024;

/**
 * The file's text. Missing → LK_CONFIG_NOT_FOUND; a directory, no permission, an I/O error or an oversized
 * file → LK_CONFIG_UNREADABLE. Both exit 78, which systemd's ExecStartPre (`config check`) relies on.
 */
function readConfigText(abs: string, name: string): string {
  try {
    const st = statSync(abs);
    if (!st.isFile()) throw new LkError('LK_CONFIG_UNREADABLE', `${name}: ${st.isDirectory() ? 'is a directory, not a configuration file' : 'is not a regular file'}`, { file: abs });
    if (st.size > MAX_CONFIG_BYTES) throw new LkError('LK_CONFIG_UNREADABLE', `${name}: ${st.size} bytes, more than the ${MAX_CONFIG_BYTES} a configuration may have`, { file: abs, size: st.size });
    return readFileSync(abs, 'utf8');
  } catch (err) {
    if (LkError.is(err)) throw err;
    const errno = (err as NodeJS.ErrnoException).code;
    if (errno === 'ENOENT' || errno === 'ENOTDIR') throw new LkError('LK_CONFIG_NOT_FOUND', `${name}: configuration file not found`, { file: abs });
    const reason = errno === 'EACCES' || errno === 'EPERM' ? 'permission denied' : `cannot be read (${errno ?? String(err)})`;
    throw new LkError('LK_CONFIG_UNREADABLE', `${name}: ${reason}`, { file: abs, errno }, { cause: err });
  }
}

/** Aliases a document may expand (yaml's default is 100); a billion-laughs document is refused past it. */
export const MAX_YAML_ALIASES = 100;

/**
 * `doc.toJS()` with the alias budget: the yaml package throws a bare ReferenceError on an alias bomb, which
 * `fail` turns into the caller's LkError.
 */
export function yamlToJs(doc: { toJS(o?: { maxAliasCount?: number }): unknown }, fail: (message: string) => LkError): unknown {
  try {
    return doc.toJS({ maxAliasCount: MAX_YAML_ALIASES });
  } catch (err) {
    if (err instanceof ReferenceError || err instanceof RangeError) throw fail(`too many YAML aliases or too deep a nesting (${err.message}); a configuration needs none of that`);
    throw err;
  }
}

function toIssue(i: z.core.$ZodIssue, lineOf: (p: readonly PropertyKey[]) => number | undefined): ConfigIssue {
  let message = i.message;
  let path = i.path;
  if (i.code === 'unrecognized_keys') {
    const keys = (i as { keys: string[] }).keys;
    message = `unknown key${keys.length > 1 ? 's' : ''} ${keys.map((k) => `"${k}"`).join(', ')}`;
    if (keys.length === 1) path = [...i.path, keys[0]!];
  } else if (i.code === 'invalid_type' && /received undefined/.test(i.message)) {
    message = `required (${i.message.replace(/^Invalid input: /, '')})`;
  }
  const line = lineOf(i.code === 'unrecognized_keys' ? i.path : path);
  return { path: formatPath(path), message, ...(line ? { line } : {}) };
}

interface RawIssue {
  rawPath: (string | number)[];
  path: string;
  message: string;
}

/** The supervisor tags every supervised (not monitor-only) equipment has: its PLC watchdog's side of the heartbeat and LKG revert. */
export const SUPERVISOR_TAGS = ['Heartbeat', 'WatchdogTimeoutMs', 'SupervisorState', 'ActiveRecipe', 'LkgRecipeId', 'RevertCount'] as const;
/** OPC UA data types a setpoint may have: one number (the guarded writer writes and reads back a scalar). */
const SETPOINT_TYPES: ReadonlySet<string> = new Set(['Boolean', 'Int16', 'UInt16', 'Int32', 'UInt32', 'Float', 'Double']);
/** OPC UA data types that take scale/offset (numbers, and arrays of numbers element by element). */
const SCALABLE_TYPES: ReadonlySet<string> = new Set(['Int16', 'UInt16', 'Int32', 'UInt32', 'Float', 'Double', ...Object.keys(ARRAY_ELEMENT)]);
const INTEGER_TYPES: ReadonlySet<string> = new Set(['Int16', 'UInt16', 'Int32', 'UInt32']);
const REGISTER_WIDTH = { int16: 1, uint16: 1, int32: 2, uint32: 2, float32: 2, float64: 4 } as const;

const COUNTER_TYPES: ReadonlySet<string> = new Set(['Int16', 'UInt16', 'Int32', 'UInt32', 'int16', 'uint16', 'int32', 'uint32']);

/**
 * The supervision profile against the tags it acts on: the state values have the SupervisorState tag's type
 * (words for a String, integers for an integer, a bit for a Boolean; what linekeeper writes is what it reads),
 * no value means both supervised and fallback, and the heartbeat kind suits its tag (a Boolean life bit toggles;
 * a counter is an integer that wraps inside its type).
 */
/**
 * The role map against the site: each key a known role, each value a configured tag of the role's kind and unit,
 * one tag per role, and no site tag named like a role that is mapped elsewhere (a read by that name would be
 * ambiguous).
 */
export function roleIssues(c: SiteConfig): { path: (string | number)[]; message: string }[] {
  const out: { path: (string | number)[]; message: string }[] = [];
  const tags = new Map<string, { kind: string; unit: string }>();
  for (const e of c.equipment) for (const t of e.tags) tags.set(`${e.id}.${t.name}`, { kind: t.kind, unit: t.unit });
  const byTag = new Map<string, string>();
  const units = new Set(c.equipment.map((e) => e.id));
  for (const [role, tag] of Object.entries(c.roles ?? {})) {
    const path = ['roles', role];
    if (!role.includes('.')) {
      if (!(EQUIPMENT_ROLES as readonly string[]).includes(role)) out.push({ path, message: `unknown equipment role "${role}" (one of ${EQUIPMENT_ROLES.join(', ')})` });
      else if (tag.includes('.') || !units.has(tag)) out.push({ path, message: `"${tag}" is not configured equipment (an equipment role maps to an equipment id)` });
      else if (role !== tag && units.has(role)) out.push({ path, message: `the site also has equipment named ${role}: rename it or map the role to it, so that the name means one thing` });
      continue;
    }
    if (!isRole(role)) {
      out.push({ path, message: `unknown role "${role}" (the roles are listed in docs/roles.md)` });
      continue;
    }
    const info = ROLES[role];
    const t = tags.get(tag);
    if (!t) {
      out.push({ path, message: `"${tag}" is not a configured tag (<equipment>.<Tag> of this file's equipment)` });
      continue;
    }
    if (info.kind === 'setpoint' && t.kind !== 'setpoint') out.push({ path, message: `${role} is a setpoint: "${tag}" is a ${t.kind} tag, which linekeeper never writes` });
    if (info.kind === 'measurement' && t.kind === 'supervisor') out.push({ path, message: `${role} is a measurement: "${tag}" is a supervisor tag` });
    if (t.unit !== info.unit) out.push({ path, message: `${role} is in ${info.unit}: "${tag}" is in ${t.unit} (give the tag the role's unit, with its scale or a unit alias)` });
    const prev = byTag.get(tag);
    if (prev) out.push({ path, message: `"${tag}" already plays ${prev}: one tag plays one role` });
    byTag.set(tag, role);
    if (tag !== role && tags.has(role)) out.push({ path, message: `the site also has a tag named ${role}: rename that tag or map the role to it, so that the name means one thing` });
  }
  return out;
}

function supervisionIssues(e: SiteConfig['equipment'][number]): { path: (string | number)[]; message: string }[] {
  const out: { path: (string | number)[]; message: string }[] = [];
  const typeOf = (name: string): string | undefined => {
    const t = (e.tags as readonly { name: string; data_type?: string; type?: string }[]).find((x) => x.name === name);
    return t ? (t.data_type ?? t.type) : undefined;
  };
  const st = e.supervision?.state;
  const stType = typeOf('SupervisorState');
  if (st && stType) {
    const fits = (v: string | number | boolean): string | null => {
      if (stType === 'String') return typeof v === 'string' ? null : `SupervisorState is a String: its values are words, not ${JSON.stringify(v)}`;
      if (stType === 'Boolean') return typeof v === 'boolean' || v === 0 || v === 1 ? null : `SupervisorState is a Boolean: its values are true/false (or 0/1), not ${JSON.stringify(v)}`;
      if (typeof v !== 'number') return `SupervisorState is ${stType}: its values are integers, not ${JSON.stringify(v)}`;
      const max = counterMax(stType);
      const min = stType.toLowerCase().startsWith('u') ? 0 : max === null ? -Infinity : -(max + 1);
      return max !== null && (v > max || v < min) ? `${v} does not fit SupervisorState's type ${stType}` : null;
    };
    for (const key of ['supervised', 'fallback'] as const) {
      st[key].forEach((v, j) => {
        const m = fits(v);
        if (m) out.push({ path: ['supervision', 'state', key, j], message: m });
      });
    }
    for (const key of ['revert', 'rearm'] as const) {
      const v = st[key];
      const m = v === undefined ? null : fits(v);
      if (m) out.push({ path: ['supervision', 'state', key], message: m });
    }
    const both = st.supervised.filter((v) => st.fallback.some((w) => String(w) === String(v)));
    if (both.length > 0) out.push({ path: ['supervision', 'state', 'fallback'], message: `${both.map((v) => JSON.stringify(v)).join(', ')} cannot mean both supervised and fallback` });
  }
  const hbType = typeOf('Heartbeat');
  if (hbType && e.supervision?.mode !== 'monitor_only') {
    const kind = e.heartbeat.kind ?? 'counter';
    if (kind === 'counter' && !COUNTER_TYPES.has(hbType)) {
      out.push({ path: ['heartbeat', 'kind'], message: hbType === 'Boolean' ? 'the Heartbeat tag is a Boolean life bit: heartbeat.kind must be toggle' : `a heartbeat counter needs an integer tag, and Heartbeat is ${hbType}` });
    }
    if (kind === 'toggle' && hbType !== 'Boolean' && !COUNTER_TYPES.has(hbType)) out.push({ path: ['heartbeat', 'kind'], message: `a toggled life bit needs a Boolean or integer tag, and Heartbeat is ${hbType}` });
    const max = counterMax(hbType);
    if (e.heartbeat.wrap_at !== undefined && max !== null && e.heartbeat.wrap_at > max) out.push({ path: ['heartbeat', 'wrap_at'], message: `${e.heartbeat.wrap_at} does not fit the Heartbeat tag's type ${hbType} (at most ${max})` });
  }
  return out;
}

/** Checks zod cannot express: units, uniqueness, dangling references, register overlaps. */
function crossCheck(c: SiteConfig, baseDir: string): RawIssue[] {
  const out: RawIssue[] = [];
  const add = (rawPath: (string | number)[], message: string): void => {
    out.push({ rawPath, path: formatPath(rawPath), message });
  };
  const unique = <T>(list: readonly T[], key: (t: T) => string, base: string, what: string): Set<string> => {
    const seen = new Set<string>();
    list.forEach((t, i) => {
      const k = key(t);
      if (seen.has(k)) add([base, i, 'id'], `duplicate ${what} "${k}"`);
      seen.add(k);
    });
    return seen;
  };
  const tooling = unique(c.tooling, (t) => t.id, 'tooling', 'tooling id');
  const products = unique(c.products, (p) => p.id, 'products', 'product id');
  unique(c.tenants, (t) => t.id, 'tenants', 'tenant id');
  c.tenants.forEach((t, i) => {
    // the audit trail keeps the edge node's own events on a chain named `site`
    if (t.id === 'site') add(['tenants', i, 'id'], 'tenant id "site" is reserved for the edge node\'s own audit chain');
  });
  const connections = new Map<string, SiteConfig['connections'][number]>();
  c.connections.forEach((k, i) => {
    if (connections.has(k.id)) add(['connections', i, 'id'], `duplicate connection id "${k.id}"`);
    connections.set(k.id, k);
  });
  const equipment = unique(c.equipment, (e) => e.id, 'equipment', 'equipment id');

  c.products.forEach((p, i) =>
    p.tooling.forEach((t, j) => {
      if (!tooling.has(t)) add(['products', i, 'tooling', j], `unknown tooling "${t}"`);
    }),
  );
  c.tenants.forEach((t, i) =>
    t.products.forEach((p, j) => {
      if (!products.has(p)) add(['tenants', i, 'products', j], `unknown product "${p}"`);
    }),
  );
  c.line.equipment.forEach((e, i) => {
    if (!equipment.has(e)) add(['line', 'equipment', i], `unknown equipment "${e}"`);
  });
  if (c.line.phase) {
    const [eq, name] = c.line.phase.tag.split('.') as [string, string];
    const unit = c.equipment.find((e) => e.id === eq);
    if (!unit || !unit.tags.some((t) => t.name === name)) add(['line', 'phase', 'tag'], `the phase tag "${c.line.phase.tag}" is not a configured tag`);
  }
  for (const issue of roleIssues(c)) add(issue.path, issue.message);
  for (const [label, a] of Object.entries(c.unit_aliases ?? {})) {
    if (!isValidUnit(a.unit)) add(['unit_aliases', label, 'unit'], `unknown unit "${a.unit}" (expected a UCUM code such as N, kN, {tbl}/h)`);
  }

  const nodeIds = new Map<string, string>(); // connection|node → where
  const registers = new Map<string, string>(); // connection|unit|table|address → where
  c.equipment.forEach((e, i) => {
    const conn = connections.get(e.connection);
    if (!conn) add(['equipment', i, 'connection'], `unknown connection "${e.connection}"`);
    else if (conn.protocol !== e.protocol) add(['equipment', i, 'protocol'], `equipment speaks ${e.protocol} but connection "${conn.id}" is ${conn.protocol}`);
    const names = new Set<string>();
    e.tags.forEach((t, j) => {
      const where = `equipment[${i}].tags[${j}]`;
      if (names.has(t.name)) add(['equipment', i, 'tags', j, 'name'], `duplicate tag "${e.id}.${t.name}"`);
      names.add(t.name);
      if (!isValidUnit(t.unit)) add(['equipment', i, 'tags', j, 'unit'], `unknown unit "${t.unit}" (expected a UCUM code such as kN, mm, Cel, g/min, {rev}/min)`);
      if (t.range && !(t.range.min < t.range.max)) add(['equipment', i, 'tags', j, 'range'], `min (${t.range.min}) must be below max (${t.range.max})`);
      if ('node_id' in t) {
        const k = `${e.connection}|${t.node_id}`;
        const prev = nodeIds.get(k);
        if (prev) add(['equipment', i, 'tags', j, 'node_id'], `duplicate node id "${t.node_id}" (also at ${prev})`);
        nodeIds.set(k, where);
        if (t.kind === 'setpoint' && !SETPOINT_TYPES.has(t.data_type)) add(['equipment', i, 'tags', j, 'data_type'], 'a setpoint must be a numeric scalar (not String, an array or ByteString)');
        if ((t.scale !== undefined || t.offset !== undefined) && !SCALABLE_TYPES.has(t.data_type)) add(['equipment', i, 'tags', j, 'scale'], `scale/offset apply to numeric tags, not ${t.data_type}`);
        if (t.enum !== undefined) {
          if (!INTEGER_TYPES.has(t.data_type)) add(['equipment', i, 'tags', j, 'enum'], `an enumeration maps the values of an integer tag (Int16, UInt16, Int32, UInt32), not ${t.data_type}`);
          if (t.kind === 'setpoint') add(['equipment', i, 'tags', j, 'enum'], 'a setpoint is written as a number: it cannot be an enumeration');
          if (t.scale !== undefined || t.offset !== undefined) add(['equipment', i, 'tags', j, 'enum'], 'an enumeration names raw values: it takes no scale or offset');
        }
      } else if (e.protocol === 'modbus') {
        if (t.kind === 'measurement' && t.table !== 'input' && t.table !== 'holding') add(['equipment', i, 'tags', j, 'table'], 'invalid table');
        if (t.kind === 'setpoint' && t.table !== 'holding') add(['equipment', i, 'tags', j, 'table'], 'a setpoint must be a holding register (input registers are read-only)');
        const width = REGISTER_WIDTH[t.type];
        if (t.address + width > 65536) add(['equipment', i, 'tags', j, 'address'], `register ${t.address}+${width} runs past 65535`);
        for (let r = t.address; r < t.address + width; r++) {
          const k = `${e.connection}|${e.unit_id}|${t.table}|${r}`;
          const prev = registers.get(k);
          if (prev) {
            add(['equipment', i, 'tags', j, 'address'], `register ${t.table} ${r} of unit ${e.unit_id} overlaps ${prev}`);
            break;
          }
          registers.set(k, where);
        }
      }
    });
    const monitorOnly = e.supervision?.mode === 'monitor_only';
    for (const s of SUPERVISOR_TAGS) {
      const idx = (e.tags as readonly { name: string; kind: string }[]).findIndex((t) => t.name === s);
      const tag = e.tags[idx];
      // a monitor-only unit is read, never beaten nor commanded: its PLC program needs no supervisor tags
      if (!tag && !monitorOnly) add(['equipment', i, 'tags'], `missing supervisor tag "${s}" (the PLC watchdog needs it; a unit linekeeper only watches is supervision.mode: monitor_only)`);
      else if (tag && tag.kind !== 'supervisor') add(['equipment', i, 'tags', idx, 'kind'], `"${s}" must be of kind supervisor`);
    }
    for (const issue of supervisionIssues(e)) add(['equipment', i, ...issue.path], issue.message);
  });
  // the simulated PLCs' watchdog: a heartbeat no faster than it reverts every PLC right after ready
  c.equipment.forEach((e, i) => {
    const conn = connections.get(e.connection);
    if (conn?.endpoint === 'sim' && e.heartbeat.period_ms >= c.simulator.watchdog_timeout_ms) {
      add(['equipment', i, 'heartbeat', 'period_ms'], `heartbeat period ${e.heartbeat.period_ms} ms must be below the PLC watchdog timeout (simulator.watchdog_timeout_ms ${c.simulator.watchdog_timeout_ms} ms), or the PLC reverts to its LKG recipe right after ready`);
    }
  });
  const oidc = c.api.oidc;
  if (oidc) {
    const tenantIds = new Set(c.tenants.map((t) => t.id));
    (oidc.tenants ?? []).forEach((t, j) => {
      if (!tenantIds.has(t)) add(['api', 'oidc', 'tenants', j], `unknown tenant "${t}"`);
    });
    for (const [k, ts] of Object.entries(oidc.tenant_map ?? {})) {
      ts.forEach((t, j) => {
        if (!tenantIds.has(t)) add(['api', 'oidc', 'tenant_map', k, j], `unknown tenant "${t}"`);
      });
    }
    if (oidc.jwks_file !== undefined && !existsSync(resolve(baseDir, oidc.jwks_file))) add(['api', 'oidc', 'jwks_file'], `JWKS file "${oidc.jwks_file}" does not exist`);
  }
  const policyDir = resolve(baseDir, c.policy.bundle);
  if (!existsSync(policyDir)) add(['policy', 'bundle'], `policy bundle folder "${c.policy.bundle}" does not exist`);
  return out;
}

function deepFreeze<T>(o: T): T {
  if (o && typeof o === 'object' && !Object.isFrozen(o)) {
    Object.freeze(o);
    for (const v of Object.values(o as object)) deepFreeze(v);
  }
  return o;
}

