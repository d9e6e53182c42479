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
import { type PolicyBundle } from '../../src/policy/index.js';
import { loadPolicyBundle } from '../../src/config/policy-bundle.js';

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

/** The registry's record of the tenant's validated twin pinned to this site (what the guarded writer looks up). */
export const TWIN_RECORD = { owner: 'own', family: 'process-twin', version: 1, status: 'validated', sites: ['site-ravenna'], sha256: 'a'.repeat(64) } as const;
/** The capping risk the guarded writer would have predicted with that twin (0.4 %, under the 1.5 % threshold). */
export const CAPPING_OK = { risk: 0.004, model: { id: 'process-twin-v1', version: '1' } } as const;

/** press.MainForce 12 → 12.5 kN by agent.compress_fill at L3, attended: the textbook `allow`. */
export function request(over: Partial<PolicyRequest> = {}): PolicyRequest {
  return { agent: 'agent.compress_fill', setpoint: 'press.MainForce', value: '12.5 kN', product: 'ir-family-a', tooling: 'round-10mm-ff', ...over };
}

export function context(over: Partial<PolicyContext> = {}): PolicyContext {
  return {
    now: T0,
    batchState: 'running',
    autonomy: { agent: 'L3' },
    model: { id: 'process-twin-v1', version: '1' },
    modelRecord: TWIN_RECORD,
    capping: CAPPING_OK,
    current: 12,
    lastMove: { value: 12, at: T0 - 10 * 60_000 },
    reviewer: 'a.bianchi',
    attendance: { operator: 'l.verdi', lastPresenceAt: T0 - 5_000 },
    ...over,
  };
}
