/**
 * Runs and steps as plain data: the transition tables (every pair of statuses, allowed or refused with
 * LK_RUN_STATE), the plan of the spec, and how durations and times of day are rendered.
 */
import { describe, expect, it } from 'vitest';
import {
  RUN_STATUSES, RUN_TRANSITIONS, STEP_NAMES, STEP_STATUSES, STEP_TRANSITIONS, TERMINAL_RUN, checkRunTransition, checkStepTransition, composePlan, formatDuration,
  planSummary, timeOfDay, type RunStatus, type StepStatus,
} from '../../src/domain/run.js';
import { LkError } from '../../src/errors.js';
import { codeOf } from '../helpers/codes.js';
import { SPEC_PLAN } from '../helpers/spec-plan.js';

/** The lifecycle of a run, written out here independently of the table under test (src/domain/run.ts). */
const RUN_ALLOWED: readonly (readonly [RunStatus, RunStatus])[] = [
  ['PENDING', 'RUNNING'], ['PENDING', 'FAILED'],
  ['RUNNING', 'APPROVAL'], ['RUNNING', 'HELD'], ['RUNNING', 'SUCCEEDED'], ['RUNNING', 'FAILED'], ['RUNNING', 'INTERRUPTED'],
  ['APPROVAL', 'RUNNING'], ['APPROVAL', 'REJECTED'], ['APPROVAL', 'HELD'], ['APPROVAL', 'INTERRUPTED'],
  ['HELD', 'RUNNING'], ['HELD', 'FAILED'],
  ['INTERRUPTED', 'RUNNING'], ['INTERRUPTED', 'FAILED'],
  // a named person aborts a run from any state that is not final (signed)
  ['PENDING', 'ABORTED'], ['RUNNING', 'ABORTED'], ['APPROVAL', 'ABORTED'], ['HELD', 'ABORTED'], ['INTERRUPTED', 'ABORTED'],
];

const STEP_ALLOWED: readonly (readonly [StepStatus, StepStatus])[] = [
  ['PENDING', 'RUNNING'], ['PENDING', 'SKIPPED'],
  ['RUNNING', 'SUCCEEDED'], ['RUNNING', 'FAILED'], ['RUNNING', 'APPROVAL'], ['RUNNING', 'HELD'], ['RUNNING', 'INTERRUPTED'],
  ['APPROVAL', 'SUCCEEDED'], ['APPROVAL', 'REJECTED'], ['APPROVAL', 'HELD'], ['APPROVAL', 'INTERRUPTED'],
  ['HELD', 'RUNNING'], ['HELD', 'FAILED'],
  ['INTERRUPTED', 'RUNNING'], ['INTERRUPTED', 'FAILED'],
  // the step under way when its run is aborted (steps not started are SKIPPED)
  ['RUNNING', 'ABORTED'], ['APPROVAL', 'ABORTED'], ['HELD', 'ABORTED'], ['INTERRUPTED', 'ABORTED'],
];

function pairs<S extends string>(statuses: readonly S[]): [S, S][] {
  return statuses.flatMap((from) => statuses.map((to): [S, S] => [from, to]));
}

const key = (p: readonly [string, string]): string => `${p[0]}→${p[1]}`;

describe('run transitions', () => {
  const allowed = new Set(RUN_ALLOWED.map(key));

  it.each(pairs(RUN_STATUSES))('[P11.10(f)] %s → %s is accepted exactly when the lifecycle allows it', (from, to) => {
    if (allowed.has(key([from, to]))) {
      expect(codeOf(() => checkRunTransition(from, to, 'run_0123456789'))).toBeUndefined();
    } else {
      let err: unknown;
      try {
        checkRunTransition(from, to, 'run_0123456789');
      } catch (e) {
        err = e;
      }
      expect(LkError.is(err, 'LK_RUN_STATE')).toBe(true);
      expect((err as LkError).detail).toEqual({ from, to, run: 'run_0123456789' });
    }
  });

  it('the table says the same as the lifecycle, and has a row for every status', () => {
    expect(Object.keys(RUN_TRANSITIONS).sort()).toEqual([...RUN_STATUSES].sort());
    expect(Object.entries(RUN_TRANSITIONS).flatMap(([f, ts]) => ts.map((t) => `${f}→${t}`)).sort()).toEqual([...allowed].sort());
  });

  it('[P11.10(f)] a finished run never changes again; nothing goes back to PENDING; only a gate is rejected', () => {
    expect([...TERMINAL_RUN].sort()).toEqual(['ABORTED', 'FAILED', 'REJECTED', 'SUCCEEDED']);
    for (const s of TERMINAL_RUN) expect(RUN_TRANSITIONS[s]).toEqual([]);
    for (const s of RUN_STATUSES) expect(RUN_TRANSITIONS[s]).not.toContain('PENDING');
    expect(RUN_STATUSES.filter((s) => RUN_TRANSITIONS[s].includes('REJECTED'))).toEqual(['APPROVAL']);
    expect(RUN_STATUSES.filter((s) => RUN_TRANSITIONS[s].includes('SUCCEEDED'))).toEqual(['RUNNING']);
  });

  it('[INV-BATCH-ONCE] every state that is not final has a way out a person takes: abort; and a stopped run resumes', () => {
    const open = RUN_STATUSES.filter((s) => !TERMINAL_RUN.has(s));
    expect(open.sort()).toEqual(['APPROVAL', 'HELD', 'INTERRUPTED', 'PENDING', 'RUNNING']);
    for (const s of open) expect(RUN_TRANSITIONS[s]).toContain('ABORTED');
    expect(RUN_STATUSES.filter((s) => RUN_TRANSITIONS[s].includes('ABORTED')).sort()).toEqual(open.sort());
    for (const s of ['HELD', 'INTERRUPTED'] as const) expect(RUN_TRANSITIONS[s]).toContain('RUNNING');
  });

  it('the tables are frozen', () => {
    expect(Object.isFrozen(RUN_TRANSITIONS)).toBe(true);
    expect(Object.isFrozen(STEP_TRANSITIONS)).toBe(true);
  });
});

