/**
 * The batch record: what the MES says one batch must be (product, tooling,
 * line, master recipe, specifications, who reviews and who releases). It
 * arrives from outside as JSON with snake_case keys and is validated once,
 * here, then frozen. Two steps:
 *
 * 1. {@link parseBatchRecord}: the record on its own (shape, ids, UCUM units of
 *    the right kind, min ≤ max, a record may tighten USP <905> L1, never loosen it);
 * 2. {@link checkBatchRecordAgainstSite}: the record against this site's
 *    configuration (line, tenant, product, tooling, master-recipe setpoints).
 *
 * Pure: no I/O, no clock.
 */
import { z } from 'zod';
import type { SiteConfig, TagConfig } from '../config/schema.js';
import { LkError } from '../errors.js';
import { type DocumentIssue, deepFreeze, formatIssuePath, issuesOf } from './issues.js';
import { convertUnit, isValidUnit, linearConversion } from './units.js';

/** `B-1042`: upper-case letters, digits and dashes, 2–32 characters. */
export const BATCH_ID_RE = /^[A-Z0-9][A-Z0-9-]{1,31}$/;
/** `acme-pharma`: the tenant id form of the audit trail and the model registry. */
export const TENANT_ID_RE = /^[a-z][a-z0-9-]{0,63}$/;
/** A person's user id, as an audit actor (`p.bianchi`); never an agent or `system`. */
export const USER_ID_RE = /^(?!agent\.)(?!system$)[A-Za-z0-9][A-Za-z0-9._@-]{0,127}$/;
/** `<equipment>.<Tag>`, e.g. `press.MainForce` (the form of config/site.yaml and the policy bundle). */
export const TAG_ID_RE = /^[a-z][a-z0-9-]*\.[A-Z][A-Za-z0-9]*$/;

/** USP <905> stage-1 limit L1 of the acceptance value. */
export const USP_905_L1 = 15.0;

const siteId = z.string().regex(/^[a-z][a-z0-9-]{0,63}$/, 'must be lower-case letters, digits and dashes, starting with a letter');
/** Printable text, no control characters, no leading or trailing space. */
export const printable = (max: number) =>
  z
    .string()
    .min(1, 'must not be empty')
    .max(max, `must be at most ${max} characters`)
    .regex(/^[^\s\p{Cc}](?:[^\p{Cc}]*[^\s\p{Cc}])?$/u, 'must be printable text without leading or trailing spaces');
export const userId = z.string().regex(USER_ID_RE, 'must be a person’s user id (e.g. p.bianchi), not an agent or system');
const positive = z.number().positive();
const percent = z.number().positive().max(100, 'must be ≤ 100 (%)');

/** A UCUM unit of a given kind: the probe is any unit of that kind (UCUM converts only commensurable units). */
const KINDS = {
  mass: { probe: 'g', example: 'mg' },
  force: { probe: 'N', example: 'N or kgf' },
  length: { probe: 'm', example: 'mm' },
} as const;
type Kind = keyof typeof KINDS;

/** Valid UCUM (bounded length: the parser is not for arbitrary input). */
export function isUcum(unit: string): boolean {
  return unit.length > 0 && unit.length <= 64 && isValidUnit(unit);
}

export const ucumUnit = z.string().refine(isUcum, { error: (i) => `unknown unit ${JSON.stringify(i.input)} (expected a UCUM code such as mg, kN, mm, Cel)` });

function unitOf(kind: Kind) {
  return z.string().superRefine((u, ctx) => {
    if (!isUcum(u)) ctx.addIssue({ code: 'custom', message: `unknown unit ${JSON.stringify(u)} (expected a UCUM ${kind} unit such as ${KINDS[kind].example})` });
    else if (convertUnit(1, u, KINDS[kind].probe) === undefined) ctx.addIssue({ code: 'custom', message: `unit ${JSON.stringify(u)} is not a ${kind} (expected e.g. ${KINDS[kind].example})` });
  });
}

const quantity = (kind: Kind) => z.strictObject({ value: positive, unit: unitOf(kind) });

