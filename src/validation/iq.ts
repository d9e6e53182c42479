/**
 * `linekeeper validate iq`: the installation qualification of an installed linekeeper (the .deb, or the tarball's
 * install.sh), executed on the edge node by the installed code. Each check is evidence for requirement ids of
 * validation/requirements.yaml: the files against the package's MANIFEST.json (written at packaging by
 * tools/manifest.mjs), the Node.js it runs on against BUILDINFO, the native SQLite addon, the systemd unit and its
 * hardening against the unit the package ships, the data directory's owner and modes and the site key, the
 * configuration, the signed policy bundle, the audit chains and the clock.
 *
 * The checks change nothing on the node: the store is opened read-only, SQLite is tried on an in-memory database (signing
 * the report afterwards appends its entry to the site chain, src/validation/make.ts). What a
 * test cannot arrange — systemd's directories, whether systemd runs, timedatectl, user ids — comes in through
 * {@link IqOptions}. Where doctor (src/ops/doctor.ts) already judges a thing (the policy signature, the audit chains,
 * the clock), its judgement is used, so that the two never disagree about one node.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, lstatSync, readdirSync, readFileSync, realpathSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { userInfo } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import Database from 'better-sqlite3';
import type { Json } from '../audit/entry.js';
import { keyFiles, readSiteKey } from '../audit/keys.js';
import { loadConfig, type LoadedConfig } from '../config/load.js';
import { readPolicyBundle } from '../config/policy-bundle.js';
import { auditVerification, clockCheck, errText, policyCheck, timedatectlShow, timedatectlState, type CheckResult } from '../ops/doctor.js';
import { DB_FILE, openStore } from '../store/store.js';
import { configInForce } from './config-report.js';
import { satisfiesRange } from './node-range.js';
import { sha256Hex, type ReportCheck } from './report.js';
import { effective, execStartOf, findInstalledUnit, isHardening, parseUnit, shown, UNIT_DIRS, UNIT_NAME, unitDifferences, type InstalledUnit } from './systemd-unit.js';

/** The machine-facing probes; each has a real default. */
export interface IqProbes {
  /** `timedatectl show` output (key=value lines), or null when the command is not available (doctor's probe). */
  timedatectl(): Promise<string | null>;
  /** Whether systemd manages this machine (sd_booted(3): /run/systemd/system exists). */
  systemd(): boolean;
  /** The uid of a user name, or null when there is no such user. */
  uid(name: string): number | null;
}

export interface IqOptions {
  loaded: LoadedConfig;
  /** The install folder: the one with package.json, BUILDINFO and MANIFEST.json (`installRoot()` of report.ts). */
  root: string;
  /** Where the unit may be installed, highest precedence first (default {@link UNIT_DIRS}). */
  unitDirs?: readonly string[];
  probes?: Partial<IqProbes>;
}

interface CheckDef {
  readonly id: string;
  readonly title: string;
  readonly requirements: readonly string[];
}

/** The checks of an IQ, in report order, with the requirements each is evidence for (docs/validation.md lists them). */
export const IQ_CHECKS = {
  files: { id: 'IQ-FILES', title: 'Installed files are the package\'s (MANIFEST.json: SHA-256 and mode)', requirements: ['A11.4', 'P11.10(a)', 'A11.10'] },
  node: { id: 'IQ-NODE', title: 'Node.js of the build (ABI, architecture) and of package.json engines', requirements: ['A11.4', 'P11.10(a)'] },
  native: { id: 'IQ-NATIVE', title: 'Native SQLite addon (better-sqlite3) loads', requirements: ['A11.4', 'P11.10(a)'] },
  unit: { id: 'IQ-UNIT', title: 'systemd unit installed as shipped, with its hardening', requirements: ['A11.4', 'A11.12'] },
  dataDir: { id: 'IQ-DATA-DIR', title: 'Data directory: owner, permissions, site key 0600', requirements: ['P11.10(c)', 'P11.10(d)', 'A11.12'] },
  config: { id: 'IQ-CONFIG', title: 'Site configuration valid', requirements: ['A11.4', 'A11.10'] },
  policy: { id: 'IQ-POLICY', title: 'Policy bundle valid and its signature verifies', requirements: ['INV-POLICY-SIGNED', 'A11.10'] },
  audit: { id: 'IQ-AUDIT', title: 'Audit chains and checkpoints verify', requirements: ['P11.10(a)', 'P11.10(e)', 'A11.7'] },
  clock: { id: 'IQ-CLOCK', title: 'Clock synchronised (NTP)', requirements: ['P11.10(e)'] },
} as const satisfies Record<string, CheckDef>;

