/**
 * Agents and tools declared in code (step 1 of the spec's development workflow: "define tool and agent in
 * code, bound to the design space"). Declarations are validated once with zod — strict, every bad field named
 * — and frozen. The limits come from the daemon (`DesignSpace.approved`), never from a copy in the
 * declaration, and a tool that writes may only name setpoints that design space approves. Starting an agent
 * composes the free-text run request the daemon's grammar reads and POSTs it; the daemon's policy engine
 * still decides every move at call time (declaring a level here can only cap, never raise, what the site
 * allows).
 */
import { z } from 'zod';
import { AUTONOMY_LEVELS } from '../domain/policy.js';
import { clientOf, type LinekeeperClient } from './client.js';
import { declarationError } from './errors.js';
import type { Run } from './run.js';
import type { Autonomy, DesignSpaceRecord } from './types.js';

const Level = z.enum(AUTONOMY_LEVELS);
const DOTTED = /^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)+$/;
/** `<equipment>.<Tag>`, e.g. press.MainForce. */
const TAG = /^[a-z][a-z0-9-]*\.[A-Z][A-Za-z0-9]*$/;
/** What the run-request grammar reads as a batch id and a line; nothing else may reach the composed text. */
const BATCH = /^[A-Za-z0-9][A-Za-z0-9-]{1,31}$/;
const LINE = /^line-[a-z0-9]*[0-9][a-z0-9]*$/;

/** One approved limit, in the setpoint's own (tag) unit. */
export interface Limit {
  readonly min: number;
  readonly max: number;
  /** UCUM code. */
  readonly unit: string;
  readonly maxStep: number;
  readonly maxRatePerMin: number;
}

/** The approved design space of one product family × tooling family, as the daemon's policy bundle holds it. */
export class DesignSpace {
  readonly product: string;
  readonly tooling: string;
  /** The validation report that approved it. */
  readonly approvedBy: string;
  /** SHA-256 of the policy bundle the limits were read from. */
  readonly bundleVersion: string;
  readonly setpoints: Readonly<Record<string, Limit>>;

  constructor(r: DesignSpaceRecord) {
    this.product = r.product;
    this.tooling = r.tooling;
    this.approvedBy = r.approvedBy;
    this.bundleVersion = r.bundleVersion;
    this.setpoints = Object.freeze(Object.fromEntries(Object.entries(r.setpoints).map(([k, v]) => [k, Object.freeze({ ...v })])));
    Object.freeze(this);
  }

  /**
   * `DesignSpace.approved(product, tooling)`: the approved limits for that pair, read from the daemon.
   * @throws LinekeeperError LK_NOT_FOUND (no approved design space for the pair, or another tenant's
   *   product), LK_POLICY_BUNDLE (no bundle in force), LK_VALIDATION (no client).
   */
  static async approved(product: string, tooling: string, o: { client?: LinekeeperClient } = {}): Promise<DesignSpace> {
    return new DesignSpace(await clientOf(o.client).designSpace(product, tooling));
  }

  /** The limit of a setpoint, or undefined when the design space does not approve it. */
  limit(tag: string): Limit | undefined {
    return Object.hasOwn(this.setpoints, tag) ? this.setpoints[tag] : undefined;
  }

  /** Whether `value`, in the setpoint's own unit, is inside the approved range (a setpoint it lacks: false). */
  contains(tag: string, value: number): boolean {
    const l = this.limit(tag);
    return l !== undefined && Number.isFinite(value) && value >= l.min && value <= l.max;
  }

  toString(): string {
    return `${this.product} × ${this.tooling}`;
  }
}

/** What {@link Tool} made: an agent takes these only. */
const TOOLS = new WeakSet<Tool>();

export interface ToolSpec {
  /** Dotted name, e.g. press.write_setpoint. */
  readonly name: string;
  /** Equipment tags the tool touches (`<equipment>.<Tag>`). */
  readonly tags?: readonly string[];
  /** A zod schema of the tool's arguments ({@link Tool.check}). */
  readonly schema?: z.ZodType;
  /** UCUM unit of each tag the tool reads or writes; must be the approved limit's unit when `limits` are given. */
  readonly units?: Readonly<Record<string, string>>;
  /** The approved design space the tool is bound to. */
  readonly limits?: DesignSpace;
  /** When true the tool writes nothing. */
  readonly readOnly: boolean;
  /** The autonomy level the tool needs. */
  readonly autonomyNeeded: Autonomy;
}