describe('step transitions', () => {
  const allowed = new Set(STEP_ALLOWED.map(key));

  it.each(pairs(STEP_STATUSES))('%s → %s is accepted exactly when the lifecycle allows it', (from, to) => {
    const code = codeOf(() => checkStepTransition(from, to, '04 granulate.dry'));
    expect(code).toBe(allowed.has(key([from, to])) ? undefined : 'LK_RUN_STATE');
  });

  it('the table says the same as the lifecycle; done, failed, rejected and skipped steps are final', () => {
    expect(Object.keys(STEP_TRANSITIONS).sort()).toEqual([...STEP_STATUSES].sort());
    expect(Object.entries(STEP_TRANSITIONS).flatMap(([f, ts]) => ts.map((t) => `${f}→${t}`)).sort()).toEqual([...allowed].sort());
    for (const s of ['SUCCEEDED', 'FAILED', 'REJECTED', 'SKIPPED', 'ABORTED'] as const) expect(STEP_TRANSITIONS[s]).toEqual([]);
    // a step that has not started is never ABORTED (it is SKIPPED when its run is aborted)
    expect(STEP_TRANSITIONS.PENDING).not.toContain('ABORTED');
    // a step runs again only from HELD or INTERRUPTED (a person resumed it), never from a finished state
    expect(STEP_STATUSES.filter((s) => STEP_TRANSITIONS[s].includes('RUNNING')).sort()).toEqual(['HELD', 'INTERRUPTED', 'PENDING']);
  });

  it('names the step in the refusal', () => {
    try {
      checkStepTransition('SUCCEEDED', 'RUNNING', '04 granulate.dry');
      expect.unreachable();
    } catch (e) {
      expect(LkError.is(e, 'LK_RUN_STATE')).toBe(true);
      expect((e as LkError).detail).toEqual({ from: 'SUCCEEDED', to: 'RUNNING', step: '04 granulate.dry' });
    }
  });
});

describe('composePlan', () => {
  it('is the spec\'s ten steps in order, each with its agent and main tool, and one approval gate at 09', () => {
    const plan = composePlan();
    expect(plan.map((s) => [s.seq, s.name, s.agent, s.tool])).toEqual(SPEC_PLAN);
    expect(plan.map((s) => s.name)).toEqual([...STEP_NAMES]);
    expect(plan.filter((s) => s.gate).map((s) => s.name)).toEqual(['approval.batch_release']);
    expect(plan.filter((s) => s.continuous).map((s) => s.name)).toEqual(['inspect.tablets']);
  });

  it('gives a fresh plan each time (a caller cannot change the next run\'s plan)', () => {
    const a = composePlan();
    const b = composePlan();
    expect(a).toEqual(b);
    expect(a).not.toBe(b);
    a.pop();
    expect(composePlan()).toHaveLength(10);
  });

  it('is reported as "10 steps, 1 approval gate"; counts and plural follow the plan', () => {
    const plan = composePlan();
    expect(planSummary(plan)).toEqual({ steps: 10, gates: 1, text: '10 steps, 1 approval gate' });
    expect(planSummary([...plan, { ...plan[8]!, seq: '11' }])).toEqual({ steps: 11, gates: 2, text: '11 steps, 2 approval gates' });
    expect(planSummary(plan.filter((s) => !s.gate))).toEqual({ steps: 9, gates: 0, text: '9 steps, 0 approval gates' });
  });
});

describe('formatDuration', () => {
  it.each([
    [0, '0.0s'],
    [4_200, '4.2s'],
    [999, '1.0s'],
    [59_900, '59.9s'],
    [60_000, '1:00'],
    [61_400, '1:01'],
    [61_500, '1:02'],
    [119_499, '1:59'],
    [119_500, '2:00'],
    [754_000, '12:34'],
    [3_600_000, '60:00'],
  ])('%d ms → %s', (ms, text) => {
    expect(formatDuration(ms)).toBe(text);
  });

  it('inspection is "continuous", whatever its elapsed time', () => {
    for (const ms of [0, 12_345, 3_600_000, null]) expect(formatDuration(ms, true)).toBe('continuous');
  });

  it('a step not started, or a time that is not a duration, renders empty', () => {
    for (const ms of [null, -1, Number.NaN, Number.POSITIVE_INFINITY]) expect(formatDuration(ms)).toBe('');
  });
});

describe('timeOfDay', () => {
  it('is HH:MM:SS in UTC, as the tool-call log shows it', () => {
    expect(timeOfDay(Date.UTC(2026, 10, 23, 8, 5, 9, 999))).toBe('08:05:09');
    expect(timeOfDay(Date.UTC(2026, 10, 23, 23, 59, 59))).toBe('23:59:59');
    expect(timeOfDay(Date.UTC(2026, 10, 24))).toBe('00:00:00');
  });
});
