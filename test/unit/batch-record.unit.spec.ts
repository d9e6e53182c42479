import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { defaultConfigFile, loadConfig } from '../../src/config/load.js';
import {
  type BatchRecord,
  USP_905_L1,
  batchRecordJsonSchema,
  batchRecordSiteIssues,
  checkBatchRecordAgainstSite,
  parseBatchRecord,
} from '../../src/domain/batch-record.js';
import { convertUnit } from '../../src/domain/units.js';
import { LkError } from '../../src/errors.js';
import { loadPolicyBundle } from '../../src/config/policy-bundle.js';
import { codeOf } from '../helpers/codes.js';

/** The contract's example record (as JSON would give it). */
function good(): Record<string, any> {
  return {
    format: 1,
    batch: 'B-1042',
    tenant: 'acme-pharma',
    product: 'ir-family-a',
    tooling: 'round-10mm-ff',
    line: 'line-3',
    mes_ref: 'MES-2026-11-1042',
    issued_at: '2026-11-20T08:00:00.000Z',
    strength: { value: 300, unit: 'mg' },
    batch_size: { tablets: 300000 },
    master_recipe: { 'press.MainForce': { value: 12, unit: 'kN' }, 'coater.InletAirTemp': { value: 60, unit: 'Cel' } },
    specifications: {
      tablet_weight: { target: 300, unit: 'mg', rsd_max_pct: 2.0 },
      hardness: { min: 80, max: 150, unit: 'N' },
      thickness: { min: 3.6, max: 4.4, unit: 'mm' },
      content_uniformity: { av_max: 15.0 },
      dissolution: { q_pct: 80, at_min: 30 },
      defect_rate_max_pct: 1.0,
      potency: { min_pct: 95, max_pct: 105 },
      lod_end_pct: 2.0,
      coat_weight_gain_pct: 3.0,
      blend_rsd_max_pct: 5.0,
    },
    reviewer: 'p.bianchi',
    qa_reviewer: 'm.rossi',
  };
}

function variant(edit: (r: Record<string, any>) => void): Record<string, any> {
  const r = good();
  edit(r);
  return r;
}

function refusal(raw: unknown, source = 'B-1042.json'): LkError {
  try {
    parseBatchRecord(raw, source);
  } catch (e) {
    if (LkError.is(e)) return e;
    throw e;
  }
  throw new Error('expected the record to be refused');
}

const paths = (e: LkError): string[] => (e.detail?.issues as { path: string }[]).map((i) => i.path);

