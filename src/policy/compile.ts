/**
 * Compile the policy bundle from the texts of its files and the site
 * configuration (pure: no file system; src/config/policy-bundle.ts reads the
 * folder). Shape first (strict zod), then cross-references and units; every
 * problem names the file, the line and the path, e.g.
 * `config/policy/design-space.yaml:14: design_spaces[0].setpoints["press.MainForce"].unit: "kNN" is not a UCUM unit`.
 * The compiled content is hashed (SHA-256 of RFC 8785 JSON): that is the bundle version.
 */
import { createHash } from 'node:crypto';
import canonicalize from 'canonicalize';
import { LineCounter, parseDocument } from 'yaml';
import type { z } from 'zod';
import type { SiteConfig } from '../config/schema.js';
import type { AutonomyLevel } from '../domain/policy.js';
import { LkError } from '../errors.js';
import { type AgentPolicy, type ApprovedDesignSpace, type BundleContent, type CompiledLimit, DesignSpace, type PolicyBundle, type SetpointInfo, buildIndex, compileConversion, designSpaceKey } from './bundle.js';
import { BUNDLE_FILES, type BundleFileName } from './schema.js';
import type { AgentsFile, BundleManifest, ChangeFile, DesignSpaceFile, SetpointsFile } from './schema.js';

export interface BundleIssue {
  readonly file: string;
  readonly path: string;
  readonly message: string;
  readonly line?: number;
}

/** Equipment families whose setpoints L3 may move without review (the spec: compression, coating, inspection). */
const LOW_RISK_FAMILIES = new Set(['press', 'coater', 'vision']);

type Path = readonly (string | number)[];

/** `design_spaces[0].setpoints["press.MainForce"].min`: dotted keys are quoted so the path stays unambiguous. */
export function formatBundlePath(path: readonly PropertyKey[]): string {
  let out = '';
  for (const p of path) {
    if (typeof p === 'number') out += `[${p}]`;
    else if (/^[A-Za-z_][A-Za-z0-9_]*$/.test(String(p))) out += out === '' ? String(p) : `.${String(p)}`;
    else out += `[${JSON.stringify(String(p))}]`;
  }
  return out || '(root)';
}

interface Parsed {
  data: unknown;
  lineOf(path: Path): number | undefined;
}

/**
 * Compile a bundle from its file texts.
 * @param texts file name → YAML text, for every file of {@link BUNDLE_FILES}
 * @param displayDir how to name the folder in messages (relative, e.g. `config/policy`)
 * @throws LkError(LK_POLICY_BUNDLE) when a file is missing, is not YAML, or fails validation; `detail.issues` lists every problem.
 */
export function compilePolicyBundle(texts: Readonly<Partial<Record<BundleFileName, string>>>, site: SiteConfig, displayDir = 'policy'): PolicyBundle {
  const issues: BundleIssue[] = [];
  const parsed = {} as Record<BundleFileName, Parsed>;
  const display = (f: string): string => `${displayDir}/${f}`;
  for (const name of Object.keys(BUNDLE_FILES) as BundleFileName[]) {
    const text = texts[name];
    if (text === undefined) {
      issues.push({ file: display(name), path: '(file)', message: 'file is missing' });
      continue;
    }
    const p = parseYaml(text);
    if ('error' in p) {
      issues.push({ file: display(name), path: '(file)', message: p.error, ...(p.line ? { line: p.line } : {}) });
      continue;
    }
    const r = BUNDLE_FILES[name].safeParse(p.data);
    if (!r.success) {
      for (const i of r.error.issues) issues.push(zodIssue(display(name), i, p));
      continue;
    }
    parsed[name] = { data: r.data, lineOf: p.lineOf };
  }
  if (issues.length > 0) fail(issues);

  const add = (file: BundleFileName, path: Path, message: string): void => {
    const line = parsed[file].lineOf(path);
    issues.push({ file: display(file), path: formatBundlePath(path), message, ...(line ? { line } : {}) });
  };
  const content = crossCompile(parsed, site, add);
  if (issues.length > 0 || !content) fail(issues);
  const c = deepFreeze(content as BundleContent);
  const version = createHash('sha256').update(canonicalize(c) ?? '').digest('hex');
  return Object.freeze({
    version,
    content: c,
    change: deepFreeze(parsed['CHANGE.yaml'].data as ChangeFile),
    designSpace: new DesignSpace(c.designSpaces),
    index: buildIndex(c),
  });
}

function fail(issues: readonly BundleIssue[]): never {
  const lines = issues.map((i) => `${i.file}${i.line ? `:${i.line}` : ''}: ${i.path}: ${i.message}`);
  throw new LkError('LK_POLICY_BUNDLE', lines.join('\n'), { issues });
}

