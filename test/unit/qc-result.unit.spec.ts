import { describe, expect, it } from 'vitest';
import { type QcResult, compareQcResults, parseQcResult } from '../../src/domain/qc-result.js';
import { LkError } from '../../src/errors.js';
import { codeOf } from '../helpers/codes.js';

function assay(): Record<string, any> {
  return {
    format: 1,
    batch: 'B-1042',
    tenant: 'acme-pharma',
    test: 'assay',
    result: 99.4,
    unit: '%',
    specification: '95.0–105.0 % of label claim',
    status: 'pass',
    analyst: 'a.verdi',
    reviewed_by: 's.neri',
    sampled_at: '2026-11-20T14:00:00Z',
    reported_at: '2026-11-21T09:30:00Z',
    lims_ref: 'LIMS-2026-88123',
  };
}

function firstPath(raw: unknown): string | undefined {
  try {
    parseQcResult(raw, 'acme-pharma/r.json');
  } catch (e) {
    if (!LkError.is(e)) throw e;
    expect(e.code).toBe('LK_QC_RESULT_INVALID');
    return (e.detail?.issues as { path: string }[])[0]?.path;
  }
  return undefined;
}

describe('QC result schema', () => {
  it('accepts a numeric and a text result, frozen', () => {
    const r = parseQcResult(assay(), 'x');
    expect(r.result).toBe(99.4);
    expect(Object.isFrozen(r)).toBe(true);
    const identity = { ...assay(), test: 'identity', result: 'conforms', unit: undefined, reviewed_by: undefined, sampled_at: undefined };
    delete identity.unit;
    delete identity.reviewed_by;
    delete identity.sampled_at;
    expect(codeOf(() => parseQcResult(identity, 'x'))).toBeUndefined();
  });

  it.each([
    ['test', { test: 'tensile' }],
    ['result', { result: Number.NaN }],
    ['result', { result: '' }],
    ['unit', { unit: 'percent-ish' }],
    ['status', { status: 'ok' }],
    ['reported_at', { reported_at: 'tomorrow' }],
    ['reviewed_by', { reviewed_by: 'a.verdi' }],
    ['sampled_at', { sampled_at: '2026-11-22T00:00:00Z' }],
    ['tenant', { tenant: '../acme-pharma' }],
    ['batch', { batch: 'b 1042' }],
    ['lims_ref', { lims_ref: '' }],
    ['remarks', { remarks: 'looks fine' }],
  ])('[A11.5] refuses a bad %s', (path, patch) => {
    expect(firstPath({ ...assay(), ...patch })).toBe(path);
  });

  it('orders by report instant (whatever the offset), then LIMS reference', () => {
    const at = (reported_at: string, lims_ref: string): QcResult => parseQcResult({ ...assay(), sampled_at: undefined, reported_at, lims_ref }, 'x');
    const list = [at('2026-11-21T10:00:00+02:00', 'L-3'), at('2026-11-21T09:00:00Z', 'L-2'), at('2026-11-21T09:00:00Z', 'L-1')];
    expect(list.sort(compareQcResults).map((r) => r.lims_ref)).toEqual(['L-3', 'L-1', 'L-2']);
  });
});
