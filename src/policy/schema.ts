/**
 * Shapes of the policy bundle files (config/policy/*.yaml), strict: an
 * unknown key is an error, so a typo never silently widens what agents may
 * do. Cross-references to the site configuration (setpoints, units,
 * products, tooling, equipment families) are checked in compile.ts.
 */
import { z } from 'zod';
import { EXCEPTION_KINDS, EXCEPTION_SEVERITIES } from '../domain/exception.js';
import { AUTONOMY_LEVELS } from '../domain/policy.js';

const agentId = z.string().regex(/^agent\.[a-z][a-z0-9_]*$/, 'must be agent.<role> (lower-case letters, digits, underscores)');
const setpointId = z.string().regex(/^[a-z][a-z0-9-]*\.[A-Z][A-Za-z0-9]*$/, 'must be <equipment>.<Tag>');
const id = z.string().regex(/^[a-z][a-z0-9-]*$/, 'must be lower-case letters, digits and dashes');
const role = z.string().regex(/^[a-z][a-z0-9_]*$/, 'must be a lower-case role name');
const level = z.enum(AUTONOMY_LEVELS);
const positive = z.number().positive();

/** bundle.yaml: the manifest, thresholds and who may do what. */
export const BundleManifest = z.strictObject({
  format: z.literal(1),
  /** The site this bundle is approved for; must equal site.id of the configuration. */
  site: id,
  thresholds: z.strictObject({
    /** Maximum predicted capping risk of a compression move (fraction: 0.015 = 1.5 %). */
    capping_risk: z.number().gt(0).lt(1),
  }),
  attendance: z.strictObject({
    /** An operator is attended while their last presence heartbeat is younger than this. */
    window_s: positive,
  }),
  arbitration: z.strictObject({
    /** How long a won contested setpoint stays with its owner before it must re-justify. */
    ownership_window_s: positive,
  }),
  batch_states: z.strictObject({
    /** Batch states in which setpoints may move; any other state denies. */
    writable: z.array(id).min(1),
  }),
  approvers: z.strictObject({
    /** Roles whose approval satisfies R4 (design space, validated parameter) and R3 (release). */
    qa: z.array(role).min(1),
    /** Roles that may approve an L2 move in the review console. */
    reviewer: z.array(role).min(1),
    /** Roles that may approve a policy bundle change (CHANGE.yaml). */
    change: z.array(role).min(1),
    /** Roles that may reassign the QA reviewer of a run (signed); absent: qa_reviewer and admin. */
    reassign: z.array(role).min(1).optional(),
  }),
  autonomy: z.strictObject({
    /** Roles that may raise an agent or a setpoint *to* each level. Lowering needs no role. */
    raise_roles: z.strictObject({ L1: z.array(role).min(1), L2: z.array(role).min(1), L3: z.array(role).min(1) }),
    /** Ceiling per setpoint (effective level = min(agent, setpoint)); a setpoint not listed is L0. */
    setpoints: z.record(setpointId, level),
  }),
  /** The site's severity of each exception kind (critical and major block a release until QA closes them); unlisted kinds keep linekeeper's defaults. */
  exceptions: z.strictObject({ severity: z.partialRecord(z.enum(EXCEPTION_KINDS), z.enum(EXCEPTION_SEVERITIES)) }).optional(),
});
export type BundleManifest = z.infer<typeof BundleManifest>;

/** agents.yaml: allow-lists, initial autonomy and the model family each agent proposes from. */
export const AgentsFile = z.strictObject({
  agents: z.record(
    agentId,
    z.strictObject({
      description: z.string().optional(),
      /** Level the agent starts at under this bundle; new agents start at L0. */
      autonomy: level.default('L0'),
      /** Setpoints the agent may write (R7); empty = read-only agent. */
      allow: z.array(setpointId),
      /**
       * Model family `<analyte>-<family>` (e.g. `process-twin`) the agent's proposals must come from. Which
       * version is validated and where it is pinned is the model registry's (in the store), never the bundle's:
       * the decision checks the named model against the registry at call time.
       */
      model_family: z.string().regex(/^[a-z][a-z0-9]*-[a-z][a-z0-9]*$/, 'must be <analyte>-<family>, e.g. process-twin').optional(),
    }),
  ),
});
export type AgentsFile = z.infer<typeof AgentsFile>;

/** setpoints.yaml: validated parameters and low-risk setpoints. */
export const SetpointsFile = z.strictObject({
  /** Any change waits for QA (R4). */
  validated: z.array(setpointId),
  /** Setpoints an L3 agent may move without review (compression, coating and inspection only). */
  low_risk: z.array(setpointId),
});
export type SetpointsFile = z.infer<typeof SetpointsFile>;

const limit = z.strictObject({
  min: z.number(),
  max: z.number(),
  /** UCUM unit of min, max, max_step and max_rate_per_min; converted to the tag's unit once at load. */
  unit: z.string().min(1),
  /** Largest single move, |new − current|. */
  max_step: positive,
  /** Largest rate of change between moves, per minute. */
  max_rate_per_min: positive,
});

/** design-space.yaml: approved limits per product family × tooling family. */
export const DesignSpaceFile = z.strictObject({
  design_spaces: z
    .array(
      z.strictObject({
        product: id,
        tooling: id,
        /** Reference of the validation report that approved these limits. */
        approved_by: z.string().min(1),
        setpoints: z.record(setpointId, limit),
      }),
    )
    .min(1),
});
export type DesignSpaceFile = z.infer<typeof DesignSpaceFile>;

/** CHANGE.yaml: the change-control record of the bundle's current content. */
export const ChangeFile = z.strictObject({
  change_ref: z.string().regex(/^[A-Z][A-Z0-9]*-[A-Za-z0-9-]+$/, 'must look like CC-2026-0142'),
  approver: z.strictObject({ name: z.string().min(1), role }),
  reason: z.string().min(1),
  date: z.string().regex(/^\d{4}-\d{2}-\d{2}$/, 'must be YYYY-MM-DD'),
});
export type ChangeFile = z.infer<typeof ChangeFile>;

/** File name → schema, in load order. */
export const BUNDLE_FILES = {
  'bundle.yaml': BundleManifest,
  'agents.yaml': AgentsFile,
  'setpoints.yaml': SetpointsFile,
  'design-space.yaml': DesignSpaceFile,
  'CHANGE.yaml': ChangeFile,
} as const;
export type BundleFileName = keyof typeof BUNDLE_FILES;
