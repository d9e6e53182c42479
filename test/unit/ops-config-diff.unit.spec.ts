import { describe, expect, it } from 'vitest';
import { changedSections, lineDiff, LIVE_SECTIONS } from '../../src/ops/config-change.js';
import type { SiteConfig } from '../../src/config/schema.js';

describe('configuration diff', () => {
  it('marks removed and added lines and elides long unchanged runs', () => {
    const a = ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i', 'j'].join('\n');
    const b = ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'I', 'j'].join('\n');
    const d = lineDiff(a, b, 1).split('\n');
    expect(d).toContain('-i');
    expect(d).toContain('+I');
    expect(d).toContain('@@ … @@');
    expect(d).not.toContain(' b');
    expect(lineDiff(a, a)).not.toMatch(/^[+-]/m);
  });

  it('names the top-level sections that changed; only log, maintenance, signatures and retention apply live', () => {
    const base = { version: 1, log: { level: 'info' }, api: { host: '127.0.0.1', port: 8080 } } as unknown as SiteConfig;
    const next = { version: 1, log: { level: 'debug' }, api: { host: '127.0.0.1', port: 9090 } } as unknown as SiteConfig;
    expect(changedSections(base, next)).toEqual(['api', 'log']);
    expect(changedSections(base, base)).toEqual([]);
    expect([...LIVE_SECTIONS]).toEqual(['log', 'maintenance', 'signatures', 'retention']);
  });
});
