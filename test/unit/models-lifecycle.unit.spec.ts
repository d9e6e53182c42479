import { describe, expect, it } from 'vitest';
import { MODEL_STATUSES, TRANSITIONS, isModelStatus, nextStatuses, transition, type ModelStatus } from '../../src/models/lifecycle.js';

describe('model lifecycle (pure transition table)', () => {
  it('promotes one step at a time, draft → shadow → validated, each promotion gated by the golden evaluation', () => {
    expect(transition('draft', 'shadow')).toMatchObject({ action: 'model.promote', gated: true });
    expect(transition('shadow', 'validated')).toMatchObject({ action: 'model.promote', gated: true });
    expect(transition('draft', 'validated')).toBeUndefined(); // no skipping shadow
  });

  it('retires from any status but retired, without a gate; retired is final', () => {
    for (const from of ['draft', 'shadow', 'validated'] as const) expect(transition(from, 'retired')).toMatchObject({ action: 'model.retire', gated: false });
    for (const to of MODEL_STATUSES) expect(transition('retired', to)).toBeUndefined();
    expect(nextStatuses('retired')).toEqual([]);
  });

  it('[P11.10(f)] never goes back: no shadow → draft, no validated → shadow or draft, no change to the same status', () => {
    const back: [ModelStatus, ModelStatus][] = [['shadow', 'draft'], ['validated', 'shadow'], ['validated', 'draft']];
    for (const [from, to] of back) expect(transition(from, to)).toBeUndefined();
    for (const s of MODEL_STATUSES) expect(transition(s, s)).toBeUndefined();
  });

  it('has exactly the five transitions, each with a signature meaning, and knows its statuses', () => {
    expect(TRANSITIONS.map((t) => `${t.from}→${t.to}`).sort()).toEqual(['draft→retired', 'draft→shadow', 'shadow→retired', 'shadow→validated', 'validated→retired']);
    for (const t of TRANSITIONS) expect(t.meaning.length).toBeGreaterThan(10);
    expect(isModelStatus('shadow')).toBe(true);
    expect(isModelStatus('approved')).toBe(false);
    expect(nextStatuses('draft').sort()).toEqual(['retired', 'shadow']);
  });
});
