/**
 * `linekeeper doctor`: what site IT checks before (and after) starting the daemon on an edge node. Each
 * check answers ok / warn / fail with what to do about it; the worst result is the exit code. Nothing here
 * changes the node: the audit store is opened read-only, the data directory gets one probe file that is
 * removed at once, a port is bound for an instant and released.
 *
 * The probes that touch the machine (TCP connect, timedatectl, statfs) come in through {@link DoctorProbes}
 * so that tests can stand in for the network and the time daemon.
 *
 * Every configured OPC UA node of a reachable endpoint is looked at over one session (nothing is written):
 * it exists, is readable (writable for a setpoint), and has the configured DataType and unit. An unsecured
 * connection uses a throw-away client certificate; a secured one the daemon's PKI in the data directory
 * (created there if missing, an unknown server certificate lands in its rejected/ as at start).
 */
import { isLoopback, loadTls } from '../config/api-tls.js';
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, statfsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { createServer, connect } from 'node:net';
import { dirname, join } from 'node:path';
import { loadConfig, type LoadedConfig } from '../config/load.js';
import { LkError } from '../errors.js';
import { readPolicyBundle } from '../config/policy-bundle.js';
import { lastAcceptedBundle, policySignatureStatus } from '../engine/policy-gate.js';
import { DB_FILE, openStore } from '../store/store.js';
import { verifyStore, type VerifyReport } from '../audit/verify.js';
import { profileOf } from '../../connectors/supervision.js';

export type CheckStatus = 'ok' | 'warn' | 'fail';

export interface CheckResult {
  /** Stable id, e.g. `config`, `endpoint:opcua-line`. */
  readonly id: string;
  readonly status: CheckStatus;
  /** What was found. */
  readonly message: string;
  /** What to do (warn and fail only). */
  readonly action?: string;
}

export interface DoctorReport {
  readonly status: CheckStatus;
  readonly checks: readonly CheckResult[];
}

/** The machine-facing probes; each has a real default. */
export interface DoctorProbes {
  /** Resolve true when a TCP connection to host:port opens within `timeoutMs`. */
  tcp(host: string, port: number, timeoutMs: number): Promise<boolean>;
  /** `timedatectl show` output (key=value lines), or null when the command is not available. */
  timedatectl(): Promise<string | null>;
  /** Free bytes for an unprivileged user and the filesystem type magic of the path's filesystem. */
  statfs(path: string): { free: number; type: number };
  /** Resolve 'free', 'linekeeper' (in use by a linekeeper that answers /healthz) or 'in_use'. */
  port(host: string, port: number): Promise<'free' | 'linekeeper' | 'in_use'>;
  /**
   * Every configured node of one OPC UA connection (connectors/opcua/inspect.ts): resolves with a finding per tag,
   * rejects (an LkError) when no session can be made.
   */
  opcuaNodes(loaded: LoadedConfig, connectionId: string, timeoutMs: number): Promise<readonly NodeFinding[]>;
  /** The JSON body of GET /readyz of the linekeeper on host:port, or null when none answers. */
  readyz(host: string, port: number): Promise<unknown>;
  now(): number;
}

export interface DoctorOptions {
  configFile: string;
  dataDir?: string;
  probes?: Partial<DoctorProbes>;
  /** Below this many free bytes: warn (default 2 GiB). */
  warnFreeBytes?: number;
  /** Below this many free bytes: fail (default 200 MiB). */
  failFreeBytes?: number;
  /** Certificates that expire within this many days: warn (default 30). */
  certWarnDays?: number;
  /** TCP connect timeout per endpoint (default 2000 ms). */
  connectTimeoutMs?: number;
  /** Bound of the node check of one OPC UA connection (default 15000 ms). */
  nodeTimeoutMs?: number;
}

/** What doctor learns about one configured OPC UA node (see connectors/opcua/inspect.ts). */
export interface NodeFinding {
  readonly tag: string;
  readonly node: string;
  readonly status: CheckStatus;
  readonly problems: readonly string[];
}

const GiB = 1024 ** 3;
const MiB = 1024 ** 2;