function parseYaml(text: string): Parsed | { error: string; line?: number } {
  const lineCounter = new LineCounter();
  const doc = parseDocument(text, { lineCounter, prettyErrors: false, uniqueKeys: true });
  if (doc.errors.length > 0) {
    const e = doc.errors[0]!;
    return { error: e.message.split('\n')[0] ?? 'invalid YAML', line: lineCounter.linePos(e.pos[0]).line };
  }
  let data: unknown;
  try {
    data = doc.toJS({ maxAliasCount: 100 });
  } catch (err) {
    // yaml throws a bare ReferenceError on an alias bomb (a billion-laughs document)
    if (err instanceof ReferenceError || err instanceof RangeError) return { error: `too many YAML aliases or too deep a nesting (${err.message})` };
    throw err;
  }
  return {
    data,
    lineOf(path) {
      for (let n = path.length; n >= 0; n--) {
        const node = doc.getIn(path.slice(0, n), true) as { range?: [number, number, number] } | undefined;
        if (node && typeof node === 'object' && node.range) return lineCounter.linePos(node.range[0]).line;
      }
      return undefined;
    },
  };
}

function zodIssue(file: string, i: z.core.$ZodIssue, p: Parsed): BundleIssue {
  let message = i.message;
  let path = i.path as (string | number)[];
  if (i.code === 'unrecognized_keys') {
    const keys = (i as { keys: string[] }).keys;
    message = `unknown key${keys.length > 1 ? 's' : ''} ${keys.map((k) => `"${k}"`).join(', ')}`;
    if (keys.length === 1) path = [...path, keys[0]!];
  } else if (i.code === 'invalid_type' && /received undefined/.test(i.message)) {
    message = `required (${i.message.replace(/^Invalid input: /, '')})`;
  }
  const line = p.lineOf(path);
  return { file, path: formatBundlePath(path), message, ...(line ? { line } : {}) };
}

type Add = (file: BundleFileName, path: Path, message: string) => void;

