/**
 * The systemd unit of an installed linekeeper, as the installation qualification compares it with the unit the
 * package ships (systemd/linekeeper.service): where systemd would read it from, its drop-ins, and its directives with
 * systemd's own rules (later assignments add to a list, an empty one resets it; a drop-in comes after the unit).
 */
import { existsSync, readdirSync, readFileSync, realpathSync } from 'node:fs';
import { join } from 'node:path';

export const UNIT_NAME = 'linekeeper.service';

/**
 * Where a unit may be installed, highest precedence first (systemd.unit(5)): install.sh puts it in /etc/systemd/system,
 * the .deb in /lib/systemd/system (/usr/lib/systemd/system on a merged /usr).
 */
export const UNIT_DIRS: readonly string[] = ['/etc/systemd/system', '/run/systemd/system', '/lib/systemd/system', '/usr/lib/systemd/system'];

export interface UnitText {
  readonly path: string;
  readonly text: string;
}

export interface InstalledUnit {
  /** The unit file systemd uses (the first of the directories that has one); null when none has. */
  readonly unit: UnitText | null;
  /** Masked: the unit file is a link to /dev/null. */
  readonly masked: boolean;
  /** `<dir>/linekeeper.service.d/*.conf` of every directory, in the order systemd applies them. */
  readonly dropIns: readonly UnitText[];
}

/** What systemd would load for linekeeper.service from `dirs` (highest precedence first). */
export function findInstalledUnit(dirs: readonly string[]): InstalledUnit {
  let unit: UnitText | null = null;
  let masked = false;
  const dropIns: { name: string; file: UnitText }[] = [];
  for (const dir of dirs) {
    const f = join(dir, UNIT_NAME);
    if (unit === null && existsSync(f)) {
      masked = realpathSync(f) === '/dev/null';
      unit = { path: f, text: masked ? '' : readFileSync(f, 'utf8') };
    }
    const d = join(dir, `${UNIT_NAME}.d`);
    if (!existsSync(d)) continue;
    for (const name of readdirSync(d).filter((n) => n.endsWith('.conf'))) {
      // a drop-in of the same name in a directory of higher precedence hides the lower one
      if (!dropIns.some((x) => x.name === name)) dropIns.push({ name, file: { path: join(d, name), text: readFileSync(join(d, name), 'utf8') } });
    }
  }
  // drop-ins apply in the lexical order of their names, whatever directory they are in
  return { unit, masked, dropIns: dropIns.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)).map((x) => x.file) };
}

export interface Directive {
  readonly section: string;
  readonly key: string;
  readonly value: string;
}

/** The directives of a unit file (comments, blank lines and line continuations as systemd.syntax(7) has them). */
export function parseUnit(text: string): Directive[] {
  const out: Directive[] = [];
  let section = '';
  for (const raw of text.replace(/\\\r?\n/g, ' ').split(/\r?\n/)) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#') || line.startsWith(';')) continue;
    if (/^\[.+\]$/.test(line)) {
      section = line.slice(1, -1);
      continue;
    }
    const eq = line.indexOf('=');
    if (eq > 0) out.push({ section, key: line.slice(0, eq).trim(), value: line.slice(eq + 1).trim() });
  }
  return out;
}

/**
 * The values in force per `Section.Key` after every assignment in order: an empty assignment resets the list (and
 * stays as an empty list, so `CapabilityBoundingSet=` reads as "none" rather than "not set").
 */
export function effective(directives: readonly Directive[]): Map<string, string[]> {
  const m = new Map<string, string[]>();
  for (const d of directives) {
    const k = `${d.section}.${d.key}`;
    if (d.value === '') m.set(k, []);
    else m.set(k, [...(m.get(k) ?? []), d.value]);
  }
  return m;
}

/**
 * systemd.exec(5)'s credentials, capabilities, security, sandboxing and system-call-filtering directives: which of the
 * shipped unit's directives are its hardening. The directives and their values are read from the shipped unit; this
 * only names the families.
 */
const HARDENING = /^(User|Group|DynamicUser|SupplementaryGroups|UMask|NoNewPrivileges|SecureBits|CapabilityBoundingSet|AmbientCapabilities|Protect\w+|Private\w+|Restrict\w+|SystemCall\w+|LockPersonality|MemoryDenyWriteExecute|RemoveIPC|KeyringMode|DevicePolicy|DeviceAllow|IPAddress\w+|ReadWritePaths|ReadOnlyPaths|InaccessiblePaths|NoExecPaths|ExecPaths|(State|Configuration|Logs|Runtime|Cache)DirectoryMode)$/;

export function isHardening(key: string): boolean {
  return HARDENING.test(key);
}

/** `Key=v1 v2` as written; `Key=` for an empty list. */
export function shown(key: string, values: readonly string[] | undefined): string {
  return `${key.replace(/^[^.]*\./, '')}=${(values ?? []).join(' ')}`;
}

/** Where the installed directives differ from the shipped ones: missing, changed and extra `Section.Key`s. */
export function unitDifferences(shipped: Map<string, string[]>, installed: Map<string, string[]>): { missing: string[]; changed: string[]; extra: string[] } {
  const same = (a: readonly string[], b: readonly string[]): boolean => a.length === b.length && a.every((v, i) => v === b[i]);
  const missing: string[] = [];
  const changed: string[] = [];
  for (const [k, want] of shipped) {
    const have = installed.get(k);
    if (have === undefined) missing.push(k);
    else if (!same(have, want)) changed.push(k);
  }
  return { missing, changed, extra: [...installed.keys()].filter((k) => !shipped.has(k)) };
}

/**
 * What `ExecStart=` starts: the Node.js executable (the first word, without systemd's `-@:+!` prefixes), the word
 * ending in bin/linekeeper.js, and the `--config` / `--data` it passes; null for what the line does not have.
 */
export function execStartOf(values: readonly string[] | undefined): { node: string | null; script: string | null; config: string | null; data: string | null } {
  const line = values?.at(-1);
  if (!line) return { node: null, script: null, config: null, data: null };
  const words = line.split(/\s+/);
  const option = (long: string, short: string): string | null => {
    for (let i = 0; i < words.length; i++) {
      if (words[i] === long || words[i] === short) return words[i + 1] ?? null;
      if (words[i]!.startsWith(`${long}=`)) return words[i]!.slice(long.length + 1);
    }
    return null;
  };
  return {
    node: words[0]?.replace(/^[-@:+!]+/, '') ?? null,
    script: words.find((w) => /(^|\/)bin\/linekeeper\.js$/.test(w)) ?? null,
    config: option('--config', '-c'),
    data: option('--data', '-d'),
  };
}