type Finding = Pick<ReportCheck, 'status' | 'detail' | 'evidence'>;

/** At most `max` names, then how many more. */
function names(list: readonly string[], max = 20): string {
  return list.length <= max ? list.join(', ') : `${list.slice(0, max).join(', ')} … and ${list.length - max} more`;
}

const octal = (mode: number): string => (mode & 0o7777).toString(8).padStart(4, '0');
const readJson = (file: string): unknown => JSON.parse(readFileSync(file, 'utf8')) as unknown;

/** A check never throws: an unexpected error is its failure, said as such. */
function check(def: CheckDef, run: () => Finding): ReportCheck {
  let f: Finding;
  try {
    f = run();
  } catch (err) {
    f = { status: 'fail', detail: `the check could not be completed: ${errText(err)}` };
  }
  return { id: def.id, title: def.title, requirements: [...def.requirements], ...f };
}

/** doctor's ok / warn / fail as a report's pass / warn / fail; its action is part of what was found. */
function fromDoctor(c: CheckResult): Finding {
  return { status: c.status === 'ok' ? 'pass' : c.status, detail: c.action ? `${c.message} — ${c.action}` : c.message };
}

/**
 * Run every IQ check on the installation at `o.root` with the configuration and data directory of `o.loaded`.
 * Never throws for what it finds: each problem is a failed (or warned) check saying what is wrong.
 */
export async function runIq(o: IqOptions): Promise<{ checks: ReportCheck[]; data: { [key: string]: Json } }> {
  const p: IqProbes = { ...defaultProbes, ...o.probes };
  const root = resolve(o.root);
  const dirs = o.unitDirs ?? UNIT_DIRS;
  let unit: InstalledUnit = { unit: null, masked: false, dropIns: [] };
  let unitError: unknown = null;
  try {
    unit = findInstalledUnit(dirs);
  } catch (err) {
    unitError = err;
  }
  const hasDb = existsSync(join(o.loaded.dataDir, DB_FILE));
  const out = await p.timedatectl().catch(() => null);
  const checks = [
    check(IQ_CHECKS.files, () => filesCheck(root)),
    check(IQ_CHECKS.node, () => nodeCheck(root)),
    check(IQ_CHECKS.native, () => nativeCheck(root)),
    check(IQ_CHECKS.unit, () => {
      if (unitError !== null) throw unitError;
      return unitCheck(root, dirs, unit, p, o.loaded);
    }),
    check(IQ_CHECKS.dataDir, () => dataDirCheck(o.loaded.dataDir, serviceUser(unit, p))),
    check(IQ_CHECKS.config, () => configCheck(o.loaded, hasDb)),
    check(IQ_CHECKS.policy, () => ({ ...fromDoctor(policyCheck(o.loaded, hasDb)), evidence: policyEvidence(o.loaded) })),
    check(IQ_CHECKS.audit, () => auditFinding(o.loaded.dataDir, hasDb)),
    check(IQ_CHECKS.clock, () => clockFinding(out)),
  ];
  return {
    checks,
    data: { installation: { root, unitFile: unit.unit?.path ?? null, dropIns: unit.dropIns.map((d) => d.path), dataDir: o.loaded.dataDir, configFile: o.loaded.file, policyDir: o.loaded.policyDir } },
  };
}

interface Manifest {
  format: string;
  name: string;
  version: string;
  files: Record<string, { sha256: string; mode: string }>;
}

