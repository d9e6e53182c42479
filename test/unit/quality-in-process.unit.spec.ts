/**
 * src/quality/in-process.ts: OOS is raised once per excursion, OOT (EWMA,
 * λ 0.2, L 2.962, σ̂ = MR̄/1.128) flags a sustained 1.5σ shift inside the limits
 * within a few samples and stays quiet on in-control data, and the state is
 * plain JSON that replays to the same findings.
 */
import { describe, expect, it } from 'vitest';
import { createRng } from '../../src/clock.js';
import { type Finding, initialMonitor, type MonitorLimits, type MonitorState, observe } from '../../src/quality/in-process.js';

const HARDNESS: MonitorLimits = { min: 80, max: 150, target: 115, unit: 'N' };
const SIGMA = 3;

/** Feed values in order; the findings of all of them. */
function feed(values: readonly number[], limits = HARDNESS, attribute = 'press.Hardness', from: MonitorState = initialMonitor()): { state: MonitorState; findings: Finding[] } {
  let state = from;
  const findings: Finding[] = [];
  for (const v of values) {
    const r = observe(state, attribute, v, limits);
    state = r.state;
    findings.push(...r.findings);
  }
  return { state, findings };
}
const inControl = (seed: number, n: number, shift = 0): number[] => {
  const rng = createRng(seed);
  return Array.from({ length: n }, () => rng.normal(HARDNESS.target + shift, SIGMA));
};

describe('OOS: once per excursion', () => {
  it('an excursion gives one finding; back inside and out again gives a second', () => {
    const { findings } = feed([120, 162, 170, 155, 120, 118, 160, 161]);
    expect(findings.map((f) => [f.kind, f.rule, f.index])).toEqual([
      ['OOS', 'spec-max', 1],
      ['OOS', 'spec-max', 6],
    ]);
    expect(findings[0]).toMatchObject({ attribute: 'press.Hardness', value: 162, unit: 'N', limits: HARDNESS, text: 'OOS press.Hardness 162 N > 150 N' });
  });

  it('low side, and a jump from high to low is a new excursion', () => {
    const { findings } = feed([72, 70, 160, 75]);
    expect(findings.map((f) => f.text)).toEqual(['OOS press.Hardness 72 N < 80 N', 'OOS press.Hardness 160 N > 150 N', 'OOS press.Hardness 75 N < 80 N']);
  });

  it('attributes are independent', () => {
    let s = initialMonitor();
    const a = observe(s, 'press.Hardness', 160, HARDNESS);
    s = a.state;
    const b = observe(s, 'press.Weight', 330, { min: 285, max: 315, target: 300, unit: 'mg' });
    expect(a.findings).toHaveLength(1);
    expect(b.findings.map((f) => f.text)).toEqual(['OOS press.Weight 330 mg > 315 mg']);
  });

  it('a non-finite value is an OOS finding (rule non-finite), once per run of them, and never enters the chart', () => {
    const { state, findings } = feed([120, Number.NaN, Number.NaN, 121, Number.POSITIVE_INFINITY]);
    expect(findings.map((f) => [f.kind, f.rule, f.index])).toEqual([
      ['OOS', 'non-finite', 1],
      ['OOS', 'non-finite', 4],
    ]);
    expect(state.attributes['press.Hardness']).toMatchObject({ count: 5, n: 2, last: 121 });
  });
});

