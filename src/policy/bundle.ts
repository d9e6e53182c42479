/**
 * The compiled policy bundle: its hashed content, and the indexes and unit
 * conversions the engine needs at call time. Everything a decision reads is
 * prepared here once per bundle, so `evaluate` does map look-ups and
 * arithmetic only (a UCUM conversion call costs ~10 µs; a compiled one ~ns).
 */
import type { ExceptionKind, ExceptionSeverity } from '../domain/exception.js';
import type { AutonomyLevel } from '../domain/policy.js';
import { isValidUnit, linearConversion } from '../domain/units.js';
import { LkError } from '../errors.js';
import type { ChangeFile } from './schema.js';

/** One approved limit, in the setpoint's own (tag) unit. */
export interface CompiledLimit {
  readonly min: number;
  readonly max: number;
  readonly unit: string;
  readonly maxStep: number;
  readonly maxRatePerMin: number;
  /** As written in design-space.yaml, before conversion (for reviewers). */
  readonly declared: { readonly min: number; readonly max: number; readonly unit: string; readonly maxStep: number; readonly maxRatePerMin: number };
}

export interface SetpointInfo {
  readonly id: string;
  readonly equipment: string;
  readonly equipmentType: string;
  readonly unit: string;
  readonly instrumentRange: { readonly min: number; readonly max: number } | null;
  readonly validated: boolean;
  readonly lowRisk: boolean;
  /** Autonomy ceiling of the setpoint (L0 when the bundle does not list it). */
  readonly autonomy: AutonomyLevel;
}

export interface AgentPolicy {
  readonly autonomy: AutonomyLevel;
  /** Sorted setpoint ids. */
  readonly allow: readonly string[];
  /** `<analyte>-<family>` the agent's proposals must come from (checked against the model registry), or null. */
  readonly modelFamily: string | null;
}

export interface ApprovedDesignSpace {
  readonly product: string;
  readonly tooling: string;
  readonly approvedBy: string;
  readonly setpoints: Readonly<Record<string, CompiledLimit>>;
}

/** The canonical content of a bundle; its SHA-256 (RFC 8785) is the bundle version. */
export interface BundleContent {
  readonly format: 1;
  readonly site: string;
  readonly cappingRiskThreshold: number;
  readonly attendanceWindowMs: number;
  readonly ownershipWindowMs: number;
  readonly writableBatchStates: readonly string[];
  /** `reassign` only when the bundle names it (absent, the content — and the version — stay what they were). */
  readonly approvers: { readonly qa: readonly string[]; readonly reviewer: readonly string[]; readonly change: readonly string[]; readonly reassign?: readonly string[] };
  readonly raiseRoles: Readonly<Record<'L1' | 'L2' | 'L3', readonly string[]>>;
  readonly setpoints: Readonly<Record<string, SetpointInfo>>;
  readonly agents: Readonly<Record<string, AgentPolicy>>;
  /** Keyed `<product>|<tooling>`. */
  readonly designSpaces: Readonly<Record<string, ApprovedDesignSpace>>;
  /** The site's severities of exception kinds (bundle.yaml `exceptions.severity`); absent when the bundle sets none. */
  readonly exceptionSeverity?: Readonly<Partial<Record<ExceptionKind, ExceptionSeverity>>>;
}

export type Conversion = { readonly kind: 'ok'; readonly a: number; readonly b: number } | { readonly kind: 'unknown' } | { readonly kind: 'incompatible' };

/** Look-up structures built once from the content (not hashed). */
export interface BundleIndex {
  readonly setpoints: ReadonlyMap<string, SetpointInfo>;
  readonly agents: ReadonlyMap<string, AgentPolicy & { readonly allowSet: ReadonlySet<string> }>;
  readonly designSpaces: ReadonlyMap<string, ReadonlyMap<string, CompiledLimit>>;
  readonly writableBatchStates: ReadonlySet<string>;
  readonly qaRoles: ReadonlySet<string>;
  readonly reviewerRoles: ReadonlySet<string>;
  /** tag unit → (from unit → conversion); filled at load for declared units, then on first sight of a pair. */
  readonly conversions: Map<string, Map<string, Conversion>>;
  /** Number of pairs in `conversions` (bounded by MAX_CACHED_PAIRS). */
  readonly cached: { n: number };
}