/** Every file (and link) under `dir`, `/`-separated relative paths: what is there, whether listed or not. */
function present(dir: string, rel = '', out = new Map<string, number>()): Map<string, number> {
  for (const name of readdirSync(join(dir, rel))) {
    const r = rel === '' ? name : `${rel}/${name}`;
    const st = lstatSync(join(dir, r));
    if (st.isDirectory()) present(dir, r, out);
    else out.set(r, st.isFile() ? st.mode : -1);
  }
  return out;
}

/** Code folders: a file there that the manifest does not list can be loaded by the daemon. */
const CODE = /^(dist|bin|node_modules)\//;

function filesCheck(root: string): Finding {
  const file = join(root, 'MANIFEST.json');
  if (!existsSync(file)) return { status: 'fail', detail: `not an installed package: ${root} has no MANIFEST.json (a source checkout?); install the .deb or the tarball and run the IQ with the installed linekeeper`, evidence: { root } };
  const text = readFileSync(file);
  const m = JSON.parse(text.toString('utf8')) as Partial<Manifest>;
  if (m.format !== 'linekeeper.package-manifest' || typeof m.files !== 'object' || m.files === null) return { status: 'fail', detail: `${file} is not a linekeeper package manifest (format ${JSON.stringify(m.format)})` };
  const pkg = readJson(join(root, 'package.json')) as { name?: string; version?: string };
  const listed = Object.entries(m.files);
  const there = present(root);
  const missing: string[] = [];
  const changed: string[] = [];
  const modes: { rel: string; text: string }[] = [];
  for (const [rel, want] of listed) {
    const mode = there.get(rel);
    if (mode === undefined || mode < 0) {
      missing.push(rel);
      continue;
    }
    if (sha256Hex(readFileSync(join(root, rel))) !== want.sha256) changed.push(rel);
    // install.sh takes write from group and others (chmod -R go-w) and leaves the rest as shipped
    const expected = Number.parseInt(want.mode, 8) & ~0o022;
    if ((mode & 0o7777) !== expected) modes.push({ rel, text: `${rel} (${octal(mode)}, shipped ${want.mode}: expected ${octal(expected)})` });
  }
  const unlisted = [...there.keys()].filter((rel) => rel !== 'MANIFEST.json' && !Object.hasOwn(m.files!, rel)).sort();
  const unlistedCode = unlisted.filter((r) => CODE.test(r));
  const unlistedOther = unlisted.filter((r) => !CODE.test(r));
  const problems = [
    ...(pkg.name !== m.name || pkg.version !== m.version ? [`the manifest is of ${String(m.name)} ${String(m.version)}, package.json says ${String(pkg.name)} ${String(pkg.version)}`] : []),
    ...(missing.length ? [`missing: ${names(missing)}`] : []),
    ...(changed.length ? [`changed (SHA-256 differs): ${names(changed)}`] : []),
    ...(modes.length ? [`mode differs: ${names(modes.map((x) => x.text))}`] : []),
    ...(unlistedCode.length ? [`not in the manifest, in code folders the daemon loads from: ${names(unlistedCode)}`] : []),
  ];
  const evidence = {
    manifestSha256: sha256Hex(text), name: String(m.name), version: String(m.version), listed: listed.length,
    intact: listed.length - new Set([...missing, ...changed, ...modes.map((x) => x.rel)]).size,
    missing: missing.length, changed: changed.length, modeDiffers: modes.length, unlistedInCode: unlistedCode.length, unlistedElsewhere: unlistedOther.length,
  };
  if (problems.length > 0) return { status: 'fail', detail: `${problems.join('; ')} — reinstall the package (the IQ qualifies the files it shipped, nothing else)`, evidence };
  const base = `${listed.length} files of ${String(m.name)} ${String(m.version)} present with the SHA-256 and mode of MANIFEST.json (sha256 ${evidence.manifestSha256})`;
  if (unlistedOther.length > 0) return { status: 'warn', detail: `${base}; not in the manifest, outside the code folders: ${names(unlistedOther)}`, evidence };
  return { status: 'pass', detail: base, evidence };
}