describe('batch record schema', () => {
  it('accepts the contract example and returns it frozen, unchanged', () => {
    const r = parseBatchRecord(good(), 'B-1042.json');
    expect(r).toEqual(good());
    expect(Object.isFrozen(r)).toBe(true);
    expect(Object.isFrozen(r.specifications.hardness)).toBe(true);
    expect(Object.isFrozen(r.master_recipe['press.MainForce'])).toBe(true);
  });

  it('accepts other units of the right kind and a datetime with an offset', () => {
    const r = variant((x) => {
      x.specifications.hardness = { min: 8, max: 15, unit: 'kgf' };
      x.specifications.thickness = { min: 0.14, max: 0.17, unit: '[in_i]' };
      x.specifications.tablet_weight.unit = 'g';
      x.specifications.tablet_weight.target = 0.3;
      x.strength = { value: 0.3, unit: 'g' };
      x.issued_at = '2026-11-20T09:00:00+01:00';
    });
    expect(codeOf(() => parseBatchRecord(r, 'x.json'))).toBeUndefined();
  });

  const bad: [string, (r: Record<string, any>) => void, string][] = [
    ['format 2', (r) => (r.format = 2), 'format'],
    ['lower-case batch id', (r) => (r.batch = 'b-1042'), 'batch'],
    ['batch id too long', (r) => (r.batch = `B-${'1'.repeat(31)}`), 'batch'],
    ['tenant with a path', (r) => (r.tenant = '../acme-pharma'), 'tenant'],
    ['product not an id', (r) => (r.product = 'IR Family A'), 'product'],
    ['mes_ref empty', (r) => (r.mes_ref = ''), 'mes_ref'],
    ['issued_at not ISO', (r) => (r.issued_at = '20/11/2026 08:00'), 'issued_at'],
    ['strength negative', (r) => (r.strength.value = -300), 'strength.value'],
    ['strength infinite', (r) => (r.strength.value = Number.POSITIVE_INFINITY), 'strength.value'],
    ['strength NaN', (r) => (r.strength.value = Number.NaN), 'strength.value'],
    ['strength not a mass', (r) => (r.strength.unit = 'mL'), 'strength.unit'],
    ['strength above tablet weight', (r) => (r.strength = { value: 0.5, unit: 'g' }), 'strength.value'],
    ['tablets fractional', (r) => (r.batch_size.tablets = 1.5), 'batch_size.tablets'],
    ['master recipe key not a tag id', (r) => (r.master_recipe.MainForce = { value: 12, unit: 'kN' }), 'master_recipe["MainForce"]'],
    ['master recipe unit unknown', (r) => (r.master_recipe['press.MainForce'].unit = 'kNN'), 'master_recipe["press.MainForce"].unit'],
    ['master recipe value a string', (r) => (r.master_recipe['press.MainForce'].value = '12'), 'master_recipe["press.MainForce"].value'],
    ['master recipe empty', (r) => (r.master_recipe = {}), 'master_recipe'],
    ['tablet weight in mm', (r) => (r.specifications.tablet_weight.unit = 'mm'), 'specifications.tablet_weight.unit'],
    ['rsd_max_pct zero', (r) => (r.specifications.tablet_weight.rsd_max_pct = 0), 'specifications.tablet_weight.rsd_max_pct'],
    ['hardness min above max', (r) => (r.specifications.hardness.min = 160), 'specifications.hardness.min'],
    ['hardness in kg (a mass, not a force)', (r) => (r.specifications.hardness.unit = 'kg'), 'specifications.hardness.unit'],
    ['thickness in N', (r) => (r.specifications.thickness.unit = 'N'), 'specifications.thickness.unit'],
    ['thickness negative', (r) => (r.specifications.thickness.min = -1), 'specifications.thickness.min'],
    ['potency min above max', (r) => (r.specifications.potency.min_pct = 106), 'specifications.potency.min_pct'],
    ['dissolution q over 100 %', (r) => (r.specifications.dissolution.q_pct = 101), 'specifications.dissolution.q_pct'],
    ['unknown key at the top', (r) => (r.colour = 'white'), 'colour'],
    ['unknown key nested', (r) => (r.specifications.hardness.typical = 120), 'specifications.hardness.typical'],
    ['unknown key in a recipe value', (r) => (r.master_recipe['press.MainForce'].min = 8), 'master_recipe["press.MainForce"].min'],
    ['missing qa_reviewer', (r) => delete r.qa_reviewer, 'qa_reviewer'],
    ['reviewer is an agent', (r) => (r.reviewer = 'agent.orchestrator'), 'reviewer'],
    ['reviewer is system', (r) => (r.reviewer = 'system'), 'reviewer'],
    ['QA reviewer is the reviewer', (r) => (r.qa_reviewer = r.reviewer), 'qa_reviewer'],
  ];

  it.each(bad)('[A11.5] refuses %s at the path of the field', (_what, edit, path) => {
    const e = refusal(variant(edit));
    expect(e.code).toBe('LK_BATCH_RECORD_INVALID');
    expect(e.status).toBe(422);
    expect(paths(e)[0]).toBe(path);
    expect(e.message.startsWith(`B-1042.json: ${path}: `)).toBe(true);
  });

  it('[A11.5] names the source and the first bad field, and lists every issue', () => {
    const e = refusal(
      variant((r) => {
        r.specifications.hardness.min = 200;
        r.specifications.thickness.unit = 'g';
        r.extra = true;
      }),
    );
    expect(e.message).toMatch(/^B-1042\.json: specifications\.hardness\.min: /);
    expect(e.detail?.source).toBe('B-1042.json');
    expect(new Set(paths(e))).toEqual(new Set(['specifications.hardness.min', 'specifications.thickness.unit', 'extra']));
  });

  it('refuses what is not an object at all', () => {
    for (const raw of [null, 'B-1042', 42, []]) expect(paths(refusal(raw))).toEqual(['(root)']);
  });

  it('a record may tighten USP <905> L1 but never loosen it', () => {
    expect(USP_905_L1).toBe(15);
    const av = (v: number) => variant((r) => (r.specifications.content_uniformity.av_max = v));
    expect(parseBatchRecord(av(15.0), 'x').specifications.content_uniformity.av_max).toBe(15);
    expect(parseBatchRecord(av(10.5), 'x').specifications.content_uniformity.av_max).toBe(10.5);
    for (const loose of [15.01, 20]) {
      const e = refusal(av(loose));
      expect(e.code).toBe('LK_BATCH_RECORD_INVALID');
      expect(paths(e)).toEqual(['specifications.content_uniformity.av_max']);
    }
  });

  it('refuses a unit of the wrong dimension even when it is valid UCUM', () => {
    const cases: [(r: Record<string, any>) => void, string][] = [
      [(r) => (r.specifications.tablet_weight.unit = 'N'), 'specifications.tablet_weight.unit'],
      [(r) => (r.specifications.hardness.unit = 'mm'), 'specifications.hardness.unit'],
      [(r) => (r.specifications.thickness.unit = 'mg'), 'specifications.thickness.unit'],
      [(r) => (r.strength.unit = '%'), 'strength.unit'],
    ];
    for (const [edit, path] of cases) expect(paths(refusal(variant(edit)))).toEqual([path]);
  });

  it('publishes a JSON Schema of the record that refuses unknown keys', () => {
    const s = batchRecordJsonSchema() as { type: string; required: string[]; additionalProperties: boolean; properties: Record<string, any> };
    expect(s.type).toBe('object');
    expect(s.additionalProperties).toBe(false);
    expect(s.required).toEqual(expect.arrayContaining(['batch', 'tenant', 'master_recipe', 'specifications', 'qa_reviewer']));
    expect(s.properties.batch.pattern).toBe('^[A-Z0-9][A-Z0-9-]{1,31}$');
    expect(s.properties.specifications.properties.content_uniformity.properties.av_max.maximum).toBe(15);
    expect(JSON.parse(JSON.stringify(s))).toEqual(s);
  });
});