/** Filesystem magic numbers (statfs f_type) of network and user-space filesystems: not a local disk. */
const REMOTE_FS: Readonly<Record<number, string>> = {
  0x6969: 'nfs', 0xff534d42: 'cifs', 0xfe534d42: 'smb2', 0x517b: 'smb', 0x65735546: 'fuse', 0x01021997: 'v9fs', 0x564c: 'ncp', 0x73757245: 'coda', 0x7461636f: 'ocfs2', 0x47504653: 'gpfs', 0x00c36400: 'ceph',
};

/** Worst of a list (fail > warn > ok). */
export function worst(statuses: readonly CheckStatus[]): CheckStatus {
  return statuses.includes('fail') ? 'fail' : statuses.includes('warn') ? 'warn' : 'ok';
}

/** Exit code of a status: 0 ok, 1 warn, 2 fail (the Nagios convention monitoring tools already read). */
export function exitCodeOf(s: CheckStatus): number {
  return s === 'ok' ? 0 : s === 'warn' ? 1 : 2;
}

/**
 * Run every check. Never throws for what it finds (a broken configuration is a `fail` result); the checks
 * that depend on a valid configuration are reported as skipped failures when it is not valid.
 */
export async function runDoctor(o: DoctorOptions): Promise<DoctorReport> {
  const p: DoctorProbes = { ...defaultProbes, ...o.probes };
  const checks: CheckResult[] = [];
  let loaded: LoadedConfig | undefined;
  try {
    loaded = loadConfig(o.configFile, o.dataDir !== undefined ? { dataDir: o.dataDir } : {});
    checks.push({ id: 'config', status: 'ok', message: `${loaded.file} valid (sha256 ${loaded.hash.slice(0, 12)}…)` });
  } catch (err) {
    checks.push({ id: 'config', status: 'fail', message: errText(err), action: 'fix the file and run `linekeeper config check`; the other checks need a valid configuration' });
    return { status: 'fail', checks };
  }
  const dataDir = loaded.dataDir;
  const hasDb = existsSync(join(dataDir, DB_FILE));
  checks.push(policyCheck(loaded, hasDb));
  checks.push(supervisionCheck(loaded));
  checks.push(dataDirCheck(dataDir, p));
  checks.push(freeSpaceCheck(dataDir, p, o.warnFreeBytes ?? 2 * GiB, o.failFreeBytes ?? 200 * MiB));
  checks.push(auditCheck(dataDir, hasDb));
  const endpoints = await endpointChecks(loaded, p, o.connectTimeoutMs ?? 2000);
  checks.push(...endpoints);
  checks.push(...(await nodeChecks(loaded, p, endpoints, o.nodeTimeoutMs ?? 15_000)));
  checks.push(await certificateCheck(loaded, p.now(), o.certWarnDays ?? 30));
  checks.push(apiTlsCheck(loaded, p.now(), o.certWarnDays ?? 30));
  checks.push(clockCheck(await p.timedatectl()));
  const ports = await portCheck(loaded, p);
  checks.push(ports);
  if (ports.status === 'ok' && ports.message.endsWith('served by a running linekeeper')) {
    checks.push(eventLoopCheck(await p.readyz(loaded.config.api.host, loaded.config.api.port)));
  }
  return { status: worst(checks.map((c) => c.status)), checks };
}

/**
 * How the line is supervised, unit by unit: a monitor-only unit is read and never written (no heartbeat, no
 * setpoint, no revert), which is how a site starts; the doctor says so, so that nobody takes it for supervised.
 */
function supervisionCheck(loaded: LoadedConfig): CheckResult {
  const units = loaded.config.equipment.map((e) => ({ id: e.id, p: profileOf(e) }));
  const watched = units.filter((u) => u.p.mode === 'monitor_only').map((u) => u.id);
  const supervised = units.filter((u) => u.p.mode !== 'monitor_only').map((u) => `${u.id} (${u.p.heartbeat.kind}${u.p.heartbeat.kind === 'counter' && u.p.heartbeat.wrapAt !== null ? ` to ${u.p.heartbeat.wrapAt}` : ''}, fallback ${u.p.state.fallback.map((v) => JSON.stringify(v)).join('/')})`);
  const message = `supervised: ${supervised.join(', ') || 'none'}; monitor-only: ${watched.join(', ') || 'none'}`;
  if (watched.length === 0) return { id: 'supervision', status: 'ok', message };
  return { id: 'supervision', status: 'warn', message, action: `linekeeper writes nothing to ${watched.join(', ')} (no heartbeat, no setpoint, no revert): their PLCs are not supervised; give them the supervisor tags and supervision.mode: supervised when the site is ready` };
}