const minMax = <T extends z.ZodRawShape>(shape: T, lo: string, hi: string) =>
  z.strictObject(shape).refine((r) => (r as Record<string, number>)[lo]! <= (r as Record<string, number>)[hi]!, { path: [lo], message: `must be ≤ ${hi}` });

/** One master-recipe setpoint: a finite value (a temperature may be ≤ 0) in a UCUM unit. */
const RecipeValue = z.strictObject({ value: z.number(), unit: ucumUnit });

export const Specifications = z.strictObject({
  tablet_weight: z.strictObject({ target: positive, unit: unitOf('mass'), rsd_max_pct: percent }),
  hardness: minMax({ min: positive, max: positive, unit: unitOf('force') }, 'min', 'max'),
  thickness: minMax({ min: positive, max: positive, unit: unitOf('length') }, 'min', 'max'),
  content_uniformity: z.strictObject({
    av_max: positive.max(USP_905_L1, `must be ≤ ${USP_905_L1.toFixed(1)} (USP <905> L1): a batch record may tighten the limit, never loosen it`),
  }),
  dissolution: z.strictObject({ q_pct: percent, at_min: positive }),
  defect_rate_max_pct: percent,
  potency: minMax({ min_pct: positive, max_pct: positive }, 'min_pct', 'max_pct'),
  lod_end_pct: percent,
  coat_weight_gain_pct: percent,
  blend_rsd_max_pct: percent,
});

export const BatchRecord = z
  .strictObject({
    format: z.literal(1),
    batch: z.string().regex(BATCH_ID_RE, 'must be 2–32 upper-case letters, digits and dashes (e.g. B-1042)'),
    tenant: z.string().regex(TENANT_ID_RE, 'must be a tenant id: lower-case letters, digits and dashes'),
    product: siteId,
    tooling: siteId,
    line: siteId,
    mes_ref: printable(128),
    issued_at: z.iso.datetime({ offset: true, error: 'must be an ISO 8601 date-time with Z or an offset' }),
    strength: quantity('mass'),
    batch_size: z.strictObject({ tablets: z.number().int().positive() }),
    master_recipe: z
      .record(z.string().regex(TAG_ID_RE, 'must be a tag id <equipment>.<Tag> (e.g. press.MainForce)'), RecipeValue)
      .refine((r) => Object.keys(r).length > 0, 'must name at least one setpoint'),
    specifications: Specifications,
    /** Assigned reviewer of L2 moves (a process engineer). */
    reviewer: userId,
    /** Named QA reviewer who signs release and needs_qa moves. */
    qa_reviewer: userId,
  })
  .superRefine((r, ctx) => {
    // QA must be independent of the process reviewer whose moves it approves (EU GMP ch. 2)
    if (r.reviewer === r.qa_reviewer) ctx.addIssue({ code: 'custom', path: ['qa_reviewer'], message: 'must not be the reviewer (QA review is independent)' });
    const strengthInTabletUnit = convertUnit(r.strength.value, r.strength.unit, r.specifications.tablet_weight.unit);
    if (strengthInTabletUnit !== undefined && strengthInTabletUnit > r.specifications.tablet_weight.target * (1 + 1e-12)) {
      ctx.addIssue({ code: 'custom', path: ['strength', 'value'], message: 'must not exceed the target tablet weight' });
    }
  });

export type BatchRecord = z.infer<typeof BatchRecord>;
export type BatchSpecifications = z.infer<typeof Specifications>;
export type BatchRecordIssue = DocumentIssue;

function invalid(source: string, issues: readonly DocumentIssue[]): LkError {
  const first = issues[0]!;
  const more = issues.length > 1 ? ` (and ${issues.length - 1} more)` : '';
  return new LkError('LK_BATCH_RECORD_INVALID', `${source}: ${first.path}: ${first.message}${more}`, { source, issues });
}

/**
 * Validate a batch record as it arrived (parsed JSON) and return it frozen.
 * `source` names where it came from (`acme-pharma/B-1042.json`) in the message.
 * @throws LkError(LK_BATCH_RECORD_INVALID) naming the source and the path of the first bad
 *   field; `detail.issues` lists every `{ path, message }`.
 */
export function parseBatchRecord(raw: unknown, source: string): BatchRecord {
  const r = BatchRecord.safeParse(raw);
  if (!r.success) throw invalid(source, issuesOf(r.error));
  return deepFreeze(r.data);
}