/** Cross-references against the site, unit compilation, and assembly of the canonical content. */
function crossCompile(parsed: Record<BundleFileName, Parsed>, site: SiteConfig, add: Add): BundleContent | undefined {
  const manifest = parsed['bundle.yaml'].data as BundleManifest;
  const agentsFile = parsed['agents.yaml'].data as AgentsFile;
  const spFile = parsed['setpoints.yaml'].data as SetpointsFile;
  const dsFile = parsed['design-space.yaml'].data as DesignSpaceFile;
  const change = parsed['CHANGE.yaml'].data as ChangeFile;

  if (manifest.site !== site.site.id) add('bundle.yaml', ['site'], `bundle is approved for site "${manifest.site}" but this is site "${site.site.id}"`);
  if (!manifest.approvers.change.includes(change.approver.role)) {
    add('CHANGE.yaml', ['approver', 'role'], `role "${change.approver.role}" may not approve a policy change (bundle.yaml approvers.change: ${manifest.approvers.change.join(', ')})`);
  }

  // site setpoints: the only tags a bundle may name
  const tags = new Map<string, { equipment: string; type: string; unit: string; range: { min: number; max: number } | null }>();
  for (const e of site.equipment) {
    for (const t of e.tags) {
      if (t.kind === 'setpoint') tags.set(`${e.id}.${t.name}`, { equipment: e.id, type: e.type, unit: t.unit, range: t.range ?? null });
    }
  }
  const known = (file: BundleFileName, path: Path, sp: string): boolean => {
    if (tags.has(sp)) return true;
    add(file, path, `"${sp}" is not a setpoint of the site configuration`);
    return false;
  };

  const validated = new Set(spFile.validated);
  const lowRisk = new Set(spFile.low_risk);
  spFile.validated.forEach((sp, i) => known('setpoints.yaml', ['validated', i], sp));
  spFile.low_risk.forEach((sp, i) => {
    if (!known('setpoints.yaml', ['low_risk', i], sp)) return;
    const type = tags.get(sp)!.type;
    if (!LOW_RISK_FAMILIES.has(type)) add('setpoints.yaml', ['low_risk', i], `"${sp}" is on a ${type}: only compression, coating and inspection setpoints can be low-risk`);
    if (validated.has(sp)) add('setpoints.yaml', ['low_risk', i], `"${sp}" is a validated parameter and cannot also be low-risk`);
  });
  for (const sp of Object.keys(manifest.autonomy.setpoints)) known('bundle.yaml', ['autonomy', 'setpoints', sp], sp);

  const agents: Record<string, AgentPolicy> = {};
  for (const [id, a] of Object.entries(agentsFile.agents)) {
    a.allow.forEach((sp, i) => known('agents.yaml', ['agents', id, 'allow', i], sp));
    if (new Set(a.allow).size !== a.allow.length) add('agents.yaml', ['agents', id, 'allow'], 'duplicate setpoint in allow-list');
    agents[id] = { autonomy: a.autonomy, allow: [...new Set(a.allow)].sort(), modelFamily: a.model_family ?? null };
  }

  const setpoints: Record<string, SetpointInfo> = {};
  for (const [sp, t] of [...tags].sort(([a], [b]) => (a < b ? -1 : 1))) {
    setpoints[sp] = {
      id: sp,
      equipment: t.equipment,
      equipmentType: t.type,
      unit: t.unit,
      instrumentRange: t.range,
      validated: validated.has(sp),
      lowRisk: lowRisk.has(sp),
      autonomy: (manifest.autonomy.setpoints[sp] ?? 'L0') as AutonomyLevel,
    };
  }

  const designSpaces: Record<string, ApprovedDesignSpace> = {};
  dsFile.design_spaces.forEach((ds, i) => {
    const product = site.products.find((p) => p.id === ds.product);
    if (!product) add('design-space.yaml', ['design_spaces', i, 'product'], `unknown product "${ds.product}"`);
    else if (!product.tooling.includes(ds.tooling)) add('design-space.yaml', ['design_spaces', i, 'tooling'], `tooling "${ds.tooling}" is not approved for product "${ds.product}"`);
    const key = designSpaceKey(ds.product, ds.tooling);
    if (designSpaces[key]) add('design-space.yaml', ['design_spaces', i], `duplicate design space for ${ds.product} × ${ds.tooling}`);
    const limits: Record<string, CompiledLimit> = {};
    for (const [sp, lim] of Object.entries(ds.setpoints)) {
      const base = ['design_spaces', i, 'setpoints', sp] as const;
      if (!known('design-space.yaml', base, sp)) continue;
      const tag = tags.get(sp)!;
      const conv = compileConversion(lim.unit, tag.unit);
      if (conv.kind === 'unknown') {
        add('design-space.yaml', [...base, 'unit'], `"${lim.unit}" is not a UCUM unit`);
        continue;
      }
      if (conv.kind === 'incompatible') {
        add('design-space.yaml', [...base, 'unit'], `"${lim.unit}" cannot be converted to the tag's unit "${tag.unit}"`);
        continue;
      }
      if (!(lim.min < lim.max)) add('design-space.yaml', [...base, 'min'], `min (${lim.min}) must be below max (${lim.max})`);
      const lo = conv.a * lim.min + conv.b;
      const hi = conv.a * lim.max + conv.b;
      const min = Math.min(lo, hi);
      const max = Math.max(lo, hi);
      if (tag.range && (min < tag.range.min || max > tag.range.max)) {
        add('design-space.yaml', [...base], `approved range ${min}–${max} ${tag.unit} is outside the instrument range ${tag.range.min}–${tag.range.max} ${tag.unit}`);
      }
      // steps and rates are differences: scale only, never the offset (°F → °C)
      const scale = Math.abs(conv.a);
      limits[sp] = {
        min,
        max,
        unit: tag.unit,
        maxStep: lim.max_step * scale,
        maxRatePerMin: lim.max_rate_per_min * scale,
        declared: { min: lim.min, max: lim.max, unit: lim.unit, maxStep: lim.max_step, maxRatePerMin: lim.max_rate_per_min },
      };
    }
    designSpaces[key] = { product: ds.product, tooling: ds.tooling, approvedBy: ds.approved_by, setpoints: limits };
  });

  return {
    format: 1,
    site: manifest.site,
    cappingRiskThreshold: manifest.thresholds.capping_risk,
    attendanceWindowMs: Math.round(manifest.attendance.window_s * 1000),
    ownershipWindowMs: Math.round(manifest.arbitration.ownership_window_s * 1000),
    writableBatchStates: [...new Set(manifest.batch_states.writable)].sort(),
    approvers: {
      qa: [...manifest.approvers.qa].sort(),
      reviewer: [...manifest.approvers.reviewer].sort(),
      change: [...manifest.approvers.change].sort(),
      // only when set, like exceptionSeverity: a bundle without it keeps its version
      ...(manifest.approvers.reassign ? { reassign: [...manifest.approvers.reassign].sort() } : {}),
    },
    raiseRoles: { L1: [...manifest.autonomy.raise_roles.L1].sort(), L2: [...manifest.autonomy.raise_roles.L2].sort(), L3: [...manifest.autonomy.raise_roles.L3].sort() },
    setpoints,
    agents,
    designSpaces,
    // only when set: a bundle without the section keeps the content (and so the version) it had
    ...(manifest.exceptions ? { exceptionSeverity: Object.fromEntries(Object.entries(manifest.exceptions.severity).sort(([a], [b]) => (a < b ? -1 : 1))) } : {}),
  };
}

function deepFreeze<T>(o: T): T {
  if (o && typeof o === 'object' && !Object.isFrozen(o)) {
    Object.freeze(o);
    for (const v of Object.values(o as object)) deepFreeze(v);
  }
  return o;
}