/** An error as one line for a check: an LkError's message with its code. */
export function errText(err: unknown): string {
  if (LkError.is(err)) return `${err.message} [${err.code}]`;
  return err instanceof Error ? err.message : String(err);
}

/**
 * The policy bundle of `loaded`: valid against the configuration, and signed (policySignatureStatus: a warning before
 * the first start, a failure when the daemon would refuse it). `hasDb`: the data directory holds a database.
 */
export function policyCheck(loaded: LoadedConfig, hasDb: boolean): CheckResult {
  let lastAccepted = null;
  if (hasDb) {
    try {
      const store = openStore({ dataDir: loaded.dataDir, readonly: true });
      try {
        lastAccepted = lastAcceptedBundle(store);
      } finally {
        store.close();
      }
    } catch {
      // the audit check reports an unreadable store; policy is still checked on its own
    }
  }
  try {
    const bundle = readPolicyBundle(loaded.policyDir, loaded.config);
    const sig = policySignatureStatus(loaded, bundle);
    const message = `bundle ${bundle.version} valid against the configuration (${lastAccepted?.version === bundle.version ? 'in force' : lastAccepted ? 'not the accepted one' : 'none accepted yet'}); ${sig.text}`;
    if (sig.status === 'ok') return { id: 'policy', status: 'ok', message };
    return { id: 'policy', status: sig.status, message, action: `sign it: linekeeper policy apply <dir> --change <ref> (without a signed bundle every setpoint write is denied)` };
  } catch (err) {
    return { id: 'policy', status: 'fail', message: errText(err), action: `fix the bundle in ${loaded.policyDir} (and CHANGE.yaml for a new version): without it every setpoint write is denied` };
  }
}

function dataDirCheck(dataDir: string, p: DoctorProbes): CheckResult {
  // a missing data directory is created at first start: then its parent must be writable
  const where = existsSync(dataDir) ? dataDir : dirname(dataDir);
  if (!existsSync(where)) return { id: 'data_dir', status: 'fail', message: `${dataDir} and its parent do not exist`, action: 'create the data directory (systemd: StateDirectory=linekeeper does it)' };
  try {
    rmSync(mkdtempSync(join(where, '.lk-doctor-')), { recursive: true });
  } catch (err) {
    return { id: 'data_dir', status: 'fail', message: `${where} is not writable: ${errText(err)}`, action: 'give the linekeeper user write access to the data directory' };
  }
  let fsType = 'local';
  try {
    const t = p.statfs(where).type;
    const remote = REMOTE_FS[t >>> 0];
    if (remote) return { id: 'data_dir', status: 'fail', message: `${where} is on a ${remote} filesystem`, action: 'put the data directory on a local disk: SQLite locking and fsync are not reliable over network filesystems' };
  } catch {
    fsType = 'unknown filesystem';
  }
  return { id: 'data_dir', status: 'ok', message: `${dataDir} ${where === dataDir ? 'writable' : 'will be created (parent writable)'}, ${fsType}` };
}

function freeSpaceCheck(dataDir: string, p: DoctorProbes, warnBytes: number, failBytes: number): CheckResult {
  const where = existsSync(dataDir) ? dataDir : dirname(dataDir);
  let free: number;
  try {
    free = p.statfs(where).free;
  } catch (err) {
    return { id: 'free_space', status: 'warn', message: `cannot read free space of ${where}: ${errText(err)}`, action: 'check the disk by hand (df -h)' };
  }
  const text = `${(free / GiB).toFixed(2)} GiB free on ${where}`;
  if (free < failBytes) return { id: 'free_space', status: 'fail', message: text, action: 'free disk space now: the audit trail refuses to run when it cannot write, and every write is then stopped' };
  if (free < warnBytes) return { id: 'free_space', status: 'warn', message: text, action: 'free disk space or move old backups off the node' };
  return { id: 'free_space', status: 'ok', message: text };
}