/** The tag of a tag id in the site configuration, with its equipment id. */
function findTag(site: SiteConfig, tagId: string): { equipment: string; tag: TagConfig } | undefined {
  const dot = tagId.indexOf('.');
  const eq = site.equipment.find((e) => e.id === tagId.slice(0, dot));
  const tag = (eq?.tags as readonly TagConfig[] | undefined)?.find((t) => t.name === tagId.slice(dot + 1));
  return eq && tag ? { equipment: eq.id, tag } : undefined;
}

/**
 * What is wrong with a (valid) record on this site: its line, tenant, product
 * and tooling must be configured and belong together, and every master-recipe
 * setpoint must be a setpoint of the line in a unit convertible to the tag's
 * unit and inside the tag's instrument range. Empty when it fits. The approved
 * design space is the policy engine's business, not checked here.
 */
export function batchRecordSiteIssues(record: BatchRecord, site: SiteConfig): DocumentIssue[] {
  const out: DocumentIssue[] = [];
  const add = (path: PropertyKey[], message: string): void => void out.push({ path: formatIssuePath(path), message });
  if (record.line !== site.line.id) add(['line'], `line ${JSON.stringify(record.line)} is not this site's line (${site.line.id})`);
  const tenant = site.tenants.find((t) => t.id === record.tenant);
  const product = site.products.find((p) => p.id === record.product);
  if (!tenant) add(['tenant'], `tenant ${JSON.stringify(record.tenant)} is not configured on this site`);
  if (!product) add(['product'], `product ${JSON.stringify(record.product)} is not configured on this site`);
  else if (tenant && !tenant.products.includes(product.id)) add(['product'], `tenant ${tenant.id} does not run product ${product.id}`);
  if (!site.tooling.some((t) => t.id === record.tooling)) add(['tooling'], `tooling ${JSON.stringify(record.tooling)} is not configured on this site`);
  else if (product && !product.tooling.includes(record.tooling)) add(['tooling'], `tooling ${record.tooling} is not approved for product ${product.id}`);

  for (const [tagId, sp] of Object.entries(record.master_recipe)) {
    const found = findTag(site, tagId);
    if (!found) {
      add(['master_recipe', tagId], 'is not a configured tag');
      continue;
    }
    const { equipment, tag } = found;
    if (tag.kind !== 'setpoint') add(['master_recipe', tagId], `is a ${tag.kind} tag, not a setpoint`);
    else if (!site.line.equipment.includes(equipment)) add(['master_recipe', tagId], `equipment ${equipment} is not on ${site.line.id}`);
    else {
      const lin = linearConversion(sp.unit, tag.unit);
      if (!lin) add(['master_recipe', tagId, 'unit'], `unit ${JSON.stringify(sp.unit)} cannot be converted to the tag's unit ${JSON.stringify(tag.unit)}`);
      else if (tag.range) {
        const v = lin.a * sp.value + lin.b;
        if (v < tag.range.min || v > tag.range.max) add(['master_recipe', tagId, 'value'], `${v} ${tag.unit} is outside the instrument range [${tag.range.min}, ${tag.range.max}] ${tag.unit}`);
      }
    }
  }
  return out;
}

/**
 * Check a parsed record against the site configuration (see {@link batchRecordSiteIssues}).
 * @throws LkError(LK_BATCH_RECORD_INVALID) naming `source` (default: the batch id) and the first
 *   problem; `detail.issues` lists all.
 */
export function checkBatchRecordAgainstSite(record: BatchRecord, site: SiteConfig, source: string = record.batch): void {
  const issues = batchRecordSiteIssues(record, site);
  if (issues.length > 0) throw invalid(source, issues);
}

/** JSON Schema (draft 2020-12) of a batch record as it is written (shape and patterns; units and cross-field rules are checked by {@link parseBatchRecord}). */
export function batchRecordJsonSchema(): Record<string, unknown> {
  return {
    ...z.toJSONSchema(BatchRecord, { io: 'input' }),
    $id: 'https://linekeeper.invalid/schema/batch-record-v1.json',
    title: 'linekeeper batch record',
  };
}