function nodeCheck(root: string): Finding {
  const running = { node: process.versions.node, abi: process.versions.modules, arch: process.arch, execPath: process.execPath };
  if (!existsSync(join(root, 'BUILDINFO'))) return { status: 'fail', detail: `not an installed package: ${root} has no BUILDINFO (the Node ABI and architecture the package was built for)`, evidence: running };
  const build = readJson(join(root, 'BUILDINFO')) as { name?: unknown; version?: unknown; node?: unknown; abi?: unknown; arch?: unknown };
  const pkg = readJson(join(root, 'package.json')) as { name?: string; version?: string; engines?: { node?: string } };
  const engines = pkg.engines?.node;
  const problems: string[] = [];
  if (String(build.abi) !== running.abi) problems.push(`Node ${running.node} (ABI ${running.abi}) runs this, the package was built with Node ${String(build.node)} (ABI ${String(build.abi)}): its native addon is for another ABI; install the package built for this Node major`);
  if (build.arch !== running.arch) problems.push(`this machine is ${running.arch}, the package was built for ${String(build.arch)}`);
  if (build.name !== pkg.name || build.version !== pkg.version) problems.push(`BUILDINFO is of ${String(build.name)} ${String(build.version)}, package.json says ${String(pkg.name)} ${String(pkg.version)}`);
  const sat = engines === undefined ? true : satisfiesRange(running.node, engines);
  if (sat === false) problems.push(`Node ${running.node} does not satisfy engines.node "${engines}" of package.json`);
  const evidence = { ...running, built: { node: String(build.node), abi: String(build.abi), arch: String(build.arch) }, engines: engines ?? null };
  if (problems.length > 0) return { status: 'fail', detail: problems.join('; '), evidence };
  const what = `Node ${running.node} (${running.execPath}), ABI ${running.abi}, ${running.arch}: as built (Node ${String(build.node)})`;
  if (sat === null) return { status: 'warn', detail: `${what}; engines.node "${engines}" is a range this check cannot read — compare by hand`, evidence };
  return { status: 'pass', detail: `${what}; satisfies engines.node "${engines ?? '(none)'}"`, evidence };
}

function nativeCheck(root: string): Finding {
  const req = createRequire(import.meta.url);
  const entry = req.resolve('better-sqlite3');
  let version: string | null = null;
  try {
    version = (readJson(join(root, 'node_modules/better-sqlite3/package.json')) as { version?: string }).version ?? null;
  } catch {
    // reported by IQ-FILES; the addon that loads is what this check is about
  }
  let sqlite: string;
  try {
    const db = new Database(':memory:');
    try {
      db.exec('CREATE TABLE t (x); INSERT INTO t VALUES (42)');
      const row = db.prepare('SELECT sqlite_version() AS v, (SELECT x FROM t) AS x').get() as { v: string; x: number };
      if (row.x !== 42) return { status: 'fail', detail: `better-sqlite3 loads but an in-memory database returned ${row.x} for 42`, evidence: { module: entry } };
      sqlite = row.v;
    } finally {
      db.close();
    }
  } catch (err) {
    return { status: 'fail', detail: `better-sqlite3's native addon does not load: ${errText(err)} — the package was built for another Node ABI or architecture (see IQ-NODE)`, evidence: { module: entry } };
  }
  return { status: 'pass', detail: `better-sqlite3 ${version ?? '?'} loads its native addon; SQLite ${sqlite} opened, wrote and read an in-memory database`, evidence: { module: entry, betterSqlite3: version, sqlite } };
}

const real = (p: string): string => {
  try {
    return realpathSync(p);
  } catch {
    return resolve(p);
  }
};