function auditCheck(dataDir: string, hasDb: boolean): CheckResult {
  return auditVerification(dataDir, hasDb).check;
}

/**
 * The audit check with the verification it judged (null when there is no database or it could not be read), for a
 * report that records the chains' heads and counts. Opens the store read-only; never throws.
 */
export function auditVerification(dataDir: string, hasDb: boolean): { check: CheckResult; report: VerifyReport | null } {
  if (!hasDb) return { check: { id: 'audit', status: 'ok', message: 'no database yet: the first start creates it and the site key' }, report: null };
  try {
    const store = openStore({ dataDir, readonly: true });
    try {
      const r = verifyStore(store);
      const entries = r.chains.reduce((n, c) => n + c.count, 0);
      if (r.ok) return { check: { id: 'audit', status: 'ok', message: `${r.chains.length} chains, ${entries} entries verify` }, report: r };
      const bad = [...r.chains.filter((c) => !c.ok).map((c) => `${c.tenant}: ${c.damage?.kind} at seq ${c.damage?.seq}`), ...r.problems.map((d) => d.detail)];
      return { check: { id: 'audit', status: 'fail', message: `audit trail does not verify: ${bad.join('; ')}`, action: 'stop and run `linekeeper audit verify`; restore the last good backup (`linekeeper restore`) and report the damage to QA' }, report: r };
    } finally {
      store.close();
    }
  } catch (err) {
    return { check: { id: 'audit', status: 'fail', message: errText(err), action: 'run `linekeeper audit verify` for detail; restore the last good backup if the file is damaged' }, report: null };
  }
}

/** host and port of a connection endpoint; opc.tcp defaults to 4840. */
export function endpointAddress(endpoint: string): { host: string; port: number } | null {
  const m = /^opc\.tcp:\/\/(\[[^\]]+\]|[^:/]+)(?::(\d+))?/.exec(endpoint) ?? /^(\[[^\]]+\]|[^:]+|.+):(\d+)$/.exec(endpoint);
  if (!m) return null;
  return { host: m[1]!.replace(/^\[|\]$/g, ''), port: m[2] ? Number(m[2]) : 4840 };
}

async function endpointChecks(loaded: LoadedConfig, p: DoctorProbes, timeoutMs: number): Promise<CheckResult[]> {
  return Promise.all(
    loaded.config.connections.map(async (c): Promise<CheckResult> => {
      const id = `endpoint:${c.id}`;
      if (c.endpoint === 'sim') {
        return loaded.config.simulator.embedded
          ? { id, status: 'ok', message: 'embedded simulator (started by serve)' }
          : { id, status: 'fail', message: 'endpoint "sim" but simulator.embedded is false', action: 'set the equipment address of this connection, or simulator.embedded: true for a demonstration' };
      }
      const a = endpointAddress(c.endpoint);
      if (!a) return { id, status: 'fail', message: `cannot read host and port from ${c.endpoint}`, action: 'fix the endpoint in the configuration' };
      const ok = await p.tcp(a.host, a.port, timeoutMs).catch(() => false);
      return ok
        ? { id, status: 'ok', message: `${a.host}:${a.port} reachable` }
        : { id, status: 'fail', message: `${a.host}:${a.port} did not accept a TCP connection within ${timeoutMs} ms`, action: 'check the cable, VLAN and firewall between the edge node and the equipment, and that the PLC/server is on' };
    }),
  );
}

/**
 * Per OPC UA connection whose endpoint answered: `nodes:<connection>` (how many nodes are fine), and for each
 * node with a problem `node:<tag>` naming the node and every reason.
 */