describe('batch record against the site configuration', () => {
  const site = loadConfig().config;
  const parsed = (edit: (r: Record<string, any>) => void = () => {}): BatchRecord => parseBatchRecord(variant(edit), 'B-1042.json');
  const sitePaths = (r: BatchRecord): string[] => batchRecordSiteIssues(r, site).map((i) => i.path);

  it('accepts the contract example on the default site', () => {
    expect(batchRecordSiteIssues(parsed(), site)).toEqual([]);
    expect(codeOf(() => checkBatchRecordAgainstSite(parsed(), site))).toBeUndefined();
  });

  it('[A11.5] refuses another line, an unknown tenant, a product the tenant does not run, foreign tooling', () => {
    expect(sitePaths(parsed((r) => (r.line = 'line-4')))).toEqual(['line']);
    expect(sitePaths(parsed((r) => (r.tenant = 'globex')))).toEqual(['tenant']);
    expect(sitePaths(parsed((r) => (r.product = 'ir-family-b')))).toEqual(['product']);
    expect(sitePaths(parsed((r) => (r.product = 'er-family-z')))).toEqual(['product']);
    expect(sitePaths(parsed((r) => (r.tooling = 'oval-12mm')))).toEqual(['tooling']);
    expect(codeOf(() => checkBatchRecordAgainstSite(parsed((r) => (r.line = 'line-4')), site))).toBe('LK_BATCH_RECORD_INVALID');
  });

  it('a master-recipe tag must be a configured setpoint in a convertible unit, inside the instrument range', () => {
    expect(sitePaths(parsed((r) => (r.master_recipe['press.Foo'] = { value: 1, unit: '1' })))).toEqual(['master_recipe["press.Foo"]']);
    expect(sitePaths(parsed((r) => (r.master_recipe['press.Hardness'] = { value: 120, unit: 'N' })))).toEqual(['master_recipe["press.Hardness"]']);
    expect(sitePaths(parsed((r) => (r.master_recipe['press.MainForce'] = { value: 12, unit: 'mm' })))).toEqual(['master_recipe["press.MainForce"].unit']);
    expect(sitePaths(parsed((r) => (r.master_recipe['press.MainForce'] = { value: 45, unit: 'kN' })))).toEqual(['master_recipe["press.MainForce"].value']);
    // a compatible unit is converted before the range check: 12 000 N = 12 kN is fine, 45 000 N is not
    expect(sitePaths(parsed((r) => (r.master_recipe['press.MainForce'] = { value: 12000, unit: 'N' })))).toEqual([]);
    expect(sitePaths(parsed((r) => (r.master_recipe['press.MainForce'] = { value: 45000, unit: 'N' })))).toEqual(['master_recipe["press.MainForce"].value']);
    expect(sitePaths(parsed((r) => (r.master_recipe['coater.InletAirTemp'] = { value: 140, unit: '[degF]' })))).toEqual([]);
  });

  it('names the source in the thrown error and lists every problem', () => {
    try {
      checkBatchRecordAgainstSite(parsed((r) => ((r.line = 'line-4'), (r.tooling = 'oval-12mm'))), site, 'acme-pharma/B-1042.json');
      expect.unreachable();
    } catch (e) {
      if (!LkError.is(e)) throw e;
      expect(e.code).toBe('LK_BATCH_RECORD_INVALID');
      expect(e.message).toMatch(/^acme-pharma\/B-1042\.json: line: /);
      expect(paths(e)).toEqual(['line', 'tooling']);
    }
  });
});