function unitCheck(root: string, dirs: readonly string[], u: InstalledUnit, p: IqProbes, loaded: LoadedConfig): Finding {
  const shippedFile = join(root, 'systemd', UNIT_NAME);
  if (!existsSync(shippedFile)) return { status: 'fail', detail: `the package ships no unit (${shippedFile} is missing; see IQ-FILES)` };
  const shippedText = readFileSync(shippedFile, 'utf8');
  const shipped = effective(parseUnit(shippedText));
  const hard = (k: string): boolean => k.startsWith('Service.') && isHardening(k.slice('Service.'.length));
  const hardening = [...shipped.keys()].filter(hard);
  if (u.unit === null) {
    if (!p.systemd()) return { status: 'not_applicable', detail: `no systemd on this machine (no /run/systemd/system) and no ${UNIT_NAME} in ${dirs.join(', ')}: linekeeper is not run as a systemd service here; how it is started and confined is for the site's procedure to qualify` };
    return { status: 'fail', detail: `systemd runs here but ${UNIT_NAME} is not installed in ${dirs.join(', ')}: run install.sh (tarball) or install the .deb` };
  }
  if (u.masked) return { status: 'fail', detail: `${u.unit.path} is masked (a link to /dev/null): the service cannot start; systemctl unmask linekeeper` };
  const inUnit = effective(parseUnit(u.unit.text));
  const all = effective([...parseUnit(u.unit.text), ...u.dropIns.flatMap((d) => parseUnit(d.text))]);
  const fails: string[] = [];
  const warns: string[] = [];
  const d = unitDifferences(shipped, inUnit);
  const describe = (k: string): string => (inUnit.has(k) ? `${shown(k, inUnit.get(k))} (shipped ${shown(k, shipped.get(k))})` : `${shown(k, shipped.get(k))} missing`);
  const hardDiff = [...d.missing, ...d.changed, ...d.extra].filter(hard);
  const otherDiff = [...d.missing, ...d.changed, ...d.extra].filter((k) => !hard(k));
  if (hardDiff.length > 0) fails.push(`hardening differs from the shipped unit: ${names(hardDiff.map((k) => (shipped.has(k) ? describe(k) : `${shown(k, inUnit.get(k))} added`)))}`);
  if (otherDiff.length > 0) fails.push(`other directives differ from the shipped unit: ${names(otherDiff.map((k) => k.replace(/^[^.]*\./, '')))}`);
  if (hardDiff.length + otherDiff.length > 0) fails.push(`reinstall the shipped unit (install.sh or the .deb); site changes belong in a reviewed drop-in`);
  if (fails.length === 0 && u.unit.text !== shippedText) warns.push(`${u.unit.path} has the shipped directives but other comments or layout`);
  for (const di of u.dropIns) {
    const keys = [...new Set(parseUnit(di.text).map((x) => `${x.section}.${x.key}`))];
    const over = keys.filter(hard);
    if (over.length > 0) fails.push(`drop-in ${di.path} overrides the hardening: ${names(over.map((k) => shown(k, all.get(k))))} (remove it, or leave the hardening to the shipped unit)`);
    const rest = keys.filter((k) => !hard(k));
    if (rest.length > 0) warns.push(`drop-in ${di.path} sets ${names(rest.map((k) => k.replace(/^[^.]*\./, '')))} (review it under change control)`);
  }
  // the IQ qualifies the tree, the Node, the configuration and the data it runs with: the service must use the same
  const exec = execStartOf(all.get('Service.ExecStart'));
  if (exec.script === null) fails.push('ExecStart= does not start bin/linekeeper.js');
  else if (real(dirname(dirname(exec.script))) !== real(root)) fails.push(`the service starts ${exec.script}, not this installation (${root}): this IQ qualified another tree`);
  if (exec.node !== null && real(exec.node) !== real(process.execPath)) fails.push(`the service runs ${exec.node}, this IQ ran under ${process.execPath} (IQ-NODE checked that one): run the IQ with the service's Node`);
  if (exec.config !== null && real(exec.config) !== real(loaded.file)) fails.push(`the service reads ${exec.config}, this IQ checked ${loaded.file}: run it with -c ${exec.config}`);
  if (exec.data !== null && real(exec.data) !== real(loaded.dataDir)) fails.push(`the service keeps its data in ${exec.data}, this IQ checked ${loaded.dataDir}: run it with -d ${exec.data}`);
  const evidence = {
    unitFile: u.unit.path, sha256: sha256Hex(u.unit.text), shippedSha256: sha256Hex(shippedText),
    hardening: hardening.map((k) => shown(k, all.get(k))), dropIns: u.dropIns.map((x) => x.path), execStart: all.get('Service.ExecStart')?.at(-1) ?? null,
  };
  if (fails.length > 0) return { status: 'fail', detail: `${u.unit.path}: ${[...fails, ...warns].join('; ')}`, evidence };
  const base = `${u.unit.path} ${u.unit.text === shippedText ? 'equals' : 'has the directives of'} the shipped unit; ${hardening.length} hardening directives in force (${names(hardening.map((k) => k.replace(/^[^.]*\./, '')), 8)}); starts ${exec.script} with ${exec.node}`;
  if (warns.length > 0) return { status: 'warn', detail: `${base}; ${warns.join('; ')}`, evidence };
  return { status: 'pass', detail: `${base}; ${u.dropIns.length === 0 ? 'no drop-ins' : `drop-ins setting nothing: ${names(u.dropIns.map((x) => x.path))}`}`, evidence };
}