async function nodeChecks(loaded: LoadedConfig, p: DoctorProbes, endpoints: readonly CheckResult[], timeoutMs: number): Promise<CheckResult[]> {
  const out: CheckResult[] = [];
  for (const c of loaded.config.connections) {
    if (c.protocol !== 'opcua' || c.endpoint === 'sim') continue;
    if (endpoints.find((e) => e.id === `endpoint:${c.id}`)?.status !== 'ok') continue;
    const id = `nodes:${c.id}`;
    let findings: readonly NodeFinding[];
    try {
      findings = await p.opcuaNodes(loaded, c.id, timeoutMs);
    } catch (err) {
      const untrusted = LkError.is(err, 'LK_CERT_UNTRUSTED');
      out.push({ id, status: 'fail', message: `cannot look at the configured nodes: ${errText(err)}`, action: untrusted ? '`linekeeper certs list`, compare the thumbprint with the equipment, then `linekeeper certs trust <thumbprint>`' : 'check that the endpoint is an OPC UA server, its namespace_uri and security settings' });
      continue;
    }
    const bad = findings.filter((f) => f.status !== 'ok');
    for (const f of bad) {
      out.push({ id: `node:${f.tag}`, status: f.status, message: `${f.tag} (${f.node}): ${f.problems.join('; ')}`, action: f.status === 'fail' ? 'fix the tag in the configuration (node_id, data_type, kind, unit or a unit_aliases entry) against the address space of the server, or the server' : 'check the tag against the equipment documentation' });
    }
    const status = worst(bad.map((f) => f.status));
    out.push({
      id, status,
      message: `${findings.length - bad.length} of ${findings.length} configured nodes exist, are readable${findings.some((f) => f.status === 'ok') ? ' (writable where setpoints)' : ''}, and have the configured type and unit`,
      ...(status !== 'ok' ? { action: `see the node:<tag> checks of ${c.id}` } : {}),
    });
  }
  return out;
}

async function certificateCheck(loaded: LoadedConfig, now: number, warnDays: number): Promise<CheckResult> {
  const secured = loaded.config.connections.filter((c) => c.protocol === 'opcua' && c.endpoint !== 'sim' && c.security.mode !== 'None');
  const pki = join(loaded.dataDir, 'pki');
  if (!existsSync(pki)) {
    if (secured.length === 0) return { id: 'certificates', status: 'ok', message: 'no secured OPC UA connection, no PKI yet' };
    return { id: 'certificates', status: 'warn', message: `${secured.length} secured OPC UA connections and no server certificate trusted yet`, action: 'start once, then `linekeeper certs list` and `linekeeper certs trust <thumbprint>` after checking the thumbprint on the equipment' };
  }
  // loaded on use: node-opcua takes a second to import
  const { listCertificates } = await import('../../connectors/opcua/pki.js');
  const list = listCertificates(loaded.dataDir, now);
  const trusted = list.filter((c) => c.status === 'trusted');
  const rejected = list.filter((c) => c.status === 'rejected');
  const invalid = trusted.filter((c) => !c.valid);
  if (invalid.length > 0) return { id: 'certificates', status: 'fail', message: `trusted certificates outside their validity: ${invalid.map((c) => `${c.subject} (until ${c.validTo.slice(0, 10)})`).join('; ')}`, action: 'get renewed certificates from the equipment vendor and trust them; the connection is refused until then' };
  const soon = trusted.filter((c) => Date.parse(c.validTo) - now < warnDays * 86_400_000);
  if (soon.length > 0) return { id: 'certificates', status: 'warn', message: `trusted certificates expiring within ${warnDays} days: ${soon.map((c) => `${c.subject} (${c.validTo.slice(0, 10)})`).join('; ')}`, action: 'plan the certificate renewal with the equipment vendor' };
  if (secured.length > 0 && trusted.length === 0) return { id: 'certificates', status: 'warn', message: `no trusted server certificate; ${rejected.length} waiting in rejected/`, action: '`linekeeper certs list`, compare thumbprints with the equipment, then `linekeeper certs trust <thumbprint>`' };
  return { id: 'certificates', status: rejected.length > 0 ? 'warn' : 'ok', message: `${trusted.length} trusted, ${rejected.length} rejected`, ...(rejected.length > 0 ? { action: 'review the rejected certificates (`linekeeper certs list`): trust or delete them' } : {}) };
}

/**
 * HTTPS of the REST API: beyond loopback, passwords and tokens travel the plant network, so a bind there without
 * `api.tls` fails; configured files must be readable, the certificate valid now (a warning within `warnDays`
 * of its end) and the key its own.
 */