describe('the sample batch records (config/batches)', () => {
  const loaded = loadConfig();
  const samples = [
    { file: 'acme-pharma/B-1042.json', tenant: 'acme-pharma', product: 'ir-family-a', reviewer: 'p.bianchi', qa: 'm.rossi' },
    { file: 'borealis-bio/B-2001.json', tenant: 'borealis-bio', product: 'ir-family-b', reviewer: 'l.conti', qa: 'g.ferri' },
  ];
  const bundle = loadPolicyBundle(loaded.policyDir, { site: loaded.config }).bundle;

  it.each(samples)('$file parses, fits the site, and its master recipe lies inside the approved design space', (s) => {
    const raw: unknown = JSON.parse(readFileSync(join(defaultConfigFile(), '..', 'batches', s.file), 'utf8'));
    const r = parseBatchRecord(raw, s.file);
    expect(codeOf(() => checkBatchRecordAgainstSite(r, loaded.config, s.file))).toBeUndefined();
    expect([r.tenant, r.product, r.tooling, r.line, r.reviewer, r.qa_reviewer]).toEqual([s.tenant, s.product, 'round-10mm-ff', 'line-3', s.reviewer, s.qa]);
    expect(`${r.tenant}/${r.batch}.json`).toBe(s.file);

    const space = bundle.designSpace.approved(r.product, r.tooling).setpoints;
    const entries = Object.entries(r.master_recipe);
    expect(entries.length).toBe(Object.keys(space).length); // every setpoint of the design space has a recipe value
    for (const [tag, sp] of entries) {
      const limit = space[tag];
      expect(limit, tag).toBeDefined();
      const v = convertUnit(sp.value, sp.unit, limit!.unit);
      expect(v, tag).toBeDefined();
      expect(v!, tag).toBeGreaterThanOrEqual(limit!.min);
      expect(v!, tag).toBeLessThanOrEqual(limit!.max);
    }
  });
});