/** Who must own the data directory: the unit's `User=`, or the user running this IQ when no unit names one. */
function serviceUser(u: InstalledUnit, p: IqProbes): { name: string; uid: number | null; from: string } {
  const user = u.unit ? effective([...parseUnit(u.unit.text), ...u.dropIns.flatMap((d) => parseUnit(d.text))]).get('Service.User')?.at(-1) : undefined;
  if (user !== undefined) return { name: user, uid: p.uid(user), from: `User= of ${u.unit!.path}` };
  const uid = process.getuid?.() ?? -1;
  let name = `uid ${uid}`;
  try {
    name = userInfo().username;
  } catch {
    // a uid without a passwd entry (a container): named by its number
  }
  return { name, uid, from: 'the user running this IQ (no installed unit names one)' };
}

function dataDirCheck(dataDir: string, owner: { name: string; uid: number | null; from: string }): Finding {
  if (!existsSync(dataDir)) return { status: 'fail', detail: `${dataDir} does not exist: install.sh creates it (0700, owned by the service user)`, evidence: { dataDir } };
  const st = statSync(dataDir);
  if (!st.isDirectory()) return { status: 'fail', detail: `${dataDir} is not a directory`, evidence: { dataDir } };
  const fails: string[] = [];
  const warns: string[] = [];
  if (owner.uid === null) fails.push(`the service user ${owner.name} (${owner.from}) does not exist: install.sh creates it`);
  else if (st.uid !== owner.uid) fails.push(`owned by uid ${st.uid}, not by ${owner.name} (uid ${owner.uid}, ${owner.from})`);
  if ((st.mode & 0o022) !== 0) {
    const who = [st.mode & 0o020 ? 'group' : '', st.mode & 0o002 ? 'others' : ''].filter(Boolean).join(' and ');
    fails.push(`writable by ${who} (mode ${octal(st.mode)}): they could replace the audit trail or the key; chmod 0700 it`);
  } else if ((st.mode & 0o055) !== 0) warns.push(`readable by group or others (mode ${octal(st.mode)}): the store holds password hashes; install.sh and the unit make it 0700`);
  // a file of another owner (a database made by root) is one the daemon cannot write
  const keysDir = join(dataDir, 'keys');
  const entries = [...readdirSync(dataDir), ...(existsSync(keysDir) ? readdirSync(keysDir).map((n) => `keys/${n}`) : [])];
  const foreign = owner.uid === null ? [] : entries.filter((n) => lstatSync(join(dataDir, n)).uid !== owner.uid);
  if (foreign.length > 0) fails.push(`not owned by ${owner.name}: ${names(foreign)} (chown -R ${owner.name}: ${dataDir})`);
  const { privateFile } = keyFiles(dataDir);
  let keyId: string | null = null;
  if (!existsSync(privateFile)) warns.push('no site key yet (made at first start, or when this report is signed)');
  else {
    try {
      keyId = readSiteKey(dataDir).keyId;
    } catch (err) {
      fails.push(errText(err));
    }
  }
  const evidence = { dataDir, mode: octal(st.mode), uid: st.uid, owner: owner.name, ownerUid: owner.uid, keyId, keyMode: existsSync(privateFile) ? octal(statSync(privateFile).mode) : null };
  if (fails.length > 0) return { status: 'fail', detail: `${dataDir}: ${[...fails, ...warns].join('; ')}`, evidence };
  const base = `${dataDir} owned by ${owner.name}, mode ${octal(st.mode)}${keyId ? `; site key ${keyId.slice(0, 12)}… mode ${evidence.keyMode}` : ''}`;
  return warns.length > 0 ? { status: 'warn', detail: `${base}; ${warns.join('; ')}`, evidence } : { status: 'pass', detail: base, evidence };
}