export function apiTlsCheck(loaded: LoadedConfig, now: number, warnDays: number): CheckResult {
  const a = loaded.config.api;
  if (!a.tls) {
    if (isLoopback(a.host)) return { id: 'api_tls', status: 'ok', message: `REST API on loopback (${a.host}), plain HTTP` };
    return { id: 'api_tls', status: 'fail', message: `REST API bound to ${a.host} (beyond loopback) without TLS: passwords and bearer tokens would cross the network in clear`, action: 'set api.tls: { cert, key } (PEM files of a certificate the clients trust), or bind api.host to 127.0.0.1' };
  }
  try {
    const t = loadTls(a.tls, dirname(loaded.file), now);
    const until = new Date(t.validTo).toISOString();
    if (t.validTo - now < warnDays * 86_400_000) return { id: 'api_tls', status: 'warn', message: `API certificate ${t.subject} expires ${until}`, action: 'renew the API certificate and restart the daemon' };
    return { id: 'api_tls', status: 'ok', message: `HTTPS with ${t.subject}, valid until ${until}; key matches` };
  } catch (err) {
    return { id: 'api_tls', status: 'fail', message: errText(err), action: 'fix api.tls: readable PEM files, a certificate valid now, and its own private key (the daemon does not start the API otherwise)' };
  }
}

/** The keys of `timedatectl show` (key=value lines) doctor reads; null when the command is not available. */
export function timedatectlState(out: string | null): { synced?: string; ntp?: string; timezone?: string } | null {
  if (out === null) return null;
  const kv = Object.fromEntries(out.split('\n').map((l) => l.split('=')).filter((x) => x.length >= 2).map(([k, ...v]) => [k!.trim(), v.join('=').trim()]));
  return { synced: kv['NTPSynchronized'], ntp: kv['NTP'], timezone: kv['Timezone'] };
}

/** Interpret `timedatectl show`: Part 11 timestamps need a synchronised clock. */
export function clockCheck(out: string | null): CheckResult {
  const state = timedatectlState(out);
  if (state === null) return { id: 'clock', status: 'warn', message: 'NTP state unknown (timedatectl not available)', action: 'make sure the node synchronises its clock (chrony or systemd-timesyncd against the plant time server): audit timestamps depend on it' };
  const { synced, ntp } = state;
  if (synced === 'yes') return { id: 'clock', status: 'ok', message: `clock synchronised (NTP ${ntp ?? '?'}, timezone ${state.timezone ?? '?'})` };
  if (synced === 'no') return { id: 'clock', status: 'warn', message: `clock NOT synchronised (NTP service ${ntp === 'yes' ? 'on' : 'off'})`, action: ntp === 'yes' ? 'check that the plant time server is reachable (chronyc sources / timedatectl timesync-status)' : 'enable time synchronisation: `timedatectl set-ntp true` with the plant time server configured' };
  return { id: 'clock', status: 'warn', message: 'NTP state unknown (timedatectl gave no NTPSynchronized)', action: 'check time synchronisation by hand' };
}

async function portCheck(loaded: LoadedConfig, p: DoctorProbes): Promise<CheckResult> {
  const { host, port } = loaded.config.api;
  if (port === 0) return { id: 'ports', status: 'ok', message: 'REST API on a free port chosen at start' };
  const r = await p.port(host, port);
  if (r === 'free') return { id: 'ports', status: 'ok', message: `${host}:${port} free for the REST API` };
  if (r === 'linekeeper') return { id: 'ports', status: 'ok', message: `${host}:${port} served by a running linekeeper` };
  return { id: 'ports', status: 'fail', message: `${host}:${port} is in use by another program`, action: `find it (ss -ltnp 'sport = :${port}') or set api.port in the configuration` };
}

/**
 * The running daemon's event-loop delay, as its GET /readyz reports it (src/ops/loop-delay.ts). The PLC heartbeats
 * are written on that loop: a window whose worst delay passed the bound means heartbeats were that late.
 */
