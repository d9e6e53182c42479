/**
 * The plain checks that let an audit entry skip zod on the append path (`plainlyValid`, entry.ts) never accept
 * what the zod schema refuses, and do accept the entries the guarded writer writes (else the hot path would
 * still be zod's). Random entries built near every rule's edge, and the writer's own shapes.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseEntryInput, plainlyValid } from '../../src/audit/entry.js';
import { AuditEntryInput } from '../../src/audit/entry-schema.js';
import { anyCodePoints } from '../helpers/code-points.js';

const SCALE = Math.max(1, Number(process.env.LK_PROPERTY_SCALE ?? 1) || 1);

const edgy = fc.constantFrom('', 'a', 'A', 'acme-pharma', 'site', '-x', 'x-', 'agent.compress_fill', 'agent.', 'agent.X', 'system', 'q.russo',
  'user@site', 'a'.repeat(64), 'a'.repeat(65), 'a'.repeat(200), 'a'.repeat(201), 'snake_case', 'Kind', '\ud800', 'é', 'x\ud83d\ude00', ' ');
const str = fc.oneof(edgy, fc.string(), anyCodePoints({ maxLength: 5 }));
const valid = fc.constantFrom('acme-pharma', 'site', 'system', 'agent.compress_fill', 'policy_decision', 'setpoint.write');
const bad = fc.oneof(fc.constant(Number.NaN), fc.constant(Infinity), fc.constant([undefined]), fc.constant({ a: 1n }), fc.constant(new Date(0)),
  fc.constant({ '\ud800': 1 }), fc.constant('\udc00'), fc.constant({ deep: [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]] }));
/** Mostly well-formed, sometimes not: each field is valid often enough that whole entries pass now and then. */
const mostly = <T, U>(good: fc.Arbitrary<T>, worse: fc.Arbitrary<U>): fc.Arbitrary<T | U> => fc.oneof({ arbitrary: good, weight: 6 }, { arbitrary: worse, weight: 1 });
const jsonish = mostly(fc.jsonValue(), bad);
const subject = mostly(
  fc.record({ batch: mostly(valid, str), agent: mostly(valid, str), setpoint: mostly(valid, str), run: mostly(valid, str) }, { requiredKeys: [] }),
  fc.constantFrom<unknown>({ other: 'x' }, { batch: undefined }, null, [], 'x'),
);
const entry = fc.record(
  { tenant: mostly(valid, str), actor: mostly(valid, str), kind: mostly(valid, str), action: mostly(valid, str), reason: mostly(valid, str), subject, args: jsonish, result: jsonish, old: jsonish, new: jsonish, extra: str },
  { requiredKeys: ['tenant', 'actor', 'kind', 'action'] },
);
/**
 * An entry the writer would append with one field replaced by anything the generators above make: the
 * boundary of each rule on its own, and an accepting side that is reached often (the fully random entries
 * above are accepted only ~0.4 % of the time, which left the vacuity check below at the mercy of the seed).
 */
const base = {
  tenant: 'acme-pharma', actor: 'agent.compress_fill', kind: 'policy_decision', action: 'setpoint.write', reason: 'allow',
  subject: { batch: 'B-1042', agent: 'agent.compress_fill', setpoint: 'press.MainForce', run: 'run_1' }, args: { value: 12.5 }, result: { outcome: 'allow' }, old: 12, new: 12.5,
};
const field = fc.constantFrom<keyof typeof base | 'extra'>('tenant', 'actor', 'kind', 'action', 'reason', 'subject', 'args', 'result', 'old', 'new', 'extra');
const oneOff = fc.tuple(field, fc.oneof(str, jsonish, subject, fc.constant(undefined))).map(([k, v]) => ({ ...base, [k]: v }));

describe('audit entry checks without zod', () => {
  it('accept nothing the zod schema refuses, on random entries near every rule', () => {
    let accepted = 0;
    fc.assert(
      fc.property(fc.oneof(entry, oneOff), (e) => {
        if (!plainlyValid(e)) return;
        accepted++;
        expect(AuditEntryInput.safeParse(e).success).toBe(true);
      }),
      { numRuns: 3000 * SCALE },
    );
    // the generator reaches the accepting side too, or the property would hold vacuously: about half the runs
    // are one-off entries and most of those stay valid (the bound is far below what any seed gives)
    expect(accepted).toBeGreaterThan(300 * SCALE);
  });

  it('accept the entries the guarded writer appends (policy decision, intent, outcome), which zod accepts too', () => {
    const subject = { batch: 'B-1042', agent: 'agent.compress_fill', run: 'run_1', setpoint: 'press.MainForce' };
    const written = [
      { tenant: 'acme-pharma', actor: 'agent.compress_fill', kind: 'policy_decision', action: 'policy.evaluate', subject, args: { value: '12.5 kN', current: 12, lastMove: null }, result: { outcome: 'allow', reasons: [] }, reason: 'allow' },
      { tenant: 'acme-pharma', actor: 'agent.compress_fill', kind: 'intent', action: 'setpoint.write', subject, args: { decision: 'd_1', vectorHash: 'ab'.repeat(32), unit: 'kN' }, old: 12, new: 12.5 },
      { tenant: 'acme-pharma', actor: 'agent.compress_fill', kind: 'outcome', action: 'setpoint.write', subject: { setpoint: 'press.MainForce' }, result: { verified: true }, old: 12, new: 12.5, reason: undefined },
    ];
    for (const e of written) {
      expect(plainlyValid(e)).toBe(true);
      expect(AuditEntryInput.safeParse(e).success).toBe(true);
      expect(parseEntryInput(e)).toBe(e);
    }
  });

  it('leave an entry with a signature, an unknown key or a bad field to zod, which names what is wrong', () => {
    const ok = { tenant: 'acme-pharma', actor: 'system', kind: 'system', action: 'x' };
    expect(plainlyValid({ ...ok, signature: { user: 'u', name: 'U', meaning: 'm', time: '2026-01-01T00:00:00.000Z' } })).toBe(false);
    expect(plainlyValid({ ...ok, extra: 1 })).toBe(false);
    expect(() => parseEntryInput({ ...ok, extra: 1 })).toThrow(/LK_VALIDATION|Unrecognized|unrecognized/);
    expect(() => parseEntryInput({ ...ok, args: { x: Number.NaN } })).toThrow(/args/);
    expect(() => parseEntryInput({ ...ok, tenant: 'Acme' })).toThrow(/tenant/);
  });
});