function configCheck(loaded: LoadedConfig, hasDb: boolean): Finding {
  // the file as it is now: the configuration in use must still be what is on disk
  const again = loadConfig(loaded.file, { dataDir: loaded.dataDir });
  const c = again.config;
  // and the one the node runs: the hash its last start or reload recorded on the site chain
  let running: { hash: string; seq: number; action: string } | null = null;
  if (hasDb) {
    const store = openStore({ dataDir: loaded.dataDir, readonly: true });
    try {
      running = configInForce(store);
    } finally {
      store.close();
    }
  }
  const evidence = { file: again.file, sha256: again.hash, inForce: running?.hash ?? null, site: c.site.id, dataDir: again.dataDir, policyDir: again.policyDir };
  if (again.hash !== loaded.hash) return { status: 'fail', detail: `${again.file} changed while the IQ ran (sha256 ${loaded.hash.slice(0, 12)}… → ${again.hash.slice(0, 12)}…): run it again`, evidence };
  const what = `${again.file} valid (canonical sha256 ${again.hash}): site ${c.site.id}, ${c.connections.length} connections, ${c.equipment.length} equipment units`;
  if (running && running.hash !== again.hash) {
    return { status: 'fail', detail: `${what}; but the node runs another configuration (sha256 ${running.hash.slice(0, 12)}…, site audit #${running.seq}): qualify the configuration in force, or apply this one (\`linekeeper config apply\`) first`, evidence };
  }
  return { status: 'pass', detail: `${what}; ${running ? `the node ${running.action === 'site.start' ? 'started' : 'reloaded'} with it (site audit #${running.seq})` : 'the node has not started yet: it takes effect at the first start'}`, evidence };
}

function policyEvidence(loaded: LoadedConfig): { [key: string]: Json } {
  try {
    return { dir: loaded.policyDir, version: readPolicyBundle(loaded.policyDir, loaded.config).version };
  } catch {
    return { dir: loaded.policyDir, version: null };
  }
}

/** doctor's reading of `timedatectl show`, but a clock known not to be synchronised fails an IQ (unknown: a warning). */
function clockFinding(out: string | null): Finding {
  const state = timedatectlState(out);
  const status = state?.synced === 'yes' ? 'pass' : state?.synced === 'no' ? 'fail' : 'warn';
  return { ...fromDoctor(clockCheck(out)), status, evidence: { timedatectl: state ? { NTPSynchronized: state.synced ?? null, NTP: state.ntp ?? null, Timezone: state.timezone ?? null } : null } };
}

function auditFinding(dataDir: string, hasDb: boolean): Finding {
  const { check: c, report: r } = auditVerification(dataDir, hasDb);
  if (!hasDb) return { status: 'not_applicable', detail: `${c.message}; nothing recorded to verify`, evidence: { database: false } };
  const chains = (r?.chains ?? []).map((x) => ({ tenant: x.tenant, ok: x.ok, count: x.count, headSeq: x.head.seq, headHash: x.head.hash, checkpoints: x.checkpoints, unanchored: x.unanchored }));
  return { ...fromDoctor(c), evidence: { database: true, keyId: r?.keyId ?? null, entries: chains.reduce((n, x) => n + x.count, 0), chains } };
}

const defaultProbes: IqProbes = {
  timedatectl: () => timedatectlShow(),
  systemd: () => existsSync('/run/systemd/system'),
  uid: (name) => {
    try {
      return Number(execFileSync('id', ['-u', name], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim());
    } catch {
      return null;
    }
  },
};