export function eventLoopCheck(body: unknown): CheckResult {
  const e = (body as { event_loop?: { p99_ms?: unknown; max_ms?: unknown; worst_ms?: unknown; bound_ms?: unknown; over_bound?: unknown } } | null)?.event_loop;
  if (!e || typeof e.max_ms !== 'number' || typeof e.bound_ms !== 'number') {
    return { id: 'event_loop', status: 'warn', message: 'the running linekeeper does not report its event-loop delay (/readyz)', action: 'check the daemon answers GET /readyz; upgrade it if it is older than this CLI' };
  }
  const figures = `p99 ${String(e.p99_ms)} ms, max ${e.max_ms} ms in the last window (bound ${e.bound_ms} ms); worst since start ${String(e.worst_ms)} ms, ${String(e.over_bound)} windows over the bound`;
  if (e.max_ms > e.bound_ms) {
    return { id: 'event_loop', status: 'warn', message: `event loop held: ${figures}`, action: 'PLC heartbeats were late by as much: see the daemon log (component event-loop) for when, and what ran' };
  }
  return { id: 'event_loop', status: 'ok', message: `event loop: ${figures}` };
}

/** `timedatectl show` of this machine, or null when the command is not there or fails (doctor's probe). */
export function timedatectlShow(): Promise<string | null> {
  return new Promise((resolve) => {
    execFile('timedatectl', ['show'], { timeout: 5000 }, (err, stdout) => resolve(err ? null : stdout));
  });
}

const defaultProbes: DoctorProbes = {
  opcuaNodes: async (loaded, connectionId, timeoutMs) => {
    const connection = loaded.config.connections.find((c) => c.id === connectionId);
    if (connection?.protocol !== 'opcua') throw new LkError('LK_CONFIG_INVALID', `no OPC UA connection ${connectionId}`);
    // loaded on use: node-opcua takes a second to import
    const { inspectNodes } = await import('../../connectors/opcua/index.js');
    const equipment = loaded.config.equipment.filter((e) => e.protocol === 'opcua' && e.connection === connectionId) as Parameters<typeof inspectNodes>[0]['equipment'];
    // an unsecured connection needs no trusted certificate: a throw-away client PKI leaves the data directory as it was
    const secured = connection.security.mode !== 'None';
    const dataDir = secured ? loaded.dataDir : mkdtempSync(join(tmpdir(), 'lk-doctor-pki-'));
    try {
      return await inspectNodes({ connection, equipment, url: connection.endpoint, dataDir, timeoutMs, ...(loaded.config.unit_aliases ? { unitAliases: loaded.config.unit_aliases } : {}) });
    } finally {
      if (!secured) rmSync(dataDir, { recursive: true, force: true });
    }
  },
  readyz: (host, port) =>
    fetch(`http://${host.includes(':') ? `[${host}]` : host}:${port}/readyz`, { signal: AbortSignal.timeout(2000) })
      .then((r) => r.json() as Promise<unknown>, () => null)
      .catch(() => null),
  tcp: (host, port, timeoutMs) =>
    new Promise((resolve) => {
      const s = connect({ host, port });
      const done = (ok: boolean): void => {
        s.destroy();
        resolve(ok);
      };
      s.setTimeout(timeoutMs, () => done(false));
      s.once('connect', () => done(true));
      s.once('error', () => done(false));
    }),
  timedatectl: () => timedatectlShow(),
  statfs: (path) => {
    const s = statfsSync(path);
    return { free: Number(s.bavail) * Number(s.bsize), type: Number(s.type) };
  },
  port: (host, port) =>
    new Promise((resolve) => {
      const srv = createServer();
      srv.once('error', () => {
        // in use: is it us? a linekeeper answers /healthz with its version
        fetch(`http://${host.includes(':') ? `[${host}]` : host}:${port}/healthz`, { signal: AbortSignal.timeout(2000) })
          .then(async (r) => ((await r.json().catch(() => null)) as { version?: unknown } | null)?.version !== undefined)
          .then((ours) => resolve(ours ? 'linekeeper' : 'in_use'), () => resolve('in_use'));
      });
      srv.listen({ host, port, exclusive: true }, () => srv.close(() => resolve('free')));
    }),
  now: () => Date.now(),
};