export interface PolicyBundle {
  /** SHA-256 hex of the canonical content. */
  readonly version: string;
  readonly content: BundleContent;
  /** The change-control record (CHANGE.yaml) the bundle was loaded with. */
  readonly change: ChangeFile;
  readonly designSpace: DesignSpace;
  /** Engine internals: look-ups and the conversion cache. */
  readonly index: BundleIndex;
}

/** Limit on first-seen unit pairs kept per bundle, so hostile input cannot grow memory without bound. */
const MAX_CACHED_PAIRS = 1024;

/**
 * Compiled conversion `from → to` (affine, y = a·x + b), cached on the bundle.
 * A pair seen for the first time costs one UCUM compile; afterwards a Map hit.
 */
export function conversionFor(index: BundleIndex, from: string, to: string): Conversion {
  let byFrom = index.conversions.get(to);
  const hit = byFrom?.get(from);
  if (hit) return hit;
  const c = compileConversion(from, to);
  if (index.cached.n < MAX_CACHED_PAIRS) {
    if (!byFrom) {
      byFrom = new Map();
      index.conversions.set(to, byFrom);
    }
    byFrom.set(from, c);
    index.cached.n++;
  }
  return c;
}

/** UCUM compile of one unit pair; distinguishes an unknown unit from an incompatible one. */
export function compileConversion(from: string, to: string): Conversion {
  if (from === to) return { kind: 'ok', a: 1, b: 0 };
  if (from.length === 0 || from.length > 64 || !isValidUnit(from)) return { kind: 'unknown' };
  const lin = linearConversion(from, to);
  return lin ? { kind: 'ok', a: lin.a, b: lin.b } : { kind: 'incompatible' };
}

/**
 * `DesignSpace.approved(product, tooling)` of the spec: the approved,
 * unit-aware limits for one product family × tooling family of this bundle.
 */
export class DesignSpace {
  constructor(private readonly spaces: Readonly<Record<string, ApprovedDesignSpace>>) {}

  /**
   * The approved design space for a product family and a tooling family.
   * @throws LkError(LK_NOT_FOUND) when the bundle approves no design space for that pair.
   */
  approved(product: string, tooling: string): ApprovedDesignSpace {
    const ds = this.spaces[designSpaceKey(product, tooling)];
    if (!ds) throw new LkError('LK_NOT_FOUND', `no approved design space for product "${product}" × tooling "${tooling}"`, { product, tooling });
    return ds;
  }

  /** Every approved pair, for listings. */
  pairs(): { product: string; tooling: string }[] {
    return Object.values(this.spaces).map((d) => ({ product: d.product, tooling: d.tooling }));
  }
}

export function designSpaceKey(product: string, tooling: string): string {
  return `${product}|${tooling}`;
}

/** Build the look-ups from the (already validated) content. */
export function buildIndex(content: BundleContent): BundleIndex {
  const conversions = new Map<string, Map<string, Conversion>>();
  const cached = { n: 0 };
  const designSpaces = new Map<string, Map<string, CompiledLimit>>();
  for (const [key, ds] of Object.entries(content.designSpaces)) {
    const m = new Map<string, CompiledLimit>();
    for (const [sp, lim] of Object.entries(ds.setpoints)) {
      m.set(sp, lim);
      // the declared unit and the tag unit are the pairs callers use most: compile them now
      conversionFor({ conversions, cached } as unknown as BundleIndex, lim.declared.unit, lim.unit);
    }
    designSpaces.set(key, m);
  }
  return {
    setpoints: new Map(Object.entries(content.setpoints)),
    agents: new Map(Object.entries(content.agents).map(([k, a]) => [k, { ...a, allowSet: new Set(a.allow) }])),
    designSpaces,
    writableBatchStates: new Set(content.writableBatchStates),
    qaRoles: new Set(content.approvers.qa),
    reviewerRoles: new Set([...content.approvers.reviewer, ...content.approvers.qa]),
    conversions,
    cached,
  };
}
