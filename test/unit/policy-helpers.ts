/**
 * Shared fixtures of the policy and arbitration tests: the shipped site
 * configuration and policy bundle (real files, not mocks), temp copies of
 * the bundle to break on purpose, and a context in which a move is allowed.
 */
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../../src/config/load.js';
import type { SiteConfig } from '../../src/config/schema.js';
import type { PolicyContext, PolicyRequest } from '../../src/domain/policy.js';
import { type PolicyBundle, loadPolicyBundle } from '../../src/policy/index.js';

const loaded = loadConfig();
export const site: SiteConfig = loaded.config;
export const policyDir: string = loaded.policyDir;
export const bundle: PolicyBundle = loadPolicyBundle(policyDir, { site }).bundle;

export const T0 = Date.UTC(2026, 2, 3, 8, 0, 0);

const temps: string[] = [];

/** A temp copy of the shipped bundle folder; `edit(file, text) → text` rewrites files. */
export function bundleCopy(edits: Record<string, (text: string) => string> = {}): string {
  const dir = mkdtempSync(join(tmpdir(), 'lk-policy-'));
  temps.push(dir);
  cpSync(policyDir, dir, { recursive: true });
  for (const [file, edit] of Object.entries(edits)) {
    const f = join(dir, file);
    writeFileSync(f, edit(readFileSync(f, 'utf8')));
  }
  return dir;
}

export function cleanupCopies(): void {
  for (const d of temps.splice(0)) rmSync(d, { recursive: true, force: true });
}

/** press.MainForce 12 → 12.5 kN by agent.compress_fill at L3, attended: the textbook `allow`. */
export function request(over: Partial<PolicyRequest> = {}): PolicyRequest {
  return { agent: 'agent.compress_fill', setpoint: 'press.MainForce', value: '12.5 kN', product: 'ir-family-a', tooling: 'round-10mm-ff', ...over };
}

export function context(over: Partial<PolicyContext> = {}): PolicyContext {
  return {
    now: T0,
    batchState: 'running',
    autonomy: { agent: 'L3' },
    model: { id: 'compaction-ir-family-a-v3', version: '3.2.0' },
    current: 12,
    lastMove: { value: 12, at: T0 - 10 * 60_000 },
    reviewer: 'a.bianchi',
    attendance: { operator: 'l.verdi', lastPresenceAt: T0 - 5_000 },
    ...over,
  };
}
