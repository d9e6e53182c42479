/**
 * The genealogy as `linekeeper runs show <id> --format genealogy` prints it:
 * time-aligned, UTC, columns aligned, losing arbitration requests marked with
 * score and reason, and nothing from an agent able to drive the terminal.
 */
import { describe, expect, it } from 'vitest';
import { formatNumber, genealogyRows, LOSING_MARK, renderGenealogyText, safeText } from '../../src/engine/genealogy-text.js';
import type { GenealogyEvent, LosingRequest } from '../../src/engine/release-types.js';

const t0 = Date.UTC(2026, 10, 20, 8, 0, 0);
const events: GenealogyEvent[] = [
  { at: t0 + 3_600_000, kind: 'arbitration', step: '05', agent: 'agent.compress_fill', tag: 'press.TurretSpeed', summary: 'hold 40 {rev}/min: content uniformity' },
  { at: t0, kind: 'step', step: '01', agent: 'agent.orchestrator', summary: 'batch record B-1042 ingested' },
  { at: t0 + 61_500, kind: 'sensor', tag: 'nir.Potency', summary: 'potency 99.8 %' },
  { at: t0 + 3_600_000, kind: 'action', step: '05', agent: 'agent.compress_fill', tag: 'press.MainForce', summary: '12 kN -> 12.5 kN' },
  { at: t0 + 3_700_000, kind: 'approval', step: '09', agent: 'm.rossi', summary: 'approved for release by Dr. Maria Rossi' },
];
const losing: LosingRequest[] = [{ agent: 'agent.yield_takt', setpoint: 'press.TurretSpeed', score: 0.4213, reason: 'content uniformity outranks takt', at: t0 + 3_600_000 }];

const bodyLines = (text: string): string[] => text.split('\n').filter((l) => /^[ !] \d\d:\d\d:\d\d/.test(l));

describe('renderGenealogyText', () => {
  it('prints one row per event and losing request, in time order, with HH:MM:SS UTC', () => {
    const text = renderGenealogyText(events, { losingRequests: losing });
    const rows = bodyLines(text);
    expect(rows.map((l) => l.slice(2, 10))).toEqual(['08:00:00', '08:01:01', '09:00:00', '09:00:00', '09:00:00', '09:01:40']);
    expect(rows[0]).toContain('batch record B-1042 ingested');
    // equal times keep the given order; the losing request follows the events of its instant
    expect(rows[2]).toContain('hold 40 {rev}/min');
    expect(rows[3]).toContain('12 kN -> 12.5 kN');
    expect(rows[4]!.startsWith(`${LOSING_MARK} `)).toBe(true);
    expect(text.endsWith('\n')).toBe(true);
  });

  it('marks losing requests clearly, with agent, setpoint, score and reason, and explains the mark', () => {
    const text = renderGenealogyText(events, { losingRequests: losing });
    const marked = text.split('\n').filter((l) => l.startsWith(LOSING_MARK));
    expect(marked).toHaveLength(1);
    expect(marked[0]).toMatch(/09:00:00\s+arbitration\s+-\s+agent\.yield_takt press\.TurretSpeed\s+LOSING REQUEST \(declined\), score 0\.421: content uniformity outranks takt$/);
    expect(text).toContain(`${LOSING_MARK} = losing arbitration request (1)`);
    expect(renderGenealogyText(events)).not.toContain('LOSING');
  });

  it('aligns the columns: every cell of a column starts where its header does', () => {
    const text = renderGenealogyText(events, { losingRequests: losing });
    const header = text.split('\n').find((l) => l.includes('SUMMARY'))!;
    const starts = ['KIND', 'STEP', 'AGENT / TAG', 'SUMMARY'].map((h) => header.indexOf(h));
    const rows = bodyLines(text);
    for (const r of rows) {
      for (const s of starts) {
        expect(r[s - 1]).toBe(' ');
        expect(r[s - 2]).toBe(' ');
        expect(r[s]).not.toBe(' ');
      }
    }
    expect(rows.map((r) => r.slice(starts[3]!))).toContain('approved for release by Dr. Maria Rossi');
  });

  it('opens each UTC day with a date line, so a run over midnight stays unambiguous', () => {
    const late = Date.UTC(2026, 10, 20, 23, 59, 59);
    const text = renderGenealogyText([
      { at: late, kind: 'step', step: '06', summary: 'coating' },
      { at: late + 2000, kind: 'step', step: '07', summary: 'inspection' },
    ]);
    const lines = text.split('\n');
    const d1 = lines.indexOf('-- 2026-11-20 (UTC) --');
    const d2 = lines.indexOf('-- 2026-11-21 (UTC) --');
    expect(d1).toBeGreaterThan(-1);
    expect(d2).toBeGreaterThan(d1);
    expect(lines[d1 + 1]).toContain('23:59:59');
    expect(lines[d2 + 1]).toContain('00:00:01');
  });

  it('never passes terminal control or bidi override characters through', () => {
    const text = renderGenealogyText([{ at: t0, kind: 'sensor', agent: 'agent.x\u001b[2J', summary: 'ok\u001b]0;pwned\u0007\nsecond line\u202eevil' }], { title: 'run\u001b[31m' });
    expect(text).not.toMatch(/[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/);
    expect(bodyLines(text)).toHaveLength(1);
    expect(text).toContain('ok?]0;pwned? second line?evil');
    expect(safeText('a\tb\r\nc')).toBe('a b  c');
  });

  it('an empty genealogy says so; a title comes first', () => {
    const text = renderGenealogyText([], { title: 'Genealogy of run run_7f3a, batch B-1042' });
    expect(text.split('\n')[0]).toBe('Genealogy of run run_7f3a, batch B-1042');
    expect(text).toContain('(no events)');
    expect(text).toContain('0 entries, times UTC.');
  });
});

describe('genealogyRows and formatNumber', () => {
  it('rows carry date, time, agent and tag together, and the losing flag', () => {
    const rows = genealogyRows(events, losing);
    expect(rows).toHaveLength(6);
    expect(rows[3]).toMatchObject({ date: '2026-11-20', time: '09:00:00', kind: 'action', step: '05', who: 'agent.compress_fill press.MainForce', losing: false });
    expect(rows.filter((r) => r.losing).map((r) => r.who)).toEqual(['agent.yield_takt press.TurretSpeed']);
  });

  it('numbers keep what is readable and invent nothing', () => {
    expect(formatNumber(12)).toBe('12');
    expect(formatNumber(99.83333)).toBe('99.833');
    expect(formatNumber(0.4213)).toBe('0.421');
    expect(formatNumber(0.000413)).toBe('0.000413');
    expect(formatNumber(-1.5)).toBe('-1.5');
  });
});