export interface Tool {
  readonly name: string;
  readonly tags: readonly string[];
  readonly schema: z.ZodType | undefined;
  readonly units: Readonly<Record<string, string>>;
  readonly limits: DesignSpace | undefined;
  readonly readOnly: boolean;
  readonly autonomyNeeded: Autonomy;
  /** The arguments parsed by the tool's schema (as given when it has none). @throws LinekeeperError LK_VALIDATION. */
  check(args: unknown): unknown;
}

const ToolSchema = z
  .strictObject({
    name: z.string().regex(DOTTED, 'a tool name is dotted lower-case words, e.g. press.write_setpoint'),
    tags: z.array(z.string().regex(TAG, 'a tag is <equipment>.<Tag>, e.g. press.MainForce')).default([]),
    schema: z.custom<z.ZodType>((v) => v instanceof z.ZodType, { message: 'a zod schema of the tool\'s arguments' }).optional(),
    units: z.record(z.string(), z.string().min(1, 'a UCUM code')).default({}),
    limits: z.instanceof(DesignSpace, { message: 'a DesignSpace (DesignSpace.approved(product, tooling))' }).optional(),
    readOnly: z.boolean(),
    autonomyNeeded: Level,
  })
  .superRefine((t, ctx) => {
    if (new Set(t.tags).size !== t.tags.length) ctx.addIssue({ code: 'custom', path: ['tags'], message: 'a tag is named twice' });
    if (!t.readOnly && t.autonomyNeeded === 'L0') ctx.addIssue({ code: 'custom', path: ['autonomyNeeded'], message: 'a tool that writes needs L1 or above (L0 writes nothing)' });
    for (const tag of Object.keys(t.units)) {
      if (!t.tags.includes(tag)) ctx.addIssue({ code: 'custom', path: ['units', tag], message: `${tag} is not one of the tool's tags` });
    }
    if (!t.limits) return;
    t.tags.forEach((tag, i) => {
      const limit = t.limits!.limit(tag);
      if (!limit && !t.readOnly) ctx.addIssue({ code: 'custom', path: ['tags', i], message: `${tag} is not approved in the design space ${t.limits!.toString()}` });
      const unit = t.units[tag];
      if (limit && unit !== undefined && unit !== limit.unit) ctx.addIssue({ code: 'custom', path: ['units', tag], message: `${unit} is not the unit of the approved limit (${limit.unit})` });
    });
  });

/**
 * Declare a tool. @throws LinekeeperError LK_VALIDATION naming every bad field: an unknown key, a name or tag of
 * the wrong form, a writing tool at L0, a unit for a tag it does not name or unlike the approved limit's, a
 * written tag outside the design space it is bound to.
 */
export function Tool(spec: ToolSpec): Tool {
  const r = ToolSchema.safeParse(spec);
  if (!r.success) throw declarationError(`tool ${typeof spec?.name === 'string' ? spec.name : ''}`.trim(), r.error);
  const t = r.data;
  const tool: Tool = {
    name: t.name, tags: Object.freeze([...t.tags]), schema: t.schema, units: Object.freeze({ ...t.units }), limits: t.limits, readOnly: t.readOnly, autonomyNeeded: t.autonomyNeeded,
    check(args: unknown): unknown {
      if (!t.schema) return args;
      const parsed = t.schema.safeParse(args);
      if (!parsed.success) throw declarationError(`the arguments of ${t.name}`, parsed.error);
      return parsed.data;
    },
  };
  TOOLS.add(tool);
  return Object.freeze(tool);
}

export interface AgentSpec {
  /** `agent.<role>`, e.g. agent.compress_fill. */
  readonly id: string;
  /** Natural-language goal the daemon's run-request grammar reads, e.g. "keep weight and hardness on target, capping risk under 1.5%". */
  readonly goal: string;
  readonly tools?: readonly Tool[];
  readonly autonomy: Autonomy;
  /** `twin`: every proposal is rehearsed on the fitted twin first. */
  readonly verify: 'twin';
  /** `part11`: every call goes to the Part 11 audit trail. */
  readonly audit: 'part11';
}