describe('OOT: EWMA on an individuals series', () => {
  // With σ estimated from the run itself, about half of 200-sample in-control runs raise one false OOT
  // (in-control ARL ≈ 500 for a known σ, shorter with σ̂); the rate is pinned below. Seed 3 is one of the
  // quiet half, chosen and asserted as such.
  it('200 in-control samples from seed 3 raise nothing', () => {
    const { findings } = feed(inControl(3, 200));
    expect(findings).toEqual([]);
  });

  it('the false-alarm rate over 400 seeded in-control runs of 200 samples is what the chart promises (35–65 %)', () => {
    let alarmed = 0;
    for (let seed = 1; seed <= 400; seed++) if (feed(inControl(seed, 200)).findings.some((f) => f.kind === 'OOT')) alarmed++;
    expect(alarmed / 400).toBeGreaterThan(0.35);
    expect(alarmed / 400).toBeLessThan(0.65);
  });

  it('a sustained 1.5σ shift inside the limits is flagged OOT within 15 samples, and once per excursion', () => {
    const before = feed(inControl(3, 50));
    expect(before.findings).toEqual([]);
    let state = before.state;
    const oot: Finding[] = [];
    let openSamples = 0;
    let openings = 0;
    for (const v of inControl(103, 60, 1.5 * SIGMA)) {
      const wasOpen = state.attributes['press.Hardness']!.oot !== null;
      const r = observe(state, 'press.Hardness', v, HARDNESS);
      state = r.state;
      const isOpen = state.attributes['press.Hardness']!.oot !== null;
      if (isOpen) openSamples++;
      if (isOpen && !wasOpen) openings++;
      expect(r.findings.filter((f) => f.kind === 'OOS')).toEqual([]);
      oot.push(...r.findings.filter((f) => f.kind === 'OOT'));
    }
    expect(oot[0]!.index - 50).toBeLessThan(15);
    expect(oot[0]!.rule).toBe('ewma-high');
    expect(oot[0]!.text).toMatch(/^OOT press\.Hardness EWMA [\d.]+ N > UCL [\d.]+ N \(target 115 N, σ̂ [\d.]+ N, λ 0\.2, L 2\.962; sample [\d.]+ N\)$/);
    // seed 103: the EWMA stays out for most of the 60 samples, dips back once and leaves again: two findings, not one per sample
    expect(openSamples).toBeGreaterThan(30);
    expect(oot).toHaveLength(openings);
    expect(oot.map((f) => f.index)).toEqual([53, 97]);
  });

  it('on average a 1.5σ shift is caught in under 8 samples (tabulated ARL ≈ 5.5)', () => {
    const delays: number[] = [];
    for (let seed = 1; seed <= 300; seed++) {
      const prefix = feed(inControl(seed, 50));
      if (prefix.findings.length > 0) continue; // a false alarm still open at the shift would hide the delay
      const first = feed(inControl(seed + 1000, 200, 1.5 * SIGMA), HARDNESS, 'press.Hardness', prefix.state).findings.find((f) => f.kind === 'OOT');
      delays.push(first ? first.index - 49 : 200);
    }
    expect(delays.length).toBeGreaterThan(150);
    expect(delays.reduce((a, b) => a + b, 0) / delays.length).toBeLessThan(8);
  });

  it('judges nothing before 10 samples, however far the EWMA is', () => {
    const { findings } = feed([140, 141, 142, 143, 144, 145, 146, 147, 148]);
    expect(findings).toEqual([]);
    const tenth = feed([140, 141, 142, 143, 144, 145, 146, 147, 148, 149]);
    expect(tenth.findings.map((f) => [f.kind, f.index])).toEqual([['OOT', 9]]);
  });
});

describe('state', () => {
  it('is plain JSON: a round-tripped state gives the same findings, and the given state is never changed', () => {
    const values = [...inControl(7, 30), 160, 165, ...inControl(8, 30, 6)];
    const whole = feed(values);
    const half = feed(values.slice(0, 31));
    const frozen = JSON.parse(JSON.stringify(half.state)) as MonitorState;
    const snapshot = JSON.stringify(frozen);
    const rest = feed(values.slice(31), HARDNESS, 'press.Hardness', frozen);
    expect(JSON.stringify(frozen)).toBe(snapshot);
    expect([...half.findings, ...rest.findings]).toEqual(whole.findings);
    expect(rest.state).toEqual(whole.state);
  });

  it('an attribute named __proto__ is just an attribute', () => {
    const r = observe(initialMonitor(), '__proto__', 160, HARDNESS);
    expect(r.findings).toHaveLength(1);
    expect(Object.hasOwn(r.state.attributes, '__proto__')).toBe(true);
    expect(Object.getPrototypeOf(r.state.attributes)).toBe(Object.prototype);
  });
});