export interface StartOptions {
  /** Instead of the agent's goal. */
  readonly goal?: string;
  /** Instead of the agent's level: a cap on every agent of the run (it never raises a level). */
  readonly autonomy?: Autonomy;
  /** Instead of the default client. */
  readonly client?: LinekeeperClient;
}

export interface Agent {
  readonly id: string;
  readonly goal: string;
  readonly tools: readonly Tool[];
  readonly autonomy: Autonomy;
  readonly verify: 'twin';
  readonly audit: 'part11';
  /** The free-text run request `start` sends. @throws LinekeeperError LK_VALIDATION for a line, batch or goal of the wrong form. */
  request(line: string, batch: string, goal?: string): string;
  /**
   * Start a run of `batch` on `line` toward the agent's goal (POST /runs); follow it with `run.stream()`.
   * @throws LinekeeperError LK_VALIDATION (line, batch, goal, autonomy, no client), and what the daemon refuses:
   *   LK_RUN_REQUEST_INVALID, LK_RUN_REQUEST_LOOSENS, LK_LINE_BUSY, LK_LINE_NOT_READY, LK_BATCH_CLOSED, LK_NOT_FOUND (no such batch), LK_FORBIDDEN.
   */
  start(line: string, batch: string, o?: StartOptions): Promise<Run>;
}

const AgentSchema = z
  .strictObject({
    id: z.string().regex(/^agent\.[a-z][a-z0-9_]*$/, 'an agent id is agent.<role>, e.g. agent.compress_fill'),
    goal: z.string().trim().min(1, 'a goal is required').max(2000),
    tools: z.array(z.custom<Tool>((v) => typeof v === 'object' && v !== null && TOOLS.has(v as Tool), { message: 'a Tool(…) declaration' })).default([]),
    autonomy: Level,
    verify: z.literal('twin', { message: 'verify is "twin" (rehearse on the twin before every proposal)' }),
    audit: z.literal('part11', { message: 'audit is "part11" (every call to the Part 11 audit trail)' }),
  })
  .superRefine((a, ctx) => {
    const seen = new Set<string>();
    a.tools.forEach((t, i) => {
      if (seen.has(t.name)) ctx.addIssue({ code: 'custom', path: ['tools', i], message: `tool ${t.name} is declared twice` });
      seen.add(t.name);
    });
  });

const StartSchema = z.strictObject({
  line: z.string().regex(LINE, 'a line is line-<n>, e.g. line-3'),
  batch: z.string().regex(BATCH, 'a batch id is 2–32 letters, digits and hyphens, e.g. B-1042'),
  goal: z.string().trim().min(1, 'a goal is required').max(2000).refine((g) => !/[\r\n]/.test(g), 'a goal is one line'),
  autonomy: Level,
});

/**
 * Declare an agent. @throws LinekeeperError LK_VALIDATION naming every bad field: an id that is not
 * agent.<role>, an autonomy level other than L0–L3, verify or audit other than the spec's values, a tool not
 * made by {@link Tool} or declared twice, an unknown key.
 */
export function Agent(spec: AgentSpec): Agent {
  const r = AgentSchema.safeParse(spec);
  if (!r.success) throw declarationError(`agent ${typeof spec?.id === 'string' ? spec.id : ''}`.trim(), r.error);
  const a = r.data;
  const compose = (line: string, batch: string, goal: string | undefined, autonomy: Autonomy | undefined): { request: string; autonomy: Autonomy } => {
    const s = StartSchema.safeParse({ line, batch, goal: goal ?? a.goal, autonomy: autonomy ?? a.autonomy });
    if (!s.success) throw declarationError(`the start of ${a.id}`, s.error);
    return { request: `run batch ${s.data.batch} on ${s.data.line}, ${s.data.goal}`, autonomy: s.data.autonomy };
  };
  return Object.freeze({
    id: a.id, goal: a.goal, tools: Object.freeze([...a.tools]), autonomy: a.autonomy, verify: a.verify, audit: a.audit,
    request: (line: string, batch: string, goal?: string) => compose(line, batch, goal, undefined).request,
    async start(line: string, batch: string, o: StartOptions = {}): Promise<Run> {
      const c = compose(line, batch, o.goal, o.autonomy);
      return clientOf(o.client).startRun(c);
    },
  });
}
